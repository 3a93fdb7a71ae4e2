/*
 * gprof-run-wait: gprof-run's child, which runs the command as its own child and says how it
 * ended. A shell cannot: bash's `wait` gives 128 + N both for a command killed by signal N and
 * for one that exits with 128 + N.
 *
 *	gprof-run-wait STATUS_FILE PRELOAD command [argument...]
 *
 * The command gets LD_PRELOAD=PRELOAD (this program runs without libgprof), HUP, TERM, USR1 and
 * USR2 sent to this program, and INT and QUIT at their default. When it ends, STATUS_FILE gets
 * "exit N" or "signal N", and this program exits with N or 128 + N.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const int passed_on[] = {SIGHUP, SIGTERM, SIGUSR1, SIGUSR2};
static volatile pid_t child;

static void pass_on(int sig)
{
	int saved_errno = errno;

	if (child > 0)
		kill(child, sig);
	errno = saved_errno;
}

static void run_child(char **argv, const char *preload, const sigset_t *old)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	sigprocmask(SIG_SETMASK, old, NULL);
	if (setenv("LD_PRELOAD", preload, 1) == 0)
		execvp(argv[0], argv);
	fprintf(stderr, "gprof: cannot run '%s': %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static int start(char **argv, const char *preload)
{
	struct sigaction sa = {.sa_handler = pass_on};
	sigset_t block, old;
	pid_t pid;

	/* A signal that comes before the child's pid is known waits for it. */
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
		sigaddset(&block, passed_on[i]);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGINT, SIG_IGN); /* from the terminal: the command gets them too */
	signal(SIGQUIT, SIG_IGN);
	pid = fork();
	if (pid == 0)
		run_child(argv, preload, &old);
	child = pid;
	for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
		sigaction(passed_on[i], &sa, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return pid < 0 ? -errno : 0;
}

int main(int argc, char **argv)
{
	int status, code;
	FILE *f;

	if (argc < 4) {
		fprintf(stderr,
			"Usage: gprof-run-wait STATUS_FILE PRELOAD command [argument...]\n");
		return 2;
	}
	if (start(argv + 3, argv[2]) != 0) {
		fprintf(stderr, "gprof: cannot start '%s': %s\n", argv[3], strerror(errno));
		return 126;
	}
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return 126;
	code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	f = fopen(argv[1], "we");
	if (f) {
		fprintf(f, "%s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
			WIFSIGNALED(status) ? WTERMSIG(status) : code);
		fclose(f);
	}
	return code;
}

/*
 * Runs every test of test/test-list.h (or those whose name contains argv[1]) in its own
 * process with a timeout, and ends with the line "N passed, N failed[, N skipped]".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "task.h"

struct test {
	const char *name;
	void (*fn)(void);
};

static const struct test tests[] = {
#define X(name) {#name, test_##name},
#include "test-list.h"
#undef X
};

/* Runs one test in a child; returns 0 pass, 1 fail, 2 skip. */
static int run_one(const struct test *t, unsigned timeout_s)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		alarm(timeout_s);
		t->fn();
		fflush(NULL);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		;
	kill(-pid, SIGKILL); /* whatever the test left running */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == TEST_SKIP_STATUS)
		return 2;
	if (WIFSIGNALED(status))
		fprintf(stderr, "%s: killed by signal %d%s\n", t->name, WTERMSIG(status),
			WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
	return 1;
}

int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	const char *t_env = getenv("TEST_TIMEOUT");
	unsigned timeout_s = t_env ? (unsigned)atoi(t_env) : 300;
	int counts[3] = {0, 0, 0};
	static const char *const verdict[] = {"ok", "FAIL", "skip"};

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (filter && !strstr(tests[i].name, filter))
			continue;
		int r = run_one(&tests[i], timeout_s);
		counts[r]++;
		printf("%-4s %s\n", verdict[r], tests[i].name);
		fflush(stdout);
	}
	if (counts[2])
		printf("%d passed, %d failed, %d skipped\n", counts[0], counts[1], counts[2]);
	else
		printf("%d passed, %d failed\n", counts[0], counts[1]);
	return counts[1] ? 1 : 0;
}

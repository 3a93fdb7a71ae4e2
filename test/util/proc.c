/* Runs a program with a given environment and captures its output (see proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/task.h"
#include "test/util/proc.h"

extern char **environ;

struct capture {
	int fd;
	char **buf;
	size_t *len, cap;
};

/* Whether environment entry `e` is the variable named by `spec` ("NAME" or "NAME=value"). */
static bool same_name(const char *e, const char *spec)
{
	size_t n = strcspn(spec, "=");

	return !strncmp(e, spec, n) && e[n] == '=';
}

/* environ with the changes of `env` applied; the strings are borrowed, the array is malloc'd. */
static char **build_env(const char *const env[])
{
	size_t n = 0, k = 0, extra = 0;
	char **out;

	while (environ[n])
		n++;
	while (env && env[extra])
		extra++;
	out = calloc(n + extra + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool changed = false;

		for (size_t j = 0; j < extra && !changed; j++)
			changed = same_name(environ[i], env[j]);
		if (!changed)
			out[k++] = environ[i];
	}
	for (size_t j = 0; j < extra; j++)
		if (strchr(env[j], '='))
			out[k++] = (char *)env[j];
	return out;
}

/* Reads what is available on c->fd; returns false at end of file. */
static bool drain(struct capture *c)
{
	char chunk[65536];
	ssize_t r = read(c->fd, chunk, sizeof(chunk));

	if (r < 0 && errno == EINTR)
		return true;
	if (r <= 0)
		return false;
	if (*c->len + (size_t)r + 1 > c->cap) {
		size_t cap = 2 * (*c->len + (size_t)r + 1);
		char *p = realloc(*c->buf, cap);

		if (!p)
			return false;
		*c->buf = p;
		c->cap = cap;
	}
	memcpy(*c->buf + *c->len, chunk, (size_t)r);
	*c->len += (size_t)r;
	(*c->buf)[*c->len] = '\0';
	return true;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Collects both pipes until they close or the deadline passes; false on timeout. */
static bool collect(struct capture cap[2], double deadline)
{
	struct pollfd fds[2] = {{.fd = cap[0].fd, .events = POLLIN},
				{.fd = cap[1].fd, .events = POLLIN}};

	while (fds[0].fd >= 0 || fds[1].fd >= 0) {
		int left_ms = (int)((deadline - now_s()) * 1000);

		if (left_ms <= 0)
			return false;
		if (poll(fds, 2, left_ms) < 0 && errno != EINTR)
			return false;
		for (int i = 0; i < 2; i++)
			if (fds[i].fd >= 0 && fds[i].revents && !drain(&cap[i]))
				fds[i].fd = -1;
	}
	return true;
}

static void child(const char *const argv[], char **envp, int out[2], int err[2])
{
	dup2(out[1], STDOUT_FILENO);
	dup2(err[1], STDERR_FILENO);
	close(out[0]);
	close(err[0]);
	execve(argv[0], (char *const *)argv, envp);
	fprintf(stderr, "proc: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int proc_run(const char *const argv[], const char *const env[], unsigned int timeout_s,
	     struct proc_result *res)
{
	int out[2] = {-1, -1}, err[2] = {-1, -1}, status = 0, ret = -ENOMEM;
	char **envp = build_env(env);
	struct capture cap[2] = {{.buf = &res->out, .len = &res->out_len},
				 {.buf = &res->err, .len = &res->err_len}};
	pid_t pid = -1;

	*res = (struct proc_result){.status = -1, .out = calloc(1, 1), .err = calloc(1, 1)};
	if (!envp || !res->out || !res->err)
		goto out;
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || (pid = fork()) < 0) {
		ret = -errno;
		goto out;
	}
	if (pid == 0)
		child(argv, envp, out, err);
	close(out[1]);
	close(err[1]);
	out[1] = err[1] = -1;
	cap[0].fd = out[0];
	cap[1].fd = err[0];
	res->timed_out = !collect(cap, now_s() + timeout_s);
	if (res->timed_out)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	res->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	ret = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	free(envp);
	return ret;
}

void proc_result_free(struct proc_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
}

static int find_runtime(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (!strncmp(base, "libasan.so", 10) || !strncmp(base, "libtsan.so", 10)) {
		*(const char **)data = info->dlpi_name;
		return 1;
	}
	return 0;
}

const char *proc_sanitizer_runtime(void)
{
	const char *path = NULL;

	dl_iterate_phdr(find_runtime, &path);
	return path;
}

const char *proc_preload(const char *lib)
{
	static char buf[2 * PATH_MAX + 16];
	const char *rt = proc_sanitizer_runtime();

	snprintf(buf, sizeof(buf), "LD_PRELOAD=%s%s%s", rt ? rt : "", rt ? " " : "", lib);
	return buf;
}

/* $var/rel, allocated; the test skips without var. */
static const char *env_path(const char *var, const char *rel)
{
	const char *dir = getenv(var);
	char *p = NULL;

	if (!dir)
		SKIP("%s is not set", var);
	ASSERT(asprintf(&p, "%s/%s", dir, rel) > 0);
	return p;
}

const char *proc_build_path(const char *rel)
{
	return env_path("TEST_BUILD", rel);
}

const char *proc_src_path(const char *rel)
{
	return env_path("TEST_SRC", rel);
}

/*
 * The file is unlinked at once and reached through /proc/<pid>/fd, which other processes can
 * open too: nothing is left behind however the test's process ends (tests end in _exit).
 */
const char *proc_tmp_file(void)
{
	static char paths[8][64];
	static int n;
	char tmpl[] = "/tmp/gprof-test-XXXXXX";
	int fd;

	ASSERT(n < 8);
	fd = mkstemp(tmpl);
	ASSERT(fd >= 0);
	unlink(tmpl);
	snprintf(paths[n], sizeof(paths[n]), "/proc/%d/fd/%d", (int)getpid(), fd);
	return paths[n++];
}

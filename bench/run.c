/*
 * Running one benchmark program in a clean environment and reading its key=value output;
 * the median and range of repeated figures.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

extern char **environ;

/* Inherited settings that would change what is measured. */
static const char *const scrubbed_prefix[] = {"GPROF_", "FAKEGPU_"};
static const char *const scrubbed[] = {"LD_PRELOAD", "NVTX_INJECTION64_PATH",
				       "CUDA_INJECTION64_PATH"};

static bool is_scrubbed(const char *var)
{
	size_t len = strcspn(var, "=");

	for (size_t i = 0; i < sizeof(scrubbed_prefix) / sizeof(scrubbed_prefix[0]); i++)
		if (strncmp(var, scrubbed_prefix[i], strlen(scrubbed_prefix[i])) == 0)
			return true;
	for (size_t i = 0; i < sizeof(scrubbed) / sizeof(scrubbed[0]); i++)
		if (strlen(scrubbed[i]) == len && strncmp(var, scrubbed[i], len) == 0)
			return true;
	return false;
}

/* In the child: the environment, stdout to the pipe, stderr to the log; then exec. */
static void child(const char *const argv[], const char *const env[], const char *err_path,
		  int out_fd)
{
	char name[256];
	int err_fd = open(err_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	for (char **e = environ; *e;)
		if (is_scrubbed(*e) && strcspn(*e, "=") < sizeof(name)) {
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
			unsetenv(name);
		} else {
			e++;
		}
	for (size_t i = 0; env && env[i]; i++)
		putenv((char *)env[i]);
	dup2(out_fd, STDOUT_FILENO);
	if (err_fd >= 0)
		dup2(err_fd, STDERR_FILENO);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int bench_run(const char *const argv[], const char *const env[], const char *err_path,
	      struct bench_out *out)
{
	size_t len = 0;
	int fds[2], st = 0;
	double t0 = mono_ms();
	pid_t pid;
	ssize_t n;

	out->text[0] = '\0';
	out->status = -1;
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0)
		child(argv, env, err_path, fds[1]);
	close(fds[1]);
	while (pid > 0 && (n = read(fds[0], out->text + len, BENCH_OUT_MAX - 1 - len)) > 0)
		len += (size_t)n;
	out->text[len] = '\0';
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	out->wall_ms = mono_ms() - t0;
	out->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return out->status == 0 ? 0 : -1;
}

double bench_value(const struct bench_out *out, const char *key)
{
	size_t klen = strlen(key);

	for (const char *p = out->text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, klen) == 0 && p[klen] == '=')
			return strtod(p + klen + 1, NULL);
	return NAN;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void bench_stat_of(double *v, int n, struct bench_stat *s)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[k++] = v[i];
	qsort(v, (size_t)k, sizeof(v[0]), cmp_double);
	s->n = k;
	s->lo = k ? v[0] : NAN;
	s->hi = k ? v[k - 1] : NAN;
	s->med = !k ? NAN : k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* The thread starter of thread.h, and descriptor tables of libgprof's own. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/thread.h"

/*
 * A thread of libgprof's needs little stack (its largest frames hold a 32 KiB deflate window
 * and paths); the default, `ulimit -s` (8 MiB), reserved for each of up to six threads, took
 * address space from a program under `ulimit -v`, whose own calls then failed. Sanitizers'
 * frames are larger: they keep the default.
 */
#define THREAD_STACK_BYTES (1u << 20)

static GPROF_TLS bool own_fds;

/*
 * What a new thread starts from, on its starter's stack until the thread has copied it: no
 * malloc or free on the new thread. glibc gives a thread its malloc arena, 64 MiB of address
 * space where that much is free, at its first malloc or free, so a thread of libgprof's that
 * needs neither never takes one from a program under `ulimit -v`.
 */
struct start {
	void *(*fn)(void *arg);
	void *arg;
	bool own_fds;
	int copied;
};

static void *started(void *arg)
{
	struct start *p = arg, s = *p;

	__atomic_store_n(&p->copied, 1, __ATOMIC_RELEASE);
	own_fds = s.own_fds;
	return s.fn(s.arg);
}

int gprof_thread_start(pthread_t *t, void *(*fn)(void *arg), void *arg)
{
	struct start s = {fn, arg, own_fds, 0};
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tmp;
	int rc;

	pthread_attr_init(&attr);
#ifndef SANITIZED
	pthread_attr_setstacksize(&attr, THREAD_STACK_BYTES);
#endif
	if (!t)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The new thread inherits the mask: blocked from its first instruction. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t ? t : &tmp, &attr, started, &s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	while (!rc && !__atomic_load_n(&s.copied, __ATOMIC_ACQUIRE))
		sched_yield();
	return -rc;
}

/*
 * The table's numbers 0-2 become /dev/null (or are closed without it) and every other
 * descriptor is closed: raw system calls, which sanitizers do not take for the program's
 * descriptors of the same numbers. ASan keeps 2, where it reports.
 */
static void let_go_of_the_programs(void)
{
	long null_fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC);
	const long keep = ASAN ? 2 : 3;

	for (long fd = 0; fd < keep; fd++)
		if (null_fd < 0)
			syscall(SYS_close, fd);
		else if (fd != null_fd)
			syscall(SYS_dup3, null_fd, fd, O_CLOEXEC);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0)
		return;
#endif
	for (long fd = 3, max = sysconf(_SC_OPEN_MAX); fd < max && fd < 65536; fd++)
		syscall(SYS_close, fd);
}

int gprof_thread_fds_ready(int (*reach_stderr)(void))
{
	/* TSan takes descriptors as numbers of one table per process: it would see races on
	 * numbers the program uses too. Its runs keep the program's table (and its checks). */
	return TSAN ? -ENOTSUP : reach_stderr();
}

int gprof_thread_own_fds(int ready)
{
	if (own_fds)
		return 0;
	if (ready)
		return ready;
	if (unshare(CLONE_FILES) != 0)
		return -errno;
	own_fds = true;
	let_go_of_the_programs();
	return 0;
}

bool gprof_thread_has_own_fds(void)
{
	return own_fds;
}

size_t gprof_address_space_left(void)
{
	char text[64];
	unsigned long pages;
	struct rlimit rl;
	ssize_t n = -1;
	int fd;

	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	/* The first number of statm: the pages mapped now, which the limit counts. */
	fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
	}
	if (n <= 0)
		return SIZE_MAX;
	text[n] = '\0';
	if (sscanf(text, "%lu", &pages) != 1)
		return SIZE_MAX;
	pages *= (unsigned long)sysconf(_SC_PAGESIZE);
	return rl.rlim_cur > pages ? (size_t)(rl.rlim_cur - pages) : 0;
}

const char *gprof_space_error(int err, char *buf, size_t size)
{
	size_t left = gprof_address_space_left();

	if (left == SIZE_MAX)
		snprintf(buf, size, "%s", strerror(-err));
	else
		snprintf(buf, size, "%s (ulimit -v leaves %zu MiB of address space)",
			 strerror(-err), left >> 20);
	return buf;
}

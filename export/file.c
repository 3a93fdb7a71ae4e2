/*
 * libgprof's own descriptors in a table that is the program's: kept above the numbers the
 * program uses, and checked before each use, since the program may close every descriptor
 * (closefrom, a daemon's start-up) or dup2 one of its own onto ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/internal.h"

#define HIGH_MAX 1024 /* the table grows to the number asked for: not beyond this */

int gprof_fd_high(int fd)
{
	struct rlimit rl;
	long from = HIGH_MAX;
	int high;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (long)rl.rlim_cur / 2 < from)
		from = (long)rl.rlim_cur / 2;
	high = fcntl(fd, F_DUPFD_CLOEXEC, from > 3 ? (int)from : 3);
	if (high < 0)
		high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (high < 0 && fd > 2)
		return fd;
	close(fd);
	return high < 0 ? -EMFILE : high;
}

void gprof_fd_proc_path(char *buf, size_t size, int fd)
{
	snprintf(buf, size, "/proc/thread-self/fd/%d", fd);
}

/* The descriptor is still the file we opened. */
static bool still_ours(const struct gprof_file *f)
{
	struct stat st;

	return f->fd >= 0 && fstat(f->fd, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino;
}

int gprof_file_adopt(struct gprof_file *f, int fd)
{
	char link[32];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) != 0)
		return -errno;
	f->fd = fd;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	gprof_fd_proc_path(link, sizeof(link), fd);
	n = readlink(link, f->path, sizeof(f->path) - 1);
	f->path[n > 0 ? n : 0] = '\0';
	return 0;
}

void gprof_file_named(struct gprof_file *f, const char *path)
{
	snprintf(f->path, sizeof(f->path), "%s", path);
}

int gprof_file_fd(struct gprof_file *f)
{
	int fd;

	if (still_ours(f))
		return f->fd;
	/* Closed or replaced by the program: the number is not ours to use or close. */
	f->fd = -1;
	fd = f->path[0] == '/' ? open(f->path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY) : -1;
	if (fd < 0)
		return -EBADF;
	f->fd = gprof_fd_high(fd);
	if (still_ours(f))
		return f->fd;
	if (f->fd >= 0)
		close(f->fd); /* another file at our path: not ours to write */
	f->fd = -1;
	return -EBADF;
}

int gprof_file_close(struct gprof_file *f)
{
	int err = 0;

	if (still_ours(f) && close(f->fd) != 0)
		err = -errno;
	f->fd = -1;
	return err;
}

int gprof_file_append(struct gprof_file *f, uint64_t *off, const void *buf, size_t len)
{
	const char *p = buf;
	int fd = gprof_file_fd(f);

	while (len && fd >= 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)*off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		*off += (uint64_t)n;
	}
	return fd < 0 ? fd : 0;
}

int gprof_file_finish(struct gprof_file *f, const void *buf, size_t len, uint64_t at, int err)
{
	int fd = err ? -1 : gprof_file_fd(f), close_err;

	if (!err && fd < 0)
		err = fd;
	if (!err && pwrite(fd, buf, len, (off_t)at) != (ssize_t)len)
		err = errno ? -errno : -EIO;
	close_err = gprof_file_close(f);
	return err ? err : close_err;
}

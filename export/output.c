/*
 * Where traces go: the GPROF_OUTPUT template, the rank of this process, the file name the
 * TensorBoard plugin expects, and creating and committing the file without overwriting any.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/internal.h"

extern char **environ;

static const char *env_get(char *const *env, const char *name, size_t len)
{
	for (env = env ? env : environ; env && *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

/* A non-negative decimal integer and nothing else, or -1. */
static long env_count(char *const *env, const char *name)
{
	const char *v = env_get(env, name, strlen(name));
	char *end;
	long n;

	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	return errno || *end ? -1 : n;
}

/* Launchers' variables, most specific first: torchrun, Open MPI, Slurm, PMI (MPICH). */
static const struct {
	const char *rank, *size;
} rank_vars[] = {
    {"RANK", "WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_NTASKS"},
    {"PMI_RANK", "PMI_SIZE"},
};

/*
 * The first rank variable set wins, with its own family's size; without that size the world
 * is taken as rank + 1. No rank variable: rank 0, size from the first size variable, or 1.
 */
void gprof_output_rank(char *const *env, struct gprof_rank *r)
{
	*r = (struct gprof_rank){.rank = 0, .world_size = 1};
	for (size_t i = 0; i < ARRAY_SIZE(rank_vars); i++) {
		long rank = env_count(env, rank_vars[i].rank);
		long size = env_count(env, rank_vars[i].size);

		if (rank >= 0) {
			r->rank = rank;
			r->world_size = size > rank ? size : rank + 1;
			return;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(rank_vars); i++) {
		long size = env_count(env, rank_vars[i].size);

		if (size > 0) {
			r->world_size = size;
			return;
		}
	}
}

static void host_name(char *out, size_t size)
{
	if (gethostname(out, size) != 0 || !out[0])
		snprintf(out, size, "localhost");
	out[size - 1] = '\0';
	for (char *p = out; *p; p++)
		if (*p == '/')
			*p = '_';
}

/* A computed %-sequence's value at most: a host name (HOST_NAME_MAX is 64), a pid, a rank. */
#define SEQ_MAX 256

/*
 * The value of the %-sequence at t (just past the '%'); *used is how many bytes of t it takes.
 * Computed values go into tmp; an environment variable's is returned as it is.
 */
static const char *expand_one(const char *t, char *const *env, char tmp[SEQ_MAX], size_t *used)
{
	struct gprof_rank r;
	const char *close, *v;

	*used = 1;
	switch (*t) {
	case 'h':
		host_name(tmp, SEQ_MAX);
		return tmp;
	case 'p':
		snprintf(tmp, SEQ_MAX, "%d", (int)getpid());
		return tmp;
	case 'r':
		gprof_output_rank(env, &r);
		snprintf(tmp, SEQ_MAX, "%ld", r.rank);
		return tmp;
	case '%':
		return "%";
	case 'q':
		close = t[1] == '{' ? strchr(t + 2, '}') : NULL;
		if (!close)
			break;
		v = env_get(env, t + 2, (size_t)(close - t - 2));
		*used = (size_t)(close - t) + 1;
		return v ? v : "";
	}
	*used = 0;
	return "%"; /* not a sequence we know: kept as it is */
}

int gprof_output_expand(const char *tmpl, char *const *env, char *out, size_t size)
{
	char tmp[SEQ_MAX];
	size_t len = 0, used;

	if (!size)
		return -ENAMETOOLONG;
	for (const char *t = tmpl; *t;) {
		const char *piece = t;
		size_t n = 1;

		if (*t == '%') {
			piece = expand_one(t + 1, env, tmp, &used);
			n = strlen(piece);
			t += 1 + used;
		} else {
			t++;
		}
		if (len + n >= size) {
			/* what fits, for the message that names the folder */
			memcpy(out + len, piece, size - 1 - len);
			out[size - 1] = '\0';
			return -ENAMETOOLONG;
		}
		memcpy(out + len, piece, n);
		len += n;
	}
	out[len] = '\0';
	return 0;
}

bool gprof_output_unset(const char *tmpl, char *const *env, char *name, size_t size)
{
	char tmp[SEQ_MAX];
	size_t used;

	for (const char *t = tmpl; *t; t++) {
		if (*t != '%')
			continue;
		expand_one(t + 1, env, tmp, &used); /* "q{VAR}": used counts q, the braces, VAR */
		if (t[1] == 'q' && used > 1 && !env_get(env, t + 3, used - 3)) {
			snprintf(name, size, "%.*s", (int)(used - 3), t + 3);
			return true;
		}
		t += used; /* the loop steps past the sequence's last byte */
	}
	return false;
}

int gprof_output_folder(const char *tmpl, const char *base, char *out, size_t size)
{
	char dir[PATH_MAX];
	int err = gprof_output_expand(tmpl, NULL, dir, sizeof(dir));

	if (err) {
		snprintf(out, size, "%s", dir); /* its beginning, for the message */
		return err;
	}
	if (dir[0] != '/' && base[0])
		return snprintf(out, size, "%s/%s", base, dir) < (int)size ? 0 : -ENAMETOOLONG;
	return snprintf(out, size, "%s", dir) < (int)size ? 0 : -ENAMETOOLONG;
}

int gprof_output_name(uint64_t unix_ns, const char *suffix, char *out, size_t size)
{
	char host[SEQ_MAX];
	int n;

	host_name(host, sizeof(host));
	n = snprintf(out, size, "%s_%d.%llu%s", host, (int)getpid(), (unsigned long long)unix_ns,
		     suffix);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* mkdir -p: every missing component, 0755. */
static int make_dirs(const char *dir)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(path))
		return len ? -ENAMETOOLONG : -ENOENT;
	memcpy(path, dir, len + 1);
	for (char *p = path + 1; p <= path + len; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = c;
	}
	struct stat st;

	if (stat(dir, &st) != 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

static bool trusted_owner(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

/*
 * A symbolic link another user owns on the way to the folder (one planted in a shared sticky
 * folder such as /tmp, where the output folder was to be made): that user chooses where traces
 * go, even into a folder of ours. Before the folder is made: mkdir -p would follow it.
 */
static int check_links(const char *dir, const char **what)
{
	char path[PATH_MAX];
	struct stat st;

	*what = "refusing the output folder (its path goes through a symbolic link another user "
		"owns)";
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && !trusted_owner(st.st_uid))
			return -EPERM;
		*p = c;
		if (!c)
			return 0;
	}
}

/*
 * A folder where another user could take traces or put files in their place: one that user
 * owns and every user may write without the sticky bit, or a symbolic link to a folder of
 * another user. Root's folders are trusted.
 */
static int check_owner(const char *dir, const char **what)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);
	struct stat st, link;

	while (len > 1 && dir[len - 1] == '/')
		len--; /* lstat("link/") would follow the link */
	snprintf(path, sizeof(path), "%.*s", (int)len, dir);
	if (lstat(path, &link) != 0 || stat(path, &st) != 0)
		return -errno;
	if (trusted_owner(st.st_uid))
		return 0;
	if (S_ISLNK(link.st_mode)) {
		*what =
		    "refusing the output folder (a symbolic link to a folder another user owns)";
		return -EPERM;
	}
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
		*what = "refusing the output folder (another user owns it and every user may write "
			"in it: no sticky bit)";
		return -EPERM;
	}
	return 0;
}

/*
 * linkat refused the unnamed file its name (a seccomp filter; a /proc without the link): files
 * are made under their .partial name from then on. The writer's thread alone reads and sets it.
 */
static bool unnamed_refused;

/* An error that says the call itself is refused here, rather than what it was asked to do. */
static bool refused(int err)
{
	return err == EPERM || err == ENOSYS || err == EINVAL || err == EOPNOTSUPP;
}

int gprof_output_create(const char *dir, const char *name, const char **what, bool *unnamed)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, err;

	err = check_links(dir, what);
	if (!err) {
		*what = "cannot create the output folder";
		err = make_dirs(dir);
	}
	if (!err)
		err = check_owner(dir, what);
	if (err)
		return err;
	*what = "cannot create a trace file in";
	if (snprintf(path, sizeof(path), "%s/%s.partial", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	/* gprof_output_publish names it through /proc */
	fd = !unnamed_refused && access("/proc/thread-self/fd", X_OK) == 0
		 ? open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644)
		 : -1;
	*unnamed = fd >= 0;
	if (fd < 0)
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	/* Never 0-2 (the program may run with stdout closed), and above what it uses. */
	return fd >= 0 ? gprof_fd_high(fd) : -errno;
}

int gprof_output_publish(int fd, const struct stat *ours, const char *path)
{
	char self[64];
	struct stat st;

	gprof_fd_proc_path(self, sizeof(self), fd);
	/* linkat refuses to replace what is there; through /proc it needs no privilege */
	if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0) {
		if (errno == ENOENT && fcntl(fd, F_GETFD) < 0)
			return -EBADF;
		if (!refused(errno) && errno != EACCES)
			return -errno;
		unnamed_refused = true;
		return -EAGAIN;
	}
	/* The program may have closed fd and opened a file of its own at its number. */
	if (lstat(path, &st) == 0 && st.st_dev == ours->st_dev && st.st_ino == ours->st_ino)
		return 0;
	unlink(path);
	return -EBADF;
}

int gprof_output_commit(const char *path)
{
	char partial[PATH_MAX];
	struct stat st;

	if (snprintf(partial, sizeof(partial), "%s.partial", path) >= (int)sizeof(partial))
		return -ENAMETOOLONG;
	if (renameat2(AT_FDCWD, partial, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (!refused(errno))
		return -errno;
	/* A file system or a seccomp filter without RENAME_NOREPLACE: link() refuses to replace. */
	if (link(partial, path) == 0) {
		unlink(partial);
		return 0;
	}
	if (!refused(errno))
		return -errno;
	/* No links either (vfat, a filter): rename(), which replaces, where nothing is. */
	if (lstat(path, &st) == 0)
		return -EEXIST;
	return errno == ENOENT && rename(partial, path) == 0 ? 0 : -errno;
}

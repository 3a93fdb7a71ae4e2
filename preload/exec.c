/*
 * exec: the process image ends without exit, so without its handlers. Before the real call the
 * session ends as at exit (gprof_preload_exec), so that the window in progress is on disk whole;
 * the new image, if it is a CUDA program, starts a session of its own. glibc's exec functions
 * call one another inside the library, so each is interposed; execl's lists become arrays.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <unistd.h>

#include "common/compiler.h"
#include "preload/preload.h"

typedef int (*exec_fn)(const char *path, char *const argv[], char *const envp[]);

extern char **environ;

static void *real_exec(const char *symbol)
{
	return gprof_resolve_in(symbol, "libc.so");
}

/* The real call, after the session's end; on a failure, the line that says what was ended. */
#define EXEC_CALL(what, call)                                   \
	do {                                                    \
		bool ended = gprof_preload_exec();              \
		int ret = (call);                               \
		if (ended)                                      \
			gprof_preload_exec_failed(what, errno); \
		return ret;                                     \
	} while (0)

GPROF_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	static exec_fn real;

	if (!real)
		real = (exec_fn)real_exec("execve");
	EXEC_CALL(path, real(path, argv, envp));
}

GPROF_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	static exec_fn real;

	if (!real)
		real = (exec_fn)real_exec("execvpe");
	EXEC_CALL(file, real(file, argv, envp));
}

GPROF_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

GPROF_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

GPROF_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	static int (*real)(int, char *const[], char *const[]);

	if (!real)
		real = (int (*)(int, char *const[], char *const[]))real_exec("fexecve");
	EXEC_CALL("a file by its descriptor", real(fd, argv, envp));
}

/* execl, execlp, execle: the list after arg0 (up to its NULL, then execle's envp) as an array. */
enum exec_list {
	LIST_PATH,
	LIST_SEARCH,
	LIST_ENV,
};

static int exec_list(enum exec_list kind, const char *path, const char *arg0, va_list ap)
{
	va_list count;
	size_t n = 1;

	va_copy(count, ap);
	while (va_arg(count, char *))
		n++;
	va_end(count);

	char *argv[n + 1];

	argv[0] = (char *)arg0;
	for (size_t i = 1; i <= n; i++) /* the last is the NULL */
		argv[i] = va_arg(ap, char *);
	if (kind == LIST_SEARCH)
		return execvpe(path, argv, environ);
	return execve(path, argv, kind == LIST_ENV ? va_arg(ap, char *const *) : environ);
}

#define EXEC_LIST(kind, path, arg0)                    \
	do {                                           \
		va_list ap;                            \
		int ret;                               \
                                                       \
		va_start(ap, arg0);                    \
		ret = exec_list(kind, path, arg0, ap); \
		va_end(ap);                            \
		return ret;                            \
	} while (0)

GPROF_EXPORT int execl(const char *path, const char *arg0, ...)
{
	EXEC_LIST(LIST_PATH, path, arg0);
}

GPROF_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	EXEC_LIST(LIST_SEARCH, file, arg0);
}

GPROF_EXPORT int execle(const char *path, const char *arg0, ...)
{
	EXEC_LIST(LIST_ENV, path, arg0);
}

/*
 * Preloaded after libgprof: counts the calls that libgprof's named threads (gprof-writer, its
 * gprof-deflate compressors, gprof-log) make into the program's malloc. glibc gives a thread
 * that first calls malloc or free a malloc arena of its own (64 MiB of address space), so
 * each such call is one a program under `ulimit -v` pays for. The count and the first call
 * go to the file ARENA_PROBE names, mapped shared: it holds what happened up to the process's
 * last instruction, whatever order the libraries' destructors run in.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/compiler.h"

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

struct probe {
	unsigned long calls;
	char first[248];
};

static struct probe *probe;

__attribute__((constructor)) static void probe_open(void)
{
	const char *path = getenv("ARENA_PROBE");
	int fd = path ? open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
	void *p;

	if (fd < 0 || ftruncate(fd, sizeof(*probe)) != 0)
		abort();
	p = mmap(NULL, sizeof(*probe), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		abort();
	probe = p;
}

/* A call of `what`, made from `from`: counted when the calling thread is one of libgprof's. */
static void note(const char *what, const void *from)
{
	char name[17] = "";
	Dl_info info = {0};
	int saved = errno;

	prctl(PR_GET_NAME, name);
	if (probe && !strncmp(name, "gprof-", 6) &&
	    __atomic_fetch_add(&probe->calls, 1, __ATOMIC_RELAXED) == 0) {
		dladdr(from, &info);
		snprintf(probe->first, sizeof(probe->first), "%s by %s, from %s+%#lx", what, name,
			 info.dli_fname ? info.dli_fname : "?",
			 (unsigned long)((const char *)from - (const char *)info.dli_fbase));
	}
	errno = saved;
}

#define CALLER __builtin_return_address(0)

GPROF_EXPORT void *malloc(size_t n)
{
	note("malloc", CALLER);
	return __libc_malloc(n);
}

GPROF_EXPORT void *calloc(size_t n, size_t size)
{
	note("calloc", CALLER);
	return __libc_calloc(n, size);
}

GPROF_EXPORT void *realloc(void *p, size_t n)
{
	note("realloc", CALLER);
	return __libc_realloc(p, n);
}

GPROF_EXPORT void free(void *p)
{
	if (p)
		note("free", CALLER);
	__libc_free(p);
}

GPROF_EXPORT void *memalign(size_t align, size_t n)
{
	note("memalign", CALLER);
	return __libc_memalign(align, n);
}

GPROF_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	note("aligned_alloc", CALLER);
	return __libc_memalign(align, n);
}

GPROF_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	note("posix_memalign", CALLER);
	*out = __libc_memalign(align, n);
	return *out ? 0 : ENOMEM;
}

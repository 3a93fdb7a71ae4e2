/*
 * Finding the real runtime (or NCCL) behind a hook: the next definition in the global scope,
 * or, when the library was loaded RTLD_LOCAL (dlsym(RTLD_NEXT) then finds nothing), the copy
 * already loaded in the process.
 */
#include <dlfcn.h>

#define PR_FMT "preload: "
#include "common/dso.h"
#include "common/log.h"
#include "preload/preload.h"

/* The loaded objects of the name, noted while the loader lists them (their names stay). */
struct candidates {
	const char *path[16];
	unsigned n;
};

static int note(const char *path, void *arg)
{
	struct candidates *c = arg;

	c->path[c->n++] = path;
	return c->n == sizeof(c->path) / sizeof(c->path[0]);
}

/*
 * Each candidate is opened once the listing is over: dlopen inside dl_iterate_phdr's callback
 * holds the loader's list while a sanitizer's dlopen interceptor takes its own lock, and another
 * thread's dlopen takes the two the other way round (a TSan run hung so).
 */
void *gprof_resolve_in(const char *symbol, const char *lib)
{
	struct candidates c = {.n = 0};
	void *p = dlsym(RTLD_NEXT, symbol), *h;

	if (p)
		return p;
	gprof_dso_each(lib, note, &c);
	for (unsigned i = 0; !p && i < c.n; i++) {
		/* RTLD_NOLOAD: only a library that is there; the handle stays open on purpose. */
		h = dlopen(c.path[i], RTLD_LAZY | RTLD_NOLOAD);
		p = h ? dlsym(h, symbol) : NULL;
	}
	if (!p)
		pr_dbg("%s: no %s defines it", symbol, lib);
	return p;
}

void *gprof_resolve(const char *symbol)
{
	return gprof_resolve_in(symbol, "libcudart.so");
}

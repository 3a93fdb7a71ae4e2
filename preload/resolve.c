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

struct find_ctx {
	const char *symbol;
	void *found;
};

static int find_in_object(const char *path, void *arg)
{
	struct find_ctx *ctx = arg;
	/* RTLD_NOLOAD: only a library that is already there; the handle stays open on purpose. */
	void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);

	if (!h)
		return 0;
	ctx->found = dlsym(h, ctx->symbol);
	return ctx->found != NULL;
}

void *gprof_resolve_in(const char *symbol, const char *lib)
{
	struct find_ctx ctx = {.symbol = symbol};
	void *p = dlsym(RTLD_NEXT, symbol);

	if (p)
		return p;
	gprof_dso_each(lib, find_in_object, &ctx);
	if (!ctx.found)
		pr_dbg("%s: no %s defines it", symbol, lib);
	return ctx.found;
}

void *gprof_resolve(const char *symbol)
{
	return gprof_resolve_in(symbol, "libcudart.so");
}

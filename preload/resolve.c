/*
 * Finding the real runtime behind a hook: the next definition in the global scope, or, when
 * libcudart was loaded RTLD_LOCAL (dlsym(RTLD_NEXT) then finds nothing), the copy already
 * loaded in the process.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#define PR_FMT "preload: "
#include "common/log.h"
#include "preload/preload.h"

struct find_ctx {
	const char *symbol;
	void *found;
};

static int find_in_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_ctx *ctx = data;
	const char *base = strrchr(info->dlpi_name, '/');
	void *h;

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (strncmp(base, "libcudart.so", 12) != 0)
		return 0;
	/* RTLD_NOLOAD: only a library that is already there; the handle stays open on purpose. */
	h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	ctx->found = dlsym(h, ctx->symbol);
	return ctx->found != NULL;
}

void *gprof_resolve(const char *symbol)
{
	struct find_ctx ctx = {.symbol = symbol};
	void *p = dlsym(RTLD_NEXT, symbol);

	if (p)
		return p;
	dl_iterate_phdr(find_in_object, &ctx);
	if (!ctx.found)
		pr_dbg("%s: no libcudart defines it", symbol);
	return ctx.found;
}

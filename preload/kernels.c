/* Kernel names, asked of the runtime once per host stub or cudaKernel_t and kept. */
#include <cuda_runtime_api.h>

#include "common/demangle.h"
#include "common/map.h"
#include "export/export.h"
#include "preload/preload.h"

/* Interned name by host stub or cudaKernel_t, shared by the program's threads; never grows. */
static struct gprof_map names;

int gprof_kernels_init(void)
{
	return gprof_map_init(&names, GPROF_PRELOAD_MAP_SLOTS);
}

/* A kernel not seen yet: its name from the runtime, kept. Out of line: its frame is large. */
static __attribute__((noinline)) const struct gprof_export_str *name_first(const void *func)
{
	typedef cudaError_t (*get_name_fn)(const char **, const void *);
	static void *cache;
	get_name_fn get_name;
	const struct gprof_export_str *s;
	const char *raw = NULL;
	char buf[GPROF_EXPORT_STR_MAX];

	get_name = (get_name_fn)gprof_runtime_fn(&cache, "cudaFuncGetName");
	if (!get_name || get_name(&raw, func) != cudaSuccess || !raw)
		return NULL;
	s = gprof_export_intern(gprof_demangle(raw, buf, sizeof(buf)));
	gprof_map_put_shared(&names, (uintptr_t)func, (uintptr_t)s);
	return s;
}

const struct gprof_export_str *gprof_kernel_name(const void *func)
{
	const struct gprof_export_str *s =
	    (const void *)(uintptr_t)gprof_map_get_shared(&names, (uintptr_t)func);

	return likely(s) ? s : name_first(func);
}

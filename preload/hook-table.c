/* The tables of preload.h's GPROF_HOOKS and GPROF_HOOK_FAMILIES, one row per enum value. */
#include <cupti_runtime_cbid.h>

#include "common/config.h"
#include "export/export.h"
#include "preload/preload.h"

const struct gprof_hook_info gprof_hook_info[GPROF_HOOK_COUNT] = {
#define X(sym, name, version, fam)                                                \
	[GPROF_HOOK_##sym] = {.symbol = #sym,                                     \
			      .public_name = name,                                \
			      .cbid = CUPTI_RUNTIME_TRACE_CBID_##sym##_##version, \
			      .family = GPROF_FAMILY_##fam},
    GPROF_HOOKS(X)
#undef X
};

const struct gprof_hook_family_info gprof_hook_family[GPROF_FAMILY_COUNT] = {
#define X(fam, a, f) [GPROF_FAMILY_##fam] = {.name = #fam, .acts = (a), .flags = (f)},
    GPROF_HOOK_FAMILIES(X)
#undef X
};

/*
 * Demangling through __cxa_demangle, found at run time: libgprof itself links no C++ runtime.
 * It is taken from a C++ runtime the process already has, global or not (Python loads PyTorch's
 * libraries, and with them libstdc++, with RTLD_LOCAL); none is ever loaded for it.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "common/demangle.h"
#include "common/dso.h"

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static cxa_demangle_fn find_demangle(void)
{
	static const char *const runtimes[] = {"libstdc++.so.6", "libc++abi.so.1", "libc++.so.1"};
	void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");

	for (size_t i = 0; !f && i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
		f = gprof_dso_sym(runtimes[i], "__cxa_demangle");
	return (cxa_demangle_fn)f;
}

const char *gprof_demangle(const char *name, char *out, size_t size)
{
	static cxa_demangle_fn cached; /* found once; a race only looks it up twice */
	cxa_demangle_fn demangle = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	const char *src = name ? name : "";
	char *d = NULL;
	int status = -1;

	if (!size)
		return out;
	if (!demangle) {
		demangle = find_demangle();
		__atomic_store_n(&cached, demangle, __ATOMIC_RELAXED);
	}
	if (demangle && src[0] == '_' && src[1] == 'Z')
		d = demangle(src, NULL, NULL, &status);
	if (d && status == 0)
		src = d;
	strncpy(out, src, size - 1);
	out[size - 1] = '\0';
	free(d);
	return out;
}

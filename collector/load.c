/*
 * Finding libcupti (DESIGN.md's order) and resolving its entry points into one table (the
 * caller's: gprof_coll.cupti). Record layouts differ between CUPTI major versions, so only the
 * major version libgprof was built for is accepted.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/internal.h"
#include "common/dso.h"

#define MAJOR	 13
#define SONAME	 "libcupti.so.13"
#define FALLBACK "/usr/local/cuda"

_Static_assert(CUPTI_API_VERSION / 10000 == MAJOR, "SONAME names the headers' CUPTI version");

/* $CUDA_HOME, read once by gprof_coll_load_env() at start-up (the program may setenv later). */
static char cuda_home[PATH_MAX];

void gprof_coll_load_env(void)
{
	const char *home = getenv("CUDA_HOME");

	snprintf(cuda_home, sizeof(cuda_home), "%s", home && *home ? home : FALLBACK);
}

#define SYM(sym, field, required)                                   \
	{                                                           \
#sym, offsetof(struct gprof_cupti, field), required \
	}
static const struct {
	const char *name;
	size_t offset;
	bool required;
} symbols[] = {
    SYM(cuptiGetVersion, get_version, true),
    SYM(cuptiGetResultString, result_string, true),
    SYM(cuptiSubscribe, subscribe, true),
    SYM(cuptiUnsubscribe, unsubscribe, false),
    SYM(cuptiActivityEnable, enable, true),
    SYM(cuptiActivityDisable, disable, true),
    SYM(cuptiActivityRegisterCallbacks, register_callbacks, true),
    SYM(cuptiActivityFlushAll, flush_all, true),
    SYM(cuptiActivityGetNextRecord, next_record, true),
    SYM(cuptiActivityGetNumDroppedRecords, dropped, true),
    SYM(cuptiGetCallbackName, callback_name, false),
    SYM(cuptiSetThreadIdType, set_thread_id_type, false),
    SYM(cuptiActivityPushExternalCorrelationId, push_external, false),
    SYM(cuptiActivityPopExternalCorrelationId, pop_external, false),
    SYM(cuptiEnableCallback, enable_callback, false),
};

/* Copies src into dst (size bytes), cut if longer. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* dlopen, keeping the first failure's reason in why. */
static void *open_lib(const char *path, char *why, size_t why_len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const char *err = h ? NULL : dlerror();

	if (!h && !why[0])
		copy_str(why, why_len, err ? err : path);
	return h;
}

/* Candidates next to a loaded libcudart: its folder, pip's and the toolkit's CUPTI folders. */
static void *next_to_cudart(char *why, size_t why_len)
{
	static const char *const rel[] = {
	    "",
	    "../../cuda_cupti/lib/",
	    "../extras/CUPTI/lib64/",
	    "../../extras/CUPTI/lib64/",
	};
	char dir[PATH_MAX], path[PATH_MAX * 2];
	char *slash;
	void *h = NULL;

	if (!gprof_dso_find("libcudart.so", dir, sizeof(dir)) || !(slash = strrchr(dir, '/')))
		return NULL;
	slash[1] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(rel) && !h; i++) {
		snprintf(path, sizeof(path), "%s%s" SONAME, dir, rel[i]);
		h = open_lib(path, why, why_len);
	}
	return h;
}

static void *in_cuda_home(char *why, size_t why_len)
{
	static const char *const rel[] = {"/extras/CUPTI/lib64/", "/lib64/"};
	const char *home = cuda_home[0] ? cuda_home : FALLBACK;
	char path[PATH_MAX * 2];
	void *h = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(rel) && !h; i++) {
		snprintf(path, sizeof(path), "%s%s" SONAME, home, rel[i]);
		h = open_lib(path, why, why_len);
	}
	return h;
}

static void *search(char *why, size_t why_len)
{
	char path[PATH_MAX];
	void *h = NULL;

	if (gprof_dso_find("libcupti.so", path, sizeof(path)))
		h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = next_to_cudart(why, why_len);
	if (!h)
		h = in_cuda_home(why, why_len);
	if (!h)
		h = open_lib(SONAME, why, why_len);
	if (!h)
		snprintf(why, why_len,
			 "no " SONAME " found (next to libcudart, in $CUDA_HOME, or "
			 "on the library path); set GPROF_CUPTI_LIB to its path");
	return h;
}

static int resolve(struct gprof_cupti *cupti, char *why, size_t why_len)
{
	for (size_t i = 0; i < ARRAY_SIZE(symbols); i++) {
		void *p = dlsym(cupti->handle, symbols[i].name);

		if (!p && symbols[i].required) {
			snprintf(why, why_len, "%s has no %s", cupti->path, symbols[i].name);
			return -ENOENT;
		}
		memcpy((char *)cupti + symbols[i].offset, &p, sizeof(p));
	}
	return 0;
}

/* The file the handle came from, absolute when possible. */
static void library_path(struct gprof_cupti *cupti, void *h)
{
	struct link_map *lm = NULL;

	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name)
		return;
	if (!realpath(lm->l_name, cupti->path))
		copy_str(cupti->path, sizeof(cupti->path), lm->l_name);
}

int gprof_coll_load(struct gprof_cupti *cupti, const char *lib, char *why, size_t why_len)
{
	char err[512] = "";
	int rc;

	why[0] = '\0';
	cupti->handle = lib && *lib ? open_lib(lib, err, sizeof(err)) : search(err, sizeof(err));
	if (!cupti->handle) {
		if (lib && *lib)
			snprintf(why, why_len, "GPROF_CUPTI_LIB='%s' cannot be loaded: %s", lib,
				 err);
		else
			snprintf(why, why_len, "%s", err);
		return -ENOENT;
	}
	library_path(cupti, cupti->handle);
	rc = resolve(cupti, why, why_len);
	if (rc)
		return rc;
	/* Some libraries answer 0 without a driver: then the version is unknown, not wrong. */
	if (cupti->get_version(&cupti->version) != CUPTI_SUCCESS)
		cupti->version = 0;
	if (cupti->version && cupti->version / 10000 != MAJOR) {
		snprintf(why, why_len,
			 "%s has CUPTI API version %u; libgprof reads the records of "
			 "version %d.x only",
			 cupti->path, cupti->version, MAJOR);
		return -EPROTO;
	}
	gprof_coll_names_use(cupti->callback_name);
	return 0;
}

const char *gprof_coll_strerror(const struct gprof_cupti *cupti, CUptiResult r, char *buf,
				size_t len)
{
	const char *s = NULL;

	if (!cupti->result_string || cupti->result_string(r, &s) != CUPTI_SUCCESS || !s)
		s = "CUPTI error";
	snprintf(buf, len, "%s (%d)", s, (int)r);
	return buf;
}

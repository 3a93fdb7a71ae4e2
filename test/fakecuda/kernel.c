/*
 * Kernels: host stub -> mangled name (nvcc's __cudaRegisterFunction, or dladdr for a stub that
 * was never registered), driver functions by module and name, and each kernel's duration from
 * the model the test controls (FAKEGPU_KERNEL_NS, FAKEGPU_KERNEL_TABLE).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/sim.h"

#define DEFAULT_DURATION_NS  5000
#define REGISTERS_PER_THREAD 32

struct entry {
	struct fakecuda_kernel k; /* first: handles point at it */
	const void *module;	  /* driver functions: the CUmodule */
};

/* Every kernel ever named, never freed (records keep pointing at the names); under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry **entries;
static size_t n_entries, cap_entries;

/*
 * FAKEGPU_KERNEL_TABLE="text=ns,..." gives the duration of the kernels whose mangled name
 * contains `text` (first match wins); FAKEGPU_KERNEL_NS that of every other kernel.
 */
static uint64_t model_duration(const char *name)
{
	const char *table = getenv("FAKEGPU_KERNEL_TABLE");
	const char *dflt = getenv("FAKEGPU_KERNEL_NS");
	uint64_t ns = dflt && *dflt ? strtoull(dflt, NULL, 0) : DEFAULT_DURATION_NS;
	char *copy, *save = NULL;

	if (!table || !(copy = strdup(table)))
		return ns;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strrchr(tok, '=');

		if (!eq)
			continue;
		*eq = '\0';
		if (*tok && strstr(name, tok)) {
			ns = strtoull(eq + 1, NULL, 0);
			break;
		}
	}
	free(copy);
	return ns;
}

/* Adds a kernel; called with lock held. */
static struct entry *add(const void *host_fn, const void *module, const char *name)
{
	struct entry *e = calloc(1, sizeof(*e));

	if (!e || !(e->k.name = strdup(name)))
		goto fail;
	if (n_entries == cap_entries) {
		size_t cap = cap_entries ? 2 * cap_entries : 32;
		struct entry **p = realloc(entries, cap * sizeof(*p));

		if (!p)
			goto fail;
		entries = p;
		cap_entries = cap;
	}
	e->k.registers = REGISTERS_PER_THREAD;
	e->k.host_fn = host_fn;
	e->k.duration_ns = model_duration(name);
	e->module = module;
	entries[n_entries++] = e;
	return e;
fail:
	if (e)
		free((void *)e->k.name);
	free(e);
	return NULL;
}

/* The entry of a handle or host stub; called with lock held. */
static struct entry *lookup(const void *p)
{
	for (size_t i = 0; i < n_entries; i++)
		if ((const void *)entries[i] == p || (p && entries[i]->k.host_fn == p))
			return entries[i];
	return NULL;
}

const struct fakecuda_kernel *fakecuda_kernel_register(const void *host_fn, const char *name)
{
	struct entry *e;

	pthread_mutex_lock(&lock);
	e = lookup(host_fn);
	if (!e)
		e = add(host_fn, NULL, name);
	pthread_mutex_unlock(&lock);
	return e ? &e->k : NULL;
}

const struct fakecuda_kernel *fakecuda_kernel_function(const void *module, const char *name)
{
	struct entry *e = NULL;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_entries && !e; i++)
		if (entries[i]->module == module && !entries[i]->k.host_fn &&
		    !strcmp(entries[i]->k.name, name))
			e = entries[i];
	if (!e)
		e = add(NULL, module, name);
	pthread_mutex_unlock(&lock);
	return e ? &e->k : NULL;
}

const struct fakecuda_kernel *fakecuda_kernel_find(const void *fn_or_handle)
{
	struct entry *e;
	Dl_info info;

	if (!fn_or_handle)
		return NULL;
	pthread_mutex_lock(&lock);
	e = lookup(fn_or_handle);
	pthread_mutex_unlock(&lock);
	if (e)
		return &e->k;
	/* A stub nobody registered: its exported symbol names the kernel. */
	if (dladdr(fn_or_handle, &info) && info.dli_sname && info.dli_saddr == fn_or_handle)
		return fakecuda_kernel_register(fn_or_handle, info.dli_sname);
	return NULL;
}

/*
 * cuGetExportTable: the private tables NVIDIA's CUDA 13.0 runtime (libcudart.so.13, the static
 * cudart, the copies inside cuBLAS) asks the driver for before it makes any call. Their UUIDs and
 * slot layouts are undocumented and belong to this toolkit version (test/fakecuda/README.md,
 * "NVIDIA's runtime on the simulated driver"). One of them carries the runtime's own API calls to
 * tools: those become the simulation's RUNTIME callbacks and records, with the real runtime's
 * cbids, parameters, return values and kernel names.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/fakecuda/driver.h"

typedef uintptr_t word;

/* Slots nobody is known to call: say so once, and fail the call. */
static word unknown_slot(void)
{
	static bool said;

	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		fprintf(stderr, "fakecuda: the runtime called an export-table slot the simulated "
				"driver does not have\n");
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* Slots that are called and need do nothing here. */
static word nothing(void)
{
	return CUDA_SUCCESS;
}

/*
 * ---- which code is a CUDA runtime: libcudart.so.13, or the program that holds the static
 *      cudart, once it asks for the tables. Libraries that hold a runtime of their own and also
 *      call the driver themselves (cuBLAS) are not: their driver calls are theirs, and traced.
 */

#define MAX_RUNTIMES 8

static const struct link_map *runtimes[MAX_RUNTIMES];

static const struct link_map *object_of(const void *code)
{
	struct link_map *map = NULL;
	Dl_info info;

	return dladdr1(code, &info, (void **)&map, RTLD_DL_LINKMAP) ? map : NULL;
}

void fakecuda_drv_runtime_seen(const void *caller)
{
	const struct link_map *map = object_of(caller), *none = NULL;
	const char *base = map ? strrchr(map->l_name, '/') : NULL;

	if (!map || (map->l_name[0] && strncmp(base ? base + 1 : map->l_name, "libcudart.", 10)))
		return;
	for (int i = 0; i < MAX_RUNTIMES; i++, none = NULL)
		if (__atomic_load_n(&runtimes[i], __ATOMIC_ACQUIRE) == map ||
		    __atomic_compare_exchange_n(&runtimes[i], &none, map, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return;
}

static bool from_runtime(const void *caller)
{
	static int trace_all = -1; /* FAKEGPU_DRIVER_TRACE_ALL=1: a debugging aid */
	const struct link_map *map;

	if (trace_all < 0)
		trace_all = getenv("FAKEGPU_DRIVER_TRACE_ALL") != NULL;
	if (trace_all || !__atomic_load_n(&runtimes[0], __ATOMIC_ACQUIRE))
		return false;
	map = object_of(caller);
	for (int i = 0; map && i < MAX_RUNTIMES; i++)
		if (__atomic_load_n(&runtimes[i], __ATOMIC_ACQUIRE) == map)
			return true;
	return false;
}

void fakecuda_drv_enter(struct fakecuda_call *c, CUpti_CallbackId cbid, const char *name,
			const void *params, const char *symbol, const void *caller)
{
	fakecuda_api_enter_driver(c, cbid, name, params, symbol, from_runtime(caller));
}

/* ---- 6bd5fb6c: the runtime's interface; [2] gives a device's primary context ---- */

static CUresult primary_context(CUcontext *pctx, CUdevice dev)
{
	if (!pctx || dev < 0 || dev >= fakecuda_device_count())
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = fakecuda_context(dev);
	return CUDA_SUCCESS;
}

/* ---- a094798c: which runtime calls to report to tools, and the report ---- */

/* One word per runtime cbid: the runtime reports a call to tools_report when its word is set. */
static uint32_t report_cbids[1024] __attribute__((aligned(64)));
static uint32_t report_other[14] __attribute__((aligned(64)));

static void report_cbid_words(void **words, size_t *n)
{
	*words = report_cbids;
	*n = sizeof(report_cbids) / sizeof(report_cbids[0]);
}

static void report_other_words(void **words, size_t *n)
{
	*words = report_other;
	*n = sizeof(report_other) / sizeof(report_other[0]);
}

/*
 * The runtime's report of one of its API calls, at entry and at exit (word 10: cbid | site << 32,
 * site 0 entry, 1 exit). Word 5 points at the cudaError_t, 6 is the function's name, 7 its
 * *_params struct, 11 the kernel's mangled name for launches.
 */
enum {
	REC_RESULT = 5,
	REC_NAME = 6,
	REC_PARAMS = 7,
	REC_CBID_SITE = 10,
	REC_SYMBOL = 11
};
#define MAX_NESTED 8

static __thread struct fakecuda_call runtime_calls[MAX_NESTED];
static __thread int n_runtime_calls, n_lost_calls;

static word tools_report(word cbid, const word *rec)
{
	bool exit = rec[REC_CBID_SITE] >> 32;

	(void)cbid;
	if (!exit) {
		if (n_runtime_calls == MAX_NESTED) {
			n_lost_calls++;
			return 0;
		}
		fakecuda_api_enter(&runtime_calls[n_runtime_calls++], CUPTI_CB_DOMAIN_RUNTIME_API,
				   (CUpti_CallbackId)(uint32_t)rec[REC_CBID_SITE],
				   (const char *)rec[REC_NAME], (const void *)rec[REC_PARAMS],
				   (const char *)rec[REC_SYMBOL]);
	} else if (n_lost_calls) {
		n_lost_calls--;
	} else if (n_runtime_calls) {
		const int *result = (const int *)rec[REC_RESULT];

		fakecuda_api_exit(&runtime_calls[--n_runtime_calls], result ? *result : 0, NULL);
	}
	return 0;
}

/* ---- c693336e: context-local storage, where the runtime keeps its per-context state ---- */

struct local {
	const void *ctx, *key;
	void *value;
};

static pthread_mutex_t locals_lock = PTHREAD_MUTEX_INITIALIZER;
static struct local locals[64];

static const void *ctx_or_current(CUcontext ctx)
{
	return ctx ? ctx : fakecuda_context_current();
}

/* The entry of (ctx, key), or a free one if `add`; under locals_lock. */
static struct local *local_find(const void *ctx, const void *key, bool add)
{
	struct local *free_entry = NULL;

	for (size_t i = 0; i < sizeof(locals) / sizeof(locals[0]); i++) {
		if (locals[i].key == key && locals[i].ctx == ctx)
			return &locals[i];
		if (!locals[i].key && !free_entry)
			free_entry = &locals[i];
	}
	return add ? free_entry : NULL;
}

static CUresult local_put(CUcontext ctx, void *key, void *value, void *destructor)
{
	struct local *l;

	(void)destructor; /* contexts are never destroyed */
	pthread_mutex_lock(&locals_lock);
	l = local_find(ctx_or_current(ctx), key, true);
	if (l)
		*l = (struct local){ctx_or_current(ctx), key, value};
	pthread_mutex_unlock(&locals_lock);
	return l ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult local_delete(CUcontext ctx, void *key)
{
	struct local *l;

	pthread_mutex_lock(&locals_lock);
	l = local_find(ctx_or_current(ctx), key, false);
	if (l)
		*l = (struct local){0};
	pthread_mutex_unlock(&locals_lock);
	return CUDA_SUCCESS;
}

static CUresult local_get(void **value, CUcontext ctx, void *key)
{
	struct local *l;

	pthread_mutex_lock(&locals_lock);
	l = local_find(ctx_or_current(ctx), key, false);
	if (l)
		*value = l->value;
	pthread_mutex_unlock(&locals_lock);
	return l ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- 263e8860: context checks; [2] answers "no problem" ---- */

static CUresult context_check(CUcontext ctx, uint32_t *problem, const void **detail)
{
	(void)ctx, (void)detail;
	if (problem)
		*problem = 0;
	return CUDA_SUCCESS;
}

/* ---- 21318c60: asked for by cuBLAS itself; what its answers mean is not known ---- */

static unsigned char blas_object[4096] __attribute__((aligned(64)));

static CUresult blas_slot4(word x, unsigned long long *out)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = x != 0;
	return CUDA_SUCCESS;
}

static CUresult blas_slot39(word a, word object, void **out)
{
	(void)a, (void)object;
	if (out)
		*out = blas_object + 1024;
	return CUDA_SUCCESS;
}

static CUresult blas_slot51(word a, word b, void **out)
{
	(void)a, (void)b;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = blas_object;
	return CUDA_SUCCESS;
}

/* ---- d4082055: the runtime's integrity check, an HMAC-MD2 (RFC 1319, RFC 2104) ---- */

/* MD2's permutation of 0..255, from the digits of pi (RFC 1319, section 3.2). */
static const uint8_t md2_pi[256] = {
    0x29, 0x2e, 0x43, 0xc9, 0xa2, 0xd8, 0x7c, 0x01, 0x3d, 0x36, 0x54, 0xa1, 0xec, 0xf0, 0x06, 0x13,
    0x62, 0xa7, 0x05, 0xf3, 0xc0, 0xc7, 0x73, 0x8c, 0x98, 0x93, 0x2b, 0xd9, 0xbc, 0x4c, 0x82, 0xca,
    0x1e, 0x9b, 0x57, 0x3c, 0xfd, 0xd4, 0xe0, 0x16, 0x67, 0x42, 0x6f, 0x18, 0x8a, 0x17, 0xe5, 0x12,
    0xbe, 0x4e, 0xc4, 0xd6, 0xda, 0x9e, 0xde, 0x49, 0xa0, 0xfb, 0xf5, 0x8e, 0xbb, 0x2f, 0xee, 0x7a,
    0xa9, 0x68, 0x79, 0x91, 0x15, 0xb2, 0x07, 0x3f, 0x94, 0xc2, 0x10, 0x89, 0x0b, 0x22, 0x5f, 0x21,
    0x80, 0x7f, 0x5d, 0x9a, 0x5a, 0x90, 0x32, 0x27, 0x35, 0x3e, 0xcc, 0xe7, 0xbf, 0xf7, 0x97, 0x03,
    0xff, 0x19, 0x30, 0xb3, 0x48, 0xa5, 0xb5, 0xd1, 0xd7, 0x5e, 0x92, 0x2a, 0xac, 0x56, 0xaa, 0xc6,
    0x4f, 0xb8, 0x38, 0xd2, 0x96, 0xa4, 0x7d, 0xb6, 0x76, 0xfc, 0x6b, 0xe2, 0x9c, 0x74, 0x04, 0xf1,
    0x45, 0x9d, 0x70, 0x59, 0x64, 0x71, 0x87, 0x20, 0x86, 0x5b, 0xcf, 0x65, 0xe6, 0x2d, 0xa8, 0x02,
    0x1b, 0x60, 0x25, 0xad, 0xae, 0xb0, 0xb9, 0xf6, 0x1c, 0x46, 0x61, 0x69, 0x34, 0x40, 0x7e, 0x0f,
    0x55, 0x47, 0xa3, 0x23, 0xdd, 0x51, 0xaf, 0x3a, 0xc3, 0x5c, 0xf9, 0xce, 0xba, 0xc5, 0xea, 0x26,
    0x2c, 0x53, 0x0d, 0x6e, 0x85, 0x28, 0x84, 0x09, 0xd3, 0xdf, 0xcd, 0xf4, 0x41, 0x81, 0x4d, 0x52,
    0x6a, 0xdc, 0x37, 0xc8, 0x6c, 0xc1, 0xab, 0xfa, 0x24, 0xe1, 0x7b, 0x08, 0x0c, 0xbd, 0xb1, 0x4a,
    0x78, 0x88, 0x95, 0x8b, 0xe3, 0x63, 0xe8, 0x6d, 0xe9, 0xcb, 0xd5, 0xfe, 0x3b, 0x00, 0x1d, 0x39,
    0xf2, 0xef, 0xb7, 0x0e, 0x66, 0x58, 0xd0, 0xe4, 0xa6, 0x77, 0x72, 0xf8, 0xeb, 0x75, 0x4b, 0x0a,
    0x31, 0x44, 0x50, 0xb4, 0x8f, 0xed, 0x1f, 0x1a, 0xdb, 0x99, 0x8d, 0x33, 0x9f, 0x11, 0x83, 0x14,
};

struct md2 {
	uint8_t state[48], checksum[16], block[16];
	size_t used;
};

static void md2_compress(struct md2 *m)
{
	uint8_t t = 0;

	for (int i = 0; i < 16; i++) {
		m->state[16 + i] = m->block[i];
		m->state[32 + i] = m->block[i] ^ m->state[i];
	}
	for (int round = 0; round < 18; round++) {
		for (int i = 0; i < 48; i++)
			t = m->state[i] ^= md2_pi[t];
		t = (uint8_t)(t + round);
	}
}

static void md2_add(struct md2 *m, const void *data, size_t len, bool checksum)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < len; i++) {
		if (checksum) /* L is the checksum byte written last */
			m->checksum[m->used] ^= md2_pi[p[i] ^ m->checksum[(m->used + 15) % 16]];
		m->block[m->used++] = p[i];
		if (m->used == 16) {
			md2_compress(m);
			m->used = 0;
		}
	}
}

static void md2_finish(struct md2 *m, uint8_t digest[16])
{
	uint8_t pad[16], sum[16];
	size_t n = 16 - m->used;

	memset(pad, (int)n, n);
	md2_add(m, pad, n, true);
	memcpy(sum, m->checksum, 16);
	md2_add(m, sum, 16, false);
	memcpy(digest, m->state, 16);
}

/* The key, the two constant answers and the layout of what is hashed are ZLUDA's findings. */
static const uint8_t integrity_key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
					  0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

static const void *runtime_interface[13], *integrity[3];

static void hmac_md2(const void *data, size_t len, const void *more, size_t more_len,
		     uint8_t digest[16])
{
	uint8_t pad[16], inner[16];
	struct md2 m = {0};

	for (int i = 0; i < 16; i++)
		pad[i] = integrity_key[i] ^ 0x36;
	md2_add(&m, pad, 16, true);
	md2_add(&m, data, len, true);
	md2_add(&m, more, more_len, true);
	md2_finish(&m, inner);
	m = (struct md2){0};
	for (int i = 0; i < 16; i++)
		pad[i] = integrity_key[i] ^ 0x5c;
	md2_add(&m, pad, 16, true);
	md2_add(&m, inner, 16, true);
	md2_finish(&m, digest);
}

static CUresult integrity_answer(unsigned int version, unsigned long long unix_seconds,
				 unsigned long long answer[2])
{
	struct {
		uint32_t driver_version, version, pid, thread;
		const void *interface, *integrity, *check;
		uint64_t unix_seconds;
	} process = {CUDA_VERSION_NUMBER, version,   (uint32_t)getpid(), (uint32_t)pthread_self(),
		     runtime_interface,	  integrity, integrity[1],	 unix_seconds};
	struct {
		CUuuid uuid;
		int32_t pci_domain, pci_bus, pci_device;
	} devices[FAKECUDA_MAX_DEVICES];
	int n = fakecuda_device_count();
	uint8_t digest[16];

	if (!answer)
		return CUDA_ERROR_INVALID_VALUE;
	if (version % 10 < 2) {
		answer[0] = version % 10 ? 0x1841181C03CB675Cull : 0x3341181C03CB675Cull;
		answer[1] = 0x8ED383AA1F4CD1E8ull;
		return CUDA_SUCCESS;
	}
	memset(devices, 0, sizeof(devices));
	for (int d = 0; d < n; d++) {
		fakecuda_device_uuid(&devices[d].uuid, d);
		devices[d].pci_domain =
		    fakecuda_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
		devices[d].pci_bus = fakecuda_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
		devices[d].pci_device =
		    fakecuda_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
	}
	hmac_md2(&process, sizeof(process), devices, (size_t)n * sizeof(devices[0]), digest);
	memcpy(answer, digest, 16);
	return CUDA_SUCCESS;
}

/* ---- the tables ---- */

struct table {
	const char *uuid; /* as the runtime's UUID bytes print, in order */
	const void **slots;
	size_t n;
	bool sized; /* slot 0 holds the table's size in bytes */
	const void *known[64];
};

static const void *tools_tls[4], *tools_hooks[7], *locals_table[4], *checks[4], *blas[95], *lt[16];

static struct table tables[] = {
    {"6bd5fb6c-5bf4-e74a-8987-d93912fd9df9",
     runtime_interface,
     13,
     true,
     {[2] = primary_context, [7] = nothing, [12] = nothing}},
    {"42d85a81-23f6-cb47-8298-f6e78a3aecdc",
     tools_tls,
     4,
     true,
     {[1] = nothing, [2] = nothing, [3] = nothing}},
    {"a094798c-2e74-2e74-93f2-0800200c0a66",
     tools_hooks,
     7,
     true,
     {[1] = tools_report,
      [2] = report_cbid_words,
      [3] = nothing,
      [4] = nothing,
      [5] = nothing,
      [6] = report_other_words}},
    {"c693336e-1121-df11-a8c3-68f355d89593",
     locals_table,
     4,
     false,
     {[0] = local_put, [1] = local_delete, [2] = local_get}},
    {"263e8860-7cd2-6143-92f6-bbd5006dfa7e", checks, 4, true, {[2] = context_check, [3] = nothing}},
    {"d4082055-bde6-704b-8d34-ba123c66e1f2", integrity, 3, true, {[1] = integrity_answer}},
    {"21318c60-9714-3248-8ca6-41ff7324c8f2",
     blas,
     95,
     true,
     {[4] = blas_slot4, [39] = blas_slot39, [51] = blas_slot51}},
    /* cuBLASLt's own, for bf16 GEMMs; [4](&out, &out, code) answered with success, untouched */
    {"1734dc26-800d-4745-8726-c0f1e7dd8bca", lt, 16, true, {[4] = nothing}},
};

static void fill_tables(void)
{
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		struct table *tb = &tables[t];

		for (size_t i = 0; i < tb->n; i++)
			tb->slots[i] =
			    i < 64 && tb->known[i] ? tb->known[i] : (const void *)unknown_slot;
		if (tb->sized)
			tb->slots[0] = (const void *)(tb->n * sizeof(void *));
	}
	/* report every runtime call: the simulated CUPTI keeps what its client enabled */
	for (size_t i = 0; i < sizeof(report_cbids) / sizeof(report_cbids[0]); i++)
		report_cbids[i] = 1;
}

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	fakecuda_drv_runtime_seen(DRV_CALLER);
	DRV_CALL(cuGetExportTable, ppExportTable, pExportTableId);
	const unsigned char *b = (const unsigned char *)pExportTableId->bytes;
	CUresult err = CUDA_ERROR_NOT_FOUND;
	char uuid[40];

	pthread_once(&once, fill_tables);
	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15]);
	*ppExportTable = NULL;
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]) && err; t++)
		if (!strcmp(tables[t].uuid, uuid)) {
			*ppExportTable = tables[t].slots;
			err = CUDA_SUCCESS;
		}
	return fakecuda_api_exit(&c, err, "\"table\":\"%s\"", uuid);
}

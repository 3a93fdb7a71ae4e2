/*
 * The trace's header: everything before "traceEvents", padded to a fixed size so the final
 * version (written when the window closes) replaces the first one in place.
 */
#include <errno.h>

#include "common/dso.h"
#include "export/internal.h"

static const char head_end[] = "\n  \"traceEvents\": [\n";

/* deviceProperties' integer fields, in Kineto's order. */
#define DEV(field) offsetof(struct gprof_export_device, field)
static const struct {
	const char *key;
	size_t offset;
} dev_ints[] = {
    {"computeMajor", DEV(compute_major)},
    {"computeMinor", DEV(compute_minor)},
    {"maxThreadsPerBlock", DEV(max_threads_per_block)},
    {"maxThreadsPerMultiprocessor", DEV(max_threads_per_mp)},
    {"regsPerBlock", DEV(regs_per_block)},
    {"warpSize", DEV(warp_size)},
    {"sharedMemPerBlock", DEV(shared_mem_per_block)},
    {"numSms", DEV(num_sms)},
    {"regsPerMultiprocessor", DEV(regs_per_mp)},
    {"sharedMemPerBlockOptin", DEV(shared_mem_per_block_optin)},
    {"sharedMemPerMultiprocessor", DEV(shared_mem_per_mp)},
};

/* gprof.records' keys, indexed by enum gprof_export_kind. */
static const char *const record_keys[GPROF_EXPORT_KINDS] = {
#define RECORD_KEY(name, key, ...) [GPROF_EXPORT_##name] = key,
    GPROF_EXPORT_KIND_TABLE(RECORD_KEY)
#undef RECORD_KEY
};

static void put_cstr(struct gprof_jbuf *b, const char *s)
{
	gprof_jbuf_str(b, s, strlen(s));
}

/* A char array of a struct, which may lack its terminating NUL. */
#define put_field(b, array) gprof_jbuf_str((b), (array), strnlen((array), sizeof(array)))

/* `, "key": value` */
static void put_key_u64(struct gprof_jbuf *b, const char *key, uint64_t v)
{
	gprof_jbuf_lit(b, ", ");
	put_cstr(b, key);
	gprof_jbuf_lit(b, ": ");
	gprof_jbuf_u64(b, v);
}

static void put_key_i64(struct gprof_jbuf *b, const char *key, int64_t v)
{
	gprof_jbuf_lit(b, ", ");
	put_cstr(b, key);
	gprof_jbuf_lit(b, ": ");
	gprof_jbuf_i64(b, v);
}

static void put_device(struct gprof_jbuf *b, const struct gprof_export_device *d, bool last)
{
	gprof_jbuf_lit(b, "    {\"id\": ");
	gprof_jbuf_i64(b, d->id);
	gprof_jbuf_lit(b, ", \"name\": ");
	put_field(b, d->name);
	put_key_u64(b, "totalGlobalMem", d->total_global_mem);
	for (size_t i = 0; i < ARRAY_SIZE(dev_ints); i++)
		put_key_i64(b, dev_ints[i].key,
			    *(const int *)((const char *)d + dev_ints[i].offset));
	if (last)
		gprof_jbuf_lit(b, "}\n");
	else
		gprof_jbuf_lit(b, "},\n");
}

static void put_cupti(struct gprof_jbuf *b, const struct gprof_export_process_info *p)
{
	gprof_jbuf_lit(b, ", \"cupti\": {\"library\": ");
	put_field(b, p->cupti_path);
	put_key_i64(b, "version", p->cupti_version);
	gprof_jbuf_lit(b, ", \"status\": ");
	put_field(b, p->cupti_status);
	gprof_jbuf_lit(b, "}");
}

/* The "gprof" object with the first n_warn warnings. */
static void put_gprof(struct gprof_jbuf *b, const struct gprof_trace_meta *m,
		      const uint64_t *counts, size_t n_warn)
{
	gprof_jbuf_lit(b, "  \"gprof\": {\"version\": \"" GPROF_VERSION "\", \"schedule\": ");
	put_cstr(b, m->schedule ? m->schedule : "");
	put_key_u64(b, "window", m->window);
	put_key_u64(b, "first_step", m->first_step);
	if (m->has_last_step)
		put_key_u64(b, "last_step", m->last_step);
	else
		gprof_jbuf_lit(b, ", \"last_step\": null");
	gprof_jbuf_lit(b, ",\n    \"records\": {");
	for (size_t k = 0; k < GPROF_EXPORT_KINDS; k++) {
		put_cstr(b, record_keys[k]);
		gprof_jbuf_lit(b, ": ");
		gprof_jbuf_u64(b, counts[k]);
		if (k + 1 < GPROF_EXPORT_KINDS)
			gprof_jbuf_lit(b, ", ");
	}
	gprof_jbuf_lit(b, "},\n    \"dropped\": {\"buffer_full\": ");
	gprof_jbuf_u64(b, m->dropped_buffer);
	put_key_u64(b, "cupti", m->dropped_cupti);
	put_key_u64(b, "late", m->dropped_late);
	gprof_jbuf_lit(b, "},\n    \"left_out\": {\"api_calls\": ");
	gprof_jbuf_u64(b, m->left_out);
	gprof_jbuf_lit(b, "}");
	put_cupti(b, m->proc);
	gprof_jbuf_lit(b, ",\n    \"warnings\": [");
	for (size_t i = 0; i < n_warn; i++) {
		if (i)
			gprof_jbuf_lit(b, ",");
		gprof_jbuf_lit(b, "\n      ");
		gprof_jbuf_str(b, m->warnings[i], strnlen(m->warnings[i], GPROF_LOG_LINE_MAX));
	}
	gprof_jbuf_lit(b, "]");
	put_key_u64(b, "warnings_omitted", m->n_warnings - n_warn + m->warnings_lost);
	gprof_jbuf_lit(b, "},\n");
}

/* gprof_export_set_backend's; NULL: none known */
static const char *backend;

void gprof_export_set_backend(const char *name)
{
	__atomic_store_n(&backend, name, __ATOMIC_RELEASE);
}

static void put_head(struct gprof_jbuf *b, const struct gprof_trace_meta *m, const uint64_t *counts,
		     size_t n_warn)
{
	const struct gprof_export_process_info *p = m->proc;
	unsigned n_dev =
	    p->n_devices < GPROF_EXPORT_MAX_DEVICES ? p->n_devices : GPROF_EXPORT_MAX_DEVICES;

	gprof_jbuf_lit(b, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
	for (unsigned i = 0; i < n_dev; i++)
		put_device(b, &p->devices[i], i + 1 == n_dev);
	/* "backend" only once the process called one (NCCL): loading a library says nothing */
	gprof_jbuf_lit(b, "  ],\n  \"distributedInfo\": {");
	if (__atomic_load_n(&backend, __ATOMIC_ACQUIRE)) {
		gprof_jbuf_lit(b, "\"backend\": ");
		put_cstr(b, backend);
		gprof_jbuf_lit(b, ", ");
	}
	gprof_jbuf_lit(b, "\"rank\": ");
	gprof_jbuf_i64(b, m->rank.rank);
	put_key_i64(b, "world_size", m->rank.world_size);
	gprof_jbuf_lit(b, "},\n  \"cupti_version\": ");
	gprof_jbuf_i64(b, p->cupti_version);
	put_key_i64(b, "cuda_runtime_version", p->cuda_runtime_version);
	put_key_i64(b, "cuda_driver_version", p->cuda_driver_version);
	gprof_jbuf_lit(b, ",\n");
	put_gprof(b, m, counts, n_warn);
	gprof_jbuf_lit(b, "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
	gprof_jbuf_u64(b, m->base_ns);
	gprof_jbuf_lit(b, ",");
}

/*
 * Exactly GPROF_TRACE_HEAD_BYTES: the header, spaces, then `"traceEvents": [`. When it does
 * not fit, the newest warnings give way and "warnings_omitted" counts them.
 */
int gprof_trace_head(struct gprof_jbuf *b, const struct gprof_trace_meta *m, const uint64_t *counts)
{
	const size_t room = GPROF_TRACE_HEAD_BYTES - (sizeof(head_end) - 1);
	size_t n_warn = m->n_warnings;
	char *pad;

	for (;;) {
		b->len = 0;
		put_head(b, m, counts, n_warn);
		if (b->failed)
			return -ENOMEM;
		if (b->len <= room)
			break;
		if (n_warn == 0)
			return -E2BIG;
		n_warn--;
	}
	pad = gprof_jbuf_room(b, GPROF_TRACE_HEAD_BYTES - b->len);
	if (!pad)
		return -ENOMEM;
	memset(pad, ' ', room - b->len);
	b->len = room;
	gprof_jbuf_put(b, head_end, sizeof(head_end) - 1);
	return b->failed ? -ENOMEM : 0;
}

/*
 * The Kineto trace schema (shared/TRACE_FORMAT.md), the writer's output format
 * (gprof_format_kineto): one emit function per event kind, the metadata events derived from
 * the tracks a window used, and the end of the file.
 *
 * Every event line ends with what changes from one event to the next (correlation last in
 * args, then ts and dur): the constant rest of a line repeats the line before of its kind as
 * one long run, which deflate, the writer's main cost, takes fastest and stores smallest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/array.h"
#include "common/heap.h"
#include "common/torchop.h"
#include "export/internal.h"

#define OUT_FLUSH_BYTES (64u << 10)  /* formatted text handed to the sink in pieces this big */
#define SYNC_EVERY_NS	100000000ull /* a sync flush at least this often while data comes */
/* A GPU's process sorts after every pid (pid_max is at most 2^22), as Kineto's. */
#define GPU_SORT_INDEX 5000000u

/* One window's trace: a struct gprof_format of gprof_format_kineto. */
struct gprof_trace {
	struct gprof_format base;
	struct gprof_sink *sink; /* the writer's */
	struct gprof_jbuf out;	 /* formatted, not yet in the sink */
	struct gprof_export_process_info proc;
	uint64_t base_ns, open_ns, last_sync_ns;
	bool unsynced; /* text went to the sink since the last sync flush */
	int pid;
	int err; /* the first error: the trace is lost */
	uint64_t counts[GPROF_EXPORT_KINDS];
	uint64_t left_out;  /* GPROF_EXPORT_QUIET calls */
	bool tensor_memory; /* [memory] events for tensors only */
	/*
	 * torch_ops: cpu_op events kept for the window's end (and the inputs it brings), the
	 * last GPROF_EXPORT_HELD_OPS: a ring from ops[first] once full
	 */
	bool hold_ops;
	struct gprof_export_event *ops;
	size_t n_ops, cap_ops, first;
	struct gprof_tracks tracks;
	struct gprof_annotations annotations;
};

static void note_thread(struct gprof_trace *t, uint32_t tid)
{
	if (gprof_tracks_thread(&t->tracks, tid) < 0)
		t->out.failed = true;
}

static void note_stream(struct gprof_trace *t, uint32_t device, uint32_t stream)
{
	if (gprof_tracks_stream(&t->tracks, device, stream) < 0)
		t->out.failed = true;
}

static void put_text(struct gprof_jbuf *b, const struct gprof_export_str *s)
{
	if (s)
		gprof_jbuf_put(b, s->text, s->len);
}

static void put_ts(struct gprof_trace *t, uint64_t ts_ns)
{
	gprof_jbuf_usec(&t->out, (int64_t)(ts_ns - t->base_ns));
}

/* `","pid":P,"tid":T` ending the name of a host event. */
static void host_track(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	struct gprof_jbuf *b = &t->out;

	note_thread(t, ev->tid);
	gprof_jbuf_lit(b, "\",\"pid\":");
	gprof_jbuf_u64(b, (uint64_t)t->pid);
	gprof_jbuf_lit(b, ",\"tid\":");
	gprof_jbuf_u64(b, ev->tid);
}

/* The same for a GPU event: pid is the device, tid the stream. */
static void gpu_track(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	struct gprof_jbuf *b = &t->out;

	note_stream(t, ev->device, ev->stream);
	gprof_jbuf_lit(b, "\",\"pid\":");
	gprof_jbuf_u64(b, ev->device);
	gprof_jbuf_lit(b, ",\"tid\":");
	gprof_jbuf_u64(b, ev->stream);
}

/*
 * A host's waits for a stream go on a lane of their own beside the stream's track (a wait
 * overlaps the stream's work, which one track cannot show); a context's, on the device's lane.
 */
#define SYNC_LANE	 (1u << 31)
#define SYNC_LANE_DEVICE UINT32_MAX
#define SYNC_NO_STREAM	 UINT32_MAX

static uint32_t sync_lane(uint32_t stream)
{
	return stream == SYNC_NO_STREAM ? SYNC_LANE_DEVICE : SYNC_LANE | stream;
}

/* `{"ph":"X","cat":"<cat>","name":"<name>","pid":P,"tid":T` of an X event on a GPU's track. */
static void gpu_x_begin(struct gprof_trace *t, const char *cat, const struct gprof_export_str *name,
			const struct gprof_export_event *track)
{
	gprof_jbuf_lit(&t->out, "{\"ph\":\"X\",\"cat\":\"");
	gprof_jbuf_put(&t->out, cat, strlen(cat));
	gprof_jbuf_lit(&t->out, "\",\"name\":\"");
	put_text(&t->out, name);
	gpu_track(t, track);
}

/* `,"ts":T}` or `,"ts":T,"dur":D}` and the line's end. */
static void put_end(struct gprof_trace *t, const struct gprof_export_event *ev, bool dur)
{
	gprof_jbuf_lit(&t->out, ",\"ts\":");
	put_ts(t, ev->ts_ns);
	if (dur) {
		gprof_jbuf_lit(&t->out, ",\"dur\":");
		gprof_jbuf_usec(&t->out, (int64_t)ev->dur_ns < 0 ? 0 : (int64_t)ev->dur_ns);
	}
	gprof_jbuf_lit(&t->out, "},\n");
}

static void put_dim3(struct gprof_jbuf *b, const uint32_t d[3])
{
	gprof_jbuf_lit(b, "[");
	gprof_jbuf_u64(b, d[0]);
	gprof_jbuf_lit(b, ",");
	gprof_jbuf_u64(b, d[1]);
	gprof_jbuf_lit(b, ",");
	gprof_jbuf_u64(b, d[2]);
	gprof_jbuf_lit(b, "]");
}

/* `,"External id":N` of an event made inside a CPU operator (none when id is 0). */
static void put_external(struct gprof_jbuf *b, uint32_t id)
{
	if (!id)
		return;
	gprof_jbuf_lit(b, ",\"External id\":");
	gprof_jbuf_u64(b, id);
}

/* `,"correlation":K}` closing the args of an API or GPU event, then ts and dur. */
static void put_correlation_end(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	gprof_jbuf_lit(&t->out, ",\"correlation\":");
	gprof_jbuf_u64(&t->out, ev->correlation);
	gprof_jbuf_lit(&t->out, "}");
	put_end(t, ev, true);
}

/* The flow half after the event: "s" on the CPU side, "f" on the GPU side. */
static void put_flow(struct gprof_trace *t, const struct gprof_export_event *ev, bool gpu)
{
	struct gprof_jbuf *b = &t->out;

	if (!(ev->flags & GPROF_EXPORT_FLOW))
		return;
	if (gpu)
		gprof_jbuf_lit(
		    b, "{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\",\"pid\":");
	else
		gprof_jbuf_lit(b, "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"pid\":");
	gprof_jbuf_u64(b, gpu ? ev->device : (uint64_t)t->pid);
	gprof_jbuf_lit(b, ",\"tid\":");
	gprof_jbuf_u64(b, gpu ? ev->stream : ev->tid);
	gprof_jbuf_lit(b, ",\"id\":");
	gprof_jbuf_u64(b, ev->correlation);
	put_end(t, ev, false);
}

static void emit_step(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	gprof_jbuf_lit(&t->out,
		       "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#");
	gprof_jbuf_u64(&t->out, ev->u.step);
	host_track(t, ev);
	put_end(t, ev, true);
}

/* A range's or mark's args: its domain, and a range's External id as an annotation. */
static void put_nvtx_args(struct gprof_jbuf *b, const struct gprof_export_event *ev)
{
	const struct gprof_export_str *d = ev->u.nvtx.domain;

	if (!(d && d->len) && !ev->u.nvtx.external)
		return;
	gprof_jbuf_lit(b, ",\"args\":{");
	if (ev->u.nvtx.external) {
		gprof_jbuf_lit(b, "\"External id\":");
		gprof_jbuf_u64(b, ev->u.nvtx.external);
	}
	if (d && d->len) {
		if (ev->u.nvtx.external)
			gprof_jbuf_lit(b, ",");
		gprof_jbuf_lit(b, "\"domain\":\"");
		put_text(b, d);
		gprof_jbuf_lit(b, "\"");
	}
	gprof_jbuf_lit(b, "}");
}

static void emit_nvtx_range(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	if (ev->u.nvtx.external)
		gprof_annotations_name(&t->annotations, ev->u.nvtx.external, ev->name);
	gprof_jbuf_lit(&t->out, "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"");
	put_text(&t->out, ev->name);
	host_track(t, ev);
	put_nvtx_args(&t->out, ev);
	put_end(t, ev, true);
}

static void emit_nvtx_mark(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	gprof_jbuf_lit(&t->out, "{\"ph\":\"i\",\"cat\":\"user_annotation\",\"name\":\"");
	put_text(&t->out, ev->name);
	host_track(t, ev);
	gprof_jbuf_lit(&t->out, ",\"s\":\"t\"");
	put_nvtx_args(&t->out, ev);
	put_end(t, ev, false);
}

static const char *const copy_kinds[] = {
    [GPROF_COPY_UNKNOWN] = "Unknown", [GPROF_COPY_HTOD] = "HtoD", [GPROF_COPY_DTOH] = "DtoH",
    [GPROF_COPY_HTOA] = "HtoA",	      [GPROF_COPY_ATOH] = "AtoH", [GPROF_COPY_ATOA] = "AtoA",
    [GPROF_COPY_ATOD] = "AtoD",	      [GPROF_COPY_DTOA] = "DtoA", [GPROF_COPY_DTOD] = "DtoD",
    [GPROF_COPY_HTOH] = "HtoH",	      [GPROF_COPY_PTOP] = "PtoP",
};

static const char *const mem_kinds[] = {
    [GPROF_MEM_UNKNOWN] = "Unknown",
    [GPROF_MEM_PAGEABLE] = "Pageable",
    [GPROF_MEM_PINNED] = "Pinned",
    [GPROF_MEM_DEVICE] = "Device",
    [GPROF_MEM_ARRAY] = "Array",
    [GPROF_MEM_MANAGED] = "Managed",
    [GPROF_MEM_DEVICE_STATIC] = "Device Static",
    [GPROF_MEM_MANAGED_STATIC] = "Managed Static",
};

const char *gprof_trace_copy_kind(unsigned k)
{
	return k < ARRAY_SIZE(copy_kinds) ? copy_kinds[k] : copy_kinds[0];
}

static const char *mem_kind(unsigned k)
{
	return k < ARRAY_SIZE(mem_kinds) ? mem_kinds[k] : mem_kinds[0];
}

static void put_cstr_raw(struct gprof_jbuf *b, const char *s)
{
	gprof_jbuf_put(b, s, strlen(s));
}

/* The optional arguments of an API call, per its flags. */
static void put_api_args(struct gprof_jbuf *b, const struct gprof_export_event *ev)
{
	const struct gprof_export_api *a = &ev->u.api;

	if ((ev->flags & GPROF_EXPORT_ARG_LAUNCH) && a->kernel) {
		gprof_jbuf_lit(b, ",\"kernel\":\"");
		put_text(b, a->kernel);
		gprof_jbuf_lit(b, "\"");
	}
	if (ev->flags & GPROF_EXPORT_ARG_LAUNCH) {
		gprof_jbuf_lit(b, ",\"grid\":");
		put_dim3(b, a->grid);
		gprof_jbuf_lit(b, ",\"block\":");
		put_dim3(b, a->block);
		gprof_jbuf_arg(b, "shared memory", u64, a->shared_bytes);
	}
	if (ev->flags & GPROF_EXPORT_ARG_STREAM)
		gprof_jbuf_arg(b, "stream handle", hex, a->stream);
	if (ev->flags & GPROF_EXPORT_ARG_BYTES)
		gprof_jbuf_arg(b, "bytes", u64, a->bytes);
	if (ev->flags & GPROF_EXPORT_ARG_COPY_KIND) {
		gprof_jbuf_lit(b, ",\"copy kind\":\"");
		put_cstr_raw(b, gprof_trace_copy_kind(a->copy_kind));
		gprof_jbuf_lit(b, "\"");
	}
	if (ev->flags & GPROF_EXPORT_ARG_PTR)
		gprof_jbuf_arg(b, "ptr", hex, a->ptr);
	if (ev->flags & GPROF_EXPORT_ARG_RESULT)
		gprof_jbuf_arg(b, "result", i64, a->result);
	if (ev->flags & GPROF_EXPORT_ARG_CAPTURED)
		gprof_jbuf_lit(b, ",\"graph capture\":true");
}

/* RUNTIME and DRIVER. */
static void emit_api(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	struct gprof_jbuf *b = &t->out;

	if (ev->kind == GPROF_EXPORT_RUNTIME)
		gprof_jbuf_lit(b, "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"");
	else
		gprof_jbuf_lit(b, "{\"ph\":\"X\",\"cat\":\"cuda_driver\",\"name\":\"");
	put_text(b, ev->name);
	host_track(t, ev);
	gprof_jbuf_lit(b, ",\"args\":{");
	if (ev->u.api.api) {
		gprof_jbuf_lit(b, "\"api\":\"");
		put_text(b, ev->u.api.api);
		gprof_jbuf_lit(b, "\",");
	}
	gprof_jbuf_lit(b, "\"cbid\":");
	gprof_jbuf_u64(b, ev->u.api.cbid);
	put_api_args(b, ev);
	put_external(b, ev->u.api.external);
	put_correlation_end(t, ev);
	put_flow(t, ev, false);
}

static const struct gprof_export_device *device_of(const struct gprof_trace *t, uint32_t id)
{
	for (unsigned i = 0; i < t->proc.n_devices && i < GPROF_EXPORT_MAX_DEVICES; i++)
		if (t->proc.devices[i].id == (int)id)
			return &t->proc.devices[i];
	return NULL;
}

/*
 * Kineto's derived kernel numbers: blocks and warps per SM over the whole device, and an
 * estimate of achieved occupancy: the blocks an SM can hold at once (limited by warps,
 * registers and shared memory; allocation granularity ignored), or fewer if the grid is
 * small, times warps per block, over the SM's warp slots. Zeros when the device is unknown.
 */
static void put_kernel_load(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	const struct gprof_export_kernel *k = &ev->u.kernel;
	const struct gprof_export_device *d = device_of(t, ev->device);
	uint64_t blocks = (uint64_t)k->grid[0] * k->grid[1] * k->grid[2];
	uint64_t threads = (uint64_t)k->block[0] * k->block[1] * k->block[2];
	uint64_t sms = d && d->num_sms > 0 && d->warp_size > 0 ? (uint64_t)d->num_sms : 0;
	uint64_t warp = sms ? (uint64_t)d->warp_size : 1, occ = 0;

	if (sms && threads && d->max_threads_per_mp > 0) {
		uint64_t wpb = (threads + warp - 1) / warp, slots = d->max_threads_per_mp / warp;
		uint64_t fit = slots / wpb, regs = (uint64_t)k->registers * warp * wpb;

		if (regs && d->regs_per_mp > 0 && d->regs_per_mp / regs < fit)
			fit = d->regs_per_mp / regs;
		if (k->shared_bytes && d->shared_mem_per_mp > 0 &&
		    (uint64_t)d->shared_mem_per_mp / k->shared_bytes < fit)
			fit = (uint64_t)d->shared_mem_per_mp / k->shared_bytes;
		fit = fit * sms < blocks ? fit * sms : blocks; /* resident blocks, device-wide */
		occ = slots ? (fit * wpb * 100 + sms * slots / 2) / (sms * slots) : 0;
	}
	gprof_jbuf_lit(&t->out, ",\"blocks per SM\":");
	gprof_jbuf_ratio(&t->out, blocks, sms, 3);
	gprof_jbuf_lit(&t->out, ",\"warps per SM\":");
	gprof_jbuf_ratio(&t->out, blocks * threads, sms * warp, 3);
	gprof_jbuf_lit(&t->out, ",\"grid\":");
	put_dim3(&t->out, k->grid);
	gprof_jbuf_lit(&t->out, ",\"block\":");
	put_dim3(&t->out, k->block);
	gprof_jbuf_lit(&t->out, ",\"est. achieved occupancy %\":");
	gprof_jbuf_u64(&t->out, occ > 100 ? 100 : occ);
}

/* `"device":D,"context":C,"stream":S` of a GPU event. */
static void put_gpu_ids(struct gprof_jbuf *b, const struct gprof_export_event *ev, uint32_t ctx)
{
	gprof_jbuf_lit(b, "\"device\":");
	gprof_jbuf_u64(b, ev->device);
	gprof_jbuf_lit(b, ",\"context\":");
	gprof_jbuf_u64(b, ctx);
	gprof_jbuf_lit(b, ",\"stream\":");
	gprof_jbuf_u64(b, ev->stream);
}

static void emit_kernel(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	struct gprof_jbuf *b = &t->out;

	gpu_x_begin(t, "kernel", ev->name, ev);
	/* Latency timestamps are not collected, so "queued" is always 0 (as in Kineto). */
	gprof_jbuf_lit(b, ",\"args\":{\"queued\":0,");
	put_gpu_ids(b, ev, ev->u.kernel.context);
	gprof_jbuf_lit(b, ",\"registers per thread\":");
	gprof_jbuf_u64(b, ev->u.kernel.registers);
	gprof_jbuf_lit(b, ",\"shared memory\":");
	gprof_jbuf_u64(b, ev->u.kernel.shared_bytes);
	put_kernel_load(t, ev);
	put_external(b, ev->u.kernel.external);
	if (ev->u.kernel.annotation)
		gprof_annotations_work(&t->annotations, ev->u.kernel.annotation, ev);
	put_correlation_end(t, ev);
	put_flow(t, ev, true);
}

/* MEMCPY ("Memcpy HtoD (Pinned -> Device)") and MEMSET ("Memset (Device)"). */
static void emit_copy(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	const struct gprof_export_copy *c = &ev->u.copy;
	struct gprof_jbuf *b = &t->out;

	if (ev->kind == GPROF_EXPORT_MEMCPY) {
		gprof_jbuf_lit(b, "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy ");
		put_cstr_raw(b, gprof_trace_copy_kind(c->copy_kind));
		gprof_jbuf_lit(b, " (");
		put_cstr_raw(b, mem_kind(c->src_kind));
		gprof_jbuf_lit(b, " -> ");
	} else {
		gprof_jbuf_lit(b, "{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset (");
	}
	put_cstr_raw(b, mem_kind(c->dst_kind));
	gprof_jbuf_lit(b, ")");
	gpu_track(t, ev);
	gprof_jbuf_lit(b, ",\"args\":{");
	put_gpu_ids(b, ev, c->context);
	gprof_jbuf_lit(b, ",\"bytes\":");
	gprof_jbuf_u64(b, c->bytes);
	/* bytes per ns is GB/s */
	gprof_jbuf_lit(b, ",\"memory bandwidth (GB/s)\":");
	gprof_jbuf_ratio(b, c->bytes, (int64_t)ev->dur_ns > 0 ? ev->dur_ns : 0, 4);
	put_external(b, c->external);
	if (c->annotation)
		gprof_annotations_work(&t->annotations, c->annotation, ev);
	put_correlation_end(t, ev);
	put_flow(t, ev, true);
}

static void emit_earlier(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	struct gprof_jbuf *b = &t->out;

	gpu_x_begin(t, "gpu_earlier", ev->name, ev);
	gprof_jbuf_lit(b, ",\"args\":{\"device\":");
	gprof_jbuf_u64(b, ev->device);
	gprof_jbuf_lit(b, ",\"launched\":\"before the window\"}");
	put_end(t, ev, true);
}

/* As Kineto writes CUPTI's synchronisation records; -1 for what does not apply. */
static void emit_sync(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	struct gprof_export_event on_lane = *ev;
	struct gprof_jbuf *b = &t->out;

	/* An event's wait without a stream of its own: on the lane of the stream that recorded it. */
	on_lane.stream = sync_lane(ev->stream == SYNC_NO_STREAM && ev->u.sync.wait_stream >= 0
				       ? (uint32_t)ev->u.sync.wait_stream
				       : ev->stream);
	gpu_x_begin(t, "cuda_sync", ev->name, &on_lane);
	gprof_jbuf_lit(b, ",\"args\":{\"cuda_sync_kind\":\"");
	put_text(b, ev->name);
	gprof_jbuf_lit(b, "\"");
	if (ev->u.sync.on_event) {
		gprof_jbuf_arg(b, "wait_on_stream", i64, ev->u.sync.wait_stream);
		gprof_jbuf_arg(b, "wait_on_cuda_event_record_corr_id", i64, ev->u.sync.wait_corr);
		gprof_jbuf_arg(b, "wait_on_cuda_event_id", u64, ev->u.sync.event);
	}
	gprof_jbuf_arg(b, "stream", i64, ev->stream == SYNC_NO_STREAM ? -1 : (int64_t)ev->stream);
	gprof_jbuf_arg(b, "device", u64, ev->device);
	gprof_jbuf_arg(b, "context", u64, ev->u.sync.context);
	put_correlation_end(t, ev);
}

/* CUPTI's own time, as Kineto writes it (no args), but on the thread it was spent on. */
static void emit_overhead(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	struct gprof_export_event on_thread = *ev;

	if (!on_thread.tid)
		on_thread.tid = (uint32_t)t->pid;
	gprof_jbuf_lit(&t->out, "{\"ph\":\"X\",\"cat\":\"overhead\",\"name\":\"");
	put_text(&t->out, ev->name);
	host_track(t, &on_thread);
	put_end(t, ev, true);
}

/* Half of a forward -> backward link ("fwdbwd"), as PyTorch's profiler writes it. */
static void put_fwdbwd(struct gprof_trace *t, const struct gprof_export_event *ev, bool fwd)
{
	struct gprof_jbuf *b = &t->out;

	note_thread(t, fwd ? ev->u.op.fwd_tid : ev->tid);
	if (fwd)
		gprof_jbuf_lit(b, "{\"ph\":\"s\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"pid\":");
	else
		gprof_jbuf_lit(
		    b,
		    "{\"ph\":\"f\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"bp\":\"e\",\"pid\":");
	gprof_jbuf_u64(b, (uint64_t)t->pid);
	gprof_jbuf_lit(b, ",\"tid\":");
	gprof_jbuf_u64(b, fwd ? ev->u.op.fwd_tid : ev->tid);
	gprof_jbuf_lit(b, ",\"id\":");
	gprof_jbuf_u64(b, ev->u.op.external);
	gprof_jbuf_lit(b, ",\"ts\":");
	put_ts(t, fwd ? ev->u.op.fwd_ns : ev->ts_ns);
	gprof_jbuf_lit(b, "},\n");
}

/*
 * An operator as PyTorch's profiler writes it: readers tie work to it by "External id". One of
 * PyTorch's profiler (GPROF_EXPORT_OP_KINETO) takes its name and args from what the hook
 * handed over (op); one of NVTX the sizes NVTX gave.
 */
static void put_cpu_op(struct gprof_trace *t, const struct gprof_export_event *ev,
		       const struct gprof_op_entry *op, const char *args)
{
	struct gprof_jbuf *b = &t->out;
	const struct gprof_export_str *name = op ? op->name : ev->name;
	const char *sep = "";

	if (ev->flags & GPROF_EXPORT_OP_USER) {
		/* a collective's scope has no span on the GPU's streams, as Kineto writes it */
		if (ev->u.op.external && name && !gprof_torch_op_collective(name->text, name->len))
			gprof_annotations_name(&t->annotations, ev->u.op.external, name);
		gprof_jbuf_lit(b, "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"");
	} else
		gprof_jbuf_lit(b, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"");
	put_text(b, name);
	host_track(t, ev);
	gprof_jbuf_lit(b, ",\"args\":{");
	if (ev->u.op.external) {
		gprof_jbuf_lit(b, "\"External id\":");
		gprof_jbuf_u64(b, ev->u.op.external);
		sep = ",";
	}
	if (op && op->args_len) {
		/* checked JSON members (export/opargs.c) */
		gprof_jbuf_put(b, sep, strlen(sep));
		gprof_jbuf_put(b, args, op->args_len);
	} else if (!op && ev->u.op.dims && ev->u.op.dims->text[0] == '[' && !ev->u.op.dims->cut) {
		/* checked JSON (gprof_torch_op_parse), written as it is; not the placeholder */
		gprof_jbuf_lit(b, ",\"Input Dims\":");
		gprof_jbuf_put(b, ev->u.op.dims->text, ev->u.op.dims->len);
	} else if (!op && ev->u.op.type) {
		gprof_jbuf_lit(b, ",\"Input Dims\":[[");
		gprof_jbuf_u64(b, ev->u.op.count);
		gprof_jbuf_lit(b, "]],\"Input type\":[\"");
		put_text(b, ev->u.op.type);
		gprof_jbuf_lit(b, "\"]");
	}
	if (!op && ev->flags & GPROF_EXPORT_OP_SEQ) {
		gprof_jbuf_lit(b, ",\"Sequence number\":");
		gprof_jbuf_u64(b, ev->u.op.seq);
		gprof_jbuf_lit(b, ",\"Fwd thread id\":");
		gprof_jbuf_u64(b, ev->u.op.fwd_tid);
	}
	if (!op && ev->u.op.rf_id) {
		gprof_jbuf_lit(b, ",\"Record function id\":");
		gprof_jbuf_u64(b, ev->u.op.rf_id);
	}
	gprof_jbuf_lit(b, "}");
	put_end(t, ev, true);
	if (ev->u.op.fwd_ns) {
		put_fwdbwd(t, ev, true);
		put_fwdbwd(t, ev, false);
	}
}

/*
 * Under --torch an operator of PyTorch's profiler is kept for the window's end, when its name
 * and args come: the last GPROF_EXPORT_HELD_OPS (an older one makes room, and is written from
 * what PyTorch's profiler kept of it alone).
 */
static void emit_cpu_op(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	int err = t->hold_ops && ev->flags & GPROF_EXPORT_OP_KINETO
		      ? gprof_array_room((void **)&t->ops, &t->cap_ops, t->n_ops, sizeof(*ev), 1024,
					 GPROF_EXPORT_HELD_OPS)
		      : -EINVAL;

	if (!err) {
		t->ops[t->n_ops++] = *ev;
	} else if (err == -ENOSPC) {
		t->ops[t->first] = *ev;
		t->first = (t->first + 1) % t->n_ops;
	} else if (!(ev->flags & GPROF_EXPORT_OP_KINETO)) {
		put_cpu_op(t, ev, NULL, NULL);
	}
}

/* A module's forward as PyTorch's profiler writes it (with_modules). */
static void emit_python(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	struct gprof_jbuf *b = &t->out;

	gprof_jbuf_lit(b, "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"");
	put_text(b, ev->name);
	host_track(t, ev);
	gprof_jbuf_lit(b, ",\"args\":{\"Python id\":");
	gprof_jbuf_u64(b, ev->u.py.id);
	gprof_jbuf_lit(b, ",\"Python parent id\":");
	if (ev->u.py.parent)
		gprof_jbuf_u64(b, ev->u.py.parent);
	else
		gprof_jbuf_lit(b, "null");
	gprof_jbuf_lit(b, ",\"Python module id\":");
	gprof_jbuf_u64(b, ev->u.py.module);
	gprof_jbuf_lit(b, "}");
	put_end(t, ev, true);
}

static void emit_memory(struct gprof_trace *t, const struct gprof_export_event *ev)
{
	struct gprof_jbuf *b = &t->out;
	bool tensor = ev->flags & GPROF_EXPORT_MEMORY_TENSOR;

	if (ev->device != GPROF_EXPORT_HOST && gprof_tracks_device(&t->tracks, ev->device) < 0)
		b->failed = true;
	if (!tensor) {
		gprof_jbuf_lit(
		    b, "{\"ph\":\"C\",\"cat\":\"gpu_memory\",\"name\":\"GPU memory\",\"pid\":");
		gprof_jbuf_u64(b, ev->device);
		gprof_jbuf_lit(b, ",\"args\":{\"allocated\":");
		gprof_jbuf_u64(b, ev->u.memory.allocated);
		if (ev->flags & GPROF_EXPORT_MEMORY_POOLS)
			gprof_jbuf_arg(b, "pool reserved", u64, ev->u.memory.reserved);
		gprof_jbuf_lit(b, "}");
		put_end(t, ev, false);
	}
	if (!ev->u.memory.address || (t->tensor_memory && !tensor))
		return;
	/*
	 * PyTorch's allocator event: "Device Type" 1 is CUDA, 0 the host. A device allocation
	 * holds nothing in reserve; a tensor's totals are the allocator's.
	 */
	gprof_jbuf_lit(b, "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]");
	host_track(t, ev);
	if (ev->device == GPROF_EXPORT_HOST) {
		gprof_jbuf_lit(b, ",\"s\":\"t\",\"args\":{\"Device Type\":0,\"Device Id\":-1");
	} else {
		gprof_jbuf_lit(b, ",\"s\":\"t\",\"args\":{\"Device Type\":1,\"Device Id\":");
		gprof_jbuf_u64(b, ev->device);
	}
	gprof_jbuf_arg(b, "Addr", u64, ev->u.memory.address);
	gprof_jbuf_arg(b, "Bytes", i64, ev->u.memory.bytes);
	gprof_jbuf_arg(b, "Total Allocated", u64, ev->u.memory.allocated);
	gprof_jbuf_arg(b, "Total Reserved", u64,
		       tensor ? ev->u.memory.reserved : ev->u.memory.allocated);
	gprof_jbuf_lit(b, "}");
	put_end(t, ev, false);
}

typedef void (*emit_fn)(struct gprof_trace *t, const struct gprof_export_event *ev);

/* Indexed by enum gprof_export_kind, made from common/activity.h's GPROF_EXPORT_KIND_TABLE. */
static const emit_fn emitters[GPROF_EXPORT_KINDS] = {
#define EMITTER(name, key, emitter, ...) [GPROF_EXPORT_##name] = emitter,
    GPROF_EXPORT_KIND_TABLE(EMITTER)
#undef EMITTER
};

/* Formatted text goes to the sink; the first error (of either) sticks in t->err. */
static void hand_over(struct gprof_trace *t)
{
	if (t->out.failed && !t->err)
		t->err = -ENOMEM;
	if (!t->err && t->out.len) {
		t->err = gprof_sink_write(t->sink, t->out.p, t->out.len);
		t->unsynced = true;
	}
	t->out.len = 0;
}

static void trace_events(struct gprof_format *f, const struct gprof_export_event *ev, size_t n)
{
	struct gprof_trace *t = (struct gprof_trace *)f;

	for (size_t i = 0; i < n; i++) {
		unsigned kind = ev[i].kind;

		if (kind >= GPROF_EXPORT_KINDS || !emitters[kind])
			continue;
		if (ev[i].flags & GPROF_EXPORT_QUIET) {
			t->left_out++;
			continue;
		}
		emitters[kind](t, &ev[i]);
		t->counts[kind]++;
	}
	if (t->out.len >= OUT_FLUSH_BYTES)
		hand_over(t);
}

static int trace_tick(struct gprof_format *f, uint64_t now_ns)
{
	struct gprof_trace *t = (struct gprof_trace *)f;

	hand_over(t);
	if (!t->err && t->unsynced && now_ns - t->last_sync_ns >= SYNC_EVERY_NS) {
		t->err = gprof_sink_sync(t->sink);
		t->unsynced = false;
		t->last_sync_ns = now_ns;
	}
	return t->err;
}

static void trace_set_proc(struct gprof_format *f, const struct gprof_export_process_info *p)
{
	((struct gprof_trace *)f)->proc = *p;
}

static const uint64_t *trace_counts(const struct gprof_format *f)
{
	return ((const struct gprof_trace *)f)->counts;
}

/* `{"name":"<what>","ph":"M","ts":T,"pid":P,"tid":T,"args":{"<key>":` */
static void meta_begin(struct gprof_trace *t, const char *what, uint64_t pid, uint64_t tid,
		       const char *key)
{
	struct gprof_jbuf *b = &t->out;

	gprof_jbuf_lit(b, "{\"name\":\"");
	put_cstr_raw(b, what);
	gprof_jbuf_lit(b, "\",\"ph\":\"M\",\"ts\":");
	put_ts(t, t->open_ns);
	gprof_jbuf_lit(b, ",\"pid\":");
	gprof_jbuf_u64(b, pid);
	gprof_jbuf_lit(b, ",\"tid\":");
	gprof_jbuf_u64(b, tid);
	gprof_jbuf_lit(b, ",\"args\":{\"");
	put_cstr_raw(b, key);
	gprof_jbuf_lit(b, "\":");
}

static void meta_str(struct gprof_trace *t, const char *what, uint64_t pid, uint64_t tid,
		     const char *key, const char *value)
{
	meta_begin(t, what, pid, tid, key);
	gprof_jbuf_str(&t->out, value, strlen(value));
	gprof_jbuf_lit(&t->out, "}},\n");
}

static void meta_num(struct gprof_trace *t, const char *what, uint64_t pid, uint64_t tid,
		     uint64_t value)
{
	meta_begin(t, what, pid, tid, "sort_index");
	gprof_jbuf_u64(&t->out, value);
	gprof_jbuf_lit(&t->out, "}},\n");
}

/* Names and order of the processes: this one, and one per GPU (Kineto's sort indexes). */
static void put_processes(struct gprof_trace *t)
{
	const struct gprof_seen *devices = &t->tracks.devices;
	char label[32];

	meta_str(t, "process_name", (uint64_t)t->pid, 0, "name", program_invocation_short_name);
	meta_str(t, "process_labels", (uint64_t)t->pid, 0, "labels", "CPU");
	meta_num(t, "process_sort_index", (uint64_t)t->pid, 0, (uint64_t)t->pid);
	for (size_t i = 0; i < devices->n; i++) {
		uint64_t dev = devices->keys[i];

		snprintf(label, sizeof(label), "GPU %llu", (unsigned long long)dev);
		meta_str(t, "process_name", dev, 0, "name", program_invocation_short_name);
		meta_str(t, "process_labels", dev, 0, "labels", label);
		meta_num(t, "process_sort_index", dev, 0, GPU_SORT_INDEX + dev);
	}
}

/* Each user annotation's span on each stream its GPU work ran on, as Kineto writes them. */
static void put_gpu_annotations(struct gprof_trace *t)
{
	struct gprof_annotations *a = &t->annotations;
	struct gprof_jbuf *b = &t->out;

	gprof_annotations_finish(a);
	for (size_t i = 0; i < a->n; i++) {
		const struct gprof_annotation_span *s = &a->v[i];
		struct gprof_export_event ev = {.ts_ns = s->start,
						.dur_ns = s->end - s->start,
						.device = s->device,
						.stream = s->stream};

		if (!s->name)
			continue;
		gpu_x_begin(t, "gpu_user_annotation", s->name, &ev);
		gprof_jbuf_lit(b, ",\"args\":{\"External id\":");
		gprof_jbuf_u64(b, s->id);
		gprof_jbuf_lit(b, "}");
		put_end(t, &ev, true);
	}
}

/* Names and order of the tracks: host threads, then GPU streams. */
static void put_tracks(struct gprof_trace *t)
{
	const struct gprof_tracks *k = &t->tracks;
	char name[16], label[48];

	for (size_t i = 0; i < k->threads.n; i++) {
		uint32_t tid = (uint32_t)k->threads.keys[i];

		/* Threads are often named after they start: the name now wins, if it can be read. */
		gprof_tracks_comm(tid, name);
		if (!name[0])
			snprintf(name, sizeof(name), "%s", k->comm[i][0] ? k->comm[i] : "unknown");
		snprintf(label, sizeof(label), "thread %u (%s)", tid, name);
		meta_str(t, "thread_name", (uint64_t)t->pid, tid, "name", label);
		meta_num(t, "thread_sort_index", (uint64_t)t->pid, tid, tid);
	}
	for (size_t i = 0; i < k->streams.n; i++) {
		uint64_t dev = k->streams.keys[i] >> 32, stream = (uint32_t)k->streams.keys[i];

		if (stream == SYNC_LANE_DEVICE)
			snprintf(label, sizeof(label), "context sync");
		else if (stream & SYNC_LANE)
			snprintf(label, sizeof(label), "stream %llu sync",
				 (unsigned long long)(stream & ~SYNC_LANE));
		else
			snprintf(label, sizeof(label), "stream %llu ", (unsigned long long)stream);
		meta_str(t, "thread_name", dev, stream, "name", label);
		meta_num(t, "thread_sort_index", dev, stream, stream);
	}
}

/*
 * The window's operators of PyTorch's profiler, at its end: each one libgprof saw, with its
 * name, args and link to its forward operator; then those it did not see (one that began on
 * one thread and ended on another, or made room) by PyTorch's own times.
 */
static void put_held_ops(struct gprof_trace *t, struct gprof_op_args *args)
{
	struct gprof_map at = {0}; /* kid -> its place in t->ops + 1; out of memory: no links */
	struct gprof_op_entry *op;
	uint64_t until = 0, fwd;
	size_t i;

	gprof_map_init(&at, t->n_ops + 1);
	for (i = 0; i < t->n_ops; i++) {
		const struct gprof_export_event *ev = &t->ops[i];

		if (gprof_map_slots(&at))
			gprof_map_set(&at, ev->u.op.rf_id, i + 1);
		until = ev->ts_ns + ev->dur_ns > until ? ev->ts_ns + ev->dur_ns : until;
	}
	for (i = 0; i < t->n_ops; i++) {
		struct gprof_export_event ev = t->ops[(t->first + i) % t->n_ops];

		op = gprof_op_args_find(args, ev.u.op.rf_id);
		if (!op)
			continue;
		op->written = true;
		if (op->fwd && gprof_map_slots(&at) && gprof_map_get(&at, op->fwd, &fwd)) {
			ev.u.op.fwd_ns = t->ops[fwd - 1].ts_ns;
			ev.u.op.fwd_tid = t->ops[fwd - 1].tid;
		}
		put_cpu_op(t, &ev, op, gprof_op_args_text(args, op));
		if (t->out.len >= OUT_FLUSH_BYTES)
			hand_over(t);
	}
	for (i = 0; (op = gprof_op_args_unwritten(args, &i, until));) {
		struct gprof_export_event ev = {
		    .kind = GPROF_EXPORT_CPU_OP,
		    .flags =
			(uint16_t)(GPROF_EXPORT_OP_KINETO | (op->user ? GPROF_EXPORT_OP_USER : 0)),
		    .ts_ns = op->ts_ns,
		    .dur_ns = op->dur_ns,
		    .tid = op->tid,
		};

		put_cpu_op(t, &ev, op, gprof_op_args_text(args, op));
		if (t->out.len >= OUT_FLUSH_BYTES)
			hand_over(t);
	}
	gprof_map_free(&at);
}

static int trace_close(struct gprof_format *f, struct gprof_trace_meta *m)
{
	struct gprof_trace *t = (struct gprof_trace *)f;
	struct gprof_jbuf head;

	put_held_ops(t, m->op_args);
	put_gpu_annotations(t);
	put_processes(t);
	put_tracks(t);
	/* Every line so far ends with ",\n"; the array's last element must not. */
	t->out.len -= 2;
	gprof_jbuf_lit(&t->out, "\n  ],\n  \"traceName\": ");
	gprof_jbuf_str(&t->out, m->trace_name, strlen(m->trace_name));
	gprof_jbuf_lit(&t->out, "\n}\n");
	hand_over(t);
	if (t->err)
		return t->err;
	m->proc = &t->proc;
	m->left_out = t->left_out;
	if (gprof_jbuf_init(&head, GPROF_TRACE_HEAD_BYTES))
		return t->err = -ENOMEM;
	t->err = gprof_trace_head(&head, m, t->counts);
	if (!t->err)
		t->err = gprof_sink_finish(t->sink, head.p, head.len);
	gprof_jbuf_free(&head);
	return t->err;
}

static void trace_free(struct gprof_format *f)
{
	struct gprof_trace *t = (struct gprof_trace *)f;

	if (!t)
		return;
	gprof_jbuf_free(&t->out);
	gprof_free(t->ops);
	gprof_tracks_free(&t->tracks);
	gprof_annotations_free(&t->annotations);
	gprof_free(t);
}

/* The first header is written into s at once; m->proc is copied. */
static struct gprof_format *trace_open(const struct gprof_trace_meta *m, uint64_t open_ns,
				       struct gprof_sink *s, int *err)
{
	struct gprof_trace *t = gprof_calloc(1, sizeof(*t));
	struct gprof_jbuf head = {0};

	*err = -ENOMEM;
	if (!t || gprof_jbuf_init(&t->out, 2 * OUT_FLUSH_BYTES) ||
	    gprof_jbuf_init(&head, GPROF_TRACE_HEAD_BYTES))
		goto fail;
	t->base.ops = &gprof_format_kineto;
	t->sink = s;
	t->proc = *m->proc;
	t->base_ns = m->base_ns;
	t->tensor_memory = m->tensor_memory;
	t->hold_ops = m->torch_ops;
	t->open_ns = t->last_sync_ns = open_ns;
	t->pid = (int)getpid();
	*err = gprof_trace_head(&head, m, t->counts);
	if (!*err)
		*err = gprof_sink_head(s, head.p, head.len);
	if (*err)
		goto fail;
	gprof_jbuf_free(&head);
	return &t->base;
fail:
	gprof_jbuf_free(&head);
	trace_free(t ? &t->base : NULL);
	return NULL;
}

const struct gprof_format_ops gprof_format_kineto = {
    .name = "Kineto JSON",
    GPROF_FORMAT_OPS(trace),
};

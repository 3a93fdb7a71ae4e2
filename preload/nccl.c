/*
 * NCCL's collectives, interposed. Inside a window each call becomes a CPU operator named as
 * PyTorch's profiler names it ("nccl:all_reduce"), with its element count and type, and the
 * runtime calls and kernels it makes carry the operator's External id (CUPTI's external
 * correlation): what TensorBoard's distributed view reads. A call inside PyTorch's own operator
 * of that name (--torch, emit_nvtx) is PyTorch's to write. Outside a window a hook is one load
 * and a branch. ncclSend/ncclRecv and the group calls are not hooked: the readers know no
 * operator of theirs, and a collective called inside a group launches its kernels at
 * ncclGroupEnd, so its operator has no GPU work of its own.
 */
#include <errno.h>
#include <stddef.h>

#define PR_FMT "preload: "
#include "collector/collector.h"
#include "common/clock.h"
#include "common/log.h"
#include "preload/preload.h"

/* NCCL's ABI as its public nccl.h gives it: the enums are ints, the handles pointers. */
typedef int nccl_result;
#define NCCL_SYSTEM_ERROR 2 /* ncclSystemError */

/* The collectives' signatures (nccl.h), with void * for ncclComm_t and cudaStream_t. */
GPROF_EXPORT nccl_result ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
				       void *comm, void *stream);
GPROF_EXPORT nccl_result ncclBroadcast(const void *send, void *recv, size_t count, int type,
				       int root, void *comm, void *stream);
GPROF_EXPORT nccl_result ncclReduce(const void *send, void *recv, size_t count, int type, int op,
				    int root, void *comm, void *stream);
GPROF_EXPORT nccl_result ncclAllGather(const void *send, void *recv, size_t count, int type,
				       void *comm, void *stream);
GPROF_EXPORT nccl_result ncclReduceScatter(const void *send, void *recv, size_t count, int type,
					   int op, void *comm, void *stream);

/* The hooked collectives: X(symbol, operator name). */
#define NCCL_OPS(X)                         \
	X(ncclAllReduce, "nccl:all_reduce") \
	X(ncclBroadcast, "nccl:broadcast")  \
	X(ncclReduce, "nccl:reduce")        \
	X(ncclAllGather, "nccl:all_gather") \
	X(ncclReduceScatter, "nccl:reduce_scatter")

enum nccl_op {
#define X(sym, name) OP_##sym,
	NCCL_OPS(X)
#undef X
	OP_COUNT
};

static const char *const op_symbol[OP_COUNT] = {
#define X(sym, name) [OP_##sym] = #sym,
    NCCL_OPS(X)
#undef X
};

static const char *const op_name[OP_COUNT] = {
#define X(sym, name) [OP_##sym] = name,
    NCCL_OPS(X)
#undef X
};

/* ncclDataType_t -> the element type as PyTorch's profiler writes "Input type". */
static const char *const type_name[] = {
    "signed char",	  "unsigned char",    "int",   "unsigned int", "long int",
    "unsigned long",	  "c10::Half",	      "float", "double",       "c10::BFloat16",
    "c10::Float8_e4m3fn", "c10::Float8_e5m2",
};

/* NCCL's definitions, found on first use (a race only finds them twice). */
static void *real[OP_COUNT];

static void *real_fn(enum nccl_op op)
{
	void *p = __atomic_load_n(&real[op], __ATOMIC_RELAXED);

	if (unlikely(!p)) {
		p = gprof_resolve_in(op_symbol[op], "libnccl.so");
		__atomic_store_n(&real[op], p, __ATOMIC_RELAXED);
		/* the process calls NCCL: its traces name the backend */
		if (p)
			gprof_export_set_backend("nccl");
	}
	return p;
}

/* No library defines the collective: it fails, as NCCL does when it cannot work at all. */
static nccl_result missing(enum nccl_op op)
{
	static bool said;
	int saved_errno = errno;

	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		pr_warn(
		    "%s was called but no loaded library defines it: it returns ncclSystemError",
		    op_symbol[op]);
	errno = saved_errno;
	return NCCL_SYSTEM_ERROR;
}

/*
 * Whether the call is recorded: then c is started and the operator is the thread's. Not when
 * PyTorch's profiler already writes it (in NVTX mode its range of the same name is open; under
 * --torch one of its operators is): its kernels are then tied to PyTorch's.
 */
static bool op_begin(struct gprof_nccl_call *c, enum nccl_op op, size_t count, int type)
{
	if (gprof_current_op() || !gprof_session_recording() || gprof_nvtx_in_op(op_name[op]) ||
	    gprof_kineto_in_op())
		return false;
	*c = (struct gprof_nccl_call){
	    .name = op_name[op],
	    .type = (unsigned)type < ARRAY_SIZE(type_name) ? type_name[type] : NULL,
	    .count = count,
	    .external = gprof_events_next_external(),
	    .start_ns = gprof_realtime_ns(),
	};
	c->pushed = gprof_collector_external_begin(false, c->external);
	gprof_set_current_op(c->external);
	return true;
}

static nccl_result op_end(struct gprof_nccl_call *c, nccl_result result)
{
	int saved_errno = errno;

	if (c->pushed)
		gprof_collector_external_end(false);
	gprof_set_current_op(0);
	c->end_ns = gprof_realtime_ns();
	gprof_session_nccl(c);
	errno = saved_errno;
	return result;
}

/*
 * The body of the hook of `sym` with `count` elements of `type`: forwards at once when the
 * process is idle (one load and a branch) or the call is not recorded.
 */
#define NCCL_HOOK(sym, count, type, ...)                                           \
	__typeof__(&sym) fn = (__typeof__(&sym))real_fn(OP_##sym);                 \
	struct gprof_nccl_call c;                                                  \
                                                                                   \
	if (unlikely(!fn))                                                         \
		return missing(OP_##sym);                                          \
	if (likely(!gprof_hot_load()) || !op_begin(&c, OP_##sym, (count), (type))) \
		return fn(__VA_ARGS__);                                            \
	return op_end(&c, fn(__VA_ARGS__))

GPROF_EXPORT nccl_result ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
				       void *comm, void *stream)
{
	NCCL_HOOK(ncclAllReduce, count, type, send, recv, count, type, op, comm, stream);
}

GPROF_EXPORT nccl_result ncclBroadcast(const void *send, void *recv, size_t count, int type,
				       int root, void *comm, void *stream)
{
	NCCL_HOOK(ncclBroadcast, count, type, send, recv, count, type, root, comm, stream);
}

GPROF_EXPORT nccl_result ncclReduce(const void *send, void *recv, size_t count, int type, int op,
				    int root, void *comm, void *stream)
{
	NCCL_HOOK(ncclReduce, count, type, send, recv, count, type, op, root, comm, stream);
}

GPROF_EXPORT nccl_result ncclAllGather(const void *send, void *recv, size_t count, int type,
				       void *comm, void *stream)
{
	NCCL_HOOK(ncclAllGather, count, type, send, recv, count, type, comm, stream);
}

GPROF_EXPORT nccl_result ncclReduceScatter(const void *send, void *recv, size_t count, int type,
					   int op, void *comm, void *stream)
{
	NCCL_HOOK(ncclReduceScatter, count, type, send, recv, count, type, op, comm, stream);
}

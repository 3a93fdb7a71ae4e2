/*
 * PyTorch's operators. PyTorch's profiler in NVTX mode (torch.autograd.profiler.emit_nvtx in
 * the program) pushes one NVTX range per operator; nvtx.c hands each range it copies here
 * (--torch's start-up hook runs PyTorch's own profiler instead: kineto.c). An operator's range
 * becomes a cpu_op event, as torch.profiler writes it, and while it is open its External id is
 * on CUPTI's external correlation stack, so the API calls and the GPU work it causes carry the
 * id too. A backward operator is linked to the forward one of the same sequence number
 * ("fwdbwd"). Also the rest of what the start-up hook calls (steps, windows held, tensor
 * memory).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#define PR_FMT "--torch: "
#include "collector/collector.h"
#include "common/log.h"
#include "preload/preload.h"

/*
 * The last forward operator of each sequence number, by number: autograd gives the backward
 * node the number of the forward operator that made it. Sequence numbers are counted per
 * thread, so two threads running forward passes can take each other's slots; a backward
 * operator then links to the wrong one, which a real program with one forward thread never
 * sees.
 */
#define FORWARD_SLOTS 4096

static pthread_mutex_t forward_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint64_t seq_plus_1; /* 0: empty */
	uint64_t start_ns;
	uint32_t tid;
} forward[FORWARD_SLOTS];

static void forward_note(uint64_t seq, uint32_t tid, uint64_t start_ns)
{
	pthread_mutex_lock(&forward_lock);
	forward[seq % FORWARD_SLOTS].seq_plus_1 = seq + 1;
	forward[seq % FORWARD_SLOTS].start_ns = start_ns;
	forward[seq % FORWARD_SLOTS].tid = tid;
	pthread_mutex_unlock(&forward_lock);
}

static void forward_find(struct gprof_torch_frame *f, uint64_t seq)
{
	pthread_mutex_lock(&forward_lock);
	if (forward[seq % FORWARD_SLOTS].seq_plus_1 == seq + 1) {
		f->fwd_ns = forward[seq % FORWARD_SLOTS].start_ns;
		f->fwd_tid = forward[seq % FORWARD_SLOTS].tid;
	}
	pthread_mutex_unlock(&forward_lock);
}

/* Python ids of modules' forwards, from 1 (0 is none). */
static uint32_t last_py_id;

void gprof_torch_open(struct gprof_torch_frame *f, const char *msg, size_t len,
		      struct gprof_torch_frame *up, const char *up_msg, uint64_t start_ns)
{
	*f = (struct gprof_torch_frame){.py_parent =
					    up ? (up->py_id ? up->py_id : up->py_parent) : 0};
	if (gprof_torch_module(msg, len, &f->op)) {
		f->py_id = __atomic_add_fetch(&last_py_id, 1, __ATOMIC_RELAXED);
		return;
	}
	if (!gprof_torch_op_parse(msg, len, &f->op))
		return;
	f->external = gprof_events_next_external();
	f->pushed = gprof_collector_external_begin(false, f->external);
	/* record_function's scopes are user annotations too, on the GPU's streams. */
	if (f->pushed && gprof_torch_op_user_scope(msg, f->op.name_len) &&
	    !gprof_torch_op_collective(msg, f->op.name_len))
		f->annotated = gprof_collector_external_begin(true, f->external);
	if (f->op.seq < 0)
		return;
	/*
	 * The autograd engine runs a backward node inside a wrapper range of its own, which
	 * NVTX gives no number: torch.profiler gives it the node's, and its forward thread.
	 */
	if (up && up->external && gprof_torch_op_backward_wrapper(up_msg, up->op.name_len)) {
		forward_find(f, (uint64_t)f->op.seq);
		f->flow = f->fwd_tid != 0;
		up->op.seq = f->op.seq;
		up->fwd_tid = f->fwd_tid;
	} else {
		forward_note((uint64_t)f->op.seq, (uint32_t)gprof_tid(), start_ns);
	}
}

void gprof_torch_close(struct gprof_torch_frame *f, const char *msg, uint64_t start_ns,
		       uint64_t end_ns)
{
	if (f->annotated)
		gprof_collector_external_end(true);
	if (f->pushed)
		gprof_collector_external_end(false);
	if (gprof_session_recording())
		gprof_session_torch_op(f, msg, start_ns, end_ns);
	f->external = f->py_id = 0;
}

/*
 * For --torch's start-up hook, through ctypes, at start and right before each step marker it
 * makes: bit 0 while PyTorch's operators are wanted (the step that marker begins records), bit
 * 1 when the step it ends is a window's last (the hook hands over what it kept of it).
 */
GPROF_EXPORT int gprof_torch_wanted(void)
{
	return gprof_session_torch_wants();
}

/* Whose step markers count: the program's once it makes one, else the hook's. */
static bool program_marks, hook_marked;
static GPROF_TLS bool hook_marks; /* the thread's next step marker is the hook's */

bool gprof_torch_step_counts(const char *marker)
{
	bool hook = hook_marks;

	hook_marks = false;
	if (hook) {
		if (__atomic_load_n(&program_marks, __ATOMIC_RELAXED))
			return false;
		__atomic_store_n(&hook_marked, true, __ATOMIC_RELAXED);
		return true;
	}
	if (!__atomic_exchange_n(&program_marks, true, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&hook_marked, __ATOMIC_RELAXED))
		pr_warn("the program marks its own steps ('%s'): from here they count, its "
			"optimizer's steps no more",
			marker);
	return true;
}

bool gprof_torch_steps_hooked(void)
{
	return __atomic_load_n(&hook_marked, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&program_marks, __ATOMIC_RELAXED);
}

/*
 * For the start-up hook, through ctypes: the backend of the program's default process group
 * (torch.distributed.get_backend(): "gloo", "nccl", ...), the trace's distributedInfo.backend,
 * kept once. Printable ASCII of at most 63 bytes; anything else is ignored.
 */
GPROF_EXPORT void gprof_torch_backend(const char *name)
{
	static char kept[64];
	static int once;
	size_t n = name ? strnlen(name, sizeof(kept)) : 0;

	if (!n || n == sizeof(kept) || __atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
		return;
	for (size_t i = 0; i < n; i++)
		if (name[i] < 0x20 || name[i] > 0x7e)
			return;
	memcpy(kept, name, n);
	gprof_export_set_backend(kept);
}

/*
 * For the start-up hook, through ctypes: the calling thread's next step marker is its own.
 * The hook marks each step's end (optimizer.step()), so the program's first iteration, before
 * the hook's first marker, is step 0, as torch.profiler counts it: the hook's first call,
 * while the program has marked nothing, counts a marker for that step's start (now: a step 0
 * that the schedule records is empty).
 */
GPROF_EXPORT void gprof_torch_marks(void)
{
	static bool step_zero;

	hook_marks = true;
	if (!__atomic_load_n(&program_marks, __ATOMIC_RELAXED) &&
	    !__atomic_exchange_n(&step_zero, true, __ATOMIC_RELAXED))
		gprof_session_step_zero();
}

/*
 * For --torch's start-up hook, through ctypes: right before the step marker that ends a
 * window, it holds the window; after the marker it hands over what PyTorch kept of it (below),
 * then releases it.
 */
GPROF_EXPORT int gprof_torch_hold(void)
{
	return gprof_session_torch_hold();
}

GPROF_EXPORT void gprof_torch_release(void)
{
	gprof_session_torch_release();
}

/*
 * The window's operators as PyTorch's profiler kept them (names, inputs as record_shapes
 * writes them, links to forward operators): one JSON array (export/opargs.c).
 */
GPROF_EXPORT int gprof_torch_ops(const char *json, size_t len)
{
	const char *why = "no text";
	int n = json ? gprof_session_torch_ops(json, len, &why) : -EINVAL;

	/* Said once: the hook, its own fault, stops trying. Nothing held: nothing to say. */
	if (n < 0 && why)
		pr_warn_once("the window's operators are not written: %s", why);
	return n < 0 ? -1 : n;
}

/*
 * One of the tensor allocations and frees PyTorch's profiler recorded in the held window
 * (device -1: the host's), with the allocator's totals after it.
 */
GPROF_EXPORT void gprof_torch_memory(uint64_t ts_ns, uint64_t address, int64_t bytes,
				     uint64_t allocated, uint64_t reserved, int device)
{
	gprof_session_tensor_memory(ts_ns, address, bytes, allocated, reserved,
				    device < 0 ? GPROF_EXPORT_HOST : (uint32_t)device);
}

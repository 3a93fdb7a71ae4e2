/*
 * The activity kinds, in one place: what GPROF_ACTIVITIES asks for, the CUPTI activity kinds
 * that deliver it and the decoders that turn their records into events, and the events with
 * every fact kept of them: how the trace writes them, what payload they carry, what the
 * summaries count of them, where their External id goes. Every per-kind table or switch of
 * common/, collector/, export/ and scripts/summary/ is made from these rows (tests
 * collector_kind_tables, export_kind_tables and export_kind_rows check each one).
 *
 * A new kind is a row here, its decoder in collector/records.c and its emitter in
 * export/trace.c (with its payload in export/export.h when it has one of its own). This header
 * names those functions and CUPTI's kinds only as words: it includes nothing, and each table
 * is expanded only in the file that owns its column.
 */
#ifndef GPROF_ACTIVITY_H
#define GPROF_ACTIVITY_H

/*
 * GPROF_ACTIVITIES' words, one row each: X(NAME, word, dflt, note) makes the bit
 * GPROF_ACT_<NAME>; dflt is ON when the default asks for it, OFF when not; note is what the
 * README and the messages say of the word after it ("" for nothing).
 */
#define GPROF_ACTIVITY_TABLE(X)                                                                   \
	X(KERNEL, "kernel", ON, "")                                                               \
	X(MEMCPY, "memcpy", ON, "")                                                               \
	X(MEMSET, "memset", ON, "")                                                               \
	X(MEMORY, "memory", ON, "")                                                               \
	X(API, "api", ON, "")                                                                     \
	X(NVTX, "nvtx", ON, "")                                                                   \
	X(SYNC, "sync", OFF,                                                                      \
	  " (the host's waits for the GPU as cuda_sync events, which HTA's critical path needs; " \
	  "off by default as in torch.profiler: HTA's temporal breakdown counts them as GPU "     \
	  "time)")                                                                                \
	X(OVERHEAD, "overhead", OFF,                                                              \
	  " (CUPTI's own time on the host, as Kineto's overhead events: its buffer requests and " \
	  "flushes; counted with the CUDA calls)")

/* Bits of GPROF_ACTIVITIES, in the table's order. */
enum gprof_activity_bit {
#define GPROF_ACT_BIT(name, ...) GPROF_ACT_BIT_##name,
	GPROF_ACTIVITY_TABLE(GPROF_ACT_BIT)
#undef GPROF_ACT_BIT
	GPROF_ACT_BITS
};
enum gprof_activity {
#define GPROF_ACT(name, ...) GPROF_ACT_##name = 1u << GPROF_ACT_BIT_##name,
	GPROF_ACTIVITY_TABLE(GPROF_ACT)
#undef GPROF_ACT
};

/* The GPU's own work; the bits that the host side gives (the session's NVTX hooks). */
#define GPROF_ACT_GPU  (GPROF_ACT_KERNEL | GPROF_ACT_MEMCPY | GPROF_ACT_MEMSET)
#define GPROF_ACT_HOST GPROF_ACT_NVTX

/*
 * The CUPTI activity kinds the collector knows, one row each: X(KIND, gives, acts, decoder,
 * lost) is CUPTI_ACTIVITY_KIND_<KIND>, whose records decoder (collector/records.c) turns into
 * events of the GPROF_ACTIVITIES bit gives (0: none of their own), enabled while
 * GPROF_ACTIVITIES asks for any of the bits acts (0: decoded when it comes, never enabled).
 * lost is 0 for a kind the rest needs: a CUPTI that cannot enable it records no GPU activity;
 * for one that only adds to the rest, what is lost without it, said once (collector/cupti.c).
 * Kinds are enabled in the table's order. API records place GPU work in windows, so every GPU
 * bit needs them; EXTERNAL_CORRELATION ties the calls CPU operators make to them
 * (gprof_collector_external_begin). CUDA_EVENT's records say which stream and call recorded
 * the event a SYNCHRONIZATION record waits on. MEMORY_POOL's say what a program's trimming
 * and destroying of a stream-ordered pool left of it (MEMORY2's, what each allocation did).
 */
#define GPROF_LOST_SYNC "synchronisations (cuda_sync) are not recorded"
#define GPROF_LOST_POOL \
	"what trimming or destroying a stream-ordered pool leaves of it is not recorded"
#define GPROF_LOST_OVERHEAD "CUPTI's own overhead is not recorded"
#define GPROF_CUPTI_KIND_TABLE(X)                                                               \
	X(RUNTIME, GPROF_ACT_API, GPROF_ACT_GPU | GPROF_ACT_API, decode_api, 0)                 \
	X(DRIVER, GPROF_ACT_API, GPROF_ACT_GPU | GPROF_ACT_API, decode_api, 0)                  \
	X(KERNEL, GPROF_ACT_KERNEL, 0, decode_kernel, 0)                                        \
	X(CONCURRENT_KERNEL, GPROF_ACT_KERNEL, GPROF_ACT_KERNEL, decode_kernel, 0)              \
	X(MEMCPY, GPROF_ACT_MEMCPY, GPROF_ACT_MEMCPY, decode_memcpy, 0)                         \
	X(MEMSET, GPROF_ACT_MEMSET, GPROF_ACT_MEMSET, decode_memset, 0)                         \
	X(MEMORY2, GPROF_ACT_MEMORY, GPROF_ACT_MEMORY, decode_memory, 0)                        \
	X(MEMORY_POOL, GPROF_ACT_MEMORY, GPROF_ACT_MEMORY, decode_memory_pool, GPROF_LOST_POOL) \
	X(EXTERNAL_CORRELATION, 0, GPROF_ACT_API, decode_external, 0)                           \
	X(SYNCHRONIZATION, GPROF_ACT_SYNC, GPROF_ACT_SYNC, decode_sync, GPROF_LOST_SYNC)        \
	X(CUDA_EVENT, 0, GPROF_ACT_SYNC, decode_cuda_event, GPROF_LOST_SYNC)                    \
	X(OVERHEAD, GPROF_ACT_OVERHEAD, GPROF_ACT_OVERHEAD, decode_overhead, GPROF_LOST_OVERHEAD)

/*
 * What an event is, one row each: X(NAME, key, emitter, ph, cat, payload, summary, external)
 * makes GPROF_EXPORT_<NAME> (export/export.h). key is its name in gprof.records; emitter the
 * function of export/trace.c that writes it, as a Kineto event of phase ph and category cat
 * (which gprof-summary reads back, scripts/summary/load.c); payload its member of the event's
 * union u (none: no member of its own). summary is what both summaries count of it
 * (GPROF_SUM_<summary>, export/export.h): STEP a step, KERNEL, MEMCPY and MEMSET GPU time and
 * busy time, EARLIER busy time only, CALL and RANGE CPU time by name, MEMORY the device's
 * memory, OP an operator's times, NONE nothing. external says where the External id of the
 * operator it was made in goes (collector/external.c): CALL u.<payload>.external, WORK that
 * and u.<payload>.annotation (an NVTX range's), NONE nowhere. shared/TRACE_FORMAT.md's table
 * gives the JSON of each:
 *   STEP        X user_annotation "ProfilerStep#<u.step>" on tid
 *   NVTX_RANGE  X user_annotation, name = message, u.nvtx.domain
 *   NVTX_MARK   i user_annotation (dur_ns unused)
 *   RUNTIME     X cuda_runtime, name = public API name, u.api
 *   DRIVER      X cuda_driver, as RUNTIME
 *   KERNEL      X kernel on (device, stream), name = demangled, u.kernel
 *   MEMCPY      X gpu_memcpy on (device, stream), u.copy; name from kinds
 *   MEMSET      X gpu_memset on (device, stream), u.copy.dst_kind
 *   MEMORY      C gpu_memory on device: u.memory.allocated after an alloc/free; with an
 *               address also i "[memory]" (PyTorch's allocator event, which TensorBoard's
 *               memory view reads) on the process's thread tid
 *   EARLIER     X gpu_earlier on (device, stream): GPU work launched before the window that ran
 *               in it, cut to the window; name: the kernel's, or "Memcpy" / "Memset". No
 *               correlation or stream argument, so readers count it as no launch's work; busy
 *               time counts it
 *   CPU_OP      X cpu_op on tid, name = the operator ("nccl:all_reduce"), u.op: "External id"
 *               (which the runtime calls and GPU work it caused carry too), "Input Dims"
 *               [[u.op.count]] and "Input type" [u.op.type] when u.op.type is set
 *   PYTHON      X python_function on tid, name = "nn.Module: Linear_0" (a module's forward),
 *               u.py: "Python id", "Python parent id" (its enclosing module's; null at the
 *               top), "Python module id"
 *   SYNC        X cuda_sync on (device, a lane of its own per stream waited for, or the
 *               device's for a context sync), name = "Stream Sync", "Event Sync", "Context
 *               Sync" or "Stream Wait Event"; the host's wait, whose
 *               "correlation" is its call's; an event's waits also say which stream and call
 *               recorded the event ("wait_on_stream", "wait_on_cuda_event_record_corr_id")
 *   OVERHEAD    X overhead on tid (the thread CUPTI names; the process's for an overhead of
 *               another object), name = Kineto's for the overhead kind ("Buffer Flush",
 *               "Activity Buffer Request"); no args (Kineto's have none either)
 */
#define GPROF_EXPORT_KIND_TABLE(X)                                                              \
	X(STEP, "step", emit_step, 'X', "user_annotation", step, STEP, NONE)                    \
	X(NVTX_RANGE, "nvtx_range", emit_nvtx_range, 'X', "user_annotation", nvtx, RANGE, NONE) \
	X(NVTX_MARK, "nvtx_mark", emit_nvtx_mark, 'i', "user_annotation", nvtx, NONE, NONE)     \
	X(RUNTIME, "runtime", emit_api, 'X', "cuda_runtime", api, CALL, CALL)                   \
	X(DRIVER, "driver", emit_api, 'X', "cuda_driver", api, CALL, CALL)                      \
	X(KERNEL, "kernel", emit_kernel, 'X', "kernel", kernel, KERNEL, WORK)                   \
	X(MEMCPY, "memcpy", emit_copy, 'X', "gpu_memcpy", copy, MEMCPY, WORK)                   \
	X(MEMSET, "memset", emit_copy, 'X', "gpu_memset", copy, MEMSET, WORK)                   \
	X(MEMORY, "memory", emit_memory, 'C', "gpu_memory", memory, MEMORY, NONE)               \
	X(EARLIER, "earlier", emit_earlier, 'X', "gpu_earlier", none, EARLIER, NONE)            \
	X(CPU_OP, "cpu_op", emit_cpu_op, 'X', "cpu_op", op, OP, NONE)                           \
	X(PYTHON, "python_function", emit_python, 'X', "python_function", py, NONE, NONE)       \
	X(SYNC, "cuda_sync", emit_sync, 'X', "cuda_sync", sync, NONE, NONE)                     \
	X(OVERHEAD, "overhead", emit_overhead, 'X', "overhead", none, CALL, NONE)

#endif

/*
 * NVTX injection: the NVTX v3 loader finds us through NVTX_INJECTION64_PATH and calls
 * InitializeInjectionNvtx2 once per module that embeds NVTX. We fill the CORE and CORE2 tables:
 * marks and ranges become step markers and user_annotation events.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define PR_FMT "nvtx: "
#include "collector/collector.h"
#include "common/clock.h"
#include "common/log.h"
#include "preload/preload.h"
#include "scheduler/scheduler.h"

/* Declarations and the injection types only: the NVTX implementation belongs to the program. */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

/* Longest message kept, in bytes; longer ones are cut (hostile programs send megabytes). */
#define NVTX_MSG_MAX	 1024
#define NVTX_DEPTH	 128
#define NVTX_OPEN_RANGES 4096

struct nvtx_domain {
	struct nvtx_domain *next;
	char name[];
};

struct nvtx_string {
	const struct nvtx_domain *domain;
	size_t len;
	char text[];
};

/* A message made readable: points at the caller's bytes or at buf. */
struct nvtx_msg {
	const char *s;
	size_t len;
	char buf[NVTX_MSG_MAX];
};

/* One open push/pop range; the message is copied only while recording. */
struct nvtx_frame {
	uint64_t start_ns;
	const struct nvtx_domain *domain;
	size_t len;
	char *text;		     /* NULL: opened outside a window, not written */
	struct gprof_torch_frame op; /* op.external: the range is PyTorch's operator */
	uint32_t annotation;	     /* else its External id as a user annotation; 0: none */
};

struct nvtx_thread {
	int depth;   /* may exceed NVTX_DEPTH; frames beyond are counted, not kept */
	int step_at; /* a step marker waits for the depth to fall below this; 0: none */
	struct nvtx_frame frames[NVTX_DEPTH];
};

/* A start/end range, which may end on another thread. */
struct nvtx_open_range {
	nvtxRangeId_t id;
	uint64_t start_ns;
	const struct nvtx_domain *domain;
	size_t len;
	char *text;
};

static pthread_mutex_t domains_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtx_domain *domains; /* created by nvtxDomainCreate, never freed */

static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtx_open_range open_ranges[NVTX_OPEN_RANGES];
static nvtxRangeId_t next_range_id = 1;

/*
 * Start/end ranges may end on another thread and overlap each other, which no thread's track
 * allows (its events must nest). Each goes on a lane: a track of its own, with a thread id no
 * real thread has (Linux pids stay below 2^22), the first lane whose last range ended before
 * this one began. Under ranges_lock.
 */
#define NVTX_LANES    16
#define NVTX_LANE_TID 0x7fff0000
static uint64_t lane_end_ns[NVTX_LANES];

static int lane_for(uint64_t start_ns, uint64_t end_ns)
{
	int i = 0;

	while (i < NVTX_LANES - 1 && lane_end_ns[i] > start_ns)
		i++;
	lane_end_ns[i] = end_ns;
	return NVTX_LANE_TID + i;
}

static GPROF_TLS struct nvtx_thread *self;

static void thread_free(void *p)
{
	struct nvtx_thread *t = p;

	for (int i = 0; i < t->depth && i < NVTX_DEPTH; i++)
		free(t->frames[i].text);
	free(t);
	self = NULL;
}

static struct gprof_thread_key thread_key = {PTHREAD_MUTEX_INITIALIZER, .free = thread_free};

static struct nvtx_thread *thread_self(void)
{
	if (unlikely(!self))
		self = gprof_thread_state(&thread_key, sizeof(*self));
	return self;
}

static void msg_from_ascii(struct nvtx_msg *m, const char *s)
{
	m->s = s ? s : "";
	m->len = strnlen(m->s, NVTX_MSG_MAX);
}

/* wchar_t is UTF-32 on Linux: encode as UTF-8, leaving invalid code points to the escaper. */
static void msg_from_wide(struct nvtx_msg *m, const wchar_t *w)
{
	size_t n = 0;

	for (; w && *w && n + 4 < sizeof(m->buf); w++) {
		uint32_t c = (uint32_t)*w;

		if (c < 0x80) {
			m->buf[n++] = (char)c;
		} else if (c < 0x800) {
			m->buf[n++] = (char)(0xc0 | c >> 6);
			m->buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			m->buf[n++] = (char)(0xe0 | c >> 12);
			m->buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
			m->buf[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			m->buf[n++] = (char)(0xf0 | (c >> 18 & 0x07));
			m->buf[n++] = (char)(0x80 | (c >> 12 & 0x3f));
			m->buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
			m->buf[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	m->buf[n] = '\0';
	m->s = m->buf;
	m->len = n;
}

static void msg_from_attr(struct nvtx_msg *m, const nvtxEventAttributes_t *a)
{
	const size_t need = offsetof(nvtxEventAttributes_t, message) + sizeof(a->message);

	if (!a || a->size < need) {
		msg_from_ascii(m, NULL);
		return;
	}
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		msg_from_ascii(m, a->message.ascii);
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		msg_from_wide(m, a->message.unicode);
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED: {
		const struct nvtx_string *r = (const void *)a->message.registered;

		m->s = r ? r->text : "";
		m->len = r ? r->len : 0;
		break;
	}
	default:
		msg_from_ascii(m, NULL);
	}
}

static const char *domain_name(const struct nvtx_domain *d)
{
	return d ? d->name : NULL;
}

static char *copy_text(const struct nvtx_msg *m)
{
	char *t = malloc(m->len + 1);

	if (t) {
		memcpy(t, m->s, m->len);
		t[m->len] = '\0';
	}
	return t;
}

/* GPROF_STEP_MARKER: written once by the constructor; NULL while libgprof is inert. */
static const char *step_marker;

void gprof_nvtx_set_marker(const char *marker)
{
	step_marker = marker;
}

/*
 * Step markers are counted from the default domain only. One made inside a PyTorch operator
 * (--torch's hook marks inside optimizer.step's range) counts when that operator ends, as
 * torch.profiler's step() after optimizer.step(): no operator crosses a step's edge.
 */
static void check_step(const struct nvtx_domain *d, const struct nvtx_msg *m, uint64_t ts)
{
	struct nvtx_thread *t = self;

	if (d || !step_marker || !gprof_sched_marker_match(step_marker, m->s) ||
	    !gprof_torch_step_counts(step_marker) || gprof_kineto_defer_step())
		return;
	for (int i = t ? t->depth : 0; i-- > 0;)
		if (i < NVTX_DEPTH && t->frames[i].op.external) {
			if (!t->step_at)
				t->step_at = i + 1;
			return;
		}
	gprof_session_step_marker(ts);
}

bool gprof_nvtx_in_op(const char *name)
{
	const struct nvtx_thread *t = self;
	size_t n = strlen(name);

	for (int i = t ? t->depth : 0; i-- > 0;)
		if (i < NVTX_DEPTH && t->frames[i].op.external &&
		    t->frames[i].op.op.name_len == n && !memcmp(t->frames[i].text, name, n))
			return true;
	return false;
}

static void do_mark(const struct nvtx_domain *d, const struct nvtx_msg *m)
{
	uint64_t ts = gprof_realtime_ns();

	check_step(d, m, ts);
	if (gprof_session_recording())
		gprof_session_nvtx(0, domain_name(d), m->s, m->len, ts, ts, true, 0);
}

static int do_push(const struct nvtx_domain *d, const struct nvtx_msg *m)
{
	struct nvtx_thread *t = thread_self();
	uint64_t ts = gprof_realtime_ns();

	check_step(d, m, ts);
	if (!t)
		return -1;
	if (t->depth < NVTX_DEPTH) {
		struct nvtx_frame *f = &t->frames[t->depth];

		f->start_ns = ts;
		f->domain = d;
		f->len = m->len;
		f->text = gprof_session_recording() ? copy_text(m) : NULL;
		f->op.external = f->op.py_id = f->annotation = 0;
		if (f->text && !d) {
			struct nvtx_frame *up = t->depth ? &t->frames[t->depth - 1] : NULL;

			gprof_torch_open(&f->op, f->text, f->len, up ? &up->op : NULL,
					 up ? up->text : NULL, ts);
		}
		/* Any other range is a user annotation: its GPU work is projected on its streams. */
		if (f->text && !f->op.external && !f->op.py_id && gprof_session_nvtx_recorded()) {
			f->annotation = gprof_events_next_external();
			if (!gprof_collector_external_begin(true, f->annotation))
				f->annotation = 0;
		}
	}
	return t->depth++;
}

static int do_pop(void)
{
	struct nvtx_thread *t = self;

	if (!t || t->depth == 0)
		return -1;
	t->depth--;
	if (t->depth < NVTX_DEPTH) {
		struct nvtx_frame *f = &t->frames[t->depth];

		if (f->annotation)
			gprof_collector_external_end(true);
		if (f->op.external || f->op.py_id)
			gprof_torch_close(&f->op, f->text, f->start_ns, gprof_realtime_ns());
		else if (f->text && gprof_session_recording())
			gprof_session_nvtx(0, domain_name(f->domain), f->text, f->len, f->start_ns,
					   gprof_realtime_ns(), false, f->annotation);
		free(f->text);
		f->text = NULL;
	}
	if (t->step_at && t->depth < t->step_at) {
		t->step_at = 0;
		gprof_session_step_marker(gprof_realtime_ns());
	}
	return t->depth;
}

static nvtxRangeId_t do_start(const struct nvtx_domain *d, const struct nvtx_msg *m)
{
	uint64_t ts = gprof_realtime_ns();
	nvtxRangeId_t id;

	check_step(d, m, ts);
	pthread_mutex_lock(&ranges_lock);
	id = next_range_id++;
	if (gprof_session_recording()) {
		struct nvtx_open_range *r = &open_ranges[id % NVTX_OPEN_RANGES];

		/* A slot still in use belongs to a range never ended: it is lost. */
		free(r->text);
		*r = (struct nvtx_open_range){
		    .id = id, .start_ns = ts, .domain = d, .len = m->len, .text = copy_text(m)};
	}
	pthread_mutex_unlock(&ranges_lock);
	return id;
}

static void do_end(nvtxRangeId_t id)
{
	uint64_t ts = gprof_realtime_ns();
	struct nvtx_open_range r = {0};
	int lane = 0;

	pthread_mutex_lock(&ranges_lock);
	if (open_ranges[id % NVTX_OPEN_RANGES].id == id) {
		r = open_ranges[id % NVTX_OPEN_RANGES];
		open_ranges[id % NVTX_OPEN_RANGES] = (struct nvtx_open_range){0};
		lane = lane_for(r.start_ns, ts);
	}
	pthread_mutex_unlock(&ranges_lock);
	if (r.text && gprof_session_recording())
		gprof_session_nvtx(lane, domain_name(r.domain), r.text, r.len, r.start_ns, ts,
				   false, 0);
	free(r.text);
}

/*
 * The table entries: one per NVTX entry point, each turning its arguments into a message.
 * ENTRIES(op, ret) makes op_a, op_w, op_ex (default domain) and domain_op_ex.
 */
#define NVTX_FN(fn, ret, op, param, conv, domain) \
	static ret NVTX_API fn(param)             \
	{                                         \
		struct nvtx_msg m;                \
                                                  \
		conv(&m, s);                      \
		return (ret)do_##op(domain, &m);  \
	}

#define ENTRIES(op, ret)                                                                           \
	NVTX_FN(op##_a, ret, op, const char *s, msg_from_ascii, NULL)                              \
	NVTX_FN(op##_w, ret, op, const wchar_t *s, msg_from_wide, NULL)                            \
	NVTX_FN(op##_ex, ret, op, const nvtxEventAttributes_t *s, msg_from_attr, NULL)             \
	static ret NVTX_API domain_##op##_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *s) \
	{                                                                                          \
		struct nvtx_msg m;                                                                 \
                                                                                                   \
		msg_from_attr(&m, s);                                                              \
		return (ret)do_##op((const void *)d, &m);                                          \
	}

ENTRIES(mark, void)
ENTRIES(push, int)
ENTRIES(start, nvtxRangeId_t)

static int NVTX_API pop(void)
{
	return do_pop();
}

static int NVTX_API domain_pop(nvtxDomainHandle_t d)
{
	(void)d;
	return do_pop();
}

static void NVTX_API end(nvtxRangeId_t id)
{
	do_end(id);
}

static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	(void)d;
	do_end(id);
}

/* Domains and registered strings must work: the loader turns entries we leave empty into no-ops
 * that return NULL, and nvtx3.hpp would then lose every message. */

static struct nvtx_domain *domain_get(const struct nvtx_msg *m)
{
	struct nvtx_domain *d;

	pthread_mutex_lock(&domains_lock);
	for (d = domains; d; d = d->next)
		if (strlen(d->name) == m->len && memcmp(d->name, m->s, m->len) == 0)
			goto out;
	d = malloc(sizeof(*d) + m->len + 1);
	if (d) {
		memcpy(d->name, m->s, m->len);
		d->name[m->len] = '\0';
		d->next = domains;
		domains = d;
	}
out:
	pthread_mutex_unlock(&domains_lock);
	return d;
}

static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name)
{
	struct nvtx_msg m;

	msg_from_ascii(&m, name);
	return (nvtxDomainHandle_t)(void *)domain_get(&m);
}

static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name)
{
	struct nvtx_msg m;

	msg_from_wide(&m, name);
	return (nvtxDomainHandle_t)(void *)domain_get(&m);
}

/* Domains live until exit: handles may still be used after nvtxDomainDestroy by other modules. */
static void NVTX_API domain_destroy(nvtxDomainHandle_t d)
{
	(void)d;
}

/* Registered strings live until exit, as the NVTX documentation allows. */
static nvtxStringHandle_t register_string(nvtxDomainHandle_t d, const struct nvtx_msg *m)
{
	struct nvtx_string *r = malloc(sizeof(*r) + m->len + 1);

	if (!r)
		return NULL;
	r->domain = (const void *)d;
	r->len = m->len;
	memcpy(r->text, m->s, m->len);
	r->text[m->len] = '\0';
	return (nvtxStringHandle_t)(void *)r;
}

static nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t d, const char *s)
{
	struct nvtx_msg m;

	msg_from_ascii(&m, s);
	return register_string(d, &m);
}

static nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t d, const wchar_t *s)
{
	struct nvtx_msg m;

	msg_from_wide(&m, s);
	return register_string(d, &m);
}

struct table_entry {
	unsigned cbid;
	NvtxFunctionPointer fn;
};

#define ENTRY(id, f)                                         \
	{                                                    \
		.cbid = (id), .fn = (NvtxFunctionPointer)(f) \
	}

static const struct table_entry core_entries[] = {
    ENTRY(NVTX_CBID_CORE_MarkEx, mark_ex),	ENTRY(NVTX_CBID_CORE_MarkA, mark_a),
    ENTRY(NVTX_CBID_CORE_MarkW, mark_w),	ENTRY(NVTX_CBID_CORE_RangeStartEx, start_ex),
    ENTRY(NVTX_CBID_CORE_RangeStartA, start_a), ENTRY(NVTX_CBID_CORE_RangeStartW, start_w),
    ENTRY(NVTX_CBID_CORE_RangeEnd, end),	ENTRY(NVTX_CBID_CORE_RangePushEx, push_ex),
    ENTRY(NVTX_CBID_CORE_RangePushA, push_a),	ENTRY(NVTX_CBID_CORE_RangePushW, push_w),
    ENTRY(NVTX_CBID_CORE_RangePop, pop),
};

static const struct table_entry core2_entries[] = {
    ENTRY(NVTX_CBID_CORE2_DomainMarkEx, domain_mark_ex),
    ENTRY(NVTX_CBID_CORE2_DomainRangeStartEx, domain_start_ex),
    ENTRY(NVTX_CBID_CORE2_DomainRangeEnd, domain_end),
    ENTRY(NVTX_CBID_CORE2_DomainRangePushEx, domain_push_ex),
    ENTRY(NVTX_CBID_CORE2_DomainRangePop, domain_pop),
    ENTRY(NVTX_CBID_CORE2_DomainRegisterStringA, register_string_a),
    ENTRY(NVTX_CBID_CORE2_DomainRegisterStringW, register_string_w),
    ENTRY(NVTX_CBID_CORE2_DomainCreateA, domain_create_a),
    ENTRY(NVTX_CBID_CORE2_DomainCreateW, domain_create_w),
    ENTRY(NVTX_CBID_CORE2_DomainDestroy, domain_destroy),
};

static int fill_module(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
		       const struct table_entry *entries, size_t n)
{
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;

	if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (entries[i].cbid < size && table[entries[i].cbid])
			*table[entries[i].cbid] = entries[i].fn;
	return 0;
}

int gprof_nvtx_inject(const void *(*get_table)(uint32_t id))
{
	const NvtxExportTableCallbacks *cb;
	const NvtxExportTableVersionInfo *vi;

	if (!get_table)
		return 0;
	cb = get_table(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof(*cb))
		return 0;
	vi = get_table(NVTX_ETID_VERSIONINFO);
	if (vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
		vi->SetInjectionNvtxVersion(NVTX_VERSION);
	if (fill_module(cb, NVTX_CB_MODULE_CORE, core_entries, ARRAY_SIZE(core_entries)) ||
	    fill_module(cb, NVTX_CB_MODULE_CORE2, core2_entries, ARRAY_SIZE(core2_entries))) {
		pr_warn("the NVTX loader gave no function tables: step markers can't be seen");
		return 0;
	}
	pr_dbg("NVTX injection initialised");
	return 1;
}

/*
 * CPU operators' and user annotations' External ids. Around an operator's real call the
 * application's thread pushes its id onto CUPTI's external correlation stack
 * (gprof_collector_external_begin, cupti.c), an annotation's on a stack of its own; CUPTI then
 * writes an EXTERNAL_CORRELATION record of each stack before the record of every API call made
 * inside, and the collector thread keeps correlation id -> both ids here until the call's
 * events and their GPU work are written. Which field of an event takes them is its kind's
 * external column (common/activity.h).
 */
#include "collector/internal.h"

/* Collector thread only. */
#define SLOTS GPROF_COLL_EXTERNAL_SLOTS

static struct {
	uint32_t corr, id, annotation;
} slots[SLOTS];

void gprof_coll_external_note(uint32_t corr, bool annotation, uint32_t id)
{
	if (slots[corr % SLOTS].corr != corr)
		slots[corr % SLOTS].id = slots[corr % SLOTS].annotation = 0;
	slots[corr % SLOTS].corr = corr;
	*(annotation ? &slots[corr % SLOTS].annotation : &slots[corr % SLOTS].id) = id;
}

void gprof_coll_external_apply(struct gprof_export_event *ev)
{
	uint32_t corr = ev->correlation;
	bool known = corr && slots[corr % SLOTS].corr == corr;
	uint32_t id = known ? slots[corr % SLOTS].id : 0,
		 annotation = known ? slots[corr % SLOTS].annotation : 0;

	switch (ev->kind) {
#define EXT_NONE(payload)
#define EXT_CALL(payload) ev->u.payload.external = id;
#define EXT_WORK(payload)            \
	ev->u.payload.external = id; \
	ev->u.payload.annotation = annotation;
#define EXT_CASE(name, key, emitter, ph, cat, payload, summary, external) \
	case GPROF_EXPORT_##name:                                         \
		EXT_##external(payload) break;
		GPROF_EXPORT_KIND_TABLE(EXT_CASE)
#undef EXT_CASE
#undef EXT_WORK
#undef EXT_CALL
#undef EXT_NONE
	}
}

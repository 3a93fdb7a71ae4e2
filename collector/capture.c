/*
 * Calls that stream capture made into graph nodes. Such a call queues nothing: its node runs
 * when a replay does, under cudaGraphLaunch's correlation, so no GPU record will come for the
 * call itself. CUPTI's resource callback for each node comes on the capturing thread, inside
 * the call that made it; the call's runtime record comes later to the collector thread, which
 * then neither holds it for a GPU record nor counts it as missing (it waited drain_ms for it
 * and said the launch had no GPU record).
 */
#include <pthread.h>
#include <stdlib.h>

#include "collector/internal.h"

/* At most this many notes wait for their call's record; a note older than STALE_NS goes. */
#define NOTES_MAX (1u << 16)
#define STALE_NS  (10 * 1000000000ull)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct note {
	uint32_t tid;
	uint64_t ns;
} * notes;
static size_t n_notes; /* written under the lock; read without it as a hint */
static size_t cap_notes;

void gprof_coll_capture_note(uint32_t tid, uint64_t ns)
{
	pthread_mutex_lock(&lock);
	if (n_notes == cap_notes && cap_notes < NOTES_MAX) {
		size_t cap = cap_notes ? 2 * cap_notes : 64;
		struct note *more = realloc(notes, cap * sizeof(*more));

		if (more) {
			notes = more;
			cap_notes = cap;
		}
	}
	if (n_notes < cap_notes) {
		notes[n_notes] = (struct note){tid, ns};
		__atomic_store_n(&n_notes, n_notes + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&lock);
}

bool gprof_coll_capture_made(uint32_t tid, uint64_t begin_ns, uint64_t end_ns)
{
	bool made = false;
	size_t n;

	if (!__atomic_load_n(&n_notes, __ATOMIC_RELAXED))
		return false;
	pthread_mutex_lock(&lock);
	n = n_notes;
	for (size_t i = 0; i < n;) {
		bool mine = notes[i].tid == tid && begin_ns <= notes[i].ns && notes[i].ns <= end_ns;

		made |= mine;
		if (mine || notes[i].ns + STALE_NS < begin_ns)
			notes[i] = notes[--n];
		else
			i++;
	}
	__atomic_store_n(&n_notes, n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lock);
	return made;
}

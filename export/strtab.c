/*
 * String interning: each distinct string is stored and JSON-escaped once per process, and
 * found again without a lock (the hot path interns NVTX messages on every range push).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define PR_FMT "export: "
#include "common/heap.h"
#include "export/internal.h"

/*
 * Entries by hash in a shared map (common/map.h): readers take no lock; the writer holds
 * `lock`. Strings of the same hash are chained, newest first; a reader that loaded the chain
 * before a new string joined finds nothing, takes the lock and looks again.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gprof_map table;
static size_t used_bytes; /* under lock */

static const struct gprof_export_str empty = {.raw = ""};
static const struct gprof_export_str full = {
    .len = sizeof("[gprof: string table full]") - 1,
    .raw = "",
    .text = "[gprof: string table full]",
};

static struct gprof_export_str *probe(uint64_t h, const char *s, size_t n, bool cut)
{
	struct gprof_export_str *e = (struct gprof_export_str *)gprof_map_get_shared(&table, h);

	for (; e; e = e->same_hash)
		if (e->raw_len == n && e->cut == cut && !memcmp(e->raw, s, n))
			return e;
	return NULL;
}

static struct gprof_export_str *make(const char *s, size_t n, bool cut)
{
	size_t cut_len = cut ? sizeof(GPROF_EXPORT_STR_CUT) - 1 : 0;
	size_t len = gprof_json_escape(NULL, s, n) + cut_len;
	struct gprof_export_str *e;

	if (used_bytes + sizeof(*e) + len + n + 1 > GPROF_EXPORT_STR_BYTES)
		return NULL;
	e = gprof_malloc(sizeof(*e) + len + n + 1);
	if (!e)
		return NULL;
	*e = (struct gprof_export_str){.raw_len = (uint32_t)n, .len = (uint32_t)len, .cut = cut};
	gprof_json_escape(e->text, s, n);
	memcpy(e->text + len - cut_len, GPROF_EXPORT_STR_CUT, cut_len);
	memcpy(e->text + len, s, n); /* the raw bytes follow the text, for comparisons */
	e->text[len + n] = '\0';
	e->raw = e->text + len;
	used_bytes += sizeof(*e) + len + n + 1;
	return e;
}

static const struct gprof_export_str *intern_slow(uint64_t h, const char *s, size_t n, bool cut)
{
	struct gprof_export_str *e = NULL;

	pthread_mutex_lock(&lock);
	e = probe(h, s, n, cut);
	if (!e && gprof_map_reserve_shared(&table) == 0) {
		e = make(s, n, cut);
		if (e) {
			e->same_hash = (struct gprof_export_str *)gprof_map_get_shared(&table, h);
			gprof_map_put_shared(&table, h, (uintptr_t)e);
		}
	}
	pthread_mutex_unlock(&lock);
	if (!e)
		pr_warn_once("the string table is full (%u MiB): new names appear as \"%s\"",
			     GPROF_EXPORT_STR_BYTES >> 20, full.text);
	return e ? e : &full;
}

const struct gprof_export_str *gprof_export_intern_n(const char *s, size_t n)
{
	bool cut = n > GPROF_EXPORT_STR_MAX;
	struct gprof_export_str *e;
	uint64_t h;

	if (!s || !n)
		return &empty;
	if (cut) {
		/* Back off to a character boundary so the cut adds no replacement character. */
		n = GPROF_EXPORT_STR_MAX;
		for (int i = 0; i < 3 && ((unsigned char)s[n] & 0xc0) == 0x80; i++)
			n--;
	}
	h = gprof_map_key_bytes(s, n, n << 1 | cut); /* the seed keeps truncated strings apart */
	e = probe(h, s, n, cut);
	return e ? e : intern_slow(h, s, n, cut);
}

const struct gprof_export_str *gprof_export_intern(const char *s)
{
	return gprof_export_intern_n(s, s ? strlen(s) : 0);
}

/* Held across fork() (writer.c's pthread_atfork), so the child never inherits it locked. */
void gprof_strtab_lock(void)
{
	pthread_mutex_lock(&lock);
}

void gprof_strtab_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

/*
 * String interning: each distinct string is stored and JSON-escaped once per process, and
 * found again without a lock (the hot path interns NVTX messages on every range push).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define PR_FMT "export: "
#include "export/internal.h"

/*
 * Open addressing over entry pointers. Readers probe the table they loaded; a writer (under
 * the lock) only fills empty slots, or publishes a doubled copy and keeps the old one alive:
 * a reader still in it finds nothing new, takes the lock and looks again.
 */
struct table {
	size_t mask;
	struct table *older; /* retired tables, kept because readers may still probe them */
	struct gprof_export_str *slot[];
};

/* Written under `lock` (slots and `table` with release stores), read anywhere with acquire. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct table *table;
static size_t used_entries, used_bytes; /* under lock */

static const struct gprof_export_str empty = {.raw = ""};
static const struct gprof_export_str full = {
    .len = sizeof("[gprof: string table full]") - 1,
    .raw = "",
    .text = "[gprof: string table full]",
};

/* A fast 64-bit hash, eight bytes at a time; `cut` keeps truncated strings apart. */
static uint64_t hash_bytes(const char *s, size_t n, bool cut)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n << 1 | cut), w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

static struct gprof_export_str *probe(const struct table *t, uint64_t h, const char *s, size_t n,
				      bool cut)
{
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		struct gprof_export_str *e = __atomic_load_n(&t->slot[i], __ATOMIC_ACQUIRE);

		if (!e)
			return NULL;
		if (e->hash == h && e->raw_len == n && e->cut == cut && !memcmp(e->raw, s, n))
			return e;
	}
}

static void place(struct table *t, struct gprof_export_str *e)
{
	size_t i = e->hash & t->mask;

	while (t->slot[i])
		i = (i + 1) & t->mask;
	__atomic_store_n(&t->slot[i], e, __ATOMIC_RELEASE);
}

/* Keeps the load under one half; called with the lock held. */
static int reserve_slot(void)
{
	size_t size = table ? (table->mask + 1) * 2 : 1024;
	struct table *t;

	if (table && (used_entries + 1) * 2 <= table->mask + 1)
		return 0;
	t = calloc(1, sizeof(*t) + size * sizeof(t->slot[0]));
	if (!t)
		return -ENOMEM;
	t->mask = size - 1;
	t->older = table;
	for (size_t i = 0; table && i <= table->mask; i++)
		if (table->slot[i])
			place(t, table->slot[i]);
	__atomic_store_n(&table, t, __ATOMIC_RELEASE);
	return 0;
}

static struct gprof_export_str *make(uint64_t h, const char *s, size_t n, bool cut)
{
	size_t cut_len = cut ? sizeof(GPROF_EXPORT_STR_CUT) - 1 : 0;
	size_t len = gprof_json_escape(NULL, s, n) + cut_len;
	struct gprof_export_str *e;

	if (used_bytes + sizeof(*e) + len + n + 1 > GPROF_EXPORT_STR_BYTES)
		return NULL;
	e = malloc(sizeof(*e) + len + n + 1);
	if (!e)
		return NULL;
	*e = (struct gprof_export_str){
	    .hash = h, .raw_len = (uint32_t)n, .len = (uint32_t)len, .cut = cut};
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
	if (table)
		e = probe(table, h, s, n, cut);
	if (!e && reserve_slot() == 0) {
		e = make(h, s, n, cut);
		if (e) {
			place(table, e);
			used_entries++;
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
	struct table *t;
	uint64_t h;

	if (!s || !n)
		return &empty;
	if (cut) {
		/* Back off to a character boundary so the cut adds no replacement character. */
		n = GPROF_EXPORT_STR_MAX;
		for (int i = 0; i < 3 && ((unsigned char)s[n] & 0xc0) == 0x80; i++)
			n--;
	}
	h = hash_bytes(s, n, cut);
	t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
	if (t) {
		struct gprof_export_str *e = probe(t, h, s, n, cut);

		if (e)
			return e;
	}
	return intern_slow(h, s, n, cut);
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

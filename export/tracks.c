/*
 * The tracks a window used (host threads, GPU streams, devices) in first-seen order, for the
 * metadata events that name and order them at the end of the trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "export/internal.h"

static size_t slot_of(const struct gprof_seen *s, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & s->mask;
}

/* Doubles the key array and rebuilds the index (kept at most half full). */
static int seen_grow(struct gprof_seen *s)
{
	size_t cap = s->cap ? s->cap * 2 : 16;
	uint64_t *keys = realloc(s->keys, cap * sizeof(*keys));
	uint32_t *slot = calloc(cap * 2, sizeof(*slot));

	if (keys)
		s->keys = keys;
	if (!keys || !slot) {
		free(slot);
		return -ENOMEM;
	}
	free(s->slot);
	s->slot = slot;
	s->cap = cap;
	s->mask = cap * 2 - 1;
	for (size_t i = 0; i < s->n; i++) {
		size_t h = slot_of(s, s->keys[i]);

		while (s->slot[h])
			h = (h + 1) & s->mask;
		s->slot[h] = (uint32_t)i + 1;
	}
	return 0;
}

/* 1 if key is new (appended), 0 if known, or -ENOMEM. */
static int seen_add(struct gprof_seen *s, uint64_t key)
{
	size_t h;

	if (s->n && key == s->last)
		return 0;
	if (s->n == s->cap && seen_grow(s))
		return -ENOMEM;
	for (h = slot_of(s, key); s->slot[h]; h = (h + 1) & s->mask) {
		if (s->keys[s->slot[h] - 1] == key) {
			s->last = key;
			return 0;
		}
	}
	s->keys[s->n++] = key;
	s->slot[h] = (uint32_t)s->n;
	s->last = key;
	return 1;
}

static void seen_free(struct gprof_seen *s)
{
	free(s->keys);
	free(s->slot);
}

void gprof_tracks_comm(uint32_t tid, char out[16])
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, out, 15);
		close(fd);
	}
	n = n < 0 ? 0 : n;
	while (n > 0 && out[n - 1] == '\n')
		n--;
	out[n] = '\0';
}

/* A new thread's name is read at once: it may be gone when the window closes. */
int gprof_tracks_thread(struct gprof_tracks *k, uint32_t tid)
{
	int rc = seen_add(&k->threads, tid);

	if (rc != 1)
		return rc;
	if (k->comm_cap < k->threads.cap) {
		void *p = realloc(k->comm, k->threads.cap * sizeof(*k->comm));

		if (!p)
			return -ENOMEM;
		k->comm = p;
		k->comm_cap = k->threads.cap;
	}
	gprof_tracks_comm(tid, k->comm[k->threads.n - 1]);
	return 1;
}

int gprof_tracks_stream(struct gprof_tracks *k, uint32_t device, uint32_t stream)
{
	int rc = seen_add(&k->streams, (uint64_t)device << 32 | stream);

	return rc == 1 ? gprof_tracks_device(k, device) : rc;
}

int gprof_tracks_device(struct gprof_tracks *k, uint32_t device)
{
	return seen_add(&k->devices, device);
}

void gprof_tracks_free(struct gprof_tracks *k)
{
	seen_free(&k->threads);
	seen_free(&k->streams);
	seen_free(&k->devices);
	free(k->comm);
	*k = (struct gprof_tracks){0};
}

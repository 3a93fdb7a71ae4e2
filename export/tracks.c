/*
 * The tracks a window used (host threads, GPU streams, devices) in first-seen order, for the
 * metadata events that name and order them at the end of the trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/array.h"
#include "common/heap.h"
#include "export/internal.h"

/* 1 if key is new (appended), 0 if known, or -ENOMEM. */
static int seen_add(struct gprof_seen *s, uint64_t key)
{
	uint64_t index;

	if (s->n && key == s->last)
		return 0;
	/* The map takes no key 0: 0 is known when it was added once. */
	if (key ? gprof_map_get(&s->index, key, &index) : s->has_zero) {
		s->last = key;
		return 0;
	}
	if (gprof_array_room((void **)&s->keys, &s->cap, s->n, sizeof(*s->keys), 16, SIZE_MAX))
		return -ENOMEM;
	if (key && gprof_map_set(&s->index, key, s->n))
		return -ENOMEM;
	s->has_zero |= !key;
	s->keys[s->n++] = key;
	s->last = key;
	return 1;
}

static void seen_free(struct gprof_seen *s)
{
	gprof_free(s->keys);
	gprof_map_free(&s->index);
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
		void *p = gprof_realloc(k->comm, k->threads.cap * sizeof(*k->comm));

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
	gprof_free(k->comm);
	*k = (struct gprof_tracks){0};
}

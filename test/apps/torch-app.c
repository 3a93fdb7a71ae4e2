/*
 * PyTorch's operators, replayed on the simulated GPU: torch-app STREAM [N] plays a recorded
 * stream (test/apps/torch-nvtx.txt: one training iteration in PyTorch's NVTX mode;
 * torch-kineto.txt: one as PyTorch's own profiler shows it to CUPTI) N times (default 6). Each
 * line is "<thread> <verb> [args]", '#' lines are comments. Thread 0 is the main thread, 1 a
 * second one (the autograd engine's); lines run in file order, each on its thread. Verbs:
 * push <message> (nvtxRangePushA), pop (nvtxRangePop), launch (_Z5torchPf with grid.x = the
 * launch's number in the iteration, from 1), step (nvtxMarkA("step")), kpush <user> <id> (id
 * plus 1000 times the iteration's number, unique as PyTorch's) and
 * kpop <user> (cuptiActivityPush/PopExternalCorrelationId of kind CUSTOM1 for user 1, CUSTOM0
 * for 0, as PyTorch's profiler calls them around an operator: a stream with these claims CUPTI
 * for it first, gprof_torch_kineto and cuptiSubscribe, as --torch's hook and PyTorch do),
 * kstart (gprof_torch_kineto again: the hook starts PyTorch's profiler anew), kopen <n> (fails
 * unless gprof_torch_kineto_open says n),
 * memory <addr> <bytes> <allocated> <reserved> [device] (a tensor's allocation or free as
 * --torch's hook hands it to libgprof: gprof_torch_memory, at the present time), ops <text>
 * (the window's operators as the hook hands them: gprof_torch_ops, "$<id>" standing for an
 * id of kpush); each of the two inside
 * gprof_torch_hold and gprof_torch_release, as the hook calls them; the libgprof functions
 * are found with dlsym: without libgprof nothing happens.
 * Prints "torch-app: ok <launches per iteration>" and exits 0; 1 on any failure.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#define MAX_LINES 4096
#define TEXT_MAX  2048

/* Exported under its mangled name, which is how the runtime names it without registration. */
__attribute__((visibility("default"))) void torch_stub(void) __asm__("_Z5torchPf");
void torch_stub(void)
{
}

struct line {
	int thread;
	char verb;	  /* a letter of verbs[] */
	char *msg;	  /* push, ops */
	long long arg[5]; /* memory: addr, bytes, allocated, reserved, device; kpush: user, id */
	unsigned idx;	  /* launch: its number in the iteration */
};

/* Each verb's letter and how many numbers follow it (-1: a text). */
static const struct {
	const char *name;
	char letter;
	int numbers;
} verbs[] = {{"push", 'u', -1},	 {"pop", 'o', 0},  {"launch", 'a', 0}, {"step", 't', 0},
	     {"memory", 'e', 4}, {"ops", 'n', -1}, {"kpush", 'K', 2},  {"kpop", 'k', 1},
	     {"kstart", 'S', 0}, {"kopen", 'O', 1}};

static struct line lines[MAX_LINES];
static unsigned n_lines, launches, total; /* total: lines to play, N times n_lines */
static int kineto;			  /* the stream has kpush lines */
static unsigned next;			  /* the line to play next; under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn = PTHREAD_COND_INITIALIZER;
static float *buf;
static int failed;

static void load(const char *path)
{
	char text[TEXT_MAX], verb[16];
	FILE *f = fopen(path, "r");

	if (!f) {
		perror(path);
		exit(1);
	}
	while (fgets(text, sizeof(text), f)) {
		struct line *l = &lines[n_lines];
		int at = 0;

		text[strcspn(text, "\n")] = '\0';
		if (text[0] == '#' || !text[0])
			continue;
		if (n_lines == MAX_LINES || sscanf(text, "%d %15s %n", &l->thread, verb, &at) < 2 ||
		    l->thread < 0 || l->thread > 1) {
			fprintf(stderr, "torch-app: %s: bad line '%s'\n", path, text);
			exit(1);
		}
		l->verb = 0;
		l->arg[4] = 0;
		for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
			int got;

			if (strcmp(verb, verbs[i].name))
				continue;
			got = verbs[i].numbers <= 0
				  ? 0
				  : sscanf(text + at, "%lld %lld %lld %lld %lld", &l->arg[0],
					   &l->arg[1], &l->arg[2], &l->arg[3], &l->arg[4]);
			if (verbs[i].numbers < 0 && text[at])
				l->msg = strdup(text + at);
			if (verbs[i].numbers < 0 ? l->msg != NULL : got >= verbs[i].numbers)
				l->verb = verbs[i].letter;
		}
		if (!l->verb) {
			fprintf(stderr, "torch-app: %s: bad line '%s'\n", path, text);
			exit(1);
		}
		if (l->verb == 'a')
			l->idx = ++launches;
		kineto |= l->verb == 'K';
		n_lines++;
	}
	fclose(f);
}

typedef void (*memory_fn)(uint64_t, uint64_t, int64_t, uint64_t, uint64_t, int);
typedef int (*ops_fn)(const char *, size_t);
typedef int (*push_fn)(int, uint64_t);
typedef int (*pop_fn)(int, uint64_t *);

static void *libgprof(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static char *ids_in(const char *text, unsigned it);

/* What --torch's hook hands over, inside a hold of the window. */
static void hand(const struct line *l, unsigned it)
{
	int (*hold)(void) = (int (*)(void))libgprof("gprof_torch_hold");
	void (*release)(void) = (void (*)(void))libgprof("gprof_torch_release");
	memory_fn memory = (memory_fn)libgprof("gprof_torch_memory");
	ops_fn ops = (ops_fn)libgprof("gprof_torch_ops");
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (!hold || !release || !memory || !ops || !hold())
		return;
	if (l->verb == 'e')
		memory((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
		       (uint64_t)l->arg[0], l->arg[1], (uint64_t)l->arg[2], (uint64_t)l->arg[3],
		       (int)l->arg[4]);
	else {
		char *text = ids_in(l->msg, it);

		if (text)
			ops(text, strlen(text));
		free(text);
	}
	release();
}

/* An operator id of the stream in iteration `it`: unique in the process, as PyTorch's are. */
static long long id_in(long long id, unsigned it)
{
	return id + 1000LL * it;
}

/* An ops line's text with each "$<id>" made id_in(id, it); NULL when out of memory. */
static char *ids_in(const char *text, unsigned it)
{
	size_t n = strlen(text);
	char *out = malloc(2 * n + 1), *o = out;

	for (const char *p = text; out && *p;) {
		char *end;

		if (*p == '$') {
			o += sprintf(o, "%lld", id_in(strtoll(p + 1, &end, 10), it));
			p = end;
		} else {
			*o++ = *p++;
		}
	}
	if (out)
		*o = '\0';
	return out;
}

/* As PyTorch's profiler around an operator: CUPTI's CUSTOM1 (3 + 1) for a user scope. */
static void external(const struct line *l, unsigned it)
{
	static push_fn push;
	static pop_fn pop;
	uint64_t id;

	if (!push) {
		push = (push_fn)libgprof("cuptiActivityPushExternalCorrelationId");
		pop = (pop_fn)libgprof("cuptiActivityPopExternalCorrelationId");
	}
	if (!push || !pop)
		return;
	if (l->verb == 'K' ? push(3 + (int)l->arg[0], (uint64_t)id_in(l->arg[1], it))
			   : pop(3 + (int)l->arg[0], &id))
		failed = 1;
}

/* As --torch's hook before it starts PyTorch's profiler, and PyTorch's first CUPTI call. */
static void claim(void)
{
	int (*mine)(void) = (int (*)(void))libgprof("gprof_torch_kineto");
	int (*subscribe)(void **, void *, void *) =
	    (int (*)(void **, void *, void *))libgprof("cuptiSubscribe");
	void *handle = NULL;

	if (mine && subscribe && (!mine() || subscribe(&handle, NULL, NULL) || !handle)) {
		fprintf(stderr, "torch-app: libgprof did not take PyTorch's CUPTI calls\n");
		exit(1);
	}
}

/* kopen <n>: libgprof counts n operators of PyTorch's profiler open now. */
static void open_frames(const struct line *l)
{
	int (*open)(void) = (int (*)(void))libgprof("gprof_torch_kineto_open");

	if (open && open() != l->arg[0]) {
		fprintf(stderr, "torch-app: %d operators open, not %lld\n", open(), l->arg[0]);
		failed = 1;
	}
}

static void play(const struct line *l, unsigned it)
{
	dim3 grid = {l->idx, 1, 1}, block = {32, 1, 1};
	void *args[] = {&buf};

	switch (l->verb) {
	case 'u':
		nvtxRangePushA(l->msg);
		break;
	case 'o':
		nvtxRangePop();
		break;
	case 't':
		nvtxMarkA("step");
		break;
	case 'e':
	case 'n':
		hand(l, it);
		break;
	case 'K':
	case 'k':
		external(l, it);
		break;
	case 'S':
		claim();
		break;
	case 'O':
		open_frames(l);
		break;
	default:
		if (cudaLaunchKernel((const void *)torch_stub, grid, block, args, 0, 0) !=
		    cudaSuccess)
			failed = 1;
	}
}

/* Plays the lines of thread `me`, each when its turn comes. */
static void *player(void *arg)
{
	int me = (int)(long)arg;

	pthread_mutex_lock(&lock);
	for (;;) {
		while (next < total && lines[next % n_lines].thread != me)
			pthread_cond_wait(&turn, &lock);
		if (next == total)
			break;
		pthread_mutex_unlock(&lock);
		play(&lines[next % n_lines], next / n_lines);
		pthread_mutex_lock(&lock);
		next++;
		pthread_cond_broadcast(&turn);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t autograd;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: torch-app STREAM [N]\n");
		return 1;
	}
	load(argv[1]);
	if (kineto)
		claim();
	total = n_lines * (unsigned)(argc == 3 ? atoi(argv[2]) : 6);
	if (cudaMalloc((void **)&buf, 4096) != cudaSuccess ||
	    pthread_create(&autograd, NULL, player, (void *)1L)) {
		fprintf(stderr, "torch-app: cannot start\n");
		return 1;
	}
	player((void *)0L);
	pthread_join(autograd, NULL);
	if (failed || cudaDeviceSynchronize() != cudaSuccess) {
		fprintf(stderr, "torch-app: a launch failed\n");
		return 1;
	}
	cudaFree(buf);
	for (unsigned i = 0; i < n_lines; i++)
		free(lines[i].msg);
	printf("torch-app: ok %u\n", launches);
	return 0;
}

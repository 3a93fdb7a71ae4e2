/*
 * PyTorch's NVTX operator ranges, replayed on the simulated GPU: torch-app STREAM [N] plays the
 * recorded stream (test/apps/torch-nvtx.txt: one training iteration) N times (default 6). Each
 * line is "<thread> <verb> [message]", '#' lines are comments. Thread 0 is the main thread, 1 a
 * second one (the autograd engine's); lines run in file order, each on its thread. Verbs:
 * push <message> (nvtxRangePushA), pop (nvtxRangePop), launch (_Z5torchPf with grid.x = the
 * launch's number in the iteration, from 1), step (nvtxMarkA("step")), memory <addr> <bytes>
 * <allocated> <reserved> (a tensor's allocation or free as --torch's hook hands it to libgprof:
 * gprof_torch_memory, found with dlsym, at the present time), inputs <text> (operators' inputs
 * as the hook hands them: gprof_torch_inputs); each of the two inside gprof_torch_hold and
 * gprof_torch_release, as the hook calls them; nothing without libgprof.
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
	/* its second letter: 'u' push, 'o' pop, 'a' launch, 't' step, 'e' memory, 'n' inputs */
	char verb;
	char *msg;	  /* push, inputs */
	long long mem[4]; /* memory: addr, bytes, allocated, reserved */
	unsigned idx;	  /* launch: its number in the iteration */
};

static struct line lines[MAX_LINES];
static unsigned n_lines, launches, total; /* total: lines to play, N times n_lines */
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
		l->verb = verb[1];
		if (!strcmp(verb, "push") || !strcmp(verb, "inputs"))
			l->msg = strdup(text + at);
		else if (!strcmp(verb, "launch"))
			l->idx = ++launches;
		else if (!strcmp(verb, "memory") &&
			 sscanf(text + at, "%lld %lld %lld %lld", &l->mem[0], &l->mem[1],
				&l->mem[2], &l->mem[3]) != 4)
			l->verb = 0;
		else if (strcmp(verb, "pop") && strcmp(verb, "step") && strcmp(verb, "memory") &&
			 strcmp(verb, "inputs"))
			l->verb = 0;
		if (!l->verb || ((l->verb == 'u' || l->verb == 'n') && !l->msg)) {
			fprintf(stderr, "torch-app: %s: bad line '%s'\n", path, text);
			exit(1);
		}
		n_lines++;
	}
	fclose(f);
}

typedef void (*memory_fn)(uint64_t, uint64_t, int64_t, uint64_t, uint64_t, int);
typedef int (*inputs_fn)(const char *, size_t);

/* What --torch's hook hands over, inside a hold of the window. */
static void hand(const struct line *l)
{
	int (*hold)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gprof_torch_hold");
	void (*release)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gprof_torch_release");
	memory_fn memory = (memory_fn)dlsym(RTLD_DEFAULT, "gprof_torch_memory");
	inputs_fn inputs = (inputs_fn)dlsym(RTLD_DEFAULT, "gprof_torch_inputs");
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (!hold || !release || !memory || !inputs || !hold())
		return;
	if (l->verb == 'e')
		memory((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
		       (uint64_t)l->mem[0], l->mem[1], (uint64_t)l->mem[2], (uint64_t)l->mem[3], 0);
	else
		inputs(l->msg, strlen(l->msg));
	release();
}

static void play(const struct line *l)
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
		hand(l);
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
		play(&lines[next % n_lines]);
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

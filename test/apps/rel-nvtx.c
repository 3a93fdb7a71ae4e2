/*
 * Hostile NVTX input for the reliability tests: messages with quotes, backslashes, every control
 * byte, invalid UTF-8 and 16 MiB lengths, sent through every A, W and Ex entry point (default
 * domain, a hostile domain, registered strings), then NULL pointers and misuse.
 *
 * It opens with cudaMalloc/cudaFree (so GPROF_SCHEDULE=all's window is open) and prints, before
 * each event whose message it can name, one line
 *
 *	E <tag> <ph> <message> <domain>
 *
 * where the event's message is the ASCII tag ("#007|") followed by the payload; ph is i (mark)
 * or X (range); message is b:<hex bytes>, r:<hex byte>:<count> (a byte repeated), w:<8 hex
 * digits per wchar_t> or wr:<8 hex digits>:<count>; domain is - (default), A or W, the domains
 * created from the lines "DA <message>" (nvtxDomainCreateA) and "DW <message>" (CreateW).
 * Calls with NULL or invalid arguments come after (48 of them, then 1000 pushes and 1001
 * pops); the last line is "rel-nvtx: ok <number of E lines> events". Exits 0.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#define BIG (16u << 20)

struct payload {
	bool wide;
	const char *bytes; /* narrow: these bytes (NUL-terminated) ... */
	const uint32_t *units;
	size_t n;     /* ... or these n wchar_t units ... */
	uint32_t rep; /* ... or `count` copies of this byte or unit */
	size_t count;
};

static const char quotes[] =
    "say \"hi\" \\ back\\\\slash \\\"q\\\" \"},{\"ph\":\"X\",\"name\":\"evil "
    "\\u0000 \\ud800";
static const char invalid[] =
    "lone \x80 \xbf|overlong \xc0\xaf \xc1\xbf \xe0\x80\xaf|surrogate \xed\xa0\x80 \xed\xbf\xbf|"
    "big \xf4\x90\x80\x80 \xf5\x80\x80\x80 \xfe \xff|cut \xe2\x82 \xf0\x9f|good \xc3\xbc "
    "\xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf|end \xf0\x9f\x98";
static char controls[3 * 32 + 1]; /* "a\x01b\x02..." : every byte 0x01-0x1f and 0x7f */

static const uint32_t wide_hostile[] = {
    'q',      '"',	  'b',	      '\\',   1,	'\n', '\t',   0x1f,    0x7f, 0xd800, 0xdfff,
    0x110000, 0x7fffffff, 0xffffffff, 0xfffd, 0x10ffff, 0xfc, 0x20ac, 0x1f600, 0x80, '"'};

static const struct payload payloads[] = {
    {.bytes = quotes},
    {.bytes = controls},
    {.bytes = invalid},
    {.bytes = ""},
    {.rep = 'x', .count = BIG},
    {.rep = '"', .count = BIG},
    {.rep = 0xff, .count = BIG},
    {.wide = true, .units = wide_hostile, .n = sizeof(wide_hostile) / sizeof(wide_hostile[0])},
    {.wide = true, .rep = 'y', .count = BIG},
    {.wide = true, .rep = 0xd800, .count = 4096},
};

/* How a message reaches NVTX: entry point and domain. */
enum form {
	MARK,
	PUSH,
	START,
	MARK_EX,
	PUSH_EX,
	START_EX,
	DOM_MARK_EX,
	DOM_PUSH_EX,
	DOM_START_EX,
	DOM_REGISTERED,
	FORMS
};

static nvtxDomainHandle_t dom_a, dom_w;
/* Registered strings live until exit: their handles are kept, global for leak checkers. */
nvtxStringHandle_t registered[64];
static int n_registered;

static nvtxStringHandle_t keep(nvtxStringHandle_t h)
{
	if (n_registered < 64)
		registered[n_registered++] = h;
	return h;
}
static int n_events;

static void fill_controls(void)
{
	size_t n = 0;

	for (unsigned c = 1; c < 0x20; c++) {
		controls[n++] = (char)('A' + c % 26);
		controls[n++] = (char)c;
	}
	controls[n++] = 'z';
	controls[n++] = 0x7f;
	controls[n] = '\0';
}

static void print_payload(const struct payload *p)
{
	if (p->count) {
		printf(p->wide ? "wr:%08x:%zu" : "r:%02x:%zu", p->rep, p->count);
		return;
	}
	printf(p->wide ? "w:" : "b:");
	if (p->wide)
		for (size_t i = 0; i < p->n; i++)
			printf("%08x", p->units[i]);
	else
		for (const char *s = p->bytes; *s; s++)
			printf("%02x", (unsigned char)*s);
}

/* The tag then the payload, NUL-terminated, as char or wchar_t. */
static void *build(const char *tag, const struct payload *p)
{
	size_t tag_len = strlen(tag), n = p->count ? p->count : p->wide ? p->n : strlen(p->bytes);
	size_t unit = p->wide ? sizeof(wchar_t) : 1;
	char *m = calloc(tag_len + n + 1, unit);
	wchar_t *w = (wchar_t *)m;

	if (!m)
		exit(3);
	for (size_t i = 0; i < tag_len + n; i++) {
		uint32_t c = i < tag_len ? (unsigned char)tag[i]
			     : p->count	 ? p->rep
			     : p->wide	 ? p->units[i - tag_len]
					 : (unsigned char)p->bytes[i - tag_len];

		if (p->wide)
			w[i] = (wchar_t)c;
		else
			m[i] = (char)c;
	}
	return m;
}

static nvtxEventAttributes_t attr_of(const void *msg, bool wide)
{
	nvtxEventAttributes_t a = {
	    .version = NVTX_VERSION,
	    .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
	    .messageType = wide ? NVTX_MESSAGE_TYPE_UNICODE : NVTX_MESSAGE_TYPE_ASCII,
	};

	if (wide)
		a.message.unicode = msg;
	else
		a.message.ascii = msg;
	return a;
}

static void plain_form(enum form f, const void *msg, bool wide)
{
	if (f == MARK)
		wide ? nvtxMarkW(msg) : nvtxMarkA(msg);
	else if (f == PUSH)
		(void)(wide ? nvtxRangePushW(msg) : nvtxRangePushA(msg)), nvtxRangePop();
	else
		nvtxRangeEnd(wide ? nvtxRangeStartW(msg) : nvtxRangeStartA(msg));
}

static void send(enum form f, const void *msg, bool wide)
{
	nvtxDomainHandle_t d = wide ? dom_w : dom_a;
	nvtxEventAttributes_t a = attr_of(msg, wide);

	switch (f) {
	case MARK_EX:
		nvtxMarkEx(&a);
		break;
	case PUSH_EX:
		nvtxRangePushEx(&a);
		nvtxRangePop();
		break;
	case START_EX:
		nvtxRangeEnd(nvtxRangeStartEx(&a));
		break;
	case DOM_MARK_EX:
		nvtxDomainMarkEx(d, &a);
		break;
	case DOM_PUSH_EX:
		nvtxDomainRangePushEx(d, &a);
		nvtxDomainRangePop(d);
		break;
	case DOM_START_EX:
		nvtxDomainRangeEnd(d, nvtxDomainRangeStartEx(d, &a));
		break;
	case DOM_REGISTERED:
		a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
		a.message.registered = keep(wide ? nvtxDomainRegisterStringW(d, msg)
						 : nvtxDomainRegisterStringA(d, msg));
		nvtxDomainMarkEx(d, &a);
		break;
	default:
		plain_form(f, msg, wide);
	}
}

static void send_all(void)
{
	for (size_t i = 0; i < sizeof(payloads) / sizeof(payloads[0]); i++) {
		for (int f = 0; f < FORMS; f++) {
			const struct payload *p = &payloads[i];
			bool mark =
			    f == MARK || f == MARK_EX || f == DOM_MARK_EX || f == DOM_REGISTERED;
			char tag[16];
			void *msg;

			snprintf(tag, sizeof(tag), "#%03d|", ++n_events);
			printf("E %s %c ", tag, mark ? 'i' : 'X');
			print_payload(p);
			printf(" %s\n", f < DOM_MARK_EX ? "-" : p->wide ? "W" : "A");
			fflush(stdout);
			msg = build(tag, p);
			send((enum form)f, msg, p->wide);
			free(msg);
		}
	}
}

/* NULL where a string or attributes belong, unknown ids, pops of nothing, deep nesting. */
static void abuse(void)
{
	nvtxEventAttributes_t a = attr_of(NULL, false), w = attr_of(NULL, true);
	nvtxEventAttributes_t r = a, odd = attr_of("odd type", false), small = odd;

	r.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	odd.messageType = 12345;
	small.size = 0;
	nvtxMarkA(NULL);
	nvtxMarkW(NULL);
	nvtxMarkEx(NULL);
	nvtxMarkEx(&a);
	nvtxMarkEx(&w);
	nvtxMarkEx(&r);
	nvtxMarkEx(&odd);
	nvtxMarkEx(&small);
	nvtxRangePushA(NULL);
	nvtxRangePushW(NULL);
	nvtxRangePushEx(NULL);
	nvtxRangePushEx(&r);
	nvtxRangePushEx(&odd);
	for (int i = 0; i < 8; i++) /* five pushed, three more than that */
		nvtxRangePop();
	nvtxRangeEnd(nvtxRangeStartA(NULL));
	nvtxRangeEnd(nvtxRangeStartW(NULL));
	nvtxRangeEnd(nvtxRangeStartEx(NULL));
	nvtxRangeEnd(nvtxRangeStartEx(&w));
	nvtxRangeEnd(0);
	nvtxRangeEnd(987654321);
	nvtxRangeEnd((nvtxRangeId_t)-1);
	nvtxDomainMarkEx(NULL, NULL);
	nvtxDomainMarkEx(dom_a, NULL);
	nvtxDomainMarkEx(NULL, &a);
	nvtxDomainRangePushEx(dom_a, NULL);
	nvtxDomainRangePop(dom_a);
	nvtxDomainRangePop(NULL);
	nvtxDomainRangeEnd(dom_a, nvtxDomainRangeStartEx(dom_a, NULL));
	nvtxDomainRangeEnd(NULL, 5);
	nvtxDomainCreateA(NULL);
	nvtxDomainCreateW(NULL);
	nvtxDomainCreateA("");
	keep(nvtxDomainRegisterStringA(dom_a, NULL));
	keep(nvtxDomainRegisterStringW(dom_a, NULL));
	keep(nvtxDomainRegisterStringA(NULL, "no domain"));
	nvtxDomainDestroy(NULL);
	for (int i = 0; i < 1000; i++)
		nvtxRangePushA("deep");
	for (int i = 0; i < 1001; i++)
		nvtxRangePop();
}

static void make_domains(void)
{
	static const char dom_bytes[] =
	    "dom \"q\" \\ \x01\x1f\x7f \xc0\xaf \xed\xa0\x80 ok \xc3\xbc";
	const struct payload pa = {.bytes = dom_bytes};
	const struct payload pw = {.wide = true, .units = wide_hostile, .n = 12};
	wchar_t *w = build("", &pw);

	printf("DA ");
	print_payload(&pa);
	printf("\nDW ");
	print_payload(&pw);
	printf("\n");
	dom_a = nvtxDomainCreateA(dom_bytes);
	dom_w = nvtxDomainCreateW(w);
	free(w);
}

int main(void)
{
	void *p = NULL;

	if (cudaMalloc(&p, 256) != cudaSuccess || cudaFree(p) != cudaSuccess) {
		fprintf(stderr, "rel-nvtx: no CUDA runtime\n");
		return 2;
	}
	fill_controls();
	make_domains();
	send_all();
	abuse();
	if (cudaDeviceSynchronize() != cudaSuccess)
		return 2;
	printf("rel-nvtx: ok %d events\n", n_events);
	return 0;
}

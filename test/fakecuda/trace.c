/*
 * API-call tracing shared by the fake runtime and driver: correlation ids, the callback API at
 * entry and exit, the RUNTIME / DRIVER activity record, and the ground-truth log line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "test/fakecuda/fakegpu.h"
#include "test/fakecuda/sim.h"

/* The runtime call the calling thread is in, if any. */
static __thread struct fakecuda_call *runtime_call;

static void enter(struct fakecuda_call *call, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
		  const char *name, const void *params, const char *symbol, bool untraced)
{
	void *context = fakecuda_context_current();

	call->domain = domain;
	call->cbid = cbid;
	call->outer = runtime_call;
	call->synced = false;
	call->nested = domain == CUPTI_CB_DOMAIN_DRIVER_API && (runtime_call || untraced);
	call->correlation = runtime_call ? runtime_call->correlation : fakegpu_next_correlation();
	if (call->nested)
		return;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		runtime_call = call;
	call->correlation_data = 0;
	call->result = 0;
	call->cb = (CUpti_CallbackData){
	    .callbackSite = CUPTI_API_ENTER,
	    .functionName = name,
	    .functionParams = params,
	    .functionReturnValue = &call->result,
	    .symbolName = symbol,
	    .context = context,
	    .contextUid = context ? fakecuda_context_id(fakecuda_context_device(context)) : 0,
	    .correlationData = &call->correlation_data,
	    .correlationId = call->correlation,
	};
	call->start_ns = fakegpu_timestamp();
	fakegpu_callback(domain, cbid, &call->cb);
}

void fakecuda_api_enter(struct fakecuda_call *call, CUpti_CallbackDomain domain,
			CUpti_CallbackId cbid, const char *name, const void *params,
			const char *symbol)
{
	enter(call, domain, cbid, name, params, symbol, false);
}

void fakecuda_api_enter_driver(struct fakecuda_call *call, CUpti_CallbackId cbid, const char *name,
			       const void *params, const char *symbol, bool untraced)
{
	enter(call, CUPTI_CB_DOMAIN_DRIVER_API, cbid, name, params, symbol, untraced);
}

/* The record's threadId is the pthread_t cut to 32 bits, or gettid() (cuptiSetThreadIdType). */
static void emit_api_record(const struct fakecuda_call *call, uint64_t end_ns)
{
	CUpti_ActivityKind kind = call->domain == CUPTI_CB_DOMAIN_RUNTIME_API
				      ? CUPTI_ACTIVITY_KIND_RUNTIME
				      : CUPTI_ACTIVITY_KIND_DRIVER;
	CUpti_ActivityAPI rec = {
	    .kind = kind,
	    .cbid = call->cbid,
	    .start = call->start_ns,
	    .end = end_ns,
	    .processId = (uint32_t)getpid(),
	    .threadId = fakegpu_thread_id(),
	    .correlationId = call->correlation,
	    .returnValue = (uint32_t)call->result,
	};

	if (fakegpu_activity_enabled(kind))
		fakegpu_activity_emit((const CUpti_Activity *)&rec, sizeof(rec));
}

static void log_api(const struct fakecuda_call *call, uint64_t end_ns, const char *args_fmt,
		    va_list ap)
{
	char args[2048] = "", name[256], symbol[4096] = "null";

	if (args_fmt)
		vsnprintf(args, sizeof(args), args_fmt, ap);
	if (call->cb.symbolName)
		fakecuda_log_str(symbol, sizeof(symbol), call->cb.symbolName);
	fakecuda_log("\"type\":\"api\",\"pid\":%d,\"tid\":%ld,\"domain\":\"%s\",\"name\":%s,"
		     "\"cbid\":%u,\"corr\":%u,\"start\":%llu,\"end\":%llu,\"result\":%d,"
		     "\"symbol\":%s,\"args\":{%s}",
		     (int)getpid(), (long)syscall(SYS_gettid),
		     call->domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime" : "driver",
		     fakecuda_log_str(name, sizeof(name), call->cb.functionName), call->cbid,
		     call->correlation, (unsigned long long)call->start_ns,
		     (unsigned long long)end_ns, call->result, symbol, args);
}

/* FAKEGPU_API_EXIT_PAUSE=name:ns, read once. */
static char pause_name[128];
static long long pause_ns;

static void read_pause(void)
{
	const char *spec = getenv("FAKEGPU_API_EXIT_PAUSE");
	const char *colon = spec ? strrchr(spec, ':') : NULL;

	if (colon && (size_t)(colon - spec) < sizeof(pause_name)) {
		memcpy(pause_name, spec, (size_t)(colon - spec));
		pause_ns = atoll(colon + 1);
	}
}

/*
 * The calling thread stops between the call's end and its record, as one the scheduler takes
 * the CPU from there does: the call's GPU work may be done, and its record delivered, first.
 */
static void pause_at_exit(const char *name)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, read_pause);
	if (pause_ns > 0 && name && !strcmp(name, pause_name))
		nanosleep(&(struct timespec){.tv_sec = pause_ns / 1000000000,
					     .tv_nsec = pause_ns % 1000000000},
			  NULL);
}

int fakecuda_api_vexit(struct fakecuda_call *call, int result, const char *args_fmt, va_list ap)
{
	uint64_t end_ns = fakegpu_timestamp();

	call->result = result;
	if (call->nested)
		return result;
	if (call->domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		runtime_call = call->outer;
	call->cb.callbackSite = CUPTI_API_EXIT;
	fakegpu_callback(call->domain, call->cbid, &call->cb);
	pause_at_exit(call->cb.functionName);
	emit_api_record(call, end_ns);
	if (fakecuda_log_enabled())
		log_api(call, end_ns, args_fmt, ap);
	return result;
}

int fakecuda_api_exit(struct fakecuda_call *call, int result, const char *args_fmt, ...)
{
	va_list ap;

	va_start(ap, args_fmt);
	fakecuda_api_vexit(call, result, args_fmt, ap);
	va_end(ap);
	return result;
}

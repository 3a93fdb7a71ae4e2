/* Compiler helpers shared by every module. */
#ifndef GPROF_COMPILER_H
#define GPROF_COMPILER_H

#define GPROF_EXPORT	   __attribute__((visibility("default")))
#define likely(x)	   __builtin_expect(!!(x), 1)
#define unlikely(x)	   __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a)	   (sizeof(a) / sizeof((a)[0]))
#define GPROF_TLS	   __thread __attribute__((tls_model("initial-exec")))
#define GPROF_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* TSAN, ASAN: built with ThreadSanitizer, AddressSanitizer; SANITIZED: with either. */
#if defined(__SANITIZE_THREAD__)
#define TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN 1
#endif
#endif
#ifndef TSAN
#define TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#ifndef ASAN
#define ASAN 0
#endif

#if ASAN || TSAN
#define SANITIZED 1
#endif

#endif

/* Compiler helpers shared by every module. */
#ifndef GPROF_COMPILER_H
#define GPROF_COMPILER_H

#define GPROF_EXPORT	   __attribute__((visibility("default")))
#define likely(x)	   __builtin_expect(!!(x), 1)
#define unlikely(x)	   __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a)	   (sizeof(a) / sizeof((a)[0]))
#define GPROF_TLS	   __thread __attribute__((tls_model("initial-exec")))
#define GPROF_PRINTF(f, a) __attribute__((format(printf, f, a)))

#endif

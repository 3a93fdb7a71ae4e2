/*
 * A process under a seccomp filter, as some containers run programs: `rel-seccomp CALLS
 * program [argument...]` refuses the system calls named in CALLS (comma-separated: linkat,
 * link, renameat2, renameat, rename) with EPERM, then execs the program, which keeps the filter.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

static const struct {
	const char *name;
	long nr;
} calls[] = {
    {"linkat", SYS_linkat}, {"renameat2", SYS_renameat2},
#ifdef SYS_link
    {"link", SYS_link},	    {"renameat", SYS_renameat},	  {"rename", SYS_rename},
#endif
};

#define MAX_REFUSED 8

int main(int argc, char **argv)
{
	struct sock_filter f[5 + 2 * MAX_REFUSED] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	};
	unsigned short n = 4;
	char list[256];

	if (argc < 3 || snprintf(list, sizeof(list), "%s", argv[1]) >= (int)sizeof(list)) {
		fprintf(stderr, "usage: rel-seccomp CALL[,CALL...] program [argument...]\n");
		return 64;
	}
	for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
		size_t i = 0;

		while (i < sizeof(calls) / sizeof(calls[0]) && strcmp(calls[i].name, name))
			i++;
		if (i == sizeof(calls) / sizeof(calls[0]) || n >= 4 + 2 * MAX_REFUSED) {
			fprintf(stderr, "rel-seccomp: cannot refuse '%s'\n", name);
			return 64;
		}
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned)calls[i].nr, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	struct sock_fprog prog = {.len = n, .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("rel-seccomp: seccomp");
		return 2;
	}
	execv(argv[2], argv + 2);
	perror("rel-seccomp: exec");
	return 127;
}

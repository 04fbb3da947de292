/* Seccomp programs: compiled once per distinct policy in the daemon
 * (libseccomp, seccomp.c), loaded in the sandbox's first process with a
 * bare seccomp(2) call as the last step of its confinement, before it
 * executes mini-sandbox-init (child/child.c), so that the child needs no
 * allocation and no library state. */
#ifndef MINI_SANDBOX_SECCOMP_PROG_H
#define MINI_SANDBOX_SECCOMP_PROG_H

#include <linux/filter.h>
#include "mini/err.h"
#include "mini/profile.h"

struct mini_bpf {
    struct sock_filter *insns;
    unsigned short len;
};

/* Compile the policy for the native architecture; other architectures
 * (and the x32 ABI) are killed.  0, or -1 with e filled. */
int mini_seccomp_compile(const struct mini_seccomp_policy *pol, struct mini_bpf *out, struct mini_err *e);
/* Install prog on the calling thread.  Sets no_new_privs first.
 * Async-signal-safe; returns 0 or -errno. */
int mini_seccomp_load(const struct mini_bpf *prog);
void mini_bpf_free(struct mini_bpf *prog);

#endif

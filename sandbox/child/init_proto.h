/* What the daemon and a sandbox's init (mini-sandbox-init) say to each
 * other over the control socket, and where init finds its descriptors.
 * Plain C and libc only: init is a small static program. */
#ifndef MINI_SANDBOX_INIT_PROTO_H
#define MINI_SANDBOX_INIT_PROTO_H

#include <stdint.h>

/* Descriptors of the sandbox's first process, and of init after exec. */
enum {
    MINI_FD_CTL = 3,  /* control socket to the daemon */
    MINI_FD_OUT = 4,  /* write end of the merged output pipe */
    MINI_FD_IN = 5,   /* read end of the command's stdin pipe */
    MINI_FD_WS = 6,   /* the daemon's workspace fd (setup only) */
    MINI_FD_INIT = 7, /* the init program, to execveat (setup only) */
    MINI_FD_COUNT = 8,
};

/* init -> daemon: fixed-size messages. */
enum mini_ctl_type {
    MINI_CTL_READY = 1,   /* root built, confined; waiting for a command */
    MINI_CTL_ERROR,       /* setup failed: errno + text (a struct mini_err) */
    MINI_CTL_EXEC_FAILED, /* the command could not be executed (126/127 rules) */
    MINI_CTL_STATUS,      /* the command ended: wait status and usage */
    MINI_CTL_ACCEPTED,    /* the launch was read; the command is about to be forked.  A
                              * sandbox that dies before saying so never ran the command. */
    MINI_CTL_LISTENER,    /* network allowlist: the proxy's listening socket, bound in the
                              * sandbox's network namespace, rides along (SCM_RIGHTS); sent
                              * by the setup child before READY */
    MINI_CTL_TIMES,       /* MINI_SANDBOX_TIMING: the setup child's own step times (struct
                              * mini_child_times in text), sent before it execs init */
};

/* MINI_CTL_TIMES: CLOCK_MONOTONIC stamps (ns) of the setup child's steps. */
struct mini_child_times {
    int64_t unshared; /* the namespaces beyond user and pid made */
    int64_t go;       /* the daemon's GO received */
    int64_t rooted;   /* the root built, pivot_root done, the old root detached */
    int64_t confined; /* capabilities dropped, seccomp loaded: exec of init next */
};

struct mini_ctl_msg {
    uint32_t type;
    int32_t err;    /* errno */
    int32_t status; /* wait status (MINI_CTL_STATUS) */
    uint32_t pad;
    int64_t cpu_us;     /* MINI_CTL_STATUS: user+system time of everything reaped */
    int64_t max_rss_kb; /* MINI_CTL_STATUS: largest resident set among them */
    char text[232];     /* NUL-terminated */
};
_Static_assert(sizeof(struct mini_child_times) < sizeof(((struct mini_ctl_msg *)0)->text),
               "MINI_CTL_TIMES carries the stamps in the message's text");

/* daemon -> sandbox */
enum { MINI_MSG_GO = 1, MINI_MSG_LAUNCH = 2, MINI_MSG_SECCOMP = 3 };

/* GO: the id maps are written; fds may ride along, in this order. */
struct mini_go_msg {
    uint32_t type;
    uint32_t has_fd;       /* an idmapped workspace (first fd) */
    uint32_t has_image;    /* an idmapped image root (next fd) */
    uint32_t has_template; /* the session's template of the root (next fd) */
    uint32_t n_cgroup;     /* the command's v1 `tasks` files to join (the rest) */
};
/* The most fds a GO carries: the three above and a tasks file per v1
 * hierarchy (MINI_CG_HIER_MAX, which is smaller). */
#define MINI_GO_FDS_MAX 10
#define MINI_GO_FDS_OPTIONAL 3

/* SECCOMP: after GO, the profile's program, `n_insns` struct sock_filter
 * (1 to BPF_MAXINSNS), which the child loads as its last step.  It comes
 * over the socket rather than in the child's copy of the daemon's memory so
 * that a session's first program can be compiled while its first sandbox
 * is already being prepared (docs/sandbox-lifecycle.md, "Opening a
 * session"). */
struct mini_seccomp_hdr {
    uint32_t type;
    uint32_t n_insns;
};

/* LAUNCH: header, then `len` bytes: cwd NUL, argc NUL, argv strings NUL
 * each, envc NUL, env strings NUL each (counts in decimal). */
struct mini_launch_hdr {
    uint32_t type;
    uint32_t flags;
    uint32_t len;
};
#define MINI_LAUNCH_STDIN 1u
#define MINI_LAUNCH_MAX (32u * 1024u * 1024u)

#endif

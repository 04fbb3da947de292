/* How close any sandbox can come to the kernel's floor (the throughput
 * target, docs/performance.md, "What the kernel's work alone allows"):
 * the steps of a command's life (docs/design.md, "A command's life"),
 * each in the cheapest form this kernel offers, added one at a time to
 * the floor that `mini-sandbox bench` measures (clone into the seven
 * namespaces, exec the command), with no daemon, protocol or init program.
 *
 *   floor     clone(user, mount, pid, net, ipc, uts, cgroup), exec true
 *   maps      + the parent writes the child's uid and gid maps, then lets it go
 *   loopback  + the child brings up lo
 *   root      + private propagation, a clone of a detached template of a
 *               strict root (template_tree.h) moved onto a directory, a
 *               fresh /tmp tmpfs, /proc, pivot_root, the old root detached
 *   confine   + every capability dropped from the bounding set, capset to
 *               none, no_new_privs, a seccomp filter of strict's length
 *   pid 1     + the child stays pid 1: it forks the command and waits
 *   cgroups   + v1 memory and pids groups per command: made, limited,
 *               joined by the parent, removed after the exit
 *
 * Each variant runs N commands (`true`) C at a time; it prints runs per
 * second and the ratio to the floor's, alternating the variants over
 * ROUNDS rounds so that the machine's drift falls on all of them.  Figures
 * only.  Root only (the template and the cgroups); exits 77 otherwise, or
 * where user namespaces or the new mount API are refused.
 *
 *   floor_parts [N] [C] [ROUNDS]      (defaults 300 8 3) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "template_tree.h"

enum { V_FLOOR, V_MAPS, V_LO, V_ROOT, V_CONFINE, V_INIT, V_CGROUP, V_N };
static const char *const names[V_N] = {
    "floor: clone, 7 new ns, exec",
    "+ uid/gid maps by the parent",
    "+ loopback up",
    "+ root: template clone, /tmp, /proc, pivot_root",
    "+ caps, no_new_privs, seccomp",
    "+ pid 1 forks the command",
    "+ v1 memory and pids cgroups",
};

#define ALL_NS \
    (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)
#define MAX_CONC 64

static int template_fd = -1;
static char root_dir[64];
static char cg_base[2][128]; /* the v1 memory and pids groups of this run, "" when absent */
static struct sock_filter filter[200];
static struct sock_fprog prog;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* strict's length (177 instructions): the architecture checked, then 86
 * system calls refused one by one, the rest allowed.  What the kernel
 * spends on a filter (copy, check, JIT) grows with its length, not with
 * what it refuses. */
static void make_filter(void)
{
    size_t n = 0;
    filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
    filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (unsigned nr = 400; nr < 486; nr++) { /* numbers no x86-64 call has: the filter's cost, no refusal */
        filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1);
        filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    }
    filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    prog = (struct sock_fprog){ .len = (unsigned short)n, .filter = filter };
}

static int write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, s, strlen(s));
    close(fd);
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

static void exec_true(void)
{
    char *argv[] = { "true", NULL };
    execv("/bin/true", argv);
    _exit(127);
}

static int lo_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq r = { 0 };
    strcpy(r.ifr_name, "lo");
    int rc = s < 0 || ioctl(s, SIOCGIFFLAGS, &r) < 0 ? -1 : 0;
    r.ifr_flags |= IFF_UP;
    rc |= rc == 0 && ioctl(s, SIOCSIFFLAGS, &r) < 0 ? -1 : 0;
    if (s >= 0)
        close(s);
    return rc;
}

static int make_root(void)
{
    char p[128];
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return -1;
    int t = clone_tree(template_fd, "", AT_RECURSIVE | AT_EMPTY_PATH);
    if (t < 0 || move_into(t, AT_FDCWD, root_dir) < 0)
        return -1;
    close(t);
    snprintf(p, sizeof p, "%s/tmp", root_dir);
    if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "size=128m,mode=1777") < 0)
        return -1;
    snprintf(p, sizeof p, "%s/proc", root_dir);
    if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        return -1;
    if (chdir(root_dir) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0)
        return -1;
    return chdir("/");
}

static int confine(void)
{
    for (int c = 0; c <= CAP_LAST_CAP; c++)
        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
            return -1;
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2] = { { 0 } };
    if (syscall(SYS_capset, &h, d) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

static void die(const char *step)
{
    fprintf(stderr, "floor_parts: in the child: %s: %s\n", step, strerror(errno));
    _exit(120);
}

/* The child: waits for its maps (from V_MAPS on), then the variant's steps. */
static void child(int v, int go)
{
    char c;
    if (v >= V_MAPS && read(go, &c, 1) != 1)
        die("waiting for the maps");
    if (v >= V_LO && lo_up() < 0)
        die("loopback");
    if (v >= V_ROOT && make_root() < 0)
        die("root");
    if (v >= V_CONFINE && confine() < 0)
        die("confine");
    if (v < V_INIT)
        exec_true();
    pid_t pid = fork();
    if (pid == 0)
        exec_true();
    int st;
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    _exit(pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 124);
}

struct slot {
    pid_t pid;
    int cg; /* the slot's groups exist */
};

static int cg_path(char *buf, size_t size, int h, int k, const char *file)
{
    int n = snprintf(buf, size, "%s/c-%d%s%s", cg_base[h], k, file ? "/" : "", file ? file : "");
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

static int spawn(int v, struct slot *s, int k)
{
    char p[256], m[64];
    if (v >= V_CGROUP) {
        s->cg = 1; /* release() removes whichever of the two was made */
        for (int h = 0; h < 2; h++)
            if (cg_path(p, sizeof p, h, k, NULL) < 0 || mkdir(p, 0755) < 0)
                return -1;
        if (cg_path(p, sizeof p, 0, k, "memory.limit_in_bytes") < 0 || write_file(p, "1073741824") < 0 ||
            cg_path(p, sizeof p, 1, k, "pids.max") < 0 || write_file(p, "256") < 0)
            return -1;
    }
    int go[2] = { -1, -1 };
    if (v >= V_MAPS && pipe2(go, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = (pid_t)syscall(SYS_clone, ALL_NS | SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        child(v, go[0]);
    }
    if (go[0] >= 0)
        close(go[0]);
    if (pid < 0) {
        if (go[1] >= 0)
            close(go[1]);
        return -1;
    }
    s->pid = pid;
    int rc = 0;
    if (v >= V_MAPS) {
        /* A root daemon maps the sandbox's root to an unprivileged user. */
        snprintf(m, sizeof m, "0 65534 1");
        snprintf(p, sizeof p, "/proc/%d/uid_map", pid);
        rc |= write_file(p, m);
        snprintf(p, sizeof p, "/proc/%d/gid_map", pid);
        rc |= write_file(p, m);
        if (v >= V_CGROUP) {
            snprintf(m, sizeof m, "%d", pid);
            for (int h = 0; h < 2; h++)
                rc |= cg_path(p, sizeof p, h, k, "cgroup.procs") < 0 || write_file(p, m) < 0 ? -1 : 0;
        }
        rc |= write(go[1], "g", 1) == 1 ? 0 : -1;
        close(go[1]);
    }
    return rc;
}

static void release(struct slot *s, int k)
{
    char p[256];
    for (int h = 0; s->cg && h < 2; h++)
        if (cg_path(p, sizeof p, h, k, NULL) == 0)
            rmdir(p);
    s->cg = 0;
    s->pid = 0;
}

/* A failed run stops what it started: every child killed and reaped, its
 * groups removed. */
static double stop_all(struct slot *slots, int conc)
{
    for (int k = 0; k < conc; k++) {
        if (slots[k].pid > 0) {
            kill(slots[k].pid, SIGKILL);
            waitpid(slots[k].pid, NULL, 0);
        }
        release(&slots[k], k);
    }
    return -1;
}

/* N commands of variant v, C at a time: runs per second, or -1. */
static double run(int v, int n, int conc)
{
    struct slot slots[MAX_CONC] = { { 0 } };
    int started = 0, done = 0, bad = 0;
    double t0 = now_ms();
    while (done < n) {
        for (int k = 0; k < conc && started < n; k++) {
            if (slots[k].pid || slots[k].cg)
                continue;
            if (spawn(v, &slots[k], k) < 0) {
                fprintf(stderr, "floor_parts: %s: %s\n", names[v], strerror(errno));
                return stop_all(slots, conc);
            }
            started++;
        }
        int st;
        pid_t pid = wait(&st);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            return stop_all(slots, conc);
        }
        for (int k = 0; k < conc; k++)
            if (slots[k].pid == pid)
                release(&slots[k], k);
        bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        done++;
    }
    double s = (now_ms() - t0) / 1e3;
    if (bad) {
        fprintf(stderr, "floor_parts: %s: %d of %d commands failed\n", names[v], bad, n);
        return -1;
    }
    return n / s;
}

static void cleanup(void)
{
    for (int h = 0; h < 2; h++)
        if (cg_base[h][0])
            rmdir(cg_base[h]);
    if (root_dir[0])
        rmdir(root_dir);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 300, conc = argc > 2 ? atoi(argv[2]) : 8;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    if (n < 1 || conc < 1 || conc > MAX_CONC || rounds < 1) {
        fprintf(stderr, "usage: floor_parts [N] [C (1..%d)] [ROUNDS]\n", MAX_CONC);
        return 2;
    }
    if (geteuid() != 0) {
        printf("floor_parts: skipped: root only (the template and the cgroups)\n");
        return 77;
    }
    pid_t probe = (pid_t)syscall(SYS_clone, ALL_NS | SIGCHLD, NULL, NULL, NULL, NULL);
    if (probe == 0)
        _exit(0);
    if (probe < 0 || waitpid(probe, NULL, 0) < 0) {
        printf("floor_parts: skipped: clone into the seven namespaces is refused (%s)\n", strerror(errno));
        return 77;
    }
    if ((template_fd = build_template()) < 0) {
        printf("floor_parts: skipped: the template cannot be built (%s)\n", strerror(errno));
        return 77;
    }
    snprintf(root_dir, sizeof root_dir, "/tmp/floor-parts.%d", getpid());
    if (mkdir(root_dir, 0700) < 0) {
        perror("floor_parts: mkdir");
        return 1;
    }
    atexit(cleanup);
    int nv = V_N;
    const char *hier[2] = { "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids" };
    for (int h = 0; h < 2; h++) {
        snprintf(cg_base[h], sizeof cg_base[h], "%s/floor-parts-%d", hier[h], getpid());
        if (access(hier[h], W_OK) < 0 || mkdir(cg_base[h], 0755) < 0) {
            cg_base[h][0] = '\0';
            nv = V_CGROUP; /* no v1 hierarchy here: the last variant is left out */
        }
    }
    make_filter();

    double tp[V_N][16] = { { 0 } };
    if (rounds > 16)
        rounds = 16; /* the table's width */
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < nv; v++)
            if ((tp[v][r] = run(v, n, conc)) < 0)
                return 1;
    printf("floor_parts: %d runs of `true` per variant, %d at a time, %d rounds (runs/s per round)\n\n", n, conc,
           rounds);
    printf("%-48s %-28s %s\n", "variant", "runs/s", "of the floor's (mean)");
    for (int v = 0; v < nv; v++) {
        char line[128] = "";
        double sum = 0;
        for (int r = 0; r < rounds; r++) {
            size_t l = strlen(line);
            snprintf(line + l, sizeof line - l, "%s%.0f", r ? ", " : "", tp[v][r]);
            sum += tp[v][r] / tp[V_FLOOR][r];
        }
        printf("%-48s %-28s %.2f\n", names[v], line, sum / rounds);
    }
    if (nv < V_N)
        printf("%-48s %-28s %s\n", names[V_CGROUP], "-", "(no writable v1 memory and pids hierarchies)");
    return 0;
}

/* What a profile gets on this machine: full, degraded or refused, with
 * what stands in for each missing layer (see caps.h). */
#include "caps.h"
#include "caps_util.h"
#include "mini/path.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ALL_NS                                                                                         \
    (MINI_FEAT_USER_NS | MINI_FEAT_PID_NS | MINI_FEAT_NET_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_IPC_NS | \
     MINI_FEAT_UTS_NS | MINI_FEAT_CGROUP_NS)

const char *mini_assess_status_name(enum mini_assess_status s)
{
    switch (s) {
    case MINI_ASSESS_FULL: return "full";
    case MINI_ASSESS_DEGRADED: return "degraded";
    default: return "refused";
    }
}

const char *mini_exec_path_name(enum mini_exec_path p) { return p == MINI_PATH_LANDLOCK ? "landlock" : "namespaces"; }

/* -------------------------------------------------------- assessment */

static unsigned bit_index(unsigned bit) { return (unsigned)__builtin_ctz(bit); }

static void add_item(struct mini_assessment *a, const char *feature, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_item(struct mini_assessment *a, const char *feature, const char *fmt, ...)
{
    if (a->n_items >= MINI_ASSESS_MAX_ITEMS)
        return;
    struct mini_degradation *d = &a->items[a->n_items++];
    copy_str(d->feature, sizeof d->feature, feature);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->replacement, sizeof d->replacement, fmt, ap);
    va_end(ap);
}

/* The remedy for a missing feature (for `require` refusals). */
static void feature_remedy(const struct mini_caps *c, unsigned bit, char *out, size_t size)
{
    switch (bit) {
    case MINI_FEAT_SECCOMP:
        copy_str(out, size, "use a kernel with CONFIG_SECCOMP_FILTER=y, and in a container allow seccomp(2)");
        return;
    case MINI_FEAT_LANDLOCK:
        if (c->landlock_err == EOPNOTSUPP)
            copy_str(out, size, "Landlock is built in but disabled: add landlock to the lsm= kernel parameter");
        else
            copy_str(out, size,
                     "use a kernel with CONFIG_SECURITY_LANDLOCK=y (Linux 5.13 or later) and landlock in lsm=");
        return;
    case MINI_FEAT_CGROUPS:
        setf(out, size, "%s",
             c->root ? "mount the cgroup v1 memory and pids controllers, or cgroup v2 with them enabled"
                     : "run the daemon in a delegated cgroup v2 subtree "
                       "(systemd-run --user --scope -p Delegate=yes mini-sandboxd), or as root");
        return;
    case MINI_FEAT_OVERLAY:
        if (!c->ns[MINI_NS_USER].ok)
            setf(out, size, "%s", c->userns_remedy);
        else
            copy_str(out, size, "use Linux 5.11 or later (overlayfs in user namespaces) with overlayfs built in");
        return;
    default:
        if (!c->ns[MINI_NS_USER].ok)
            setf(out, size, "%s", c->userns_remedy);
        else
            copy_str(out, size, "use a kernel built with that namespace type");
        return;
    }
}

static void feature_detail(const struct mini_caps *c, unsigned bit, char *out, size_t size)
{
    unsigned i = bit_index(bit);
    if (bit & ALL_NS) {
        if (!c->ns[MINI_NS_USER].ok)
            setf(out, size, "%s", c->userns_why);
        else
            setf(out, size, "creating a %s namespace failed (%s)", mini_ns_name(i), strerror(c->ns[i].err));
        return;
    }
    switch (bit) {
    case MINI_FEAT_SECCOMP:
        setf(out, size, "seccomp filters cannot be installed (%s)", strerror(c->seccomp_err ? c->seccomp_err : ENOSYS));
        return;
    case MINI_FEAT_LANDLOCK:
        setf(out, size, "Landlock is unavailable (%s)", strerror(c->landlock_err ? c->landlock_err : ENOSYS));
        return;
    case MINI_FEAT_CGROUPS: setf(out, size, "%s", c->cg_why); return;
    case MINI_FEAT_OVERLAY:
        setf(out, size, "overlayfs in a user namespace failed at %s (%s)", c->overlay_stage,
             strerror(c->overlay_err ? c->overlay_err : EINVAL));
        return;
    default: setf(out, size, "%s is unavailable", mini_feature_name(i));
    }
}

static void refuse(struct mini_assessment *a, const char *reason, const char *remedy)
{
    a->status = MINI_ASSESS_REFUSED;
    copy_str(a->reason, sizeof a->reason, reason);
    copy_str(a->remedy, sizeof a->remedy, remedy);
    setf(a->summary, sizeof a->summary, "refused: %s", a->reason);
    a->features = 0;
    a->namespaces = 0;
}

static void list_bits(char *out, size_t size, unsigned bits)
{
    out[0] = '\0';
    for (unsigned i = 0; i < MINI_FEAT_COUNT; i++)
        if (bits & (1u << i))
            appendf(out, size, "%s%s", out[0] ? ", " : "", mini_feature_name(i));
}

static void landlock_items(const struct mini_caps *c, const struct mini_profile *p, struct mini_assessment *a,
                           unsigned want_ns)
{
    int abi = c->landlock_abi;
    bool cg = c->cg_mode != MINI_CG_NONE;
    if (want_ns & MINI_FEAT_USER_NS)
        add_item(a, "user_ns",
                 "no capabilities, no_new_privs, an unprivileged host uid (%s); "
                 "Landlock ABI %d confines the filesystem",
                 c->root ? "a root daemon runs commands as the "
                           "workspace owner or nobody"
                         : "the daemon's own",
                 abi);
    if (want_ns & MINI_FEAT_MOUNT_NS)
        add_item(a, "mount_ns",
                 "Landlock: read and execute only beneath the profile's binds, /proc and the "
                 "/dev nodes; write only to the workspace%s and a fresh per-command TMPDIR",
                 p->workspace_writable ? "" : " (read-only here)");
    if (want_ns & MINI_FEAT_PID_NS)
        add_item(a, "pid_ns",
                 "process-group kill%s (seccomp refuses setsid and setpgid); host processes are "
                 "visible in /proc but Landlock forbids tracing%s them",
                 cg ? " and cgroup kill" : "", abi >= 6 ? " or signalling" : "");
    if ((want_ns & MINI_FEAT_NET_NS) && p->network == MINI_NET_NONE)
        add_item(a, "net_ns",
                 "seccomp refuses socket() for every family (socketpair still works)%s; "
                 "no loopback network",
                 abi >= 4 ? "; Landlock denies TCP bind and connect" : "");
    if (want_ns & MINI_FEAT_IPC_NS)
        add_item(a, "ipc_ns", "none: System V IPC and POSIX message queues are shared with the host user%s",
                 abi >= 6 ? "; Landlock scopes abstract Unix sockets" : "");
    if (want_ns & MINI_FEAT_UTS_NS)
        add_item(a, "uts_ns", "none: the command sees the host's name (and cannot change it)");
    if (want_ns & MINI_FEAT_CGROUP_NS)
        add_item(a, "cgroup_ns", "none: /proc/self/cgroup shows host cgroup paths");
    if (p->n_tmpfs) {
        char paths[160] = "";
        for (size_t i = 0; i < p->n_tmpfs; i++)
            appendf(paths, sizeof paths, "%s%s", i ? ", " : "", p->tmpfs[i].path);
        add_item(a, "tmpfs",
                 "a fresh per-command TMPDIR instead of fresh tmpfs on %s (which stay read-only "
                 "or unreadable); its size is bounded only by RLIMIT_FSIZE per file",
                 paths);
    }
    char dirs[200] = "";
    for (size_t b = 0; b < p->n_binds; b++)
        for (size_t h = 0; h < p->n_hide + p->n_tmpfs; h++) {
            const char *hp = h < p->n_hide ? p->hide[h] : p->tmpfs[h - p->n_hide].path;
            if (strcmp(hp, p->binds[b].path) != 0 && mini_path_within(hp, p->binds[b].path)) {
                if (!word_in(dirs, p->binds[b].path, ","))
                    appendf(dirs, sizeof dirs, "%s%s", dirs[0] ? "," : "", p->binds[b].path);
                break;
            }
        }
    if (dirs[0])
        add_item(a, "hide",
                 "Landlock rules carved around the hidden paths: they stay unreadable, but the "
                 "directories leading to them under %s cannot be listed",
                 dirs);
    if (abi < 6)
        add_item(a, "signals",
                 "none: Landlock ABI %d cannot scope signals, so the command can signal the "
                 "daemon user's other processes",
                 abi);
    if (p->network == MINI_NET_HOST)
        add_item(a, "unix_sockets", "none: the command can connect to the host's pathname Unix sockets%s",
                 abi >= 6 ? "" : " and abstract Unix sockets");
}

enum mini_assess_status mini_caps_assess(const struct mini_caps *c, const struct mini_profile *p,
                                         struct mini_assessment *a)
{
    memset(a, 0, sizeof *a);
    unsigned avail = mini_caps_features(c);
    unsigned want_ns = (p->namespaces | MINI_FEAT_USER_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_PID_NS) & ALL_NS;
    unsigned want = want_ns | MINI_FEAT_SECCOMP | (p->overlay_root ? MINI_FEAT_OVERLAY : 0) |
        ((p->limits.memory_bytes || p->limits.pids) ? MINI_FEAT_CGROUPS : 0);
    char detail[MINI_CAPS_TEXT_MAX], remedy[MINI_CAPS_TEXT_MAX], reason[MINI_CAPS_TEXT_MAX];

    unsigned req_missing = p->require & ~avail;
    if (req_missing) {
        char names[200];
        unsigned first = req_missing & -req_missing;
        list_bits(names, sizeof names, req_missing);
        feature_detail(c, first, detail, sizeof detail);
        feature_remedy(c, first, remedy, sizeof remedy);
        setf(reason, sizeof reason, "requires %s, which this machine lacks: %s", names, detail);
        refuse(a, reason, remedy);
        return a->status;
    }
    if (!(avail & MINI_FEAT_SECCOMP)) {
        feature_detail(c, MINI_FEAT_SECCOMP, detail, sizeof detail);
        feature_remedy(c, MINI_FEAT_SECCOMP, remedy, sizeof remedy);
        refuse(a, detail, remedy);
        return a->status;
    }

    unsigned core = MINI_FEAT_USER_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_PID_NS |
        ((want_ns & MINI_FEAT_NET_NS) && p->network != MINI_NET_HOST ? MINI_FEAT_NET_NS : 0);
    if ((avail & core) == core) {
        a->path = MINI_PATH_NAMESPACES;
        a->namespaces = want_ns & avail;
        for (unsigned i = 0; i < MINI_NS_COUNT; i++) {
            unsigned bit = 1u << i;
            if ((want_ns & bit) && !(avail & bit))
                add_item(a, mini_feature_name(i), "none: left out of the clone (%s)", strerror(c->ns[i].err));
        }
        a->features = a->namespaces | MINI_FEAT_SECCOMP;
        if (p->require & MINI_FEAT_LANDLOCK)
            a->features |= MINI_FEAT_LANDLOCK;
        if ((want & MINI_FEAT_OVERLAY) && (avail & MINI_FEAT_OVERLAY))
            a->features |= MINI_FEAT_OVERLAY;
    } else {
        if (p->network == MINI_NET_ALLOW) {
            feature_detail(c, (avail & MINI_FEAT_USER_NS) ? MINI_FEAT_NET_NS : MINI_FEAT_USER_NS, detail,
                           sizeof detail);
            setf(reason, sizeof reason,
                 "an allowlist network needs the sandbox's own network namespace (its proxy listens there): %s",
                 detail);
            setf(remedy, sizeof remedy, "%s; or use a profile whose network is \"none\" or \"host\"",
                 c->userns_remedy[0] ? c->userns_remedy : "enable user and network namespaces");
            refuse(a, reason, remedy);
            return a->status;
        }
        if (c->landlock_abi < 1) {
            feature_detail(c, MINI_FEAT_USER_NS, detail, sizeof detail);
            setf(reason, sizeof reason, "no user namespaces (%s) and no Landlock to confine commands without them",
                 detail);
            setf(remedy, sizeof remedy, "%s; or enable Landlock (Linux 5.13+, landlock in lsm=)",
                 c->userns_remedy[0] ? c->userns_remedy : "enable user namespaces");
            refuse(a, reason, remedy);
            return a->status;
        }
        a->path = MINI_PATH_LANDLOCK;
        a->landlock_abi = c->landlock_abi;
        a->features = MINI_FEAT_SECCOMP | MINI_FEAT_LANDLOCK;
        landlock_items(c, p, a, want_ns);
    }
    if ((want & MINI_FEAT_OVERLAY) && !(a->features & MINI_FEAT_OVERLAY))
        add_item(a, "overlay",
                 "none: the system directories stay read-only, so installs outside the "
                 "workspace fail");
    if (avail & MINI_FEAT_CGROUPS) {
        a->cgroups = true;
        a->features |= MINI_FEAT_CGROUPS;
        if (c->cg_mode == MINI_CG_V1 && p->limits.memory_bytes && !c->v1[MINI_CGC_MEMORY].writable)
            add_item(a, "cgroups", "memory: RLIMIT_AS (address space, not resident memory; no OOM report)");
        if (c->cg_mode == MINI_CG_V1 && p->limits.pids && !c->v1[MINI_CGC_PIDS].writable)
            add_item(a, "cgroups", "pids: RLIMIT_NPROC (counted per user, not per command)");
    } else if (want & MINI_FEAT_CGROUPS) {
        add_item(a, "cgroups",
                 "rlimits: RLIMIT_AS for memory (address space, not resident memory; no OOM "
                 "report), RLIMIT_NPROC for processes (counted per user), RLIMIT_CPU per process");
    }
    a->missing = want & ~a->features;
    a->status = a->n_items || a->missing ? MINI_ASSESS_DEGRADED : MINI_ASSESS_FULL;

    char ns[160] = "";
    for (unsigned i = 0; i < MINI_NS_COUNT; i++)
        if (a->namespaces & (1u << i))
            appendf(ns, sizeof ns, "%s%s", ns[0] ? "," : "", mini_ns_name(i));
    const char *limits = a->cgroups ? (c->cg_mode == MINI_CG_V2 ? "cgroup v2 limits" : "cgroup v1 limits") : "rlimits";
    if (a->status == MINI_ASSESS_FULL) {
        setf(a->summary, sizeof a->summary,
             "full isolation: %s namespaces, seccomp, no_new_privs, no capabilities, %s%s", ns, limits,
             (a->features & MINI_FEAT_OVERLAY) ? ", session overlay" : "");
    } else if (a->path == MINI_PATH_NAMESPACES) {
        char miss[200] = "";
        for (size_t i = 0; i < a->n_items; i++)
            if (!word_in(miss, a->items[i].feature, ","))
                appendf(miss, sizeof miss, "%s%s", miss[0] ? "," : "", a->items[i].feature);
        setf(a->summary, sizeof a->summary, "degraded: %s namespaces, seccomp, no_new_privs, %s; missing %s", ns,
             limits, miss);
    } else {
        setf(a->summary, sizeof a->summary,
             "degraded: no user namespaces; confined by Landlock ABI %d, seccomp, no_new_privs, no capabilities, "
             "%s, process-group kill%s",
             a->landlock_abi, limits, a->cgroups ? " and cgroup kill" : "");
    }
    return a->status;
}

cJSON *mini_assessment_to_json(const struct mini_assessment *a)
{
    struct jb j = { false };
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    bool refused = a->status == MINI_ASSESS_REFUSED;
    jadd(&j, o, "status", cJSON_CreateString(mini_assess_status_name(a->status)));
    jadd(&j, o, "path", refused ? cJSON_CreateNull() : cJSON_CreateString(mini_exec_path_name(a->path)));
    cJSON *ns = jadd(&j, o, "namespaces", cJSON_CreateArray());
    for (unsigned i = 0; i < MINI_NS_COUNT; i++)
        if (a->namespaces & (1u << i))
            jadd(&j, ns, NULL, cJSON_CreateString(mini_ns_name(i)));
    jadd(&j, o, "features", features_json(&j, a->features));
    cJSON *m = jadd(&j, o, "missing", cJSON_CreateArray());
    for (size_t i = 0; i < a->n_items; i++) {
        cJSON *it = jadd(&j, m, NULL, cJSON_CreateObject());
        jadd(&j, it, "feature", cJSON_CreateString(a->items[i].feature));
        jadd(&j, it, "replacement", cJSON_CreateString(a->items[i].replacement));
    }
    jadd(&j, o, "cgroups", cJSON_CreateBool(a->cgroups));
    jadd(&j, o, "landlock_abi", cJSON_CreateNumber(a->path == MINI_PATH_LANDLOCK && !refused ? a->landlock_abi : 0));
    jadd(&j, o, "reason", refused ? cJSON_CreateString(a->reason) : cJSON_CreateNull());
    jadd(&j, o, "remedy", refused ? cJSON_CreateString(a->remedy) : cJSON_CreateNull());
    jadd(&j, o, "summary", cJSON_CreateString(a->summary));
    if (j.oom) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int mini_assessment_check(const struct mini_assessment *a, const char *profile_name, struct mini_err *e)
{
    if (a->status != MINI_ASSESS_REFUSED)
        return 0;
    return mini_err_set(e, MINI_E_ISOLATION_UNAVAILABLE, "profile %s: %s; remedy: %s",
                        profile_name ? profile_name : "?", a->reason, a->remedy);
}

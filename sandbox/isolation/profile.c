/* Sandbox profiles: JSON <-> struct mini_profile, defaults, request
 * overrides.  docs/profiles.md describes the schema; every omitted key takes
 * the value it has in profiles/strict.json (the built-in defaults below), so
 * a partial profile is never looser than strict by accident. */
#include "mini/profile.h"
#include "mini/path.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/str.h"
#include "image.h"
#include "netpolicy.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB (1024u * 1024u)
#define PROFILE_FILE_MAX (1024u * 1024u)
#define KP_MAX 256                /* key paths in messages */
#define TIMEOUT_MAX_S 604800.0    /* a week */
#define MB_MAX (1ull << 40)       /* scaled by MiB, stays far below 2^64 */
#define PIDS_MAX 4194304ull       /* PID_MAX_LIMIT */
#define OPEN_FILES_MAX 1048576ull /* the kernel's default nr_open */
/* The kept output travels in one `exit` frame; escaped as \u00XX it can
 * grow sixfold, so keep it well below MINI_FRAME_MAX. */
#define OUTPUT_BYTES_MAX (MINI_FRAME_MAX / 8)
#define STRICT_HOSTNAME "mini-sandbox"

/* ----------------------------------------------------------------- tables */

static const char *const feature_names[MINI_FEAT_COUNT] = {
    "user_ns",   "pid_ns",  "net_ns",   "mount_ns", "ipc_ns",  "uts_ns",
    "cgroup_ns", "seccomp", "landlock", "cgroups",  "overlay",
};

const char *mini_feature_name(unsigned bit_index)
{
    return bit_index < MINI_FEAT_COUNT ? feature_names[bit_index] : NULL;
}

unsigned mini_feature_from_name(const char *name)
{
    for (unsigned i = 0; name && i < MINI_FEAT_COUNT; i++)
        if (strcmp(feature_names[i], name) == 0)
            return 1u << i;
    return 0;
}

static const struct {
    const char *key;
    unsigned feat;
} ns_keys[] = {
    { "user", MINI_FEAT_USER_NS },     { "pid", MINI_FEAT_PID_NS }, { "mount", MINI_FEAT_MOUNT_NS },
    { "net", MINI_FEAT_NET_NS },       { "ipc", MINI_FEAT_IPC_NS }, { "uts", MINI_FEAT_UTS_NS },
    { "cgroup", MINI_FEAT_CGROUP_NS },
};
#define ALL_NS                                                                                         \
    (MINI_FEAT_USER_NS | MINI_FEAT_PID_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_NET_NS | MINI_FEAT_IPC_NS | \
     MINI_FEAT_UTS_NS | MINI_FEAT_CGROUP_NS)

/* Socket families by name.  "vsock" (reaches the hypervisor) and "alg"
 * (the kernel crypto API, a steady source of kernel bugs) are known so that
 * the refusal can say why; the seccomp compiler denies them regardless. */
static const struct {
    const char *name;
    int af;
    bool refused;
} families[] = {
    { "unix", AF_UNIX, false },
    { "inet", AF_INET, false },
    { "inet6", AF_INET6, false },
    { "netlink", AF_NETLINK, false },
    { "packet", AF_PACKET, false },
    { "key", AF_KEY, false },
    { "can", AF_CAN, false },
    { "tipc", AF_TIPC, false },
    { "bluetooth", AF_BLUETOOTH, false },
    { "rds", AF_RDS, false },
    { "llc", AF_LLC, false },
    { "x25", AF_X25, false },
    { "ax25", AF_AX25, false },
    { "appletalk", AF_APPLETALK, false },
    { "ppp", AF_PPPOX, false },
    { "phonet", AF_PHONET, false },
    { "ieee802154", AF_IEEE802154, false },
    { "caif", AF_CAIF, false },
    { "nfc", AF_NFC, false },
    { "kcm", AF_KCM, false },
    { "qipcrtr", AF_QIPCRTR, false },
    { "smc", AF_SMC, false },
    { "xdp", AF_XDP, false },
    { "mctp", AF_MCTP, false },
    { "vsock", AF_VSOCK, true },
    { "alg", AF_ALG, true },
};

static const char *family_name(int af)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(families); i++)
        if (families[i].af == af)
            return families[i].name;
    return NULL;
}

static const struct {
    const char *name;
    int value;
} errnos[] = {
    { "EPERM", EPERM },
    { "ENOSYS", ENOSYS },
    { "EACCES", EACCES },
};

static const char *const default_actions[] = {
    [MINI_SECCOMP_ALLOW] = "allow",
    [MINI_SECCOMP_ERRNO] = "errno",
    [MINI_SECCOMP_KILL] = "kill",
};

/* --------------------------------------------------- built-in defaults */

static const char *const default_binds[] = {
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
};
static const char *const default_hide[] = {
    "/etc/ssh", "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssl/private",
};
static const char *const default_deny[] = {
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "kcmp",
    "pidfd_getfd",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "vhangup",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "iopl",
    "ioperm",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "fanotify_init",
    "move_pages",
    "migrate_pages",
    "uselib",
    "ustat",
    "sysfs",
};
static const int default_families[] = { AF_UNIX, AF_INET, AF_INET6 };
static const char *const default_env[][2] = {
    { "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" },
    { "HOME", "/tmp" },
    { "LANG", "C.UTF-8" },
    { "TERM", "dumb" },
    { "PAGER", "cat" },
    { "MANPAGER", "cat" },
    { "LESS", "-R" },
    { "PIP_PROGRESS_BAR", "off" },
    { "TQDM_DISABLE", "1" },
};
static const struct mini_limits default_limits = {
    .timeout_s = 60,
    .memory_bytes = 2048ull * MIB,
    .pids = 256,
    .cpu_s = 120,
    .file_size_bytes = 256ull * MIB,
    .open_files = 1024,
    .output_bytes = 1048576,
    .disk_bytes = 1024ull * MIB,
    .net_connections = 32,
    .net_in_bytes = 1024ull * MIB,
    .net_out_bytes = 256ull * MIB,
};
#define DEFAULT_TMP_MB 128

/* ------------------------------------------------------------ helpers */

struct ctx {
    const char *origin;  /* message prefix (file name), or NULL */
    enum mini_errc code; /* profile_invalid, or bad_request for overrides */
    struct mini_err *e;
};

static int fail(const struct ctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(const struct ctx *c, const char *path, const char *fmt, ...)
{
    char msg[MINI_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->origin)
        return mini_err_set(c->e, c->code, "%s: %s: %s", c->origin, path, msg);
    return mini_err_set(c->e, c->code, "%s: %s", path, msg);
}

static int nomem(const struct ctx *c) { return mini_err_set(c->e, MINI_E_NOMEM, "out of memory"); }

/* A key path cut to KP_MAX bytes ends in "...". */
static const char *kp_end(char *buf, int n)
{
    if (n >= KP_MAX)
        memcpy(buf + KP_MAX - 4, "...", 4);
    return buf;
}

/* "parent.key", or "key" at the top level. */
static const char *kp(char *buf, const char *parent, const char *key)
{
    if (parent[0])
        return kp_end(buf, snprintf(buf, KP_MAX, "%s.%s", parent, key));
    return kp_end(buf, snprintf(buf, KP_MAX, "%s", key));
}

static const char *kpi(char *buf, const char *parent, size_t i)
{
    return kp_end(buf, snprintf(buf, KP_MAX, "%s[%zu]", parent, i));
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

/* "PATH: unknown key", with the closest of the keys allowed there as a
 * suggestion when one is near (a typo). */
static int unknown_key(const struct ctx *c, const char *path, const char *key, const char *const *allowed,
                       size_t n_allowed)
{
    const char *near = mini_closest(key, allowed, n_allowed);
    if (near)
        return fail(c, path, "unknown key (did you mean %s?)", near);
    return fail(c, path, "unknown key");
}

/* An object whose keys all appear in `allowed`. */
static int check_object(const struct ctx *c, const cJSON *v, const char *path, const char *const *allowed,
                        size_t n_allowed)
{
    char buf[KP_MAX];
    if (!cJSON_IsObject(v))
        return fail(c, path, "must be an object");
    for (const cJSON *it = v->child; it; it = it->next)
        if (!in_list(it->string, allowed, n_allowed))
            return unknown_key(c, kp(buf, path, it->string), it->string, allowed, n_allowed);
    return 0;
}

static int get_bool(const struct ctx *c, const cJSON *obj, const char *path, const char *key, bool *out)
{
    char buf[KP_MAX];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return fail(c, kp(buf, path, key), "must be true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

/* The string at obj.key, NULL if absent; *bad on a wrong type. */
static const char *get_str(const struct ctx *c, const cJSON *obj, const char *path, const char *key, bool *bad)
{
    char buf[KP_MAX];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *bad = false;
    if (!v)
        return NULL;
    if (!cJSON_IsString(v)) {
        *bad = true;
        fail(c, kp(buf, path, key), "must be a string");
        return NULL;
    }
    return v->valuestring;
}

/* An integer in [min, max].  Not present: *out untouched. */
static int get_uint(const struct ctx *c, const cJSON *obj, const char *path, const char *key, uint64_t min,
                    uint64_t max, uint64_t *out)
{
    char buf[KP_MAX];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (d >= (double)min && d > (double)max)
        return fail(c, kp(buf, path, key), "must be at most %llu", (unsigned long long)max);
    if (!(d >= (double)min) || d != (double)(uint64_t)d)
        return fail(c, kp(buf, path, key), min ? "must be a positive integer" : "must be a non-negative integer");
    *out = (uint64_t)d;
    return 0;
}

static int push_str(char ***v, size_t *n, const char *s)
{
    char *copy = strdup(s);
    char **grown = copy ? realloc(*v, (*n + 1) * sizeof **v) : NULL;
    if (!grown) {
        free(copy);
        return -1;
    }
    *v = grown;
    (*v)[(*n)++] = copy;
    return 0;
}

static void free_strv(char ***v, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free((*v)[i]);
    free(*v);
    *v = NULL;
    *n = 0;
}

static void free_binds(struct mini_profile *p)
{
    for (size_t i = 0; i < p->n_binds; i++)
        free(p->binds[i].path);
    free(p->binds);
    p->binds = NULL;
    p->n_binds = 0;
}

static void free_tmpfs(struct mini_profile *p)
{
    for (size_t i = 0; i < p->n_tmpfs; i++)
        free(p->tmpfs[i].path);
    free(p->tmpfs);
    p->tmpfs = NULL;
    p->n_tmpfs = 0;
}

static int push_bind(struct mini_profile *p, const char *path, bool writable, bool optional)
{
    char *copy = strdup(path);
    struct mini_bind *grown = copy ? realloc(p->binds, (p->n_binds + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(copy);
        return -1;
    }
    p->binds = grown;
    p->binds[p->n_binds++] = (struct mini_bind){ copy, writable, optional };
    return 0;
}

static int push_tmpfs(struct mini_profile *p, const char *path, uint64_t size_bytes, unsigned mode)
{
    char *copy = strdup(path);
    struct mini_tmpfs *grown = copy ? realloc(p->tmpfs, (p->n_tmpfs + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(copy);
        return -1;
    }
    p->tmpfs = grown;
    p->tmpfs[p->n_tmpfs++] = (struct mini_tmpfs){ copy, size_bytes, mode };
    return 0;
}

static int push_family(struct mini_seccomp_policy *s, int af)
{
    int *grown = realloc(s->socket_families, (s->n_socket_families + 1) * sizeof *grown);
    if (!grown)
        return -1;
    s->socket_families = grown;
    s->socket_families[s->n_socket_families++] = af;
    return 0;
}

/* Normalise an absolute path: no empty or "." components, no trailing "/".
 * NULL with *why set when it is not absolute, holds "..", or is too long. */
static char *norm_path(const char *in, const char **why)
{
    if (in[0] != '/') {
        *why = "must be an absolute path";
        return NULL;
    }
    size_t len = strlen(in);
    if (len >= PATH_MAX) {
        *why = "is too long";
        return NULL;
    }
    char *out = malloc(len + 2);
    if (!out) {
        *why = NULL;
        return NULL;
    }
    size_t o = 0;
    for (const char *s = in; *s;) {
        while (*s == '/')
            s++;
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            free(out);
            *why = "must not contain \"..\"";
            return NULL;
        }
        if (n > 0 && !(n == 1 && s[0] == '.')) {
            out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
        }
        s += n;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    return out;
}

/* The normalised path of a JSON value at `path`; NULL with e filled. */
static char *get_path(const struct ctx *c, const cJSON *v, const char *path, bool allow_root)
{
    if (!cJSON_IsString(v)) {
        fail(c, path, "must be an absolute path");
        return NULL;
    }
    const char *why;
    char *n = norm_path(v->valuestring, &why);
    if (!n) {
        if (why)
            fail(c, path, "%s", why);
        else
            nomem(c);
        return NULL;
    }
    if (!allow_root && strcmp(n, "/") == 0) {
        free(n);
        fail(c, path, "must not be \"/\"");
        return NULL;
    }
    return n;
}

static bool valid_hostname(const char *h)
{
    size_t len = strlen(h);
    if (len == 0 || len > 64)
        return false;
    size_t label = 0;
    for (size_t i = 0; i <= len; i++) {
        char ch = h[i];
        if (ch == '.' || ch == '\0') {
            if (label == 0 || label > 63 || h[i - 1] == '-')
                return false;
            label = 0;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                   (ch == '-' && label > 0)) {
            label++;
        } else {
            return false;
        }
    }
    return true;
}

static bool valid_env_name(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static bool valid_text(const char *s, size_t max)
{
    size_t len = strlen(s);
    if (len == 0 || len > max)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/* A syscall name that libseccomp knows for the native architecture. */
static int check_syscall(const struct ctx *c, const cJSON *v, const char *path)
{
    if (!cJSON_IsString(v))
        return fail(c, path, "must be a syscall name");
    int nr = seccomp_syscall_resolve_name(v->valuestring);
    if (nr == __NR_SCMP_ERROR)
        return fail(c, path, "unknown syscall \"%s\"", v->valuestring);
    if (nr < 0)
        return fail(c, path, "syscall \"%s\" does not exist on this architecture", v->valuestring);
    return 0;
}

static bool strv_has(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

/* A list of syscall names at `path`, appended to (v, n).  Duplicates fail,
 * or are skipped when `skip_dups` (overrides adding to a list). */
static int parse_syscalls(const struct ctx *c, const cJSON *arr, const char *path, char ***v, size_t *n, bool skip_dups)
{
    char buf[KP_MAX];
    if (!cJSON_IsArray(arr))
        return fail(c, path, "must be an array of syscall names");
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        if (check_syscall(c, it, kpi(buf, path, i)) < 0)
            return -1;
        if (strv_has(*v, *n, it->valuestring)) {
            if (skip_dups)
                continue;
            return fail(c, buf, "\"%s\" is listed twice", it->valuestring);
        }
        if (push_str(v, n, it->valuestring) < 0)
            return nomem(c);
    }
    return 0;
}

/* Hidden paths at `path`, appended to the profile's. */
static int parse_hide(const struct ctx *c, const cJSON *arr, const char *path, struct mini_profile *p, bool skip_dups)
{
    char buf[KP_MAX];
    if (!cJSON_IsArray(arr))
        return fail(c, path, "must be an array of absolute paths");
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        _cleanup_free_ char *n = get_path(c, it, kpi(buf, path, i), false);
        if (!n)
            return -1;
        if (strv_has(p->hide, p->n_hide, n)) {
            if (skip_dups)
                continue;
            return fail(c, buf, "\"%s\" is listed twice", n);
        }
        if (push_str(&p->hide, &p->n_hide, n) < 0)
            return nomem(c);
    }
    return 0;
}

/* ----------------------------------------------------------- sections */

static int parse_namespaces(const struct ctx *c, const cJSON *v, struct mini_profile *p, bool *net_given)
{
    static const char *const keys[] = { "user", "pid", "mount", "net", "ipc", "uts", "cgroup" };
    if (check_object(c, v, "namespaces", keys, MINI_ARRAY_SIZE(keys)) < 0)
        return -1;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(ns_keys); i++) {
        bool on = (p->namespaces & ns_keys[i].feat) != 0;
        if (get_bool(c, v, "namespaces", ns_keys[i].key, &on) < 0)
            return -1;
        p->namespaces = on ? p->namespaces | ns_keys[i].feat : p->namespaces & ~ns_keys[i].feat;
    }
    *net_given = cJSON_GetObjectItemCaseSensitive(v, "net") != NULL;
    /* spawn and container/ build the root inside a mount namespace. */
    if (!(p->namespaces & MINI_FEAT_MOUNT_NS))
        return fail(c, "namespaces.mount", "must be true (the sandbox's filesystem view needs a mount namespace)");
    return 0;
}

/* Allowlist entries at `path` appended to *v (each checked by the rule
 * parser); at most MINI_NET_ENTRIES_MAX in all. */
static int parse_net_entries(const struct ctx *c, const cJSON *arr, const char *path, char ***v, size_t *n,
                             size_t others)
{
    char buf[KP_MAX];
    if (!cJSON_IsArray(arr))
        return fail(c, path, "must be an array of strings");
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        struct mini_netrule r;
        const char *why;
        kpi(buf, path, i);
        if (!cJSON_IsString(it))
            return fail(c, buf, "must be a string");
        if (mini_netrule_parse(it->valuestring, &r, &why) < 0)
            return fail(c, buf, "\"%.80s\": %s", it->valuestring, why);
        if (*n + others >= MINI_NET_ENTRIES_MAX)
            return fail(c, path, "more than %d allow and deny entries", MINI_NET_ENTRIES_MAX);
        if (!strv_has(*v, *n, it->valuestring) && push_str(v, n, it->valuestring) < 0)
            return nomem(c);
    }
    return 0;
}

/* network.resolve: "NAME:ADDR" pins, each checked as the daemon's --resolve. */
static int parse_net_pins(const struct ctx *c, const cJSON *arr, struct mini_profile *p)
{
    char buf[KP_MAX];
    struct mini_net_pins pins = { 0 };
    int rc = 0;
    if (!cJSON_IsArray(arr))
        return fail(c, "network.resolve", "must be an array of \"NAME:ADDRESS\" strings");
    size_t i = 0;
    for (const cJSON *it = arr->child; it && rc == 0; it = it->next, i++) {
        const char *why;
        kpi(buf, "network.resolve", i);
        if (!cJSON_IsString(it))
            rc = fail(c, buf, "must be a string");
        else if (i >= MINI_NET_ENTRIES_MAX)
            rc = fail(c, "network.resolve", "more than %d entries", MINI_NET_ENTRIES_MAX);
        else if (mini_net_pins_add(&pins, it->valuestring, &why) < 0)
            rc = fail(c, buf, "\"%.80s\": %s", it->valuestring, why);
        else if (push_str(&p->net_resolve, &p->n_net_resolve, it->valuestring) < 0)
            rc = nomem(c);
    }
    mini_net_pins_free(&pins);
    return rc;
}

static int parse_network(const struct ctx *c, const cJSON *v, struct mini_profile *p)
{
    free_strv(&p->net_allow, &p->n_net_allow);
    free_strv(&p->net_deny, &p->n_net_deny);
    free_strv(&p->net_resolve, &p->n_net_resolve);
    if (cJSON_IsObject(v)) {
        static const char *const keys[] = { "allow", "deny", "resolve" };
        const cJSON *allow = cJSON_GetObjectItemCaseSensitive(v, "allow");
        const cJSON *deny = cJSON_GetObjectItemCaseSensitive(v, "deny");
        if (check_object(c, v, "network", keys, MINI_ARRAY_SIZE(keys)) < 0)
            return -1;
        if (!allow)
            return fail(c, "network.allow", "is required (an array of entries such as \"pypi.org\")");
        if (parse_net_entries(c, allow, "network.allow", &p->net_allow, &p->n_net_allow, 0) < 0 ||
            (deny && parse_net_entries(c, deny, "network.deny", &p->net_deny, &p->n_net_deny, p->n_net_allow) < 0))
            return -1;
        if (!p->n_net_allow)
            return fail(c, "network.allow", "must not be empty (use \"none\" for no network)");
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(v, "resolve");
        if (res && parse_net_pins(c, res, p) < 0)
            return -1;
        p->network = MINI_NET_ALLOW;
    } else if (cJSON_IsString(v) && strcmp(v->valuestring, "none") == 0) {
        p->network = MINI_NET_NONE;
    } else if (cJSON_IsString(v) && strcmp(v->valuestring, "host") == 0) {
        p->network = MINI_NET_HOST;
    } else {
        return fail(c, "network", "must be \"none\", \"host\" or an object {\"allow\": [...], \"deny\": [...]}");
    }
    return 0;
}

static int parse_binds(const struct ctx *c, const cJSON *arr, struct mini_profile *p)
{
    static const char *const keys[] = { "path", "writable", "optional" };
    const char *path = "filesystem.binds";
    char buf[KP_MAX], sub[KP_MAX];
    if (!cJSON_IsArray(arr))
        return fail(c, path, "must be an array");
    free_binds(p);
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        kpi(buf, path, i);
        bool writable = false, optional = true;
        _cleanup_free_ char *n = NULL;
        if (cJSON_IsString(it)) {
            n = get_path(c, it, buf, true);
        } else if (cJSON_IsObject(it)) {
            if (check_object(c, it, buf, keys, MINI_ARRAY_SIZE(keys)) < 0 ||
                get_bool(c, it, buf, "writable", &writable) < 0 || get_bool(c, it, buf, "optional", &optional) < 0)
                return -1;
            const cJSON *pv = cJSON_GetObjectItemCaseSensitive(it, "path");
            if (!pv)
                return fail(c, kp(sub, buf, "path"), "is required");
            n = get_path(c, pv, kp(sub, buf, "path"), true);
        } else {
            return fail(c, buf, "must be a path or an object");
        }
        if (!n)
            return -1;
        for (size_t j = 0; j < p->n_binds; j++)
            if (strcmp(p->binds[j].path, n) == 0)
                return fail(c, buf, "\"%s\" is listed twice", n);
        if (push_bind(p, n, writable, optional) < 0)
            return nomem(c);
    }
    return 0;
}

static int parse_mode(const char *s, unsigned *out)
{
    size_t len = strlen(s);
    if (len == 0 || len > 4 || strspn(s, "01234567") != len)
        return -1;
    *out = (unsigned)strtoul(s, NULL, 8);
    return 0;
}

static int parse_tmpfs(const struct ctx *c, const cJSON *arr, struct mini_profile *p)
{
    static const char *const keys[] = { "path", "size_mb", "mode" };
    const char *path = "filesystem.tmpfs";
    char buf[KP_MAX], sub[KP_MAX];
    if (!cJSON_IsArray(arr))
        return fail(c, path, "must be an array");
    free_tmpfs(p);
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        kpi(buf, path, i);
        if (check_object(c, it, buf, keys, MINI_ARRAY_SIZE(keys)) < 0)
            return -1;
        const cJSON *pv = cJSON_GetObjectItemCaseSensitive(it, "path");
        if (!pv)
            return fail(c, kp(sub, buf, "path"), "is required");
        _cleanup_free_ char *n = get_path(c, pv, kp(sub, buf, "path"), false);
        if (!n)
            return -1;
        uint64_t size_mb = DEFAULT_TMP_MB;
        unsigned mode = 01777;
        bool bad;
        if (get_uint(c, it, buf, "size_mb", 1, MB_MAX, &size_mb) < 0)
            return -1;
        const char *m = get_str(c, it, buf, "mode", &bad);
        if (bad)
            return -1;
        if (m && parse_mode(m, &mode) < 0)
            return fail(c, kp(sub, buf, "mode"), "must be an octal mode such as \"1777\"");
        for (size_t j = 0; j < p->n_tmpfs; j++)
            if (strcmp(p->tmpfs[j].path, n) == 0)
                return fail(c, kp(sub, buf, "path"), "\"%s\" is listed twice", n);
        if (push_tmpfs(p, n, size_mb * MIB, mode) < 0)
            return nomem(c);
    }
    return 0;
}

static int parse_filesystem(const struct ctx *c, const cJSON *v, struct mini_profile *p)
{
    static const char *const keys[] = { "binds", "hide", "tmpfs", "workspace_writable", "overlay_root" };
    const cJSON *x;
    if (check_object(c, v, "filesystem", keys, MINI_ARRAY_SIZE(keys)) < 0)
        return -1;
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "binds")) && parse_binds(c, x, p) < 0)
        return -1;
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "hide"))) {
        free_strv(&p->hide, &p->n_hide);
        if (parse_hide(c, x, "filesystem.hide", p, false) < 0)
            return -1;
    }
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "tmpfs")) && parse_tmpfs(c, x, p) < 0)
        return -1;
    if (get_bool(c, v, "filesystem", "workspace_writable", &p->workspace_writable) < 0 ||
        get_bool(c, v, "filesystem", "overlay_root", &p->overlay_root) < 0)
        return -1;
    return 0;
}

/* The integer limits: JSON key, field, unit, minimum, maximum. */
static const struct limit_key {
    const char *key;
    size_t off;
    uint64_t unit;
    uint64_t min, max;
} limit_keys[] = {
    { "memory_mb", offsetof(struct mini_limits, memory_bytes), MIB, 0, MB_MAX },
    { "pids", offsetof(struct mini_limits, pids), 1, 0, PIDS_MAX },
    { "cpu_s", offsetof(struct mini_limits, cpu_s), 1, 0, MB_MAX },
    { "file_size_mb", offsetof(struct mini_limits, file_size_bytes), MIB, 0, MB_MAX },
    { "open_files", offsetof(struct mini_limits, open_files), 1, 1, OPEN_FILES_MAX },
    { "output_bytes", offsetof(struct mini_limits, output_bytes), 1, 1, OUTPUT_BYTES_MAX },
    { "disk_mb", offsetof(struct mini_limits, disk_bytes), MIB, 0, MB_MAX },
    { "net_connections", offsetof(struct mini_limits, net_connections), 1, 0, 4096 },
    { "net_in_mb", offsetof(struct mini_limits, net_in_bytes), MIB, 0, MB_MAX },
    { "net_out_mb", offsetof(struct mini_limits, net_out_bytes), MIB, 0, MB_MAX },
};
static const char *const limits_allowed[] = {
    "timeout_s", "memory_mb",    "pids",    "cpu_s",           "file_size_mb", "open_files",
    "output_bytes", "disk_mb", "net_connections", "net_in_mb",   "net_out_mb",
};

static uint64_t *limit_field(struct mini_limits *l, const struct limit_key *k)
{
    return (uint64_t *)((char *)l + k->off);
}

/* Parse the limits object into *l (keys absent keep their value). */
static int parse_limits(const struct ctx *c, const cJSON *v, const char *path, struct mini_limits *l)
{
    char buf[KP_MAX];
    if (check_object(c, v, path, limits_allowed, MINI_ARRAY_SIZE(limits_allowed)) < 0)
        return -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "timeout_s");
    if (t) {
        if (!cJSON_IsNumber(t) || !(t->valuedouble > 0))
            return fail(c, kp(buf, path, "timeout_s"), "must be a positive number");
        if (t->valuedouble > TIMEOUT_MAX_S)
            return fail(c, kp(buf, path, "timeout_s"), "must be at most %.0f", TIMEOUT_MAX_S);
        l->timeout_s = t->valuedouble;
    }
    for (size_t i = 0; i < MINI_ARRAY_SIZE(limit_keys); i++) {
        const struct limit_key *k = &limit_keys[i];
        uint64_t val = 0;
        if (!cJSON_GetObjectItemCaseSensitive(v, k->key))
            continue;
        if (get_uint(c, v, path, k->key, k->min, k->max, &val) < 0)
            return -1;
        *limit_field(l, k) = val * k->unit;
    }
    return 0;
}

static int parse_families(const struct ctx *c, const cJSON *arr, struct mini_seccomp_policy *s)
{
    const char *path = "seccomp.socket_families";
    char buf[KP_MAX];
    if (!cJSON_IsArray(arr))
        return fail(c, path, "must be an array of family names");
    free(s->socket_families);
    s->socket_families = NULL;
    s->n_socket_families = 0;
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        kpi(buf, path, i);
        if (!cJSON_IsString(it))
            return fail(c, buf, "must be a family name");
        size_t f = 0;
        while (f < MINI_ARRAY_SIZE(families) && strcmp(families[f].name, it->valuestring) != 0)
            f++;
        if (f == MINI_ARRAY_SIZE(families))
            return fail(c, buf, "unknown socket family \"%s\"", it->valuestring);
        if (families[f].refused)
            return fail(c, buf, "socket family \"%s\" is never allowed", it->valuestring);
        for (size_t j = 0; j < s->n_socket_families; j++)
            if (s->socket_families[j] == families[f].af)
                return fail(c, buf, "\"%s\" is listed twice", it->valuestring);
        if (push_family(s, families[f].af) < 0)
            return nomem(c);
    }
    return 0;
}

static int parse_seccomp(const struct ctx *c, const cJSON *v, struct mini_seccomp_policy *s)
{
    static const char *const keys[] = {
        "default_action", "allow", "deny", "errno", "deny_tty_injection", "deny_namespace_clone", "socket_families",
    };
    const cJSON *x;
    bool bad;
    if (check_object(c, v, "seccomp", keys, MINI_ARRAY_SIZE(keys)) < 0)
        return -1;
    const char *da = get_str(c, v, "seccomp", "default_action", &bad);
    if (bad)
        return -1;
    if (da) {
        size_t i = 0;
        while (i < MINI_ARRAY_SIZE(default_actions) && strcmp(default_actions[i], da) != 0)
            i++;
        if (i == MINI_ARRAY_SIZE(default_actions))
            return fail(c, "seccomp.default_action", "must be \"allow\", \"errno\" or \"kill\"");
        s->default_action = (enum mini_seccomp_default)i;
    }
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "allow")) &&
        parse_syscalls(c, x, "seccomp.allow", &s->allow, &s->n_allow, false) < 0)
        return -1;
    if (s->default_action == MINI_SECCOMP_ALLOW && s->n_allow)
        return fail(c, "seccomp.allow", "only applies when default_action is \"errno\" or \"kill\"");
    if (s->default_action != MINI_SECCOMP_ALLOW && !s->n_allow)
        return fail(c, "seccomp.allow", "must list the allowed syscalls when default_action is \"%s\"",
                    default_actions[s->default_action]);
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "deny"))) {
        free_strv(&s->deny, &s->n_deny);
        if (parse_syscalls(c, x, "seccomp.deny", &s->deny, &s->n_deny, false) < 0)
            return -1;
    }
    const char *en = get_str(c, v, "seccomp", "errno", &bad);
    if (bad)
        return -1;
    if (en) {
        size_t i = 0;
        while (i < MINI_ARRAY_SIZE(errnos) && strcmp(errnos[i].name, en) != 0)
            i++;
        if (i == MINI_ARRAY_SIZE(errnos))
            return fail(c, "seccomp.errno", "must be \"EPERM\", \"ENOSYS\" or \"EACCES\"");
        s->errno_value = errnos[i].value;
    }
    if (get_bool(c, v, "seccomp", "deny_tty_injection", &s->deny_tty_injection) < 0 ||
        get_bool(c, v, "seccomp", "deny_namespace_clone", &s->deny_namespace_clone) < 0)
        return -1;
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "socket_families")) && parse_families(c, x, s) < 0)
        return -1;
    return 0;
}

static int parse_environment(const struct ctx *c, const cJSON *v, struct mini_profile *p)
{
    static const char *const keys[] = { "set", "pass" };
    char buf[KP_MAX];
    const cJSON *x;
    if (check_object(c, v, "environment", keys, MINI_ARRAY_SIZE(keys)) < 0)
        return -1;
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "set"))) {
        if (!cJSON_IsObject(x))
            return fail(c, "environment.set", "must be an object of strings");
        mini_env_free(&p->env_set);
        for (const cJSON *it = x->child; it; it = it->next) {
            kp(buf, "environment.set", it->string);
            if (!valid_env_name(it->string))
                return fail(c, buf, "invalid variable name");
            if (!cJSON_IsString(it))
                return fail(c, buf, "must be a string");
            if (mini_env_add(&p->env_set, it->string, it->valuestring) < 0)
                return nomem(c);
        }
    }
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "pass"))) {
        if (!cJSON_IsArray(x))
            return fail(c, "environment.pass", "must be an array of variable names");
        free_strv(&p->env_pass, &p->n_env_pass);
        size_t i = 0;
        for (const cJSON *it = x->child; it; it = it->next, i++) {
            kpi(buf, "environment.pass", i);
            if (!cJSON_IsString(it) || !valid_env_name(it->valuestring))
                return fail(c, buf, "must be a variable name");
            if (strv_has(p->env_pass, p->n_env_pass, it->valuestring))
                return fail(c, buf, "\"%s\" is listed twice", it->valuestring);
            if (push_str(&p->env_pass, &p->n_env_pass, it->valuestring) < 0)
                return nomem(c);
        }
    }
    for (size_t i = 0; i < p->n_env_pass; i++)
        if (strv_has(p->env_set.keys, p->env_set.n, p->env_pass[i]))
            return fail(c, kpi(buf, "environment.pass", i), "\"%s\" is also in environment.set", p->env_pass[i]);
    return 0;
}

static int parse_require(const struct ctx *c, const cJSON *arr, struct mini_profile *p)
{
    char buf[KP_MAX];
    if (!cJSON_IsArray(arr))
        return fail(c, "require", "must be an array of feature names");
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        kpi(buf, "require", i);
        if (!cJSON_IsString(it))
            return fail(c, buf, "must be a feature name");
        unsigned bit = mini_feature_from_name(it->valuestring);
        if (!bit)
            return fail(c, buf,
                        "unknown feature \"%s\" (known: user_ns, pid_ns, net_ns, mount_ns, ipc_ns, "
                        "uts_ns, cgroup_ns, seccomp, landlock, cgroups, overlay)",
                        it->valuestring);
        if (p->require & bit)
            return fail(c, buf, "\"%s\" is listed twice", it->valuestring);
        if ((bit & ALL_NS) && !(p->namespaces & bit))
            return fail(c, buf, "\"%s\" is required but that namespace is turned off in namespaces", it->valuestring);
        if (bit == MINI_FEAT_OVERLAY && !p->overlay_root)
            return fail(c, buf, "\"overlay\" is required but filesystem.overlay_root is false");
        p->require |= bit;
    }
    return 0;
}

/* ------------------------------------------------------------ profile */

int mini_profile_add_hide(struct mini_profile *p, const char *path)
{
    if (strv_has(p->hide, p->n_hide, path))
        return 0;
    return push_str(&p->hide, &p->n_hide, path);
}

void mini_profile_free(struct mini_profile *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->description);
    free(p->hostname);
    free(p->image);
    free_binds(p);
    free_strv(&p->hide, &p->n_hide);
    free_tmpfs(p);
    free_strv(&p->seccomp.allow, &p->seccomp.n_allow);
    free_strv(&p->seccomp.deny, &p->seccomp.n_deny);
    free(p->seccomp.socket_families);
    mini_env_free(&p->env_set);
    free_strv(&p->env_pass, &p->n_env_pass);
    free_strv(&p->net_allow, &p->n_net_allow);
    free_strv(&p->net_deny, &p->n_net_deny);
    free_strv(&p->net_resolve, &p->n_net_resolve);
    free(p);
}

static void profile_freep(struct mini_profile **p) { mini_profile_free(*p); }
#define _cleanup_profile_ _cleanup_(profile_freep)

/* The built-in defaults: profiles/strict.json without its name, description
 * and require (tests/unit/test_profile.c checks that the two agree). */
static struct mini_profile *profile_defaults(void)
{
    _cleanup_profile_ struct mini_profile *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->namespaces = ALL_NS;
    p->network = MINI_NET_NONE;
    p->workspace_writable = true;
    p->overlay_root = false;
    p->limits = default_limits;
    p->seccomp.default_action = MINI_SECCOMP_ALLOW;
    p->seccomp.errno_value = EPERM;
    p->seccomp.deny_tty_injection = true;
    p->seccomp.deny_namespace_clone = true;
    if (!(p->description = strdup("")) || !(p->hostname = strdup(STRICT_HOSTNAME)))
        return NULL;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(default_binds); i++)
        if (push_bind(p, default_binds[i], false, true) < 0)
            return NULL;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(default_hide); i++)
        if (push_str(&p->hide, &p->n_hide, default_hide[i]) < 0)
            return NULL;
    if (push_tmpfs(p, "/tmp", DEFAULT_TMP_MB * MIB, 01777) < 0)
        return NULL;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(default_deny); i++)
        if (push_str(&p->seccomp.deny, &p->seccomp.n_deny, default_deny[i]) < 0)
            return NULL;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(default_families); i++)
        if (push_family(&p->seccomp, default_families[i]) < 0)
            return NULL;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(default_env); i++)
        if (mini_env_add(&p->env_set, default_env[i][0], default_env[i][1]) < 0)
            return NULL;
    return TAKE_PTR(p);
}

/* The file's base name without ".json"; "custom" without an origin. */
static char *default_name(const char *origin)
{
    if (!origin)
        return strdup("custom");
    const char *base = strrchr(origin, '/');
    base = base ? base + 1 : origin;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    return len ? strndup(base, len) : strdup("custom");
}

static int parse_profile(const struct ctx *c, const cJSON *obj, struct mini_profile *p)
{
    static const char *const keys[] = {
        "name",   "description", "namespaces",  "network", "hostname", "filesystem",
        "limits", "seccomp",     "environment", "require", "image",
    };
    const cJSON *x;
    bool bad, net_given = false;
    if (!cJSON_IsObject(obj))
        return c->origin ? mini_err_set(c->e, c->code, "%s: a profile must be a JSON object", c->origin)
                         : mini_err_set(c->e, c->code, "a profile must be a JSON object");
    if (check_object(c, obj, "", keys, MINI_ARRAY_SIZE(keys)) < 0)
        return -1;

    const char *name = get_str(c, obj, "", "name", &bad);
    if (bad)
        return -1;
    if (name && !valid_text(name, 64))
        return fail(c, "name", "must be 1 to 64 characters without control characters");
    if (!(p->name = name ? strdup(name) : default_name(c->origin)))
        return nomem(c);
    const char *desc = get_str(c, obj, "", "description", &bad);
    if (bad)
        return -1;
    if (desc) {
        free(p->description);
        if (!(p->description = strdup(desc)))
            return nomem(c);
    }

    if ((x = cJSON_GetObjectItemCaseSensitive(obj, "namespaces")) && parse_namespaces(c, x, p, &net_given) < 0)
        return -1;
    x = cJSON_GetObjectItemCaseSensitive(obj, "network");
    if (x) {
        if (parse_network(c, x, p) < 0)
            return -1;
        bool want_ns = p->network != MINI_NET_HOST;
        if (!net_given)
            p->namespaces = want_ns ? p->namespaces | MINI_FEAT_NET_NS : p->namespaces & ~MINI_FEAT_NET_NS;
        else if (want_ns != !!(p->namespaces & MINI_FEAT_NET_NS))
            return fail(c, "network",
                        want_ns ? "\"none\" and an allowlist require namespaces.net to be true"
                                : "\"host\" requires namespaces.net to be false");
    } else {
        p->network = (p->namespaces & MINI_FEAT_NET_NS) ? MINI_NET_NONE : MINI_NET_HOST;
    }

    const char *image = get_str(c, obj, "", "image", &bad);
    if (bad)
        return -1;
    if (image && !mini_image_name_valid(image) && !(strlen(image) >= 12 && strlen(image) <= 71))
        return fail(c, "image", "must be an image name (NAME[:TAG]) or id");
    free(p->image);
    if (!(p->image = image ? strdup(image) : NULL) && image)
        return nomem(c);

    const char *host = get_str(c, obj, "", "hostname", &bad);
    if (bad)
        return -1;
    if (host && !(p->namespaces & MINI_FEAT_UTS_NS))
        return fail(c, "hostname", "needs namespaces.uts to be true");
    if (host && !valid_hostname(host))
        return fail(c, "hostname", "must be a valid host name of at most 64 characters");
    free(p->hostname);
    p->hostname = NULL;
    if ((p->namespaces & MINI_FEAT_UTS_NS) && !(p->hostname = strdup(host ? host : STRICT_HOSTNAME)))
        return nomem(c);

    if ((x = cJSON_GetObjectItemCaseSensitive(obj, "filesystem")) && parse_filesystem(c, x, p) < 0)
        return -1;
    if ((x = cJSON_GetObjectItemCaseSensitive(obj, "limits")) && parse_limits(c, x, "limits", &p->limits) < 0)
        return -1;
    if ((x = cJSON_GetObjectItemCaseSensitive(obj, "seccomp")) && parse_seccomp(c, x, &p->seccomp) < 0)
        return -1;
    if ((x = cJSON_GetObjectItemCaseSensitive(obj, "environment")) && parse_environment(c, x, p) < 0)
        return -1;
    if ((x = cJSON_GetObjectItemCaseSensitive(obj, "require")) && parse_require(c, x, p) < 0)
        return -1;
    return 0;
}

struct mini_profile *mini_profile_from_json(const cJSON *obj, const char *origin, struct mini_err *e)
{
    struct ctx c = { origin, MINI_E_PROFILE_INVALID, e };
    _cleanup_profile_ struct mini_profile *p = profile_defaults();
    if (!p) {
        nomem(&c);
        return NULL;
    }
    if (parse_profile(&c, obj, p) < 0)
        return NULL;
    return TAKE_PTR(p);
}

struct mini_profile *mini_profile_load_file(const char *path, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(path, &b, PROFILE_FILE_MAX, e) < 0)
        return NULL;
    cJSON *obj = mini_json_parse_object(b.data, b.len, e);
    if (!obj) {
        if (e && e->code == MINI_E_BAD_REQUEST)
            e->code = MINI_E_PROFILE_INVALID;
        mini_err_prefix(e, "%s", path);
        return NULL;
    }
    struct mini_profile *p = mini_profile_from_json(obj, path, e);
    cJSON_Delete(obj);
    return p;
}

struct mini_profile *mini_profile_load_builtin(const char *dir, const char *name, struct mini_err *e)
{
    size_t len = strlen(name);
    if (len == 0 || len > 64 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != len) {
        mini_err_set(e, MINI_E_PROFILE_INVALID,
                     "invalid profile name \"%.64s\" (expected [a-z0-9_-], 1 to 64 characters)", name);
        return NULL;
    }
    char *built;
    if (asprintf(&built, "%s/%s.json", dir, name) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    _cleanup_free_ char *path = built;
    struct mini_err err;
    mini_err_clear(&err);
    struct mini_profile *p = mini_profile_load_file(path, &err);
    if (!p && err.code == MINI_E_IO && err.sys_errno == ENOENT)
        mini_err_set(e, MINI_E_PROFILE_INVALID, "no built-in profile \"%s\" (looked for %s)", name, path);
    else if (!p && e)
        *e = err;
    return p;
}

/* ------------------------------------------------------------- to_json */

/* cJSON_AddItemToArray() that owns `item` even on failure (arr may be NULL). */
static bool push(cJSON *arr, cJSON *item)
{
    if (item && cJSON_AddItemToArray(arr, item))
        return true;
    cJSON_Delete(item);
    return false;
}

static bool add_strv(cJSON *obj, const char *key, char **v, size_t n)
{
    cJSON *a = cJSON_AddArrayToObject(obj, key);
    bool ok = a != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = push(a, cJSON_CreateString(v[i]));
    return ok;
}

static bool add_filesystem(cJSON *o, const struct mini_profile *p)
{
    cJSON *fs = cJSON_AddObjectToObject(o, "filesystem");
    cJSON *binds = cJSON_AddArrayToObject(fs, "binds");
    bool ok = binds && add_strv(fs, "hide", p->hide, p->n_hide);
    for (size_t i = 0; ok && i < p->n_binds; i++) {
        const struct mini_bind *b = &p->binds[i];
        if (!b->writable && b->optional) {
            ok = push(binds, cJSON_CreateString(b->path));
            continue;
        }
        cJSON *bo = cJSON_CreateObject();
        ok = push(binds, bo) && cJSON_AddStringToObject(bo, "path", b->path) &&
            cJSON_AddBoolToObject(bo, "writable", b->writable) && cJSON_AddBoolToObject(bo, "optional", b->optional);
    }
    cJSON *tmpfs = ok ? cJSON_AddArrayToObject(fs, "tmpfs") : NULL;
    ok = tmpfs != NULL;
    for (size_t i = 0; ok && i < p->n_tmpfs; i++) {
        char mode[8];
        snprintf(mode, sizeof mode, "%o", p->tmpfs[i].mode & 07777);
        cJSON *to = cJSON_CreateObject();
        ok = push(tmpfs, to) && cJSON_AddStringToObject(to, "path", p->tmpfs[i].path) &&
            cJSON_AddNumberToObject(to, "size_mb", (double)(p->tmpfs[i].size_bytes / MIB)) &&
            cJSON_AddStringToObject(to, "mode", mode);
    }
    return ok && cJSON_AddBoolToObject(fs, "workspace_writable", p->workspace_writable) &&
        cJSON_AddBoolToObject(fs, "overlay_root", p->overlay_root);
}

static bool add_limits(cJSON *o, const struct mini_limits *l)
{
    cJSON *lo = cJSON_AddObjectToObject(o, "limits");
    bool ok = cJSON_AddNumberToObject(lo, "timeout_s", l->timeout_s) != NULL;
    for (size_t i = 0; ok && i < MINI_ARRAY_SIZE(limit_keys); i++) {
        const struct limit_key *k = &limit_keys[i];
        ok = cJSON_AddNumberToObject(lo, k->key, (double)(*limit_field((struct mini_limits *)l, k) / k->unit));
    }
    return ok;
}

static bool add_seccomp(cJSON *o, const struct mini_seccomp_policy *s)
{
    cJSON *so = cJSON_AddObjectToObject(o, "seccomp");
    const char *en = NULL;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(errnos); i++)
        if (errnos[i].value == s->errno_value)
            en = errnos[i].name;
    bool ok = cJSON_AddStringToObject(so, "default_action", default_actions[s->default_action]) &&
        (s->default_action == MINI_SECCOMP_ALLOW || add_strv(so, "allow", s->allow, s->n_allow)) &&
        add_strv(so, "deny", s->deny, s->n_deny) &&
        (en ? cJSON_AddStringToObject(so, "errno", en) != NULL
            : cJSON_AddNumberToObject(so, "errno", s->errno_value) != NULL) &&
        cJSON_AddBoolToObject(so, "deny_tty_injection", s->deny_tty_injection) &&
        cJSON_AddBoolToObject(so, "deny_namespace_clone", s->deny_namespace_clone);
    cJSON *fams = ok ? cJSON_AddArrayToObject(so, "socket_families") : NULL;
    ok = fams != NULL;
    for (size_t i = 0; ok && i < s->n_socket_families; i++) {
        const char *name = family_name(s->socket_families[i]);
        ok = push(fams, name ? cJSON_CreateString(name) : cJSON_CreateNumber(s->socket_families[i]));
    }
    return ok;
}

cJSON *mini_profile_to_json(const struct mini_profile *p)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = cJSON_AddStringToObject(o, "name", p->name) &&
        cJSON_AddStringToObject(o, "description", p->description ? p->description : "");
    cJSON *ns = ok ? cJSON_AddObjectToObject(o, "namespaces") : NULL;
    ok = ns != NULL;
    for (size_t i = 0; ok && i < MINI_ARRAY_SIZE(ns_keys); i++)
        ok = cJSON_AddBoolToObject(ns, ns_keys[i].key, (p->namespaces & ns_keys[i].feat) != 0);
    if (ok && p->network == MINI_NET_ALLOW) {
        cJSON *net = cJSON_AddObjectToObject(o, "network");
        ok = net && add_strv(net, "allow", p->net_allow, p->n_net_allow) &&
            add_strv(net, "deny", p->net_deny, p->n_net_deny) &&
            add_strv(net, "resolve", p->net_resolve, p->n_net_resolve);
    } else {
        ok = ok && cJSON_AddStringToObject(o, "network", p->network == MINI_NET_HOST ? "host" : "none");
    }
    ok = ok &&
        (!p->hostname || cJSON_AddStringToObject(o, "hostname", p->hostname)) &&
        (!p->image || cJSON_AddStringToObject(o, "image", p->image)) && add_filesystem(o, p) &&
        add_limits(o, &p->limits) && add_seccomp(o, &p->seccomp);
    cJSON *env = ok ? cJSON_AddObjectToObject(o, "environment") : NULL;
    cJSON *set = cJSON_AddObjectToObject(env, "set");
    ok = set != NULL;
    for (size_t i = 0; ok && i < p->env_set.n; i++)
        ok = cJSON_AddStringToObject(set, p->env_set.keys[i], p->env_set.values[i]);
    ok = ok && add_strv(env, "pass", p->env_pass, p->n_env_pass);
    cJSON *req = ok ? cJSON_AddArrayToObject(o, "require") : NULL;
    ok = req != NULL;
    for (unsigned i = 0; ok && i < MINI_FEAT_COUNT; i++)
        if (p->require & (1u << i))
            ok = push(req, cJSON_CreateString(feature_names[i]));
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* ----------------------------------------------------------------- dup */

static int dup_strv(char ***dst, size_t *n, char **src, size_t src_n)
{
    *dst = NULL;
    *n = 0;
    for (size_t i = 0; i < src_n; i++)
        if (push_str(dst, n, src[i]) < 0)
            return -1;
    return 0;
}

struct mini_profile *mini_profile_dup(const struct mini_profile *p)
{
    _cleanup_profile_ struct mini_profile *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->namespaces = p->namespaces;
    d->network = p->network;
    d->workspace_writable = p->workspace_writable;
    d->overlay_root = p->overlay_root;
    d->limits = p->limits;
    d->require = p->require;
    d->seccomp.default_action = p->seccomp.default_action;
    d->seccomp.errno_value = p->seccomp.errno_value;
    d->seccomp.deny_tty_injection = p->seccomp.deny_tty_injection;
    d->seccomp.deny_namespace_clone = p->seccomp.deny_namespace_clone;
    if ((p->name && !(d->name = strdup(p->name))) || (p->description && !(d->description = strdup(p->description))) ||
        (p->hostname && !(d->hostname = strdup(p->hostname))) || (p->image && !(d->image = strdup(p->image))))
        return NULL;
    for (size_t i = 0; i < p->n_binds; i++)
        if (push_bind(d, p->binds[i].path, p->binds[i].writable, p->binds[i].optional) < 0)
            return NULL;
    for (size_t i = 0; i < p->n_tmpfs; i++)
        if (push_tmpfs(d, p->tmpfs[i].path, p->tmpfs[i].size_bytes, p->tmpfs[i].mode) < 0)
            return NULL;
    for (size_t i = 0; i < p->seccomp.n_socket_families; i++)
        if (push_family(&d->seccomp, p->seccomp.socket_families[i]) < 0)
            return NULL;
    for (size_t i = 0; i < p->env_set.n; i++)
        if (mini_env_add(&d->env_set, p->env_set.keys[i], p->env_set.values[i]) < 0)
            return NULL;
    if (dup_strv(&d->hide, &d->n_hide, p->hide, p->n_hide) < 0 ||
        dup_strv(&d->seccomp.allow, &d->seccomp.n_allow, p->seccomp.allow, p->seccomp.n_allow) < 0 ||
        dup_strv(&d->seccomp.deny, &d->seccomp.n_deny, p->seccomp.deny, p->seccomp.n_deny) < 0 ||
        dup_strv(&d->net_allow, &d->n_net_allow, p->net_allow, p->n_net_allow) < 0 ||
        dup_strv(&d->net_deny, &d->n_net_deny, p->net_deny, p->n_net_deny) < 0 ||
        dup_strv(&d->net_resolve, &d->n_net_resolve, p->net_resolve, p->n_net_resolve) < 0 ||
        dup_strv(&d->env_pass, &d->n_env_pass, p->env_pass, p->n_env_pass) < 0)
        return NULL;
    return TAKE_PTR(d);
}

/* ----------------------------------------------------------- overrides */

static int loosens(const struct ctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int loosens(const struct ctx *c, const char *path, const char *fmt, ...)
{
    char msg[MINI_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mini_err_set(c->e, MINI_E_LIMIT, "%s: %s", path, msg);
}

static int override_limits(const struct ctx *c, const cJSON *v, struct mini_limits *l)
{
    const char *path = "overrides.limits";
    char buf[KP_MAX];
    struct mini_limits n = *l;
    if (parse_limits(c, v, path, &n) < 0)
        return -1;
    if (n.timeout_s > l->timeout_s)
        return loosens(c, kp(buf, path, "timeout_s"), "%g would loosen the profile's %g", n.timeout_s, l->timeout_s);
    for (size_t i = 0; i < MINI_ARRAY_SIZE(limit_keys); i++) {
        const struct limit_key *k = &limit_keys[i];
        uint64_t old = *limit_field(l, k), want = *limit_field(&n, k);
        /* 0 means unlimited: anything tightens it, and it loosens anything. */
        if (old != 0 && (want == 0 || want > old))
            return loosens(c, kp(buf, path, k->key), "%llu%s would loosen the profile's %llu",
                           (unsigned long long)(want / k->unit), want ? "" : " (unlimited)",
                           (unsigned long long)(old / k->unit));
    }
    *l = n;
    return 0;
}

static int override_filesystem(const struct ctx *c, const cJSON *v, struct mini_profile *p)
{
    const char *path = "overrides.filesystem";
    char buf[KP_MAX];
    if (!cJSON_IsObject(v))
        return fail(c, path, "must be an object");
    for (const cJSON *it = v->child; it; it = it->next) {
        kp(buf, path, it->string);
        if (strcmp(it->string, "hide") == 0) {
            if (parse_hide(c, it, buf, p, true) < 0)
                return -1;
        } else if (strcmp(it->string, "workspace_writable") == 0) {
            if (!cJSON_IsBool(it))
                return fail(c, buf, "must be true or false");
            if (cJSON_IsTrue(it) && !p->workspace_writable)
                return loosens(c, buf, "true would loosen the profile's false");
            p->workspace_writable = cJSON_IsTrue(it);
        } else if (strcmp(it->string, "binds") == 0 || strcmp(it->string, "tmpfs") == 0 ||
                   strcmp(it->string, "overlay_root") == 0) {
            return fail(c, buf, "cannot be overridden");
        } else {
            static const char *const known[] = { "hide", "workspace_writable", "binds", "tmpfs", "overlay_root" };
            return unknown_key(c, buf, it->string, known, MINI_ARRAY_SIZE(known));
        }
    }
    return 0;
}

static int override_seccomp(const struct ctx *c, const cJSON *v, struct mini_seccomp_policy *s)
{
    static const char *const fixed[] = {
        "default_action", "allow", "errno", "deny_tty_injection", "deny_namespace_clone", "socket_families",
    };
    const char *path = "overrides.seccomp";
    char buf[KP_MAX];
    if (!cJSON_IsObject(v))
        return fail(c, path, "must be an object");
    for (const cJSON *it = v->child; it; it = it->next) {
        kp(buf, path, it->string);
        if (strcmp(it->string, "deny") == 0) {
            if (parse_syscalls(c, it, buf, &s->deny, &s->n_deny, true) < 0)
                return -1;
        } else if (in_list(it->string, fixed, MINI_ARRAY_SIZE(fixed))) {
            return fail(c, buf, "cannot be overridden");
        } else {
            static const char *const known[] = { "deny" };
            return unknown_key(c, buf, it->string, known, MINI_ARRAY_SIZE(known));
        }
    }
    return 0;
}

int mini_profile_allow_hosts(struct mini_profile *p, char *const *hosts, size_t n, struct mini_err *e)
{
    struct ctx c = { NULL, MINI_E_BAD_REQUEST, e };
    if (!n)
        return 0;
    if (p->network == MINI_NET_HOST)
        return fail(&c, "allow_hosts",
                    "the profile's network is \"host\", which has no allowlist to add to (override the network to "
                    "\"none\" first: mini-sandbox run --network none --allow-host ...)");
    cJSON *arr = cJSON_CreateStringArray((const char *const *)hosts, (int)n);
    if (!arr)
        return nomem(&c);
    char **allow = NULL;
    size_t n_allow = 0;
    int r = dup_strv(&allow, &n_allow, p->net_allow, p->n_net_allow) < 0
        ? nomem(&c)
        : parse_net_entries(&c, arr, "allow_hosts", &allow, &n_allow, p->n_net_deny);
    cJSON_Delete(arr);
    if (r < 0) {
        free_strv(&allow, &n_allow);
        return -1;
    }
    free_strv(&p->net_allow, &p->n_net_allow);
    p->net_allow = allow;
    p->n_net_allow = n_allow;
    p->network = MINI_NET_ALLOW;
    p->namespaces |= MINI_FEAT_NET_NS;
    return 0;
}

int mini_profile_apply_overrides(struct mini_profile *p, const cJSON *ov, struct mini_err *e)
{
    static const char *const fixed[] = { "name",        "description", "namespaces", "hostname",
                                         "environment", "require",     "image" };
    struct ctx c = { NULL, MINI_E_BAD_REQUEST, e };
    char buf[KP_MAX];
    if (!ov)
        return 0;
    if (!cJSON_IsObject(ov))
        return fail(&c, "overrides", "must be an object");
    /* Work on a copy so that a failure leaves the profile as it was. */
    _cleanup_profile_ struct mini_profile *n = mini_profile_dup(p);
    if (!n)
        return nomem(&c);
    for (const cJSON *it = ov->child; it; it = it->next) {
        kp(buf, "overrides", it->string);
        if (strcmp(it->string, "limits") == 0) {
            if (override_limits(&c, it, &n->limits) < 0)
                return -1;
        } else if (strcmp(it->string, "network") == 0) {
            if (!cJSON_IsString(it) || (strcmp(it->valuestring, "none") != 0 && strcmp(it->valuestring, "host") != 0))
                return fail(&c, buf, "must be \"none\" or \"host\"");
            if (strcmp(it->valuestring, "host") == 0 && n->network != MINI_NET_HOST)
                return loosens(&c, buf, "\"host\" would loosen the profile's %s",
                               n->network == MINI_NET_ALLOW ? "allowlist" : "\"none\"");
            if (strcmp(it->valuestring, "none") == 0) {
                n->network = MINI_NET_NONE;
                n->namespaces |= MINI_FEAT_NET_NS;
                free_strv(&n->net_allow, &n->n_net_allow);
                free_strv(&n->net_deny, &n->n_net_deny);
                free_strv(&n->net_resolve, &n->n_net_resolve);
            }
        } else if (strcmp(it->string, "filesystem") == 0) {
            if (override_filesystem(&c, it, n) < 0)
                return -1;
        } else if (strcmp(it->string, "seccomp") == 0) {
            if (override_seccomp(&c, it, &n->seccomp) < 0)
                return -1;
        } else if (in_list(it->string, fixed, MINI_ARRAY_SIZE(fixed))) {
            return fail(&c, buf, "cannot be overridden");
        } else {
            static const char *const known[] = { "limits", "network", "filesystem", "seccomp" };
            return unknown_key(&c, buf, it->string, known, MINI_ARRAY_SIZE(known));
        }
    }
    struct mini_profile old = *p;
    *p = *n;
    *n = old;
    return 0;
}

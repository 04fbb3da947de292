/* The profile schema (profile_schema.h): the table of keys, the built-in
 * defaults (profiles/strict.json's values: tests/unit/test_profile.c checks
 * that the two agree), what is particular to some keys, and the key
 * reference docs/profiles.md shows. */
#include "profile_schema.h"
#include "mini/cleanup.h"
#include "mini/str.h"
#include "image.h"
#include "netpolicy.h"

#include <errno.h>
#include <limits.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define TIMEOUT_MAX_S 604800.0    /* a week */
#define PIDS_MAX 4194304ull       /* PID_MAX_LIMIT */
#define OPEN_FILES_MAX 1048576ull /* the kernel's default nr_open */
/* The kept output travels in one `exit` frame; escaped as \u00XX it can
 * grow sixfold, so keep it well below MINI_FRAME_MAX. */
#define OUTPUT_BYTES_MAX (MINI_FRAME_MAX / 8)
#define STRICT_HOSTNAME "mini-sandbox"
#define DEFAULT_TMP_MB 128
#define ALL_NS                                                                                         \
    (MINI_FEAT_USER_NS | MINI_FEAT_PID_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_NET_NS | MINI_FEAT_IPC_NS | \
     MINI_FEAT_UTS_NS | MINI_FEAT_CGROUP_NS)

_Static_assert(sizeof(enum mini_seccomp_default) == sizeof(int), "PK_ENUM stores an int");

/* ------------------------------------------------------------- values */

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

static const struct mini_prof_pkey_name errnos[] = {
    { "EPERM", EPERM },
    { "ENOSYS", ENOSYS },
    { "EACCES", EACCES },
};

static const struct mini_prof_pkey_name default_actions[] = {
    { "allow", MINI_SECCOMP_ALLOW },
    { "errno", MINI_SECCOMP_ERRNO },
    { "kill", MINI_SECCOMP_KILL },
};

static const char *const default_binds[] = {
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", NULL,
};
static const char *const default_hide[] = {
    "/etc/ssh", "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssl/private", NULL,
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
    NULL,
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

/* ------------------------------------------------------------ checks */

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

/* PK_STRV items. */

/* A syscall name that libseccomp knows for the native architecture. */
static char *syscall_item(const struct pctx *c, const cJSON *v, const char *path)
{
    if (!cJSON_IsString(v)) {
        mini_prof_pfail(c, path, "must be a syscall name");
        return NULL;
    }
    int nr = seccomp_syscall_resolve_name(v->valuestring);
    if (nr == __NR_SCMP_ERROR) {
        mini_prof_pfail(c, path, "unknown syscall \"%s\"", v->valuestring);
        return NULL;
    }
    if (nr < 0) {
        mini_prof_pfail(c, path, "syscall \"%s\" does not exist on this architecture", v->valuestring);
        return NULL;
    }
    char *s = strdup(v->valuestring);
    if (!s)
        mini_prof_pnomem(c);
    return s;
}

static char *hide_item(const struct pctx *c, const cJSON *v, const char *path)
{
    return mini_prof_get_path(c, v, path, false);
}

static char *env_name_item(const struct pctx *c, const cJSON *v, const char *path)
{
    if (!cJSON_IsString(v) || !valid_env_name(v->valuestring)) {
        mini_prof_pfail(c, path, "must be a variable name");
        return NULL;
    }
    char *s = strdup(v->valuestring);
    if (!s)
        mini_prof_pnomem(c);
    return s;
}

/* --------------------------------------------------------- top level */

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

static int parse_name(const struct pctx *c, const cJSON *v, const char *path, struct mini_profile *p)
{
    if (v && !cJSON_IsString(v))
        return mini_prof_pfail(c, path, "must be a string");
    const char *name = v ? v->valuestring : NULL;
    if (name && !valid_text(name, 64))
        return mini_prof_pfail(c, path, "must be 1 to 64 characters without control characters");
    free(p->name);
    if (!(p->name = name ? strdup(name) : default_name(c->origin)))
        return mini_prof_pnomem(c);
    return 0;
}

static int check_namespaces(const struct pctx *c, struct mini_profile *p)
{
    /* spawn and container/ build the root inside a mount namespace. */
    if (!(p->namespaces & MINI_FEAT_MOUNT_NS))
        return mini_prof_pfail(c, "namespaces.mount",
                               "must be true (the sandbox's filesystem view needs a mount namespace)");
    return 0;
}

/* Allowlist entries at `path` appended to *v (each checked by the rule
 * parser); at most MINI_NET_ENTRIES_MAX in all. */
static int parse_net_entries(const struct pctx *c, const cJSON *arr, const char *path, char ***v, size_t *n,
                             size_t others)
{
    char buf[KP_MAX];
    if (!cJSON_IsArray(arr))
        return mini_prof_pfail(c, path, "must be an array of strings");
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        struct mini_netrule r;
        const char *why;
        mini_prof_kpi(buf, path, i);
        if (!cJSON_IsString(it))
            return mini_prof_pfail(c, buf, "must be a string");
        if (mini_netrule_parse(it->valuestring, &r, &why) < 0)
            return mini_prof_pfail(c, buf, "\"%.80s\": %s", it->valuestring, why);
        if (*n + others >= MINI_NET_ENTRIES_MAX)
            return mini_prof_pfail(c, path, "more than %d allow and deny entries", MINI_NET_ENTRIES_MAX);
        if (!mini_prof_strv_has(*v, *n, it->valuestring) && mini_prof_push_str(v, n, it->valuestring) < 0)
            return mini_prof_pnomem(c);
    }
    return 0;
}

/* network.resolve: "NAME:ADDR" pins, each checked as the daemon's --resolve. */
static int parse_net_pins(const struct pctx *c, const cJSON *arr, struct mini_profile *p)
{
    char buf[KP_MAX];
    struct mini_net_pins pins = { 0 };
    int rc = 0;
    if (!cJSON_IsArray(arr))
        return mini_prof_pfail(c, "network.resolve", "must be an array of \"NAME:ADDRESS\" strings");
    size_t i = 0;
    for (const cJSON *it = arr->child; it && rc == 0; it = it->next, i++) {
        const char *why;
        mini_prof_kpi(buf, "network.resolve", i);
        if (!cJSON_IsString(it))
            rc = mini_prof_pfail(c, buf, "must be a string");
        else if (i >= MINI_NET_ENTRIES_MAX)
            rc = mini_prof_pfail(c, "network.resolve", "more than %d entries", MINI_NET_ENTRIES_MAX);
        else if (mini_net_pins_add(&pins, it->valuestring, &why) < 0)
            rc = mini_prof_pfail(c, buf, "\"%.80s\": %s", it->valuestring, why);
        else if (mini_prof_push_str(&p->net_resolve, &p->n_net_resolve, it->valuestring) < 0)
            rc = mini_prof_pnomem(c);
    }
    mini_net_pins_free(&pins);
    return rc;
}

static int parse_network_value(const struct pctx *c, const cJSON *v, struct mini_profile *p)
{
    mini_prof_free_strv(&p->net_allow, &p->n_net_allow);
    mini_prof_free_strv(&p->net_deny, &p->n_net_deny);
    mini_prof_free_strv(&p->net_resolve, &p->n_net_resolve);
    if (cJSON_IsObject(v)) {
        const cJSON *allow = cJSON_GetObjectItemCaseSensitive(v, "allow");
        const cJSON *deny = cJSON_GetObjectItemCaseSensitive(v, "deny");
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(v, "resolve");
        if (mini_prof_check_keys(c, v, "network", "network") < 0)
            return -1;
        if (!allow)
            return mini_prof_pfail(c, "network.allow", "is required (an array of entries such as \"pypi.org\")");
        if (parse_net_entries(c, allow, "network.allow", &p->net_allow, &p->n_net_allow, 0) < 0)
            return -1;
        if (deny && parse_net_entries(c, deny, "network.deny", &p->net_deny, &p->n_net_deny, p->n_net_allow) < 0)
            return -1;
        if (!p->n_net_allow)
            return mini_prof_pfail(c, "network.allow", "must not be empty (use \"none\" for no network)");
        if (res && parse_net_pins(c, res, p) < 0)
            return -1;
        p->network = MINI_NET_ALLOW;
    } else if (cJSON_IsString(v) && strcmp(v->valuestring, "none") == 0) {
        p->network = MINI_NET_NONE;
    } else if (cJSON_IsString(v) && strcmp(v->valuestring, "host") == 0) {
        p->network = MINI_NET_HOST;
    } else {
        return mini_prof_pfail(c, "network",
                               "must be \"none\", \"host\" or an object {\"allow\": [...], \"deny\": [...]}");
    }
    return 0;
}

/* The network, and namespaces.net: given or not, the two must agree. */
static int parse_network(const struct pctx *c, const cJSON *v, const char *path, struct mini_profile *p)
{
    if (!v) {
        p->network = (p->namespaces & MINI_FEAT_NET_NS) ? MINI_NET_NONE : MINI_NET_HOST;
        return 0;
    }
    if (parse_network_value(c, v, p) < 0)
        return -1;
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(c->top, "namespaces");
    bool net_given = cJSON_GetObjectItemCaseSensitive(ns, "net") != NULL;
    bool want_ns = p->network != MINI_NET_HOST;
    if (!net_given)
        p->namespaces = want_ns ? p->namespaces | MINI_FEAT_NET_NS : p->namespaces & ~MINI_FEAT_NET_NS;
    else if (want_ns != !!(p->namespaces & MINI_FEAT_NET_NS))
        return mini_prof_pfail(c, "network",
                               want_ns ? "\"none\" and an allowlist require namespaces.net to be true"
                                       : "\"host\" requires namespaces.net to be false");
    return 0;
}

static bool emit_network(cJSON *o, const char *key, const struct mini_profile *p)
{
    if (p->network == MINI_NET_ALLOW) {
        cJSON *net = cJSON_AddObjectToObject(o, key);
        return net && mini_prof_add_strv(net, "allow", p->net_allow, p->n_net_allow) &&
            mini_prof_add_strv(net, "deny", p->net_deny, p->n_net_deny) &&
            mini_prof_add_strv(net, "resolve", p->net_resolve, p->n_net_resolve);
    }
    return cJSON_AddStringToObject(o, key, p->network == MINI_NET_HOST ? "host" : "none") != NULL;
}

/* overrides.network: "none" always, "host" only where it is already. */
static int override_network(const struct pctx *c, const cJSON *it, const char *path, struct mini_profile *n)
{
    if (!cJSON_IsString(it) || (strcmp(it->valuestring, "none") != 0 && strcmp(it->valuestring, "host") != 0))
        return mini_prof_pfail(c, path, "must be \"none\" or \"host\"");
    if (strcmp(it->valuestring, "host") == 0 && n->network != MINI_NET_HOST)
        return mini_prof_ploosens(c, path, "\"host\" would loosen the profile's %s",
                                  n->network == MINI_NET_ALLOW ? "allowlist" : "\"none\"");
    if (strcmp(it->valuestring, "none") == 0) {
        n->network = MINI_NET_NONE;
        n->namespaces |= MINI_FEAT_NET_NS;
        mini_prof_free_strv(&n->net_allow, &n->n_net_allow);
        mini_prof_free_strv(&n->net_deny, &n->n_net_deny);
        mini_prof_free_strv(&n->net_resolve, &n->n_net_resolve);
    }
    return 0;
}

int mini_profile_allow_hosts(struct mini_profile *p, char *const *hosts, size_t n, struct mini_err *e)
{
    struct pctx c = { NULL, MINI_E_BAD_REQUEST, e, NULL };
    if (!n)
        return 0;
    if (p->network == MINI_NET_HOST)
        return mini_prof_pfail(
            &c, "allow_hosts",
            "the profile's network is \"host\", which has no allowlist to add to (override the network to "
            "\"none\" first: mini-sandbox run --network none --allow-host ...)");
    cJSON *arr = cJSON_CreateStringArray((const char *const *)hosts, (int)n);
    if (!arr)
        return mini_prof_pnomem(&c);
    char **allow = NULL;
    size_t n_allow = 0;
    int r = 0;
    for (size_t i = 0; r == 0 && i < p->n_net_allow; i++)
        if (mini_prof_push_str(&allow, &n_allow, p->net_allow[i]) < 0)
            r = mini_prof_pnomem(&c);
    if (r == 0)
        r = parse_net_entries(&c, arr, "allow_hosts", &allow, &n_allow, p->n_net_deny);
    cJSON_Delete(arr);
    if (r < 0) {
        mini_prof_free_strv(&allow, &n_allow);
        return -1;
    }
    mini_prof_free_strv(&p->net_allow, &p->n_net_allow);
    p->net_allow = allow;
    p->n_net_allow = n_allow;
    p->network = MINI_NET_ALLOW;
    p->namespaces |= MINI_FEAT_NET_NS;
    return 0;
}

static int parse_hostname(const struct pctx *c, const cJSON *v, const char *path, struct mini_profile *p)
{
    if (v && !cJSON_IsString(v))
        return mini_prof_pfail(c, path, "must be a string");
    const char *host = v ? v->valuestring : NULL;
    if (host && !(p->namespaces & MINI_FEAT_UTS_NS))
        return mini_prof_pfail(c, path, "needs namespaces.uts to be true");
    if (host && !valid_hostname(host))
        return mini_prof_pfail(c, path, "must be a valid host name of at most 64 characters");
    free(p->hostname);
    p->hostname = NULL;
    if ((p->namespaces & MINI_FEAT_UTS_NS) && !(p->hostname = strdup(host ? host : STRICT_HOSTNAME)))
        return mini_prof_pnomem(c);
    return 0;
}

static int parse_image(const struct pctx *c, const cJSON *v, const char *path, struct mini_profile *p)
{
    if (!cJSON_IsString(v))
        return mini_prof_pfail(c, path, "must be a string");
    const char *image = v->valuestring;
    if (!mini_image_name_valid(image) && !(strlen(image) >= 12 && strlen(image) <= 71))
        return mini_prof_pfail(c, path, "must be an image name (NAME[:TAG]) or id");
    free(p->image);
    if (!(p->image = strdup(image)))
        return mini_prof_pnomem(c);
    return 0;
}

/* -------------------------------------------------------- filesystem */

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

static void release_binds(struct mini_profile *p)
{
    for (size_t i = 0; i < p->n_binds; i++)
        free(p->binds[i].path);
    free(p->binds);
    p->binds = NULL;
    p->n_binds = 0;
}

static int fill_binds(struct mini_profile *p)
{
    for (size_t i = 0; default_binds[i]; i++)
        if (push_bind(p, default_binds[i], false, true) < 0)
            return -1;
    return 0;
}

static int dup_binds(struct mini_profile *d, const struct mini_profile *p)
{
    for (size_t i = 0; i < p->n_binds; i++)
        if (push_bind(d, p->binds[i].path, p->binds[i].writable, p->binds[i].optional) < 0)
            return -1;
    return 0;
}

static int parse_binds(const struct pctx *c, const cJSON *arr, const char *path, struct mini_profile *p)
{
    char buf[KP_MAX], sub[KP_MAX];
    if (!cJSON_IsArray(arr))
        return mini_prof_pfail(c, path, "must be an array");
    release_binds(p);
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        mini_prof_kpi(buf, path, i);
        bool writable = false, optional = true;
        _cleanup_free_ char *n = NULL;
        if (cJSON_IsString(it)) {
            n = mini_prof_get_path(c, it, buf, true);
        } else if (cJSON_IsObject(it)) {
            if (mini_prof_check_keys(c, it, buf, "filesystem.binds[]") < 0)
                return -1;
            if (mini_prof_get_bool(c, it, buf, "writable", &writable) < 0)
                return -1;
            if (mini_prof_get_bool(c, it, buf, "optional", &optional) < 0)
                return -1;
            const cJSON *pv = cJSON_GetObjectItemCaseSensitive(it, "path");
            if (!pv)
                return mini_prof_pfail(c, mini_prof_kp(sub, buf, "path"), "is required");
            n = mini_prof_get_path(c, pv, mini_prof_kp(sub, buf, "path"), true);
        } else {
            return mini_prof_pfail(c, buf, "must be a path or an object");
        }
        if (!n)
            return -1;
        for (size_t j = 0; j < p->n_binds; j++)
            if (strcmp(p->binds[j].path, n) == 0)
                return mini_prof_pfail(c, buf, "\"%s\" is listed twice", n);
        if (push_bind(p, n, writable, optional) < 0)
            return mini_prof_pnomem(c);
    }
    return 0;
}

static bool emit_binds(cJSON *fs, const char *key, const struct mini_profile *p)
{
    cJSON *binds = cJSON_AddArrayToObject(fs, key);
    bool ok = binds != NULL;
    for (size_t i = 0; ok && i < p->n_binds; i++) {
        const struct mini_bind *b = &p->binds[i];
        if (!b->writable && b->optional) {
            ok = mini_prof_json_push(binds, cJSON_CreateString(b->path));
            continue;
        }
        cJSON *bo = cJSON_CreateObject();
        ok = mini_prof_json_push(binds, bo) && cJSON_AddStringToObject(bo, "path", b->path) &&
            cJSON_AddBoolToObject(bo, "writable", b->writable) && cJSON_AddBoolToObject(bo, "optional", b->optional);
    }
    return ok;
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

static void release_tmpfs(struct mini_profile *p)
{
    for (size_t i = 0; i < p->n_tmpfs; i++)
        free(p->tmpfs[i].path);
    free(p->tmpfs);
    p->tmpfs = NULL;
    p->n_tmpfs = 0;
}

static int fill_tmpfs(struct mini_profile *p) { return push_tmpfs(p, "/tmp", DEFAULT_TMP_MB * MIB, 01777); }

static int dup_tmpfs(struct mini_profile *d, const struct mini_profile *p)
{
    for (size_t i = 0; i < p->n_tmpfs; i++)
        if (push_tmpfs(d, p->tmpfs[i].path, p->tmpfs[i].size_bytes, p->tmpfs[i].mode) < 0)
            return -1;
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

static int parse_tmpfs(const struct pctx *c, const cJSON *arr, const char *path, struct mini_profile *p)
{
    char buf[KP_MAX], sub[KP_MAX];
    if (!cJSON_IsArray(arr))
        return mini_prof_pfail(c, path, "must be an array");
    release_tmpfs(p);
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        mini_prof_kpi(buf, path, i);
        if (mini_prof_check_keys(c, it, buf, "filesystem.tmpfs[]") < 0)
            return -1;
        const cJSON *pv = cJSON_GetObjectItemCaseSensitive(it, "path");
        if (!pv)
            return mini_prof_pfail(c, mini_prof_kp(sub, buf, "path"), "is required");
        _cleanup_free_ char *n = mini_prof_get_path(c, pv, mini_prof_kp(sub, buf, "path"), false);
        if (!n)
            return -1;
        uint64_t size_mb = DEFAULT_TMP_MB;
        unsigned mode = 01777;
        bool bad;
        if (mini_prof_get_uint(c, it, buf, "size_mb", 1, MB_MAX, &size_mb) < 0)
            return -1;
        const char *m = mini_prof_get_str(c, it, buf, "mode", &bad);
        if (bad)
            return -1;
        if (m && parse_mode(m, &mode) < 0)
            return mini_prof_pfail(c, mini_prof_kp(sub, buf, "mode"), "must be an octal mode such as \"1777\"");
        for (size_t j = 0; j < p->n_tmpfs; j++)
            if (strcmp(p->tmpfs[j].path, n) == 0)
                return mini_prof_pfail(c, mini_prof_kp(sub, buf, "path"), "\"%s\" is listed twice", n);
        if (push_tmpfs(p, n, size_mb * MIB, mode) < 0)
            return mini_prof_pnomem(c);
    }
    return 0;
}

static bool emit_tmpfs(cJSON *fs, const char *key, const struct mini_profile *p)
{
    cJSON *tmpfs = cJSON_AddArrayToObject(fs, key);
    bool ok = tmpfs != NULL;
    for (size_t i = 0; ok && i < p->n_tmpfs; i++) {
        char mode[8];
        snprintf(mode, sizeof mode, "%o", p->tmpfs[i].mode & 07777);
        cJSON *to = cJSON_CreateObject();
        ok = mini_prof_json_push(tmpfs, to) && cJSON_AddStringToObject(to, "path", p->tmpfs[i].path) &&
            cJSON_AddNumberToObject(to, "size_mb", (double)(p->tmpfs[i].size_bytes / MIB)) &&
            cJSON_AddStringToObject(to, "mode", mode);
    }
    return ok;
}

/* ----------------------------------------------------------- seccomp */

static bool allow_shown(const struct mini_profile *p) { return p->seccomp.default_action != MINI_SECCOMP_ALLOW; }

/* seccomp.allow goes with default_action: required with errno and kill,
 * refused with allow. */
static int check_allow(const struct pctx *c, struct mini_profile *p)
{
    const struct mini_seccomp_policy *s = &p->seccomp;
    if (s->default_action == MINI_SECCOMP_ALLOW && s->n_allow)
        return mini_prof_pfail(c, "seccomp.allow", "only applies when default_action is \"errno\" or \"kill\"");
    if (s->default_action != MINI_SECCOMP_ALLOW && !s->n_allow)
        return mini_prof_pfail(c, "seccomp.allow", "must list the allowed syscalls when default_action is \"%s\"",
                               default_actions[s->default_action].name);
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

static void release_families(struct mini_profile *p)
{
    free(p->seccomp.socket_families);
    p->seccomp.socket_families = NULL;
    p->seccomp.n_socket_families = 0;
}

static int fill_families(struct mini_profile *p)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(default_families); i++)
        if (push_family(&p->seccomp, default_families[i]) < 0)
            return -1;
    return 0;
}

static int dup_families(struct mini_profile *d, const struct mini_profile *p)
{
    for (size_t i = 0; i < p->seccomp.n_socket_families; i++)
        if (push_family(&d->seccomp, p->seccomp.socket_families[i]) < 0)
            return -1;
    return 0;
}

static int parse_families(const struct pctx *c, const cJSON *arr, const char *path, struct mini_profile *p)
{
    struct mini_seccomp_policy *s = &p->seccomp;
    char buf[KP_MAX];
    if (!cJSON_IsArray(arr))
        return mini_prof_pfail(c, path, "must be an array of family names");
    release_families(p);
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        mini_prof_kpi(buf, path, i);
        if (!cJSON_IsString(it))
            return mini_prof_pfail(c, buf, "must be a family name");
        size_t f = 0;
        while (f < MINI_ARRAY_SIZE(families) && strcmp(families[f].name, it->valuestring) != 0)
            f++;
        if (f == MINI_ARRAY_SIZE(families))
            return mini_prof_pfail(c, buf, "unknown socket family \"%s\"", it->valuestring);
        if (families[f].refused)
            return mini_prof_pfail(c, buf, "socket family \"%s\" is never allowed", it->valuestring);
        for (size_t j = 0; j < s->n_socket_families; j++)
            if (s->socket_families[j] == families[f].af)
                return mini_prof_pfail(c, buf, "\"%s\" is listed twice", it->valuestring);
        if (push_family(s, families[f].af) < 0)
            return mini_prof_pnomem(c);
    }
    return 0;
}

static bool emit_families(cJSON *so, const char *key, const struct mini_profile *p)
{
    const struct mini_seccomp_policy *s = &p->seccomp;
    cJSON *fams = cJSON_AddArrayToObject(so, key);
    bool ok = fams != NULL;
    for (size_t i = 0; ok && i < s->n_socket_families; i++) {
        const char *name = family_name(s->socket_families[i]);
        ok = mini_prof_json_push(fams, name ? cJSON_CreateString(name) : cJSON_CreateNumber(s->socket_families[i]));
    }
    return ok;
}

/* ------------------------------------------------------- environment */

static int fill_env(struct mini_profile *p)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(default_env); i++)
        if (mini_env_add(&p->env_set, default_env[i][0], default_env[i][1]) < 0)
            return -1;
    return 0;
}

static int dup_env(struct mini_profile *d, const struct mini_profile *p)
{
    for (size_t i = 0; i < p->env_set.n; i++)
        if (mini_env_add(&d->env_set, p->env_set.keys[i], p->env_set.values[i]) < 0)
            return -1;
    return 0;
}

static void release_env(struct mini_profile *p) { mini_env_free(&p->env_set); }

static int parse_env_set(const struct pctx *c, const cJSON *x, const char *path, struct mini_profile *p)
{
    char buf[KP_MAX];
    if (!cJSON_IsObject(x))
        return mini_prof_pfail(c, path, "must be an object of strings");
    mini_env_free(&p->env_set);
    for (const cJSON *it = x->child; it; it = it->next) {
        mini_prof_kp(buf, path, it->string);
        if (!valid_env_name(it->string))
            return mini_prof_pfail(c, buf, "invalid variable name");
        if (!cJSON_IsString(it))
            return mini_prof_pfail(c, buf, "must be a string");
        if (mini_env_add(&p->env_set, it->string, it->valuestring) < 0)
            return mini_prof_pnomem(c);
    }
    return 0;
}

static bool emit_env_set(cJSON *env, const char *key, const struct mini_profile *p)
{
    cJSON *set = cJSON_AddObjectToObject(env, key);
    bool ok = set != NULL;
    for (size_t i = 0; ok && i < p->env_set.n; i++)
        ok = cJSON_AddStringToObject(set, p->env_set.keys[i], p->env_set.values[i]);
    return ok;
}

static int check_environment(const struct pctx *c, struct mini_profile *p)
{
    char buf[KP_MAX];
    for (size_t i = 0; i < p->n_env_pass; i++)
        if (mini_prof_strv_has(p->env_set.keys, p->env_set.n, p->env_pass[i]))
            return mini_prof_pfail(c, mini_prof_kpi(buf, "environment.pass", i), "\"%s\" is also in environment.set",
                                   p->env_pass[i]);
    return 0;
}

/* ----------------------------------------------------------- require */

static int parse_require(const struct pctx *c, const cJSON *arr, const char *path, struct mini_profile *p)
{
    char buf[KP_MAX];
    if (!cJSON_IsArray(arr))
        return mini_prof_pfail(c, path, "must be an array of feature names");
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        mini_prof_kpi(buf, path, i);
        if (!cJSON_IsString(it))
            return mini_prof_pfail(c, buf, "must be a feature name");
        unsigned bit = mini_feature_from_name(it->valuestring);
        if (!bit)
            return mini_prof_pfail(c, buf,
                                   "unknown feature \"%s\" (known: user_ns, pid_ns, net_ns, mount_ns, ipc_ns, "
                                   "uts_ns, cgroup_ns, seccomp, landlock, cgroups, overlay)",
                                   it->valuestring);
        if (p->require & bit)
            return mini_prof_pfail(c, buf, "\"%s\" is listed twice", it->valuestring);
        if ((bit & ALL_NS) && !(p->namespaces & bit))
            return mini_prof_pfail(c, buf, "\"%s\" is required but that namespace is turned off in namespaces",
                                   it->valuestring);
        if (bit == MINI_FEAT_OVERLAY && !p->overlay_root)
            return mini_prof_pfail(c, buf, "\"overlay\" is required but filesystem.overlay_root is false");
        p->require |= bit;
    }
    return 0;
}

static bool emit_require(cJSON *o, const char *key, const struct mini_profile *p)
{
    cJSON *req = cJSON_AddArrayToObject(o, key);
    bool ok = req != NULL;
    for (unsigned i = 0; ok && i < MINI_FEAT_COUNT; i++)
        if (p->require & (1u << i))
            ok = mini_prof_json_push(req, cJSON_CreateString(mini_feature_name(i)));
    return ok;
}

/* ------------------------------------------------------------- table */

#define OFF(field) offsetof(struct mini_profile, field)
#define NS(key, feat, what)                                                                                 \
    {                                                                                                       \
        .path = "namespaces." key, .type = PK_FLAG, .off = OFF(namespaces), .bit = feat, .dflt_bool = true, \
        .doc = what                                                                                         \
    }
#define LIMIT(key, field, unit_, min_, max_, dflt, what)                                                           \
    {                                                                                                              \
        .path = "limits." key, .type = PK_UINT, .off = OFF(limits.field), .unit = unit_, .min = min_, .max = max_, \
        .dflt_uint = dflt, .ov = OV_LOWER, .doc = what                                                             \
    }
#define STRV(path_, field, items_) \
    .path = path_, .type = PK_STRV, .off = OFF(field), .off_n = OFF(n_##field), .items = items_
#define STRV2(path_, sect, field, items_) \
    .path = path_, .type = PK_STRV, .off = OFF(sect.field), .off_n = OFF(sect.n_##field), .items = items_
/* A PK_CUSTOM entry whose value is the scalar `field` (copied as it is). */
#define CUSTOM(path_, field) \
    .path = path_, .type = PK_CUSTOM, .off = OFF(field), .size = sizeof(((struct mini_profile *)0)->field)

/* In the order of the JSON output (and of parsing: a key may depend on
 * those before it). */
const struct pkey mini_profile_keys[] = {
    { .path = "name",
      .type = PK_STRING,
      .off = OFF(name),
      .flags = PKF_ABSENT | PKF_OUT_EMPTY,
      .parse = parse_name,
      .type_doc = "string, 1-64 chars, no control characters",
      .dflt_doc = "file base name",
      .doc = "shown in `opened` replies and `mini-sandbox profiles`" },
    { .path = "description",
      .type = PK_STRING,
      .off = OFF(description),
      .flags = PKF_OUT_EMPTY,
      .dflt_str = "",
      .doc = "one line for humans" },
    { .path = "namespaces",
      .type = PK_SECTION,
      .check = check_namespaces,
      .dflt_doc = "all `true`",
      .doc = "the namespaces the sandbox gets (see below)" },
    NS("user", MINI_FEAT_USER_NS,
       "a user namespace: the sandbox's uid 0 is the daemon's user (or an unprivileged uid)"),
    NS("pid", MINI_FEAT_PID_NS, "a pid namespace: the command sees only its own processes"),
    NS("mount", MINI_FEAT_MOUNT_NS, "a mount namespace; must be true: the root the profile describes is built in it"),
    NS("net", MINI_FEAT_NET_NS, "a network namespace; must agree with `network`"),
    NS("ipc", MINI_FEAT_IPC_NS, "an IPC namespace (System V IPC, POSIX message queues)"),
    NS("uts", MINI_FEAT_UTS_NS, "a UTS namespace, which `hostname` needs"),
    NS("cgroup", MINI_FEAT_CGROUP_NS, "a cgroup namespace: the command sees its own cgroup as the root"),
    { CUSTOM("network", network), .flags = PKF_ABSENT, .parse = parse_network, .emit = emit_network, .ov = OV_CUSTOM,
      .override = override_network, .type_doc = "`\"none\"` \\| `\"host\"` \\| `{\"allow\": [...], \"deny\": [...]}`",
      .dflt_doc = "follows `namespaces.net`",
      .doc = "`none`: a new network namespace with only loopback up; `host`: the host's network; an object: an "
             "allowlist, loopback only plus a proxy that lets the listed destinations through (see [The network "
             "allowlist](#the-network-allowlist))" },
    { STRV("network.allow", net_allow, "entries"), .dflt_doc = "required",
      .doc = "destinations the proxy lets through (the entries below); not empty" },
    { STRV("network.deny", net_deny, "entries"),
      .doc = "destinations refused even when `allow` matches them; at most 256 entries in `allow` and `deny` "
             "together" },
    { STRV("network.resolve", net_resolve, "`\"NAME:ADDRESS\"` strings"),
      .doc = "addresses for names, used by the proxy before the daemon's own pins and DNS (IPv6 as "
             "`NAME:[ADDR]`)" },
    { .path = "hostname",
      .type = PK_STRING,
      .off = OFF(hostname),
      .flags = PKF_ABSENT,
      .parse = parse_hostname,
      .dflt_str = STRICT_HOSTNAME,
      .doc = "host name inside the UTS namespace: RFC 1123 labels (letters, digits, inner `-`), at most 64 "
             "characters. Only allowed when `namespaces.uts` is true; without a UTS namespace there is no "
             "hostname" },
    { .path = "image",
      .type = PK_STRING,
      .off = OFF(image),
      .parse = parse_image,
      .doc = "an image imported with `mini-sandbox image import` (`NAME[:TAG]` or id) as the root instead of the "
             "host's directories: `filesystem.binds` and `filesystem.hide` are then not used; `tmpfs`, the "
             "workspace, `overlay_root` (a per-session writable overlay on the image), limits, seccomp, namespaces "
             "and the environment rules apply as always ([images.md](images.md)). An `open` request's `image` "
             "takes precedence. Cannot be overridden" },
    { .path = "filesystem",
      .type = PK_SECTION,
      .flags = PKF_OV_SUGGEST,
      .ov = OV_SECTION_KEYS,
      .doc = "what the command sees" },
    { .path = "filesystem.binds",
      .type = PK_CUSTOM,
      .parse = parse_binds,
      .emit = emit_binds,
      .fill = fill_binds,
      .dup = dup_binds,
      .release = release_binds,
      .type_doc = "array",
      .dflt_doc = "`/usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt`",
      .doc = "host paths shown at the same path. A string is a read-only, optional bind; the object form is "
             "`{\"path\": P, \"writable\": false, \"optional\": true}` (both flags default as shown). An optional "
             "bind is skipped when the host lacks the path; a missing required bind is an error at sandbox start. "
             "A symlink (e.g. `/bin` -> `usr/bin` on merged-/usr systems) is recreated as a symlink. `\"/\"` is "
             "allowed" },
    { .path = "filesystem.binds[].path", .type = PK_ITEMKEY },
    { .path = "filesystem.binds[].writable", .type = PK_ITEMKEY },
    { .path = "filesystem.binds[].optional", .type = PK_ITEMKEY },
    { STRV("filesystem.hide", hide, "absolute paths"), .item = hide_item, .dflt_strv = default_hide, .ov = OV_APPEND,
      .doc = "covered after the binds: a directory by an empty read-only tmpfs, a file by `/dev/null` mounted "
             "ro,nosuid,nodev,noexec (so it cannot be opened at all). Paths missing in the sandbox, or beneath a "
             "directory the sandbox may not search, are skipped. Resolved inside the new root, so a symlink "
             "cannot point a cover at a host path. `\"/\"` is refused" },
    { .path = "filesystem.tmpfs",
      .type = PK_CUSTOM,
      .parse = parse_tmpfs,
      .emit = emit_tmpfs,
      .fill = fill_tmpfs,
      .dup = dup_tmpfs,
      .release = release_tmpfs,
      .type_doc = "array of objects",
      .dflt_doc = "`[{\"path\": \"/tmp\", \"size_mb\": 128, \"mode\": \"1777\"}]`",
      .doc = "fresh, empty, writable tmpfs mounts. `path` (required, not `/`), `size_mb` (integer > 0, default "
             "128), `mode` (octal string, default `\"1777\"`)" },
    { .path = "filesystem.tmpfs[].path", .type = PK_ITEMKEY },
    { .path = "filesystem.tmpfs[].size_mb", .type = PK_ITEMKEY },
    { .path = "filesystem.tmpfs[].mode", .type = PK_ITEMKEY },
    { .path = "filesystem.workspace_writable",
      .type = PK_BOOL,
      .off = OFF(workspace_writable),
      .dflt_bool = true,
      .ov = OV_TRUE_TO_FALSE,
      .doc = "the workspace is mounted at its own path, last, after everything above (so hiding its parent is "
             "fine); `false` mounts it read-only" },
    { .path = "filesystem.overlay_root",
      .type = PK_BOOL,
      .off = OFF(overlay_root),
      .doc = "read-only directory binds get a per-session writable overlay: writes land in the session's upper "
             "directory (removed with the session), never on the host" },
    { .path = "limits", .type = PK_SECTION, .ov = OV_SECTION_PARSE, .doc = "resource limits per command" },
    { .path = "limits.timeout_s",
      .type = PK_NUMBER,
      .off = OFF(limits.timeout_s),
      .dmax = TIMEOUT_MAX_S,
      .dflt_number = 60,
      .ov = OV_LOWER,
      .doc = "wall clock per command; the whole sandbox is killed when it passes (exit status 124)" },
    LIMIT("memory_mb", memory_bytes, MIB, 0, MB_MAX, 2048,
          "memory: the cgroup's `memory.max` where cgroups are usable, else `RLIMIT_AS` (address space). `0`: "
          "unlimited"),
    LIMIT("pids", pids, 1, 0, PIDS_MAX, 256,
          "processes: the pids cgroup, else `RLIMIT_NPROC` (counted inside the sandbox's user namespace). `0`: "
          "unlimited"),
    LIMIT("cpu_s", cpu_s, 1, 0, MB_MAX, 120, "CPU seconds per process (`RLIMIT_CPU`). `0`: unlimited"),
    LIMIT("file_size_mb", file_size_bytes, MIB, 0, MB_MAX, 256,
          "largest file a command may write (`RLIMIT_FSIZE`). `0`: unlimited"),
    LIMIT("open_files", open_files, 1, 1, OPEN_FILES_MAX, 1024, "`RLIMIT_NOFILE`"),
    LIMIT("output_bytes", output_bytes, 1, 1, OUTPUT_BYTES_MAX, 1048576,
          "output kept per command (head and tail; the total is still counted). The cap keeps the `exit` event "
          "far below the 16 MiB frame limit even when every byte needs a six-byte JSON escape"),
    LIMIT("disk_mb", disk_bytes, MIB, 0, MB_MAX, 1024,
          "what a session may add to the disk: its workspace, and the overlay of an overlay root (standard: "
          "`8192`, permissive: `0`). Watched by the daemon, which kills the session's running commands past it "
          "(`limit: \"disk\"`, exit status 137, a `disk:` note on every exit until the session is back under); "
          "see docs/isolation.md \"Workspace disk use\". `0`: unlimited"),
    LIMIT("net_connections", net_connections, 1, 0, 4096, 32,
          "allowlist only: proxied connections a session holds at once; one more gets `429` from the proxy. `0`: "
          "unlimited (the daemon still holds at most 1024 in all)"),
    LIMIT("net_in_mb", net_in_bytes, MIB, 0, MB_MAX, 1024,
          "allowlist only: bytes a session may receive through the proxy, all its commands together; a "
          "connection that reaches it is closed, later ones get `403`. `0`: unlimited"),
    LIMIT("net_out_mb", net_out_bytes, MIB, 0, MB_MAX, 256, "the same for bytes sent"),
    { .path = "seccomp", .type = PK_SECTION, .ov = OV_SECTION_KEYS, .doc = "the syscall filter" },
    { .path = "seccomp.default_action",
      .type = PK_ENUM,
      .off = OFF(seccomp.default_action),
      .names = default_actions,
      .n_names = MINI_ARRAY_SIZE(default_actions),
      .dflt_int = MINI_SECCOMP_ALLOW,
      .doc = "what unlisted syscalls get: allowed; refused with `errno`; or the process killed (`SIGSYS`)" },
    { STRV2("seccomp.allow", seccomp, allow, "syscall names"), .flags = PKF_ABSENT, .item = syscall_item,
      .check = check_allow, .shown = allow_shown, .dflt_doc = "absent",
      .doc = "only with `\"errno\"` or `\"kill\"`, and then required: the syscalls allowed. `deny` and the "
             "argument rules below still win over it" },
    { STRV2("seccomp.deny", seccomp, deny, "syscall names"), .item = syscall_item, .dflt_strv = default_deny,
      .ov = OV_APPEND, .dflt_doc = "the strict list (below)", .doc = "refused with `errno`" },
    { .path = "seccomp.errno",
      .type = PK_ENUM,
      .off = OFF(seccomp.errno_value),
      .names = errnos,
      .n_names = MINI_ARRAY_SIZE(errnos),
      .dflt_int = EPERM,
      .doc = "the error denied syscalls return" },
    { .path = "seccomp.deny_tty_injection",
      .type = PK_BOOL,
      .off = OFF(seccomp.deny_tty_injection),
      .dflt_bool = true,
      .doc = "`ioctl` `TIOCSTI` (push input into a terminal) and `TIOCLINUX` refused with `errno`. The command "
             "number is compared on its low 32 bits, as the kernel reads it, so setting high bits of the register "
             "does not get around the rule" },
    { .path = "seccomp.deny_namespace_clone",
      .type = PK_BOOL,
      .off = OFF(seccomp.deny_namespace_clone),
      .dflt_bool = true,
      .doc = "`clone` and `unshare` with any `CLONE_NEW*` flag refused with `EPERM`; `clone3` refused with "
             "`ENOSYS` (its flags live in memory the filter cannot read; glibc then falls back to `clone`)" },
    { .path = "seccomp.socket_families",
      .type = PK_CUSTOM,
      .parse = parse_families,
      .emit = emit_families,
      .fill = fill_families,
      .dup = dup_families,
      .release = release_families,
      .type_doc = "array of family names",
      .dflt_doc = "`[\"unix\", \"inet\", \"inet6\"]`",
      .doc = "families `socket(2)` may create; others get `EAFNOSUPPORT`. `socketpair(2)` is allowed for `unix` "
             "only" },
    { .path = "environment", .type = PK_SECTION, .check = check_environment, .doc = "the command's environment" },
    { .path = "environment.set",
      .type = PK_CUSTOM,
      .parse = parse_env_set,
      .emit = emit_env_set,
      .fill = fill_env,
      .dup = dup_env,
      .release = release_env,
      .type_doc = "object of strings",
      .dflt_doc = "see the table of built-ins",
      .doc = "variables set to fixed values" },
    { STRV("environment.pass", env_pass, "variable names"), .item = env_name_item,
      .doc = "variables copied from the daemon's own environment when it has them (for a shared daemon an "
             "administrator starts, e.g. `http_proxy`); a private daemon started by `mini-sandbox` or `mini` is "
             "given only `PATH`, `HOME`, `LANG`, `XDG_RUNTIME_DIR` and `MINI_PROFILE_DIR`" },
    { CUSTOM("require", require), .parse = parse_require, .emit = emit_require, .type_doc = "array of feature names",
      .dflt_doc = "`[]`",
      .doc = "features without which the profile refuses (`isolation_unavailable`) instead of running degraded" },
};
const size_t mini_profile_n_keys = MINI_ARRAY_SIZE(mini_profile_keys);

/* -------------------------------------------------------------- docs */

/* Markdown for a table cell: "|" escaped. */
static void cell(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
}

static void type_doc(FILE *out, const struct pkey *k)
{
    if (k->type_doc) {
        fputs(k->type_doc, out);
        return;
    }
    switch (k->type) {
    case PK_SECTION: fputs("object", out); break;
    case PK_BOOL:
    case PK_FLAG: fputs("bool", out); break;
    case PK_UINT:
        fputs(k->min ? "integer > 0" : "integer >= 0", out);
        if (k->max != MB_MAX)
            fprintf(out, ", at most %llu", (unsigned long long)k->max);
        break;
    case PK_NUMBER: fprintf(out, "number > 0, at most %.0f", k->dmax); break;
    case PK_STRING: fputs("string", out); break;
    case PK_ENUM:
        for (size_t i = 0; i < k->n_names; i++)
            fprintf(out, "%s`\"%s\"`", i ? " \\| " : "", k->names[i].name);
        break;
    case PK_STRV: fprintf(out, "array of %s", k->items); break;
    case PK_CUSTOM:
    case PK_ITEMKEY: break;
    }
}

static void default_doc(FILE *out, const struct pkey *k)
{
    if (k->dflt_doc) {
        fputs(k->dflt_doc, out);
        return;
    }
    switch (k->type) {
    case PK_SECTION: fputs("see below", out); break;
    case PK_BOOL:
    case PK_FLAG: fprintf(out, "`%s`", k->dflt_bool ? "true" : "false"); break;
    case PK_UINT: fprintf(out, "`%llu`", (unsigned long long)k->dflt_uint); break;
    case PK_NUMBER: fprintf(out, "`%g`", k->dflt_number); break;
    case PK_STRING:
        if (k->dflt_str)
            fprintf(out, "`\"%s\"`", k->dflt_str);
        else
            fputs("none", out);
        break;
    case PK_ENUM:
        for (size_t i = 0; i < k->n_names; i++)
            if (k->names[i].value == k->dflt_int)
                fprintf(out, "`\"%s\"`", k->names[i].name);
        break;
    case PK_STRV:
        if (!k->dflt_strv) {
            fputs("`[]`", out);
            break;
        }
        fputc('`', out);
        for (size_t i = 0; k->dflt_strv[i]; i++)
            fprintf(out, "%s%s", i ? " " : "", k->dflt_strv[i]);
        fputc('`', out);
        break;
    case PK_CUSTOM:
    case PK_ITEMKEY: break;
    }
}

void mini_profile_keys_markdown(FILE *out, const char *section)
{
    fprintf(out, "| key | type | %s | meaning |\n|---|---|---|---|\n", section[0] ? "default (strict)" : "default");
    for (size_t i = 0; i < mini_profile_n_keys; i++) {
        const struct pkey *k = &mini_profile_keys[i];
        if (!mini_prof_pkey_in(k, section) || k->type == PK_ITEMKEY)
            continue;
        fprintf(out, "| `%s` | ", mini_prof_pkey_name(k));
        type_doc(out, k);
        fputs(" | ", out);
        default_doc(out, k);
        fputs(" | ", out);
        cell(out, k->doc ? k->doc : "");
        fputs(" |\n", out);
    }
}

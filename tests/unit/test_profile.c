/* Profiles: the built-in files, validation messages, overrides, JSON
 * round trips.  argv[1]: the source tree's profiles/ directory. */
#include "check.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/profile.h"
#include "mini/proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *dir;

static cJSON *parse(const char *json)
{
    cJSON *v = cJSON_Parse(json);
    if (!v) {
        fprintf(stderr, "test JSON does not parse: %s\n", json);
        abort();
    }
    return v;
}

static struct mini_profile *from(const char *json, struct mini_err *e)
{
    cJSON *v = parse(json);
    struct mini_profile *p = mini_profile_from_json(v, "strict.json", e);
    cJSON_Delete(v);
    return p;
}

/* json must be refused with exactly `msg` (profile_invalid). */
#define BAD(json, want_)                             \
    do {                                             \
        struct mini_err _e;                          \
        mini_err_clear(&_e);                         \
        struct mini_profile *_p = from(json, &_e);   \
        CHECK_MSG(_p == NULL, "accepted: %s", json); \
        mini_profile_free(_p);                       \
        CHECK(_e.code == MINI_E_PROFILE_INVALID);    \
        CHECK_STR(_e.msg, want_);                    \
    } while (0)

static int write_str(const char *path, const char *s)
{
    struct mini_err e;
    return mini_write_file_atomic(path, s, strlen(s), 0600, &e);
}

static bool has_str(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static bool has_family(const struct mini_seccomp_policy *s, int af)
{
    for (size_t i = 0; i < s->n_socket_families; i++)
        if (s->socket_families[i] == af)
            return true;
    return false;
}

/* to_json -> from_json -> to_json gives the same JSON. */
static void check_round_trip(const struct mini_profile *p)
{
    struct mini_err e;
    cJSON *a = mini_profile_to_json(p);
    CHECK(a != NULL);
    struct mini_profile *q = mini_profile_from_json(a, NULL, &e);
    CHECK_MSG(q != NULL, "%s: %s", p->name, e.msg);
    if (!q) {
        cJSON_Delete(a);
        return;
    }
    cJSON *b = mini_profile_to_json(q);
    CHECK_MSG(cJSON_Compare(a, b, true), "%s does not round-trip", p->name);
    struct mini_profile *d = mini_profile_dup(q);
    cJSON *c = mini_profile_to_json(d);
    CHECK_MSG(cJSON_Compare(a, c, true), "%s: dup differs", p->name);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
    mini_profile_free(q);
    mini_profile_free(d);
}

static void test_features(void)
{
    CHECK_STR(mini_feature_name(0), "user_ns");
    CHECK_STR(mini_feature_name(7), "seccomp");
    CHECK_STR(mini_feature_name(10), "overlay");
    CHECK(mini_feature_name(MINI_FEAT_COUNT) == NULL);
    CHECK(mini_feature_from_name("net_ns") == MINI_FEAT_NET_NS);
    CHECK(mini_feature_from_name("overlay") == MINI_FEAT_OVERLAY);
    CHECK(mini_feature_from_name("teleport") == 0);
    CHECK(mini_feature_from_name(NULL) == 0);
}

static void test_builtins(void)
{
    struct mini_err e;
    struct mini_profile *s = mini_profile_load_builtin(dir, "strict", &e);
    CHECK_MSG(s != NULL, "%s", e.msg);
    struct mini_profile *st = mini_profile_load_builtin(dir, "standard", &e);
    CHECK_MSG(st != NULL, "%s", e.msg);
    struct mini_profile *pm = mini_profile_load_builtin(dir, "permissive", &e);
    CHECK_MSG(pm != NULL, "%s", e.msg);
    if (!s || !st || !pm)
        abort();

    CHECK_STR(s->name, "strict");
    CHECK(s->network == MINI_NET_NONE && (s->namespaces & MINI_FEAT_NET_NS));
    CHECK(s->namespaces ==
          (MINI_FEAT_USER_NS | MINI_FEAT_PID_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_NET_NS | MINI_FEAT_IPC_NS |
           MINI_FEAT_UTS_NS | MINI_FEAT_CGROUP_NS));
    CHECK_STR(s->hostname, "mini-sandbox");
    CHECK(s->require ==
          (MINI_FEAT_USER_NS | MINI_FEAT_PID_NS | MINI_FEAT_NET_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_IPC_NS |
           MINI_FEAT_UTS_NS | MINI_FEAT_SECCOMP));
    CHECK(s->workspace_writable && !s->overlay_root);
    CHECK(s->n_tmpfs == 1 && strcmp(s->tmpfs[0].path, "/tmp") == 0 && s->tmpfs[0].mode == 01777 &&
          s->tmpfs[0].size_bytes == 128ull << 20);
    for (size_t i = 0; i < s->n_binds; i++) {
        CHECK(!s->binds[i].writable && s->binds[i].optional);
        CHECK(strcmp(s->binds[i].path, "/home") != 0 && strcmp(s->binds[i].path, "/run") != 0 &&
              strcmp(s->binds[i].path, "/") != 0 && strcmp(s->binds[i].path, "/tmp") != 0);
    }
    CHECK(has_str(s->hide, s->n_hide, "/etc/ssh"));
    CHECK(s->limits.timeout_s == 60 && s->limits.memory_bytes == 2048ull << 20 && s->limits.pids == 256);
    CHECK(s->seccomp.default_action == MINI_SECCOMP_ALLOW && s->seccomp.errno_value == EPERM);
    CHECK(s->seccomp.deny_tty_injection && s->seccomp.deny_namespace_clone);
    CHECK(has_str(s->seccomp.deny, s->seccomp.n_deny, "ptrace"));
    CHECK(has_str(s->seccomp.deny, s->seccomp.n_deny, "io_uring_setup"));
    CHECK(s->seccomp.n_socket_families == 3 && has_family(&s->seccomp, AF_UNIX) && has_family(&s->seccomp, AF_INET) &&
          has_family(&s->seccomp, AF_INET6));
    CHECK(s->env_set.n == 9 && strcmp(s->env_set.keys[0], "PATH") == 0 && s->n_env_pass == 0);
    CHECK(has_str(s->env_set.keys, s->env_set.n, "TQDM_DISABLE"));

    CHECK_STR(st->name, "standard");
    CHECK(st->network == MINI_NET_NONE && st->overlay_root);
    CHECK(st->require == MINI_FEAT_SECCOMP);
    CHECK(st->limits.timeout_s > s->limits.timeout_s && st->limits.memory_bytes > s->limits.memory_bytes);

    CHECK_STR(pm->name, "permissive");
    CHECK(pm->network == MINI_NET_HOST && !(pm->namespaces & MINI_FEAT_NET_NS));
    CHECK(pm->require == 0);
    CHECK(pm->n_binds == 1 && strcmp(pm->binds[0].path, "/") == 0 && !pm->binds[0].writable);
    CHECK(has_str(pm->hide, pm->n_hide, "/run/user"));
    CHECK(!has_str(pm->seccomp.deny, pm->seccomp.n_deny, "ptrace"));
    CHECK(has_str(pm->seccomp.deny, pm->seccomp.n_deny, "mount"));
    CHECK(has_family(&pm->seccomp, AF_NETLINK) && !has_family(&pm->seccomp, AF_VSOCK));

    /* Each file is exactly its profile's to_json (every key spelled out),
     * and everything round-trips. */
    const struct mini_profile *all[] = { s, st, pm };
    for (size_t i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.json", dir, all[i]->name);
        _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
        CHECK(mini_read_file(path, &b, 0, &e) == 0);
        cJSON *file = parse(b.data);
        cJSON *out = mini_profile_to_json(all[i]);
        CHECK_MSG(cJSON_Compare(file, out, true), "%s.json differs from its to_json", all[i]->name);
        cJSON_Delete(file);
        cJSON_Delete(out);
        check_round_trip(all[i]);
    }

    /* Omitted keys take strict's values: {} is strict without its name,
     * description and require. */
    struct mini_profile *d = from("{}", &e);
    CHECK_MSG(d != NULL, "%s", e.msg);
    CHECK_STR(d->name, "strict"); /* from the origin "strict.json" */
    CHECK(d->require == 0);
    cJSON *dj = mini_profile_to_json(d), *sj = mini_profile_to_json(s);
    cJSON_DeleteItemFromObject(sj, "description");
    cJSON_DeleteItemFromObject(dj, "description");
    cJSON_DeleteItemFromObject(sj, "require");
    cJSON_DeleteItemFromObject(dj, "require");
    CHECK_MSG(cJSON_Compare(dj, sj, true), "the built-in defaults differ from strict.json");
    cJSON_Delete(dj);
    cJSON_Delete(sj);
    mini_profile_free(d);

    mini_profile_free(s);
    mini_profile_free(st);
    mini_profile_free(pm);
}

static void test_malformed(void)
{
    BAD("{\"foo\": 1}", "strict.json: foo: unknown key");
    BAD("{\"limits\": {\"memory\": 1}}", "strict.json: limits.memory: unknown key");
    BAD("{\"filesystem\": {\"binds\": [\"/usr\", {\"path\": \"/x\", \"ro\": true}]}}",
        "strict.json: filesystem.binds[1].ro: unknown key");
    BAD("{\"seccomp\": {\"deny_ioctl\": true}}", "strict.json: seccomp.deny_ioctl: unknown key");
    BAD("{\"environment\": {\"clear\": true}}", "strict.json: environment.clear: unknown key");
    /* A typo gets the closest key as a suggestion. */
    BAD("{\"limts\": {}}", "strict.json: limts: unknown key (did you mean limits?)");
    BAD("{\"limits\": {\"memroy_mb\": 1}}", "strict.json: limits.memroy_mb: unknown key (did you mean memory_mb?)");

    /* Wrong types. */
    BAD("{\"name\": 5}", "strict.json: name: must be a string");
    BAD("{\"limits\": []}", "strict.json: limits: must be an object");
    BAD("{\"namespaces\": {\"net\": \"yes\"}}", "strict.json: namespaces.net: must be true or false");
    BAD("{\"network\": true}",
        "strict.json: network: must be \"none\", \"host\" or an object {\"allow\": [...], \"deny\": [...]}");
    BAD("{\"network\": \"bridge\"}",
        "strict.json: network: must be \"none\", \"host\" or an object {\"allow\": [...], \"deny\": [...]}");
    BAD("{\"network\": {\"deny\": [\"a.org\"]}}",
        "strict.json: network.allow: is required (an array of entries such as \"pypi.org\")");
    BAD("{\"network\": {\"allow\": []}}",
        "strict.json: network.allow: must not be empty (use \"none\" for no network)");
    BAD("{\"network\": {\"allow\": [\"a..org\"]}}",
        "strict.json: network.allow[0]: \"a..org\": not a host name (letters, digits, '-', '_' and dots; \"*.\" "
        "only as a prefix), IP address or CIDR");
    BAD("{\"network\": {\"allow\": [\"a.org:0\"]}}",
        "strict.json: network.allow[0]: \"a.org:0\": bad port or brackets (a port is 1 to 65535: HOST:PORT, "
        "[IPV6]:PORT)");
    BAD("{\"network\": {\"allow\": [\"10.0.0.0/33\"]}}",
        "strict.json: network.allow[0]: \"10.0.0.0/33\": bad prefix length after / (0-32 for IPv4, 0-128 for IPv6)");
    BAD("{\"network\": {\"allow\": [7]}}", "strict.json: network.allow[0]: must be a string");
    BAD("{\"network\": {\"allow\": [\"a.org\"], \"resolve\": [\"a.org\"]}}",
        "strict.json: network.resolve[0]: \"a.org\": expected NAME:ADDRESS (pypi.org:10.0.0.5, pypi.org:[fd00::5])");
    BAD("{\"network\": {\"allow\": [\"a.org\"], \"resolve\": [\"a.org:nowhere\"]}}",
        "strict.json: network.resolve[0]: \"a.org:nowhere\": not an IP address after the name");
    BAD("{\"network\": {\"allow\": [\"a.org\"], \"proxy\": 1}}", "strict.json: network.proxy: unknown key");
    BAD("{\"network\": {\"allow\": [\"a.org\"]}, \"namespaces\": {\"net\": false}}",
        "strict.json: network: \"none\" and an allowlist require namespaces.net to be true");
    BAD("{\"filesystem\": {\"binds\": [\"/usr\", 7]}}",
        "strict.json: filesystem.binds[1]: must be a path or an object");
    BAD("{\"filesystem\": {\"binds\": \"/usr\"}}", "strict.json: filesystem.binds: must be an array");
    BAD("{\"filesystem\": {\"workspace_writable\": 1}}",
        "strict.json: filesystem.workspace_writable: must be true or false");
    BAD("{\"filesystem\": {\"tmpfs\": [{\"path\": \"/tmp\", \"mode\": 1777}]}}",
        "strict.json: filesystem.tmpfs[0].mode: must be a string");
    BAD("{\"seccomp\": {\"deny\": \"mount\"}}", "strict.json: seccomp.deny: must be an array of syscall names");
    BAD("{\"seccomp\": {\"deny\": [\"mount\", 3]}}", "strict.json: seccomp.deny[1]: must be a syscall name");
    BAD("{\"environment\": {\"set\": {\"A\": 1}}}", "strict.json: environment.set.A: must be a string");
    BAD("{\"require\": \"seccomp\"}", "strict.json: require: must be an array of feature names");

    /* Numbers. */
    BAD("{\"limits\": {\"memory_mb\": -1}}", "strict.json: limits.memory_mb: must be a non-negative integer");
    BAD("{\"limits\": {\"pids\": 1.5}}", "strict.json: limits.pids: must be a non-negative integer");
    BAD("{\"limits\": {\"cpu_s\": \"10\"}}", "strict.json: limits.cpu_s: must be a non-negative integer");
    BAD("{\"limits\": {\"open_files\": 0}}", "strict.json: limits.open_files: must be a positive integer");
    BAD("{\"limits\": {\"output_bytes\": -5}}", "strict.json: limits.output_bytes: must be a positive integer");
    BAD("{\"limits\": {\"output_bytes\": 1e9}}", "strict.json: limits.output_bytes: must be at most 2097152");
    BAD("{\"limits\": {\"timeout_s\": 0}}", "strict.json: limits.timeout_s: must be a positive number");
    BAD("{\"limits\": {\"timeout_s\": 1e12}}", "strict.json: limits.timeout_s: must be at most 604800");
    BAD("{\"filesystem\": {\"tmpfs\": [{\"path\": \"/tmp\", \"size_mb\": 0}]}}",
        "strict.json: filesystem.tmpfs[0].size_mb: must be a positive integer");

    /* Paths. */
    BAD("{\"filesystem\": {\"binds\": [\"/usr\", \"/bin\", \"usr\"]}}",
        "strict.json: filesystem.binds[2]: must be an absolute path");
    BAD("{\"filesystem\": {\"binds\": [\"/usr\", \"/bin\", {\"path\": \"lib\"}]}}",
        "strict.json: filesystem.binds[2].path: must be an absolute path");
    BAD("{\"filesystem\": {\"binds\": [{\"writable\": true}]}}", "strict.json: filesystem.binds[0].path: is required");
    BAD("{\"filesystem\": {\"hide\": [\"/etc/../home\"]}}", "strict.json: filesystem.hide[0]: must not contain \"..\"");
    BAD("{\"filesystem\": {\"hide\": [\"/a\", \"/b/..\"]}}",
        "strict.json: filesystem.hide[1]: must not contain \"..\"");
    BAD("{\"filesystem\": {\"hide\": [\"\"]}}", "strict.json: filesystem.hide[0]: must be an absolute path");
    BAD("{\"filesystem\": {\"hide\": [\"//\"]}}", "strict.json: filesystem.hide[0]: must not be \"/\"");
    BAD("{\"filesystem\": {\"hide\": [\"/x\", \"/x/\"]}}", "strict.json: filesystem.hide[1]: \"/x\" is listed twice");
    BAD("{\"filesystem\": {\"tmpfs\": [{\"path\": \"tmp\"}]}}",
        "strict.json: filesystem.tmpfs[0].path: must be an absolute path");
    BAD("{\"filesystem\": {\"tmpfs\": [{\"size_mb\": 1}]}}", "strict.json: filesystem.tmpfs[0].path: is required");
    BAD("{\"filesystem\": {\"tmpfs\": [{\"path\": \"/t\", \"mode\": \"999\"}]}}",
        "strict.json: filesystem.tmpfs[0].mode: must be an octal mode such as \"1777\"");

    /* Syscalls, families, features. */
    BAD("{\"seccomp\": {\"deny\": [\"mount\", \"ptrace\", \"bpf\", \"fooo\"]}}",
        "strict.json: seccomp.deny[3]: unknown syscall \"fooo\"");
    BAD("{\"seccomp\": {\"deny\": [\"mount\", \"mount\"]}}", "strict.json: seccomp.deny[1]: \"mount\" is listed twice");
#if defined(__x86_64__)
    BAD("{\"seccomp\": {\"deny\": [\"umount\"]}}",
        "strict.json: seccomp.deny[0]: syscall \"umount\" does not exist on this architecture");
#endif
    BAD("{\"seccomp\": {\"socket_families\": [\"unix\", \"ipx\"]}}",
        "strict.json: seccomp.socket_families[1]: unknown socket family \"ipx\"");
    BAD("{\"seccomp\": {\"socket_families\": [\"vsock\"]}}",
        "strict.json: seccomp.socket_families[0]: socket family \"vsock\" is never allowed");
    BAD("{\"seccomp\": {\"socket_families\": [\"unix\", \"alg\"]}}",
        "strict.json: seccomp.socket_families[1]: socket family \"alg\" is never allowed");
    BAD("{\"seccomp\": {\"errno\": \"EINVAL\"}}",
        "strict.json: seccomp.errno: must be \"EPERM\", \"ENOSYS\" or \"EACCES\"");
    BAD("{\"seccomp\": {\"default_action\": \"trap\"}}",
        "strict.json: seccomp.default_action: must be \"allow\", \"errno\" or \"kill\"");
    BAD("{\"seccomp\": {\"default_action\": \"kill\"}}",
        "strict.json: seccomp.allow: must list the allowed syscalls when default_action is \"kill\"");
    BAD("{\"seccomp\": {\"allow\": [\"read\"]}}",
        "strict.json: seccomp.allow: only applies when default_action is \"errno\" or \"kill\"");
    BAD("{\"require\": [\"seccomp\", \"teleport\"]}",
        "strict.json: require[1]: unknown feature \"teleport\" (known: user_ns, pid_ns, net_ns, mount_ns, ipc_ns, "
        "uts_ns, cgroup_ns, seccomp, landlock, cgroups, overlay)");
    BAD("{\"require\": [\"seccomp\", \"seccomp\"]}", "strict.json: require[1]: \"seccomp\" is listed twice");

    /* Contradictions. */
    BAD("{\"network\": \"none\", \"namespaces\": {\"net\": false}}",
        "strict.json: network: \"none\" and an allowlist require namespaces.net to be true");
    BAD("{\"network\": \"host\", \"namespaces\": {\"net\": true}}",
        "strict.json: network: \"host\" requires namespaces.net to be false");
    BAD("{\"network\": \"host\", \"require\": [\"net_ns\"]}",
        "strict.json: require[0]: \"net_ns\" is required but that namespace is turned off in namespaces");
    BAD("{\"require\": [\"overlay\"]}",
        "strict.json: require[0]: \"overlay\" is required but filesystem.overlay_root is false");
    BAD("{\"namespaces\": {\"uts\": false}, \"hostname\": \"box\"}",
        "strict.json: hostname: needs namespaces.uts to be true");
    BAD("{\"hostname\": \"bad_name\"}", "strict.json: hostname: must be a valid host name of at most 64 characters");
    BAD("{\"hostname\": \"-x\"}", "strict.json: hostname: must be a valid host name of at most 64 characters");
    BAD("{\"namespaces\": {\"mount\": false}}",
        "strict.json: namespaces.mount: must be true (the sandbox's filesystem view needs a mount namespace)");
    BAD("{\"environment\": {\"set\": {\"1X\": \"a\"}}}", "strict.json: environment.set.1X: invalid variable name");
    BAD("{\"environment\": {\"set\": {\"A\": \"1\"}, \"pass\": [\"A\"]}}",
        "strict.json: environment.pass[0]: \"A\" is also in environment.set");
    BAD("{\"environment\": {\"pass\": [\"A=B\"]}}", "strict.json: environment.pass[0]: must be a variable name");

    BAD("[]", "strict.json: a profile must be a JSON object");
}

/* The allowlist mode: parsed, round-tripped, extended by open.allow_hosts,
 * tightened to none by an override. */
static void test_network_allow(void)
{
    struct mini_err e;
    struct mini_profile *p =
        from("{\"network\": {\"allow\": [\"pypi.org\", \"*.pythonhosted.org\", \"github.com:443\", "
             "\"10.1.2.3:8080\", \"pypi.org\"], \"deny\": [\"10.0.0.0/8\"], \"resolve\": [\"pypi.org:10.9.9.9\"]}}",
             &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p)
        return;
    CHECK(p->network == MINI_NET_ALLOW && (p->namespaces & MINI_FEAT_NET_NS));
    CHECK(p->n_net_allow == 4 && p->n_net_deny == 1 && p->n_net_resolve == 1); /* the repeated entry once */
    check_round_trip(p);
    char *more[] = { "pkg.test", "[fd00::1]:443", NULL };
    CHECK(mini_profile_allow_hosts(p, more, 2, &e) == 0 && p->n_net_allow == 6);
    char *bad[] = { "ok.test", "no spaces", NULL };
    CHECK(mini_profile_allow_hosts(p, bad, 2, &e) < 0 && e.code == MINI_E_BAD_REQUEST && p->n_net_allow == 6);
    CHECK_STR(e.msg,
              "allow_hosts[1]: \"no spaces\": not a host name (letters, digits, '-', '_' and dots; \"*.\" "
              "only as a prefix), IP address or CIDR");
    cJSON *ov = parse("{\"network\": \"host\"}");
    CHECK(mini_profile_apply_overrides(p, ov, &e) < 0 && e.code == MINI_E_LIMIT);
    CHECK_STR(e.msg, "overrides.network: \"host\" would loosen the profile's allowlist");
    cJSON_Delete(ov);
    ov = parse("{\"network\": \"none\"}");
    CHECK(mini_profile_apply_overrides(p, ov, &e) == 0 && p->network == MINI_NET_NONE && p->n_net_allow == 0);
    cJSON_Delete(ov);
    mini_profile_free(p);

    /* none + allow_hosts: an allowlist of just those; host: an error. */
    p = from("{}", &e);
    char *one[] = { "pypi.org", NULL };
    CHECK(p && mini_profile_allow_hosts(p, one, 1, &e) == 0 && p->network == MINI_NET_ALLOW && p->n_net_allow == 1);
    mini_profile_free(p);
    p = from("{\"network\": \"host\"}", &e);
    CHECK(p && mini_profile_allow_hosts(p, one, 1, &e) < 0 && e.code == MINI_E_BAD_REQUEST);
    mini_profile_free(p);
}

static void test_accepted(void)
{
    struct mini_err e;
    /* network and namespaces.net follow each other when only one is given. */
    struct mini_profile *p = from("{\"network\": \"host\"}", &e);
    CHECK_MSG(p && !(p->namespaces & MINI_FEAT_NET_NS), "%s", e.msg);
    mini_profile_free(p);
    p = from("{\"namespaces\": {\"net\": false}}", &e);
    CHECK_MSG(p && p->network == MINI_NET_HOST, "%s", e.msg);
    mini_profile_free(p);

    /* Paths are normalised; string binds are read-only and optional. */
    p = from("{\"filesystem\": {\"binds\": [\"//usr/./lib/\", {\"path\": \"/srv/data\", \"writable\": true, "
             "\"optional\": false}, {\"path\": \"/opt\"}], \"hide\": [\"/etc//passwd\"],"
             " \"tmpfs\": [{\"path\": \"/scratch\", \"size_mb\": 8, \"mode\": \"700\"}]}}",
             &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (p) {
        CHECK_STR(p->binds[0].path, "/usr/lib");
        CHECK(!p->binds[0].writable && p->binds[0].optional);
        CHECK(p->binds[1].writable && !p->binds[1].optional);
        CHECK(!p->binds[2].writable && p->binds[2].optional);
        CHECK_STR(p->hide[0], "/etc/passwd");
        CHECK(p->n_tmpfs == 1 && p->tmpfs[0].size_bytes == 8u << 20 && p->tmpfs[0].mode == 0700);
        check_round_trip(p);
        mini_profile_free(p);
    }

    /* No UTS namespace: no hostname.  An allow list with default errno. */
    p = from("{\"name\": \"custom one\", \"namespaces\": {\"uts\": false, \"user\": false},"
             " \"seccomp\": {\"default_action\": \"errno\", \"errno\": \"ENOSYS\", \"allow\": [\"read\", \"write\"],"
             " \"deny\": [], \"socket_families\": []}, \"limits\": {\"memory_mb\": 0, \"timeout_s\": 2.5},"
             " \"environment\": {\"set\": {}, \"pass\": [\"GOPATH\"]}, \"require\": [\"landlock\", \"cgroups\"]}",
             &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (p) {
        CHECK_STR(p->name, "custom one");
        CHECK(p->hostname == NULL && !(p->namespaces & MINI_FEAT_USER_NS));
        CHECK(p->seccomp.default_action == MINI_SECCOMP_ERRNO && p->seccomp.errno_value == ENOSYS);
        CHECK(p->seccomp.n_allow == 2 && p->seccomp.n_deny == 0 && p->seccomp.n_socket_families == 0);
        CHECK(p->limits.memory_bytes == 0 && p->limits.timeout_s == 2.5);
        CHECK(p->env_set.n == 0 && p->n_env_pass == 1);
        CHECK(p->require == (MINI_FEAT_LANDLOCK | MINI_FEAT_CGROUPS));
        check_round_trip(p);
        mini_profile_free(p);
    }

    /* From a file: the name defaults to its base name; duplicate keys and
     * bad JSON are refused with the file named. */
    char tmp[] = "/tmp/mini-test-profileXXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/my-box.json", tmp);
    CHECK(write_str(path, "{\"limits\": {\"pids\": 10}}") == 0);
    p = mini_profile_load_file(path, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (p) {
        CHECK_STR(p->name, "my-box");
        CHECK(p->limits.pids == 10);
        mini_profile_free(p);
    }
    CHECK(write_str(path, "{\"limits\": {\"pids\": 1}, \"limits\": {}}") == 0);
    p = mini_profile_load_file(path, &e);
    CHECK(p == NULL && e.code == MINI_E_PROFILE_INVALID);
    CHECK_MSG(strncmp(e.msg, path, strlen(path)) == 0 && strstr(e.msg, "duplicate key \"limits\""), "%s", e.msg);
    CHECK(write_str(path, "{\"limits\": {\"pids\": -3}}") == 0);
    p = mini_profile_load_file(path, &e);
    CHECK(p == NULL && e.code == MINI_E_PROFILE_INVALID);
    char want[512];
    snprintf(want, sizeof want, "%s: limits.pids: must be a non-negative integer", path);
    CHECK_STR(e.msg, want);
    CHECK(write_str(path, "{\"limits\": ") == 0);
    p = mini_profile_load_file(path, &e);
    CHECK(p == NULL && e.code == MINI_E_PROFILE_INVALID);

    /* Built-in names. */
    p = mini_profile_load_builtin(tmp, "my-box", &e);
    CHECK(p == NULL && e.code == MINI_E_PROFILE_INVALID); /* still the bad JSON */
    p = mini_profile_load_builtin(dir, "../strict", &e);
    CHECK(p == NULL && e.code == MINI_E_PROFILE_INVALID && strstr(e.msg, "invalid profile name"));
    p = mini_profile_load_builtin(dir, "Strict", &e);
    CHECK(p == NULL && e.code == MINI_E_PROFILE_INVALID);
    p = mini_profile_load_builtin(dir, "", &e);
    CHECK(p == NULL && e.code == MINI_E_PROFILE_INVALID);
    p = mini_profile_load_builtin(dir, "no-such-profile", &e);
    CHECK(p == NULL && e.code == MINI_E_PROFILE_INVALID);
    CHECK_MSG(strncmp(e.msg, "no built-in profile \"no-such-profile\"", 37) == 0, "%s", e.msg);
    unlink(path);
    rmdir(tmp);

    /* The default directory. */
    setenv("MINI_PROFILE_DIR", tmp, 1);
    CHECK_STR(mini_profile_default_dir(), tmp);
    unsetenv("MINI_PROFILE_DIR");
    char strict[4096];
    snprintf(strict, sizeof strict, "%s/strict.json", mini_profile_default_dir());
    CHECK_MSG(access(strict, R_OK) == 0, "%s", strict);
}

static struct mini_profile *builtin(const char *name)
{
    struct mini_err e;
    struct mini_profile *p = mini_profile_load_builtin(dir, name, &e);
    if (!p) {
        fprintf(stderr, "%s\n", e.msg);
        abort();
    }
    return p;
}

static int override(struct mini_profile *p, const char *json, struct mini_err *e)
{
    cJSON *v = parse(json);
    int r = mini_profile_apply_overrides(p, v, e);
    cJSON_Delete(v);
    return r;
}

#define OV_FAIL(p, json, code_, want_)                                 \
    do {                                                               \
        struct mini_err _e;                                            \
        CHECK_MSG(override(p, json, &_e) == -1, "accepted: %s", json); \
        CHECK(_e.code == (code_));                                     \
        CHECK_STR(_e.msg, want_);                                      \
    } while (0)

static void test_overrides(void)
{
    struct mini_err e;
    struct mini_profile *p = builtin("standard");
    CHECK(mini_profile_apply_overrides(p, NULL, &e) == 0);
    int r = override(p,
                     "{\"limits\": {\"timeout_s\": 10, \"memory_mb\": 512, \"open_files\": 64},"
                     " \"network\": \"none\", \"filesystem\": {\"hide\": [\"/srv\", \"/etc/ssh\"],"
                     " \"workspace_writable\": false}, \"seccomp\": {\"deny\": [\"chmod\", \"mount\"]}}",
                     &e);
    CHECK_MSG(r == 0, "%s", e.msg);
    CHECK(p->limits.timeout_s == 10 && p->limits.memory_bytes == 512u << 20 && p->limits.open_files == 64);
    CHECK(p->limits.pids == 1024); /* untouched */
    CHECK(!p->workspace_writable);
    CHECK(has_str(p->hide, p->n_hide, "/srv") && strcmp(p->hide[p->n_hide - 1], "/srv") == 0);
    CHECK(has_str(p->seccomp.deny, p->seccomp.n_deny, "chmod"));
    size_t n_deny = p->seccomp.n_deny;
    CHECK(override(p, "{\"seccomp\": {\"deny\": [\"chmod\"]}, \"filesystem\": {\"workspace_writable\": false}}", &e) ==
          0);
    CHECK(p->seccomp.n_deny == n_deny);

    /* Loosening fails, names the key and both values, and changes nothing. */
    OV_FAIL(p, "{\"limits\": {\"timeout_s\": 5, \"memory_mb\": 99999}}", MINI_E_LIMIT,
            "overrides.limits.memory_mb: 99999 would loosen the profile's 512");
    CHECK(p->limits.timeout_s == 10);
    OV_FAIL(p, "{\"limits\": {\"timeout_s\": 11}}", MINI_E_LIMIT,
            "overrides.limits.timeout_s: 11 would loosen the profile's 10");
    OV_FAIL(p, "{\"limits\": {\"pids\": 0}}", MINI_E_LIMIT,
            "overrides.limits.pids: 0 (unlimited) would loosen the profile's 1024");
    OV_FAIL(p, "{\"network\": \"host\"}", MINI_E_LIMIT,
            "overrides.network: \"host\" would loosen the profile's \"none\"");
    OV_FAIL(p, "{\"filesystem\": {\"workspace_writable\": true}}", MINI_E_LIMIT,
            "overrides.filesystem.workspace_writable: true would loosen the profile's false");
    OV_FAIL(p, "{\"filesystem\": {\"hide\": [\"/new\"]}, \"seccomp\": {\"deny\": [\"nope\"]}}", MINI_E_BAD_REQUEST,
            "overrides.seccomp.deny[0]: unknown syscall \"nope\"");
    CHECK(!has_str(p->hide, p->n_hide, "/new"));

    /* Anything else is a bad request naming the key. */
    OV_FAIL(p, "{\"bogus\": 1}", MINI_E_BAD_REQUEST, "overrides.bogus: unknown key");
    OV_FAIL(p, "{\"limts\": {}}", MINI_E_BAD_REQUEST, "overrides.limts: unknown key (did you mean limits?)");
    OV_FAIL(p, "{\"filesystem\": {\"hid\": []}}", MINI_E_BAD_REQUEST,
            "overrides.filesystem.hid: unknown key (did you mean hide?)");
    OV_FAIL(p, "{\"namespaces\": {\"net\": true}}", MINI_E_BAD_REQUEST, "overrides.namespaces: cannot be overridden");
    OV_FAIL(p, "{\"environment\": {}}", MINI_E_BAD_REQUEST, "overrides.environment: cannot be overridden");
    OV_FAIL(p, "{\"filesystem\": {\"binds\": [\"/\"]}}", MINI_E_BAD_REQUEST,
            "overrides.filesystem.binds: cannot be overridden");
    OV_FAIL(p, "{\"filesystem\": {\"size\": 1}}", MINI_E_BAD_REQUEST, "overrides.filesystem.size: unknown key");
    OV_FAIL(p, "{\"seccomp\": {\"errno\": \"ENOSYS\"}}", MINI_E_BAD_REQUEST,
            "overrides.seccomp.errno: cannot be overridden");
    OV_FAIL(p, "{\"limits\": {\"pids\": \"x\"}}", MINI_E_BAD_REQUEST,
            "overrides.limits.pids: must be a non-negative integer");
    OV_FAIL(p, "{\"limits\": {\"walltime\": 1}}", MINI_E_BAD_REQUEST, "overrides.limits.walltime: unknown key");
    OV_FAIL(p, "{\"network\": \"lan\"}", MINI_E_BAD_REQUEST, "overrides.network: must be \"none\" or \"host\"");
    OV_FAIL(p, "{\"filesystem\": {\"hide\": [\"rel\"]}}", MINI_E_BAD_REQUEST,
            "overrides.filesystem.hide[0]: must be an absolute path");
    {
        cJSON *arr = parse("[]");
        CHECK(mini_profile_apply_overrides(p, arr, &e) == -1 && e.code == MINI_E_BAD_REQUEST);
        CHECK_STR(e.msg, "overrides: must be an object");
        cJSON_Delete(arr);
    }
    check_round_trip(p);
    mini_profile_free(p);

    /* An unlimited (0) limit may be tightened; host network may become none. */
    p = builtin("permissive");
    struct mini_profile *q = from("{\"limits\": {\"memory_mb\": 0}}", &e);
    CHECK(q != NULL);
    CHECK(override(q, "{\"limits\": {\"memory_mb\": 100}}", &e) == 0 && q->limits.memory_bytes == 100u << 20);
    CHECK(override(p, "{\"network\": \"host\"}", &e) == 0 && p->network == MINI_NET_HOST);
    CHECK(override(p, "{\"network\": \"none\"}", &e) == 0);
    CHECK(p->network == MINI_NET_NONE && (p->namespaces & MINI_FEAT_NET_NS));
    check_round_trip(p);
    mini_profile_free(p);
    mini_profile_free(q);
}

/* mini_profile_list: *.json only, no hidden files, sorted by name (the
 * pointers' targets, not the pointers), bounded. */
static void test_list(void)
{
    char tmp[] = "/tmp/mini-plist.XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    const char *files[] = { "zeta.json",    "alpha.json", "mid.json",  "beta.json",
                            ".hidden.json", "notes.txt",  "x.json.bak" };
    char path[256];
    for (size_t i = 0; i < MINI_ARRAY_SIZE(files); i++) {
        snprintf(path, sizeof path, "%s/%s", tmp, files[i]);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f)
            fclose(f);
    }
    char *names[8];
    size_t n = 0;
    CHECK(mini_profile_list(tmp, names, MINI_ARRAY_SIZE(names), &n) == 0);
    CHECK(n == 4);
    const char *want[] = { "alpha", "beta", "mid", "zeta" };
    for (size_t i = 0; i < n && i < 4; i++)
        CHECK_STR(names[i], want[i]);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    CHECK(mini_profile_list(tmp, names, 2, &n) == 0 && n == 2);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    for (size_t i = 0; i < MINI_ARRAY_SIZE(files); i++) {
        snprintf(path, sizeof path, "%s/%s", tmp, files[i]);
        unlink(path);
    }
    rmdir(tmp);
    CHECK(mini_profile_list("/nonexistent-dir", names, 8, &n) == -1 && errno == ENOENT);
}

int main(int argc, char **argv)
{
    test_list();
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROFILE_DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    test_features();
    test_builtins();
    test_malformed();
    test_accepted();
    test_network_allow();
    test_overrides();
    return check_summary();
}

/* mini-sandbox image: import, pull, ls, inspect, tag, rm, prune (container/image.h;
 * docs/images.md). */
#include "cli_image.h"
#include "cli_util.h"
#include "image.h"
#include "mini/cleanup.h"
#include "mini/json.h"
#include "mini/str.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: mini-sandbox image COMMAND [OPTION]...\n"
            "Images stored in $MINI_IMAGE_STORE, else /var/lib/mini/images (root), else\n"
            "$XDG_DATA_HOME/mini/images (~/.local/share/mini/images).\n\n"
            "  import SRC [--name NAME[:TAG]] [--format oci|docker-archive|oci-archive|rootfs]\n"
            "             [--max-size BYTES] [--max-entries N] [-q]\n"
            "      SRC: an OCI layout directory (DIR or DIR:TAG), a docker save archive,\n"
            "      or a root filesystem tarball (any compression); - reads it from standard input.\n"
            "      An archive imported before (the same bytes) is only named again.\n"
            "      --max-size   limit on the bytes of all files (K, M, G suffixes); default: half the\n"
            "                   free space of the store's filesystem at the start, at most 64G, so\n"
            "                   that a compression bomb stops before it fills the disk\n"
            "      --max-entries limit on the entries of all layers (default 2000000)\n"
            "  pull REF [--creds USER:PASS] [--cert-dir DIR] [--tls-verify=false] [-q]\n"
            "      REF: [REGISTRY/]NAME[:TAG|@sha256:HEX], as docker and podman read it\n"
            "      (python:3.12 is docker.io/library/python:3.12); see image pull --help\n"
            "  ls [--json]                 list images\n"
            "  inspect NAME [--json]       one image: name, id, layers, config\n"
            "  tag SRC NAME[:TAG]          another name for the image SRC names (:latest when no tag)\n"
            "  rm NAME...                  remove names; an image goes with its last name\n"
            "  prune                       remove unnamed images, unused layers, failed imports\n\n"
            "Exit status: 0 on success, 1 when the operation failed, 2 for a usage error.\n");
}

static int fail(const struct mini_err *e)
{
    fprintf(stderr, "mini-sandbox: image: %s\n", e->msg);
    return 1;
}

static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return false;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    case 't':
    case 'T': shift = 40; break;
    default: return false;
    }
    if (*end && end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB"))
        return false;
    if (v > (UINT64_MAX >> shift) || v == 0)
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

struct progress {
    bool tty;
    bool shown;
};

static void on_progress(void *arg, const char *what, uint64_t done, uint64_t total)
{
    struct progress *p = arg;
    if (!p->tty)
        return;
    char a[32], b[32];
    if (strncmp(what, "applying", 8) == 0) {
        fprintf(stderr, "\r\033[K%s", what);
    } else {
        mini_human_bytes(a, sizeof a, (double)done);
        if (total) {
            mini_human_bytes(b, sizeof b, (double)total);
            fprintf(stderr, "\r\033[K%s: %s / %s (%.0f%%)", what, a, b, 100.0 * (double)done / (double)total);
        } else {
            fprintf(stderr, "\r\033[K%s: %s", what, a);
        }
    }
    p->shown = true;
}

static int cmd_import(int argc, char **argv)
{
    static const struct option opts[] = {
        { "name", required_argument, NULL, 'n' },
        { "format", required_argument, NULL, 'f' },
        { "max-size", required_argument, NULL, 'S' },
        { "max-entries", required_argument, NULL, 'E' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    struct mini_import_opts o = { 0 };
    bool quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!mini_image_name_valid(optarg))
                return mini_cli_usage_error("image import",
                                            "--name: not a valid image name: %s (lower-case [a-z0-9._/-], "
                                            "then an optional :TAG)",
                                            optarg);
            o.name = optarg;
            break;
        case 'f':
            if (!strcmp(optarg, "oci"))
                o.format = MINI_IMG_OCI;
            else if (!strcmp(optarg, "docker-archive") || !strcmp(optarg, "docker") || !strcmp(optarg, "oci-archive"))
                o.format = MINI_IMG_DOCKER;
            else if (!strcmp(optarg, "rootfs"))
                o.format = MINI_IMG_ROOTFS;
            else
                return mini_cli_usage_error("image import",
                                            "--format: oci, docker-archive, oci-archive or rootfs, not %s", optarg);
            break;
        case 'S':
            if (!parse_size(optarg, &o.max_bytes))
                return mini_cli_usage_error("image import", "--max-size: not a size: %s", optarg);
            break;
        case 'E':
            if (!parse_size(optarg, &o.max_entries))
                return mini_cli_usage_error("image import", "--max-entries: not a count: %s", optarg);
            break;
        case 'q': quiet = true; break;
        case 'h': usage(stdout); return 0;
        default: return mini_cli_getopt_error("image import", c, optopt, argv, optind);
        }
    }
    if (optind != argc - 1)
        return mini_cli_usage_error("image import", optind >= argc ? "no source given" : "one source only");
    struct progress pr = { .tty = !quiet && isatty(2) };
    o.progress = on_progress;
    o.progress_arg = &pr;
    struct mini_image_store s;
    struct mini_err e;
    if (mini_image_store_open(&s, NULL, &e) < 0)
        return fail(&e);
    struct mini_import_result r;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = mini_image_import(&s, argv[optind], &o, &r, &e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (pr.shown)
        fprintf(stderr, "\r\033[K");
    mini_image_store_close(&s);
    if (rc < 0) {
        mini_import_result_free(&r);
        return fail(&e);
    }
    if (r.skipped_devices || r.skipped_fifos || r.stripped_setid)
        fprintf(stderr,
                "mini-sandbox: image: note: skipped %llu device node(s) and %llu FIFO(s)/socket(s), "
                "dropped setuid/setgid from %llu file(s)\n",
                (unsigned long long)r.skipped_devices, (unsigned long long)r.skipped_fifos,
                (unsigned long long)r.stripped_setid);
    if (!quiet && r.known) {
        printf("%s %s (imported before: the same archive, %s; %.2f s)\n", r.name ? r.name : "(unnamed)", r.id,
               r.archive, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    } else if (!quiet) {
        char sz[32];
        mini_human_bytes(sz, sizeof sz, (double)r.bytes);
        printf("%s %s (%u layer%s, %u already stored; %s in %llu entries; %.2f s)\n", r.name ? r.name : "(unnamed)",
               r.id, r.layers, r.layers == 1 ? "" : "s", r.layers_shared, sz, (unsigned long long)r.entries,
               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    } else {
        printf("%s\n", r.id);
    }
    mini_import_result_free(&r);
    return 0;
}

/* [--json] and nothing else but `want` positional arguments. */
static int simple_opts(int argc, char **argv, const char *sub, bool *json, int min, int max, int *rc)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            if (!json) {
                *rc = mini_cli_usage_error(sub, "unknown option --json");
                return -1;
            }
            *json = true;
            break;
        case 'h':
            usage(stdout);
            *rc = 0;
            return -1;
        default: *rc = mini_cli_getopt_error(sub, c, optopt, argv, optind); return -1;
        }
    }
    int n = argc - optind;
    if (n < min || n > max) {
        *rc = mini_cli_usage_error(sub, n < min ? "no image named" : "unexpected argument \"%s\"",
                                   n < min ? "" : argv[optind + max]);
        return -1;
    }
    return 0;
}

static int cmd_ls(int argc, char **argv)
{
    bool json = false;
    int rc;
    if (simple_opts(argc, argv, "image ls", &json, 0, 0, &rc) < 0)
        return rc;
    struct mini_image_store s;
    struct mini_err e;
    if (mini_image_store_open(&s, NULL, &e) < 0)
        return fail(&e);
    struct mini_image_info *v;
    size_t n;
    rc = mini_image_list(&s, &v, &n, &e);
    mini_image_store_close(&s);
    if (rc < 0)
        return fail(&e);
    if (json) {
        _cleanup_cjson_ cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON *names = cJSON_AddArrayToObject(o, "names");
            for (size_t k = 0; k < v[i].n_names; k++)
                cJSON_AddItemToArray(names, cJSON_CreateString(v[i].names[k]));
            cJSON_AddStringToObject(o, "id", v[i].id);
            cJSON_AddNumberToObject(o, "size", (double)v[i].size);
            cJSON_AddNumberToObject(o, "layers", v[i].n_layers);
            cJSON_AddNumberToObject(o, "created", (double)v[i].created);
            cJSON_AddItemToArray(a, o);
        }
        char *t = cJSON_Print(a);
        printf("%s\n", t ? t : "[]");
        free(t);
    } else {
        printf("%-32s %-19s %7s %10s  %s\n", "NAME", "ID", "LAYERS", "SIZE", "IMPORTED");
        for (size_t i = 0; i < n; i++) {
            char sz[32], when[32] = "-";
            mini_human_bytes(sz, sizeof sz, (double)v[i].size);
            time_t t = (time_t)v[i].created;
            struct tm tm;
            if (t && localtime_r(&t, &tm))
                strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
            size_t shown = v[i].n_names ? v[i].n_names : 1;
            for (size_t k = 0; k < shown; k++)
                printf("%-32s %-19.19s %7d %10s  %s\n", v[i].n_names ? v[i].names[k] : "<none>", v[i].id + 7,
                       v[i].n_layers, sz, when);
        }
    }
    mini_image_info_free(v, n);
    return 0;
}

static int cmd_inspect(int argc, char **argv)
{
    bool json = false;
    int rc;
    if (simple_opts(argc, argv, "image inspect", &json, 1, 1, &rc) < 0)
        return rc;
    struct mini_image_store s;
    struct mini_err e;
    if (mini_image_store_open(&s, NULL, &e) < 0)
        return fail(&e);
    _cleanup_cjson_ cJSON *j = mini_image_inspect(&s, argv[optind], &e);
    mini_image_store_close(&s);
    if (!j)
        return fail(&e);
    if (json) {
        char *t = cJSON_Print(j);
        printf("%s\n", t ? t : "{}");
        free(t);
        return 0;
    }
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(j, "names"), *n;
    printf("Names:");
    cJSON_ArrayForEach (n, names) {
        printf(" %s", n->valuestring);
    }
    printf("\nId: %s\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "id")));
    printf("Format: %s\nSource: %s\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "format")),
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "source")));
    char sz[32];
    mini_human_bytes(sz, sizeof sz, cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "size")));
    printf("Size: %s\nRoot: %s\nLayers:\n", sz, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "rootfs")));
    cJSON_ArrayForEach (n, cJSON_GetObjectItemCaseSensitive(j, "layers")) {
        mini_human_bytes(sz, sizeof sz, cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(n, "size")));
        printf("  %s %s\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "diff_id")), sz);
    }
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "config"), "config");
    const char *wd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "WorkingDir"));
    const char *user = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "User"));
    printf("WorkingDir: %s\nUser: %s\nEnv:\n", wd && *wd ? wd : "/", user && *user ? user : "(root)");
    cJSON_ArrayForEach (n, cJSON_GetObjectItemCaseSensitive(cfg, "Env")) {
        if (cJSON_IsString(n))
            printf("  %s\n", n->valuestring);
    }
    return 0;
}

static int cmd_rm(int argc, char **argv)
{
    int rc;
    if (simple_opts(argc, argv, "image rm", NULL, 1, 1 << 20, &rc) < 0)
        return rc;
    struct mini_image_store s;
    struct mini_err e;
    if (mini_image_store_open(&s, NULL, &e) < 0)
        return fail(&e);
    rc = 0;
    for (int i = optind; i < argc; i++) {
        if (mini_image_remove(&s, argv[i], &e) < 0)
            rc = fail(&e);
        else
            printf("removed %s\n", argv[i]);
    }
    mini_image_store_close(&s);
    return rc;
}

static int cmd_tag(int argc, char **argv)
{
    int rc;
    if (simple_opts(argc, argv, "image tag", NULL, 2, 2, &rc) < 0)
        return rc;
    if (!mini_image_name_valid(argv[optind + 1]))
        return mini_cli_usage_error("image tag",
                                    "not a valid image name: %s (lower-case [a-z0-9._/-], then an optional :TAG)",
                                    argv[optind + 1]);
    struct mini_image_store s;
    struct mini_err e;
    if (mini_image_store_open(&s, NULL, &e) < 0)
        return fail(&e);
    char id[MINI_DIGEST_LEN + 1];
    rc = mini_image_tag(&s, argv[optind], argv[optind + 1], id, &e);
    mini_image_store_close(&s);
    if (rc < 0)
        return fail(&e);
    const char *dst = argv[optind + 1];
    const char *slash = strrchr(dst, '/');
    printf("%s%s %s\n", dst, strchr(slash ? slash : dst, ':') ? "" : ":latest", id);
    return 0;
}

static int cmd_prune(int argc, char **argv)
{
    int rc;
    if (simple_opts(argc, argv, "image prune", NULL, 0, 0, &rc) < 0)
        return rc;
    struct mini_image_store s;
    struct mini_err e;
    if (mini_image_store_open(&s, NULL, &e) < 0)
        return fail(&e);
    int64_t freed = 0;
    rc = mini_image_prune(&s, &freed, &e);
    mini_image_store_close(&s);
    if (rc < 0)
        return fail(&e);
    char sz[32];
    mini_human_bytes(sz, sizeof sz, (double)freed);
    printf("freed %s\n", sz);
    return 0;
}

/* ---- image pull (container/image_pull.c) */

static void pull_usage(FILE *f)
{
    fprintf(f,
            "Usage: mini-sandbox image pull REF [--creds USER:PASS] [--cert-dir DIR] [--tls-verify=true|false] "
            "[-q]\n"
            "  REF: [REGISTRY[:PORT]/]NAME[:TAG][@sha256:HEX] (python:3.12 is docker.io/library/python:3.12)\n"
            "  --creds USER:PASS  credentials for REF's registry (else $REGISTRY_AUTH_FILE,\n"
            "                     $XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json)\n"
            "  --cert-dir DIR     the registry's CA is DIR/ca.crt (with the system's CAs)\n"
            "  --tls-verify=false TLS unverified, and plain HTTP allowed (loopback registries: always allowed)\n"
            "  MINI_REGISTRY_MIRRORS=REGISTRY=HOST[,...] mirrors tried first\n");
}

static int cmd_pull(int argc, char **argv)
{
    static const struct option opts[] = {
        { "creds", required_argument, NULL, 'c' },
        { "cert-dir", required_argument, NULL, 'C' },
        { "tls-verify", optional_argument, NULL, 'T' },
        { "parallel", required_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    struct mini_pull_opts o = { .tls_verify = true };
    bool quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (!strchr(optarg, ':'))
                return mini_cli_usage_error("image pull", "--creds: USER:PASS");
            o.creds = optarg;
            break;
        case 'C': o.cert_dir = optarg; break;
        case 'T':
            if (!optarg || !strcmp(optarg, "true"))
                o.tls_verify = true;
            else if (!strcmp(optarg, "false"))
                o.tls_verify = false;
            else
                return mini_cli_usage_error("image pull", "--tls-verify: true or false, not %s", optarg);
            break;
        case 'P': {
            uint64_t n;
            if (!parse_size(optarg, &n) || n > 16)
                return mini_cli_usage_error("image pull", "--parallel: 1 to 16, not %s", optarg);
            o.parallel = (unsigned)n;
            break;
        }
        case 'q': quiet = true; break;
        case 'h': pull_usage(stdout); return 0;
        default: return mini_cli_getopt_error("image pull", c, optopt, argv, optind);
        }
    }
    if (optind != argc - 1)
        return mini_cli_usage_error("image pull", optind >= argc ? "no image reference given" : "one reference only");
    o.output = quiet ? MINI_PULL_QUIET : isatty(2) ? MINI_PULL_TTY : MINI_PULL_LINES;
    struct mini_image_store s;
    struct mini_err e;
    if (mini_image_store_open(&s, NULL, &e) < 0)
        return fail(&e);
    struct mini_pull_result r;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = mini_image_pull(&s, argv[optind], &o, &r, &e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    mini_image_store_close(&s);
    if (rc < 0)
        return fail(&e);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (quiet) {
        printf("%s\n", r.id);
    } else if (r.up_to_date) {
        printf("%s %s (up to date; %.2f s)\n", r.name, r.id, secs);
    } else {
        char sz[32];
        mini_human_bytes(sz, sizeof sz, (double)r.bytes_fetched);
        printf("%s %s (%u layer%s, %u fetched, %s; %.2f s)\n", r.name, r.id, r.layers, r.layers == 1 ? "" : "s",
               r.layers_fetched, sz, secs);
    }
    return 0;
}

int mini_cli_image(int argc, char **argv)
{
    if (argc < 2)
        return mini_cli_usage_error("image", "no command given (import, pull, ls, inspect, tag, rm or prune)");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "import"))
        return cmd_import(argc - 1, argv + 1);
    if (!strcmp(cmd, "ls") || !strcmp(cmd, "list"))
        return cmd_ls(argc - 1, argv + 1);
    if (!strcmp(cmd, "inspect"))
        return cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "rm") || !strcmp(cmd, "remove"))
        return cmd_rm(argc - 1, argv + 1);
    if (!strcmp(cmd, "prune"))
        return cmd_prune(argc - 1, argv + 1);
    if (!strcmp(cmd, "tag"))
        return cmd_tag(argc - 1, argv + 1);
    if (!strcmp(cmd, "pull"))
        return cmd_pull(argc - 1, argv + 1);
    return mini_cli_usage_error("image", "unknown command \"%s\" (import, pull, ls, inspect, tag, rm or prune)", cmd);
}

/* Importing images into the store (image_store.c describes its layout).
 *
 * A layer is read in one pass: libarchive decompresses the blob (a "raw"
 * reader with every filter), while we hash the compressed bytes (the
 * blob's digest) and the decompressed ones (the diff id), and a second
 * libarchive reader parses the tar stream from those bytes.  We write every
 * entry ourselves, by fd: parents are opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), names with O_NOFOLLOW/O_EXCL, so no entry can ever
 * reach outside the layer's directory, whatever its name or the symlinks
 * before it.  Devices, FIFOs and sockets are skipped, setuid/setgid bits
 * dropped, xattrs ignored, sizes and counts capped.
 *
 * The image's root is then built from its layers in order, hard-linking
 * files from the layers' trees and applying OCI whiteouts (.wh.NAME and
 * .wh..wh..opq), so identical layers are stored once.
 *
 * The pieces, and what they share: import_internal.h. */
#include "import_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int write_image(struct import *im, const char *format, const char *src, const struct mini_buf *config,
                       const struct layers *ls, char id[static MINI_DIGEST_LEN + 1], struct mini_err *e)
{
    imp_sha_of(config->data, config->len, id);
    _cleanup_cjson_ cJSON *j = cJSON_CreateObject();
    cJSON *cfg = mini_json_parse(config->data, config->len, e);
    if (!j || !cfg) {
        cJSON_Delete(cfg);
        return -1;
    }
    cJSON_AddStringToObject(j, "id", id);
    cJSON_AddNumberToObject(j, "created", (double)time(NULL));
    cJSON_AddStringToObject(j, "format", format);
    cJSON_AddStringToObject(j, "source", src);
    cJSON *layers = cJSON_AddArrayToObject(j, "layers");
    int64_t size = 0;
    for (size_t i = 0; i < ls->n; i++) {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddStringToObject(l, "diff_id", ls->diff_ids[i]);
        /* its size, from its layer.json */
        _cleanup_free_ char *p = NULL;
        _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
        struct mini_err ignored;
        int64_t v = 0;
        if (asprintf(&p, "%s/layers/%s/layer.json", im->s->root, ls->diff_ids[i] + 7) >= 0 &&
            mini_read_file(p, &b, 64u << 20, &ignored) == 0) {
            _cleanup_cjson_ cJSON *lj = mini_json_parse(b.data, b.len, &ignored);
            if (lj && mini_json_get_int(cJSON_GetObjectItemCaseSensitive(lj, "size"), 0, MINI_JSON_INT_MAX, &v))
                size += v;
        }
        cJSON_AddNumberToObject(l, "size", (double)v);
        cJSON_AddItemToArray(layers, l);
    }
    cJSON_AddNumberToObject(j, "size", (double)size);
    cJSON_AddItemToObject(j, "config", cfg);
    _cleanup_free_ char *text = cJSON_Print(j);
    _cleanup_free_ char *path = NULL;
    if (!text || asprintf(&path, "%s/image/image.json", im->tmp) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_write_file_atomic(path, text, strlen(text), 0600, e) < 0)
        return -1;
    char dst[128];
    snprintf(dst, sizeof dst, "images/%s", id + 7);
    if (renameat(im->tmpfd, "image", im->s->dirfd, dst) < 0 && errno != EEXIST && errno != ENOTEMPTY)
        return mini_err_sys(e, MINI_E_IO, errno, "storing %s", dst);
    return 0;
}

/* "DIR:TAG" for an OCI layout whose DIR exists. */
static int split_tag(const char *src, char **dir, char **tag)
{
    struct stat st;
    *dir = *tag = NULL;
    if (stat(src, &st) == 0)
        return (*dir = strdup(src)) ? 0 : -1;
    const char *colon = strrchr(src, ':');
    if (colon && colon != src) {
        _cleanup_free_ char *d = strndup(src, (size_t)(colon - src));
        if (d && stat(d, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
            *dir = TAKE_PTR(d);
            return (*tag = strdup(colon + 1)) ? 0 : -1;
        }
    }
    return (*dir = strdup(src)) ? 0 : -1;
}

/* A name for a tarball: its base name without extensions, ":latest". */
static char *name_from_path(const char *path)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char buf[129];
    size_t n = 0;
    for (const char *c = base; *c && *c != '.' && n < sizeof buf - 1; c++) {
        char ch = *c;
        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_'))
            ch = '-';
        buf[n++] = ch;
    }
    buf[n] = '\0';
    if (!n || !mini_image_name_valid(buf))
        return NULL;
    return strdup(buf);
}

void mini_import_result_free(struct mini_import_result *r) { free(r->name); }

uint64_t mini_import_default_max_bytes(const struct mini_image_store *s, uint64_t *free_bytes)
{
    struct statvfs sv;
    if (statvfs(s->root, &sv) < 0 || !sv.f_frsize) {
        *free_bytes = UINT64_MAX;
        return MINI_IMPORT_DEFAULT_MAX_BYTES;
    }
    uint64_t avail = (uint64_t)sv.f_bavail;
    *free_bytes = avail > UINT64_MAX / sv.f_frsize ? UINT64_MAX - 1 : avail * sv.f_frsize;
    uint64_t half = *free_bytes / 2;
    return half < MINI_IMPORT_DEFAULT_MAX_BYTES ? half : MINI_IMPORT_DEFAULT_MAX_BYTES;
}

int mini_image_import(struct mini_image_store *s, const char *src, const struct mini_import_opts *opts,
                      struct mini_import_result *res, struct mini_err *e)
{
    memset(res, 0, sizeof *res);
    if (opts->name && !mini_image_name_valid(opts->name))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "--name: not a valid image name: \"%.*s\"",
                            MINI_JSON_SHOW(opts->name));
    struct import im = {
        .s = s,
        .o = opts,
        .res = res,
        .e = e,
        .root = geteuid() == 0,
        .max_bytes = opts->max_bytes,
        .max_bytes_default = !opts->max_bytes,
        .free_bytes = UINT64_MAX,
        .max_entries = opts->max_entries ? opts->max_entries : MINI_IMPORT_DEFAULT_MAX_ENTRIES,
        .tmpfd = -1,
        .lockfd = -1,
        .what = "image",
    };
    _cleanup_free_ char *dir = NULL, *tag = NULL, *name = NULL;
    _cleanup_buf_ struct mini_buf config = MINI_BUF_INIT;
    _cleanup_buf_ struct mini_buf dmanifest = MINI_BUF_INIT;
    struct mini_image_config cfg;
    memset(&cfg, 0, sizeof cfg);
    struct layers ls = { 0 };
    int rc = -1;
    _cleanup_close_ int gl = -1;
    const char *format = NULL;
    struct stash stash = { 0 };
    enum archive_kind kind = AK_ROOTFS;

    if (split_tag(src, &dir, &tag) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    struct stat st;
    if (stat(dir, &st) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", src);
    enum mini_image_format fmt = opts->format;
    if (fmt == MINI_IMG_AUTO && S_ISDIR(st.st_mode))
        fmt = MINI_IMG_OCI;
    if (fmt == MINI_IMG_OCI && !S_ISDIR(st.st_mode))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: an OCI layout is a directory", dir);
    if (fmt != MINI_IMG_OCI && !S_ISREG(st.st_mode))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a regular file", dir);
    if (fmt == MINI_IMG_AUTO || fmt == MINI_IMG_DOCKER) {
        _cleanup_free_ char *foreign = NULL;
        int k = imp_sniff_file(dir, &dmanifest, &stash, &kind, &foreign, e);
        if (k < 0) {
            imp_stash_free(&stash);
            return -1;
        }
        if (fmt == MINI_IMG_DOCKER && k == 0) {
            imp_stash_free(&stash);
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not an image archive (docker-archive or oci-archive)", dir);
        }
        if (k == 0 && kind == AK_UNKNOWN) {
            imp_stash_free(&stash);
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "%s: not an image archive (it has \"%.*s\"), nor a root filesystem (no bin, usr or "
                                "etc at its top); --format rootfs imports it as a root filesystem all the same",
                                dir, MINI_JSON_SHOW(foreign));
        }
        fmt = k ? MINI_IMG_DOCKER : MINI_IMG_ROOTFS;
    }
    if (opts->tag && !tag && !(tag = strdup(opts->tag)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");

    if (!(im.buf = malloc(BUF_SIZE)) || !(im.ubuf = malloc(BUF_SIZE))) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    gl = mini_image_lock(s, "lock", LOCK_SH, e);
    if (gl < 0)
        goto out;
    if (im.max_bytes_default)
        im.max_bytes = mini_import_default_max_bytes(s, &im.free_bytes);
    if (asprintf(&im.tmp, "%s/tmp/import-XXXXXX", s->root) < 0) {
        im.tmp = NULL; /* undefined after a failure */
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    if (!mkdtemp(im.tmp)) {
        mini_err_sys(e, MINI_E_IO, errno, "creating a directory in %s/tmp", s->root);
        goto out;
    }
    if ((im.lockfd = mini_owner_lock(im.tmp, true, e)) < 0)
        goto out;
    im.tmpfd = open(im.tmp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (im.tmpfd < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "%s", im.tmp);
        goto out;
    }
    int r;
    if (fmt == MINI_IMG_OCI) {
        format = "oci";
        r = imp_import_oci(&im, dir, tag, &config, &name, &cfg, &ls, e);
    } else if (fmt == MINI_IMG_DOCKER) {
        r = imp_import_image_archive(&im, dir, kind, &dmanifest, &stash, tag, &config, &name, &cfg, &ls, &format, e);
    } else {
        format = "rootfs";
        r = imp_import_rootfs(&im, dir, &config, &cfg, &ls, e);
        if (r == 0 && !name)
            name = name_from_path(dir);
    }
    if (r < 0)
        goto out;
    res->layers = (unsigned)ls.n;
    res->layers_shared += ls.shared;
    if (opts->name) {
        free(name);
        name = strdup(opts->name);
    } else if (fmt == MINI_IMG_OCI || kind == AK_OCI_ARCHIVE) {
        /* Its ref name: a full NAME:TAG, or a bare tag of the directory's
         * (or archive file's) name ("DIR:latest"). */
        _cleanup_free_ char *base = name_from_path(dir);
        if (!name || !strchr(name, ':') || !mini_image_name_valid(name)) {
            char *full = NULL;
            if (base && name && asprintf(&full, "%s:%s", base, name) >= 0 && mini_image_name_valid(full)) {
                free(name);
                name = full;
            } else {
                free(full);
                free(name);
                name = TAKE_PTR(base);
            }
        }
    } else if (name && !mini_image_name_valid(name)) {
        free(name);
        name = NULL;
    }
    if (name && !strchr(name, ':')) {
        char *full = NULL;
        if (asprintf(&full, "%s:latest", name) < 0) {
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            goto out;
        }
        free(name);
        name = full;
    }
    if (imp_build_rootfs(&im, ls.diff_ids, ls.n, e) < 0)
        goto out;
    char id[MINI_DIGEST_LEN + 1];
    if (write_image(&im, format, src, &config, &ls, id, e) < 0)
        goto out;
    memcpy(res->id, id, sizeof res->id);
    if (name && mini_image_refs_set(s, name, id, e) < 0)
        goto out;
    res->name = TAKE_PTR(name);
    rc = 0;
out:
    imp_stash_free(&stash);
    mini_image_config_free(&cfg);
    if (im.tmp && im.tmpfd >= 0) {
        struct mini_err ignored;
        mini_rm_rf(im.tmp, &ignored);
    }
    mini_close(im.tmpfd);
    mini_close(im.lockfd);
    free(im.tmp);
    free(im.buf);
    free(im.ubuf);
    return rc;
}

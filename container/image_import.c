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
    mini_imp_sha_of(config->data, config->len, id);
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

static uint64_t mini_import_default_max_bytes(const struct mini_image_store *s, uint64_t *free_bytes)
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

/* The name an import gives: --name, else the source's own (*name, as its
 * reader found it: RepoTags, an OCI ref name), made whole from the file's
 * or directory's name (path; NULL for standard input) where the format
 * says so; ":latest" when it has no tag.  *name is replaced. */
static int final_name(const struct mini_import_opts *o, enum mini_image_format fmt, enum archive_kind kind,
                      const char *path, char **name, struct mini_err *e)
{
    if (o->name) {
        free(*name);
        if (!(*name = strdup(o->name)))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    } else if (fmt == MINI_IMG_ROOTFS) {
        free(*name);
        *name = path ? name_from_path(path) : NULL;
    } else if (fmt == MINI_IMG_OCI || kind == AK_OCI_ARCHIVE) {
        /* Its ref name: a full NAME:TAG, or a bare tag of the directory's
         * (or archive file's) name ("DIR:latest"). */
        _cleanup_free_ char *base = path ? name_from_path(path) : NULL;
        if (!*name || !strchr(*name, ':') || !mini_image_name_valid(*name)) {
            char *full = NULL;
            if (base && *name && asprintf(&full, "%s:%s", base, *name) >= 0 && mini_image_name_valid(full)) {
                free(*name);
                *name = full;
            } else {
                free(full);
                free(*name);
                *name = TAKE_PTR(base);
            }
        }
    } else if (*name && !mini_image_name_valid(*name)) {
        free(*name);
        *name = NULL;
    }
    if (*name && !strchr(*name, ':')) {
        char *full = NULL;
        if (asprintf(&full, "%s:latest", *name) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        free(*name);
        *name = full;
    }
    return 0;
}

/* ---- archives imported before (STORE/archives/sha256/KEY)
 *
 * Hashing an archive costs a fraction of extracting it (1.8 s against 20
 * to 30 s for a large root filesystem), so the import of a file records
 * its digest and the image it made; importing the same bytes again only
 * names that image.  KEY is the archive's hex digest, with ".rootfs" when
 * --format rootfs took it, and ":TAG" when a tag picked its image.  The
 * record is {"id", "format", "name"}: the source's own name as its reader
 * found it, made whole again on use (final_name), since a name may come
 * from the file's name. */

static int archive_key(const char *digest, const struct mini_import_opts *o, const char *tag, char *buf, size_t size)
{
    if (tag) {
        size_t n = strlen(tag);
        if (!n || n > 128 || !strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_", tag[0]) ||
            strspn(tag, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != n)
            return -1; /* no record */
    }
    int n = snprintf(buf, size, "archives/sha256/%s%s%s%s", digest + 7, o->format == MINI_IMG_ROOTFS ? ".rootfs" : "",
                     tag ? ":" : "", tag ? tag : "");
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* sha256 of what fd reads, to its end. */
static int hash_fd(struct import *im, int fd, char out[static MINI_DIGEST_LEN + 1], struct mini_err *e)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    uint64_t done = 0;
    for (;;) {
        ssize_t k = read(fd, im->buf, BUF_SIZE);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            EVP_MD_CTX_free(ctx);
            return mini_err_sys(e, MINI_E_IO, errno, "reading the archive");
        }
        if (k == 0)
            break;
        EVP_DigestUpdate(ctx, im->buf, (size_t)k);
        done += (uint64_t)k;
        if (im->o->progress && done % (64u << 20) < (uint64_t)k)
            im->o->progress(im->o->progress_arg, "hashing", done, 0);
    }
    unsigned char md[32];
    EVP_DigestFinal_ex(ctx, md, NULL);
    EVP_MD_CTX_free(ctx);
    memcpy(out, "sha256:", 7);
    for (int i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* Standard input into tmp/…/stdin (the readers take two passes over a
 * file), at most max_bytes of it, hashed on the way. */
static int spool_stdin(struct import *im, char **path, char digest[static MINI_DIGEST_LEN + 1], struct mini_err *e)
{
    if (asprintf(path, "%s/stdin", im->tmp) < 0) {
        *path = NULL;
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    _cleanup_close_ int fd = open(*path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", *path);
    uint64_t done = 0;
    for (;;) {
        ssize_t k = read(0, im->buf, BUF_SIZE);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "reading standard input");
        if (k == 0)
            break;
        done += (uint64_t)k;
        if (done > im->max_bytes)
            return mini_err_set(
                e, MINI_E_BAD_REQUEST, "standard input: more than %llu bytes, the limit (%s; --max-size sets another)",
                (unsigned long long)im->max_bytes,
                im->max_bytes_default ? "by default half of the space free in the store's filesystem" : "--max-size");
        if (mini_write_all(fd, im->buf, (size_t)k) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "writing %s", *path);
        if (im->o->progress && done % (64u << 20) < (uint64_t)k)
            im->o->progress(im->o->progress_arg, "standard input", done, 0);
    }
    if (lseek(fd, 0, SEEK_SET) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", *path);
    return hash_fd(im, fd, digest, e);
}

/* 1 when the archive of this key was imported before and its image is
 * still there: then named (as the import would) and res filled; 0 when
 * not; -1 with e filled. */
static int archive_known(struct import *im, const char *key, const char *path, struct mini_err *e)
{
    _cleanup_free_ char *p = NULL;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    struct mini_err ignored;
    if (asprintf(&p, "%s/%s", im->s->root, key) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_read_file(p, &b, 64u << 10, &ignored) < 0)
        return 0;
    _cleanup_cjson_ cJSON *j = mini_json_parse(b.data, b.len, &ignored);
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "id"));
    const char *format = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "format"));
    const char *own = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "name"));
    if (!id || !format || !mini_digest_valid(id))
        return 0;
    /* The image, as it is now (rm may have removed it since). */
    _cleanup_free_ char *ip = NULL;
    _cleanup_buf_ struct mini_buf ib = MINI_BUF_INIT;
    if (asprintf(&ip, "%s/images/%s/image.json", im->s->root, id + 7) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_read_file(ip, &ib, MINI_IMAGE_META_MAX * 4, &ignored) < 0)
        return 0;
    _cleanup_cjson_ cJSON *ij = mini_json_parse(ib.data, ib.len, &ignored);
    if (!ij)
        return 0;
    enum mini_image_format fmt = !strcmp(format, "rootfs") ? MINI_IMG_ROOTFS : MINI_IMG_DOCKER;
    enum archive_kind kind = !strcmp(format, "oci-archive") ? AK_OCI_ARCHIVE : AK_DOCKER;
    _cleanup_free_ char *name = own ? strdup(own) : NULL;
    if (final_name(im->o, fmt, kind, path, &name, e) < 0)
        return -1;
    if (name && mini_image_refs_set(im->s, name, id, e) < 0)
        return -1;
    struct mini_import_result *res = im->res;
    snprintf(res->id, sizeof res->id, "%s", id);
    res->name = TAKE_PTR(name);
    res->layers = res->layers_shared = (unsigned)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ij, "layers"));
    double size = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ij, "size"));
    res->bytes = size > 0 ? (uint64_t)size : 0;
    res->known = true;
    return 1;
}

/* Keep the record of an archive imported (a cache: failing to write it
 * fails nothing). */
static void archive_remember(struct import *im, const char *key, const char *format, const char *own, const char *id)
{
    struct mini_err ignored;
    _cleanup_free_ char *p = NULL, *dir = NULL;
    _cleanup_cjson_ cJSON *j = cJSON_CreateObject();
    if (!j || asprintf(&p, "%s/%s", im->s->root, key) < 0 || asprintf(&dir, "%s/archives/sha256", im->s->root) < 0)
        return;
    cJSON_AddStringToObject(j, "id", id);
    cJSON_AddStringToObject(j, "format", format);
    if (own)
        cJSON_AddStringToObject(j, "name", own);
    _cleanup_free_ char *text = cJSON_PrintUnformatted(j);
    if (text && mini_mkdir_p(dir, 0700, &ignored) == 0)
        (void)mini_write_file_atomic(p, text, strlen(text), 0600, &ignored);
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
    _cleanup_free_ char *dir = NULL, *tag = NULL, *name = NULL, *own = NULL, *foreign = NULL;
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
    const bool from_stdin = strcmp(src, "-") == 0;
    enum mini_image_format fmt = opts->format;
    char digest[MINI_DIGEST_LEN + 1] = "", key[256] = "";

    if (from_stdin) {
        if (fmt == MINI_IMG_OCI)
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "standard input: an OCI layout is a directory; from standard input, an archive "
                                "(docker-archive, oci-archive, a root filesystem tarball)");
    } else {
        if (split_tag(src, &dir, &tag) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        struct stat st;
        if (stat(dir, &st) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s", src);
        if (fmt == MINI_IMG_AUTO && S_ISDIR(st.st_mode))
            fmt = MINI_IMG_OCI;
        if (fmt == MINI_IMG_OCI && !S_ISDIR(st.st_mode))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: an OCI layout is a directory", dir);
        if (fmt != MINI_IMG_OCI && !S_ISREG(st.st_mode))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a regular file", dir);
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
    /* The archive's digest: an archive imported before is not again. */
    if (from_stdin) {
        if (spool_stdin(&im, &dir, digest, e) < 0)
            goto out;
    } else if (fmt != MINI_IMG_OCI) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
            mini_err_sys(e, MINI_E_IO, errno, "%s", dir);
            goto out;
        }
        if (hash_fd(&im, fd, digest, e) < 0)
            goto out;
    }
    const char *name_path = from_stdin ? NULL : dir;
    if (*digest && archive_key(digest, opts, tag, key, sizeof key) == 0) {
        int k = archive_known(&im, key, name_path, e);
        if (k < 0)
            goto out;
        if (k > 0) {
            memcpy(res->archive, digest, sizeof res->archive);
            rc = 0;
            goto out;
        }
    }
    if (fmt == MINI_IMG_AUTO || fmt == MINI_IMG_DOCKER) {
        int k = mini_imp_sniff_file(dir, &dmanifest, &stash, &kind, &foreign, e);
        if (k < 0)
            goto out;
        if (fmt == MINI_IMG_DOCKER && k == 0) {
            mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not an image archive (docker-archive or oci-archive)",
                         from_stdin ? "standard input" : dir);
            goto out;
        }
        if (k == 0 && kind == AK_UNKNOWN) {
            mini_err_set(e, MINI_E_BAD_REQUEST,
                         "%s: not an image archive (it has \"%.*s\"), nor a root filesystem (no bin, usr or etc at "
                         "its top); --format rootfs imports it as a root filesystem all the same",
                         from_stdin ? "standard input" : dir, MINI_JSON_SHOW(foreign));
            goto out;
        }
        fmt = k ? MINI_IMG_DOCKER : MINI_IMG_ROOTFS;
    }
    int r;
    if (fmt == MINI_IMG_OCI) {
        format = "oci";
        r = mini_imp_import_oci(&im, dir, tag, &config, &name, &cfg, &ls, e);
    } else if (fmt == MINI_IMG_DOCKER) {
        r = mini_imp_import_image_archive(&im, dir, kind, &dmanifest, &stash, tag, &config, &name, &cfg, &ls, &format,
                                          e);
    } else {
        format = "rootfs";
        r = mini_imp_import_rootfs(&im, dir, &config, &cfg, &ls, e);
    }
    if (r < 0)
        goto out;
    res->layers = (unsigned)ls.n;
    res->layers_shared += ls.shared;
    if (name && !(own = strdup(name))) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    if (final_name(opts, fmt, kind, name_path, &name, e) < 0)
        goto out;
    if (mini_imp_build_rootfs(&im, ls.diff_ids, ls.n, e) < 0)
        goto out;
    char id[MINI_DIGEST_LEN + 1];
    if (write_image(&im, format, from_stdin ? "-" : src, &config, &ls, id, e) < 0)
        goto out;
    memcpy(res->id, id, sizeof res->id);
    if (name && mini_image_refs_set(s, name, id, e) < 0)
        goto out;
    res->name = TAKE_PTR(name);
    if (*key) {
        archive_remember(&im, key, format, own, id);
        memcpy(res->archive, digest, sizeof res->archive);
    }
    rc = 0;
out:
    if (rc < 0 && from_stdin && dir) {
        /* Say "standard input" where the readers named the spool file. */
        char *at = strstr(e->msg, dir);
        if (at) {
            char rest[sizeof e->msg];
            snprintf(rest, sizeof rest, "%s", at + strlen(dir));
            snprintf(at, sizeof e->msg - (size_t)(at - e->msg), "standard input%s", rest);
        }
    }
    mini_imp_stash_free(&stash);
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

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
 * .wh..wh..opq), so identical layers are stored once. */
#include "image.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE (1u << 20)
#define MAX_DEPTH 128
#define MAX_TRAILING (1u << 20) /* bytes after a tar's end-of-archive marker */
#define MAX_OWNERS 100000
#define MAX_LINKS 100000 /* hard links to a lower layer's file, per layer */

/* ---- sha256 */

struct sha {
    EVP_MD_CTX *ctx;
};

static int sha_init(struct sha *h)
{
    h->ctx = EVP_MD_CTX_new();
    return h->ctx && EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

static void sha_update(struct sha *h, const void *p, size_t n) { EVP_DigestUpdate(h->ctx, p, n); }

static void sha_final(struct sha *h, char out[static MINI_DIGEST_LEN + 1])
{
    unsigned char md[32];
    unsigned len = 0;
    EVP_DigestFinal_ex(h->ctx, md, &len);
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

static void sha_free(struct sha *h)
{
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
}

static void sha_of(const void *p, size_t n, char out[static MINI_DIGEST_LEN + 1])
{
    struct sha h;
    if (sha_init(&h) == 0) {
        sha_update(&h, p, n);
        sha_final(&h, out);
    } else {
        out[0] = '\0';
    }
    sha_free(&h);
}

static void archive_freep(struct archive **a)
{
    if (*a)
        archive_read_free(*a);
}
#define _cleanup_archive_ _cleanup_(archive_freep)

/* ---- one import's state */

struct dirfix {
    char *path; /* relative to the tree; "" for its top */
    mode_t mode;
    uid_t uid;
    gid_t gid;
    struct timespec mtime;
    size_t seq;
};

struct import {
    struct mini_image_store *s;
    const struct mini_import_opts *o;
    struct mini_import_result *res;
    struct mini_err *e;
    bool root; /* running as root: ownership kept */
    uint64_t max_bytes, max_entries;
    /* max_bytes is the default (half of free_bytes, at most 64 GiB); free_bytes:
     * what was free to us on the store's filesystem at the start (UINT64_MAX: unknown). */
    bool max_bytes_default;
    uint64_t free_bytes;
    char *tmp;    /* STORE/tmp/import-XXXXXX */
    int tmpfd;    /* O_PATH of it */
    int lockfd;   /* its owner lock */
    unsigned seq; /* names of layers in tmp */
    char *buf;    /* BUF_SIZE, shared by the readers */
    char *ubuf;
    const char *what; /* for progress and messages: "layer 2/5" */
};

/* A byte source: read at most n bytes, 0 at the end, -1 with e filled. */
typedef ssize_t (*src_read_fn)(void *arg, void *buf, size_t n, struct mini_err *e);

struct layer {
    struct import *im;
    /* source */
    src_read_fn src;
    void *src_arg;
    int64_t expect_size; /* of the blob, -1 if unknown */
    struct sha blob_sha, diff_sha;
    uint64_t blob_bytes, tar_bytes, stream_cap;
    struct archive *raw; /* decompression */
    bool tar_done;
    /* the tree */
    int treefd;
    char *cached_parent; /* the last parent opened, and its fd */
    int cached_fd;
    struct dirfix *fixes;
    size_t n_fixes, cap_fixes;
    cJSON *owners; /* [[path, uid, gid, mode], ...] as in the image (rootless) */
    size_t n_owners;
    cJSON *links; /* [[path, target], ...]: hard links to files of the layers below */
    size_t n_links;
    uint64_t bytes, entries;
    /* results */
    char blob_digest[MINI_DIGEST_LEN + 1];
    char diff_id[MINI_DIGEST_LEN + 1];
    struct mini_err err; /* the first error, when a callback fails */
    bool failed;
};

static int layer_fail(struct layer *l, struct mini_err *e)
{
    if (!l->failed) {
        l->err = *e;
        l->failed = true;
    }
    return -1;
}

/* libarchive callback for the raw (decompressing) reader. */
static la_ssize_t raw_read(struct archive *a, void *arg, const void **out)
{
    struct layer *l = arg;
    struct mini_err e;
    mini_err_clear(&e);
    ssize_t n = l->src(l->src_arg, l->im->buf, BUF_SIZE, &e);
    if (n < 0) {
        layer_fail(l, &e);
        archive_set_error(a, EIO, "read failed");
        return -1;
    }
    sha_update(&l->blob_sha, l->im->buf, (size_t)n);
    l->blob_bytes += (uint64_t)n;
    if (l->expect_size >= 0 && l->blob_bytes > (uint64_t)l->expect_size) {
        mini_err_set(&e, MINI_E_BAD_REQUEST, "%s: the blob is larger than the %lld bytes its manifest says",
                     l->im->what, (long long)l->expect_size);
        layer_fail(l, &e);
        archive_set_error(a, EFBIG, "too large");
        return -1;
    }
    const struct mini_import_opts *o = l->im->o;
    if (o->progress && n > 0 && (l->blob_bytes / BUF_SIZE) != ((l->blob_bytes - (uint64_t)n) / BUF_SIZE))
        o->progress(o->progress_arg, l->im->what, l->blob_bytes, l->expect_size >= 0 ? (uint64_t)l->expect_size : 0);
    *out = l->im->buf;
    return n;
}

/* libarchive callback for the tar reader: the decompressed bytes. */
static la_ssize_t tar_read(struct archive *a, void *arg, const void **out)
{
    struct layer *l = arg;
    la_ssize_t n = archive_read_data(l->raw, l->im->ubuf, BUF_SIZE);
    if (n < 0) {
        if (!l->failed) {
            struct mini_err e;
            mini_err_set(&e, MINI_E_BAD_REQUEST, "%s: %s", l->im->what, archive_error_string(l->raw));
            layer_fail(l, &e);
        }
        archive_set_error(a, EIO, "read failed");
        return -1;
    }
    sha_update(&l->diff_sha, l->im->ubuf, (size_t)n);
    l->tar_bytes += (uint64_t)n;
    if (l->tar_bytes > l->stream_cap) {
        struct mini_err e;
        mini_err_set(&e, MINI_E_LIMIT, "%s: the layer expands to more than %llu bytes (a compression bomb?)",
                     l->im->what, (unsigned long long)l->stream_cap);
        layer_fail(l, &e);
        archive_set_error(a, EFBIG, "too large");
        return -1;
    }
    *out = l->im->ubuf;
    return n;
}

/* ---- paths inside the tree */

/* Normalise an entry's name in place: leading "./" and "/" handling,
 * no "..", no control characters.  *out points into p; "" is the top.
 * 0, or -1 with e filled. */
static int clean_name(struct layer *l, char *p, const char **out, struct mini_err *e)
{
    if (p[0] == '/')
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: entry \"%.*s\" has an absolute path", l->im->what,
                            MINI_JSON_SHOW(p));
    size_t len = strlen(p);
    if (len > 4000)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: entry name longer than 4000 bytes", l->im->what);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: entry name with a control character (newline?): \"%.*s\"",
                                l->im->what, (int)(i < 64 ? i : 64), p);
    /* Rewrite without "." and empty components; refuse "..". */
    char *w = p;
    const char *r = p;
    int depth = 0;
    while (*r) {
        const char *slash = strchr(r, '/');
        size_t n = slash ? (size_t)(slash - r) : strlen(r);
        if (n == 2 && r[0] == '.' && r[1] == '.')
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: entry \"%.*s\" has a \"..\" component", l->im->what,
                                MINI_JSON_SHOW(p));
        if (n > 255)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: a name longer than 255 bytes", l->im->what);
        if (n && !(n == 1 && r[0] == '.')) {
            if (w != p)
                *w++ = '/';
            memmove(w, r, n);
            w += n;
            if (++depth > MAX_DEPTH)
                return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: paths nested deeper than %d", l->im->what, MAX_DEPTH);
        }
        r += n + (slash ? 1 : 0);
    }
    *w = '\0';
    *out = p;
    return 0;
}

static int openat2_beneath(int dirfd, const char *path, uint64_t flags)
{
    struct open_how how = {
        .flags = flags | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    return (int)syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof how);
}

static int add_fix(struct layer *l, const char *path, mode_t mode, uid_t uid, gid_t gid, struct timespec mtime)
{
    if (l->n_fixes == l->cap_fixes) {
        size_t nc = l->cap_fixes ? l->cap_fixes * 2 : 256;
        struct dirfix *nf = realloc(l->fixes, nc * sizeof *nf);
        if (!nf)
            return -1;
        l->fixes = nf;
        l->cap_fixes = nc;
    }
    char *p = strdup(path);
    if (!p)
        return -1;
    l->fixes[l->n_fixes] =
        (struct dirfix){ .path = p, .mode = mode, .uid = uid, .gid = gid, .mtime = mtime, .seq = l->n_fixes };
    l->n_fixes++;
    return 0;
}

/* The O_PATH fd of directory `dir` (relative) in the tree, creating the
 * missing ones (0700 while we work; 0755 in the end, as tar does).  Never
 * through a symlink.  -1 with e filled. */
static int open_parent(struct layer *l, const char *dir, struct mini_err *e)
{
    if (l->cached_parent && strcmp(l->cached_parent, dir) == 0)
        return l->cached_fd;
    int fd = openat2_beneath(l->treefd, dir, O_PATH | O_DIRECTORY);
    if (fd < 0 && errno == ENOENT) {
        /* Create each missing component, one directory fd at a time. */
        _cleanup_free_ char *p = strdup(dir);
        if (!p)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        int cur = openat(l->treefd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        char *comp = p;
        while (cur >= 0 && comp) {
            char *slash = strchr(comp, '/');
            if (slash)
                *slash = '\0';
            if (mkdirat(cur, comp, 0700) == 0) {
                struct timespec now = { 0, UTIME_OMIT };
                if (add_fix(l, p, 0755, 0, 0, now) < 0) {
                    close(cur);
                    return mini_err_set(e, MINI_E_NOMEM, "out of memory");
                }
            }
            int next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            close(cur);
            cur = next;
            if (slash)
                *slash = '/';
            comp = slash ? slash + 1 : NULL;
        }
        mini_close(cur);
        fd = openat2_beneath(l->treefd, dir, O_PATH | O_DIRECTORY);
    }
    if (fd < 0) {
        if (errno == ELOOP || errno == EXDEV)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: \"%.*s\" goes through a symbolic link", l->im->what,
                                MINI_JSON_SHOW(dir));
        if (errno == ENOTDIR)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: \"%.*s\" is not a directory", l->im->what,
                                MINI_JSON_SHOW(dir));
        return mini_err_sys(e, MINI_E_IO, errno, "%s: opening \"%.*s\"", l->im->what, MINI_JSON_SHOW(dir));
    }
    free(l->cached_parent);
    mini_close(l->cached_fd);
    l->cached_parent = strdup(dir);
    l->cached_fd = fd;
    if (!l->cached_parent) {
        close(fd);
        l->cached_fd = -1;
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    return fd;
}

/* Remove whatever `name` is in parent (a tree: through /proc/self/fd, so
 * that no symlink on the way is followed). */
static int remove_at(int parent, const char *name, struct mini_err *e)
{
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : mini_err_sys(e, MINI_E_IO, errno, "%s", name);
    if (!S_ISDIR(st.st_mode))
        return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? mini_err_sys(e, MINI_E_IO, errno, "removing %s", name)
                                                                : 0;
    char path[4400];
    snprintf(path, sizeof path, "/proc/self/fd/%d/%s", parent, name);
    return mini_rm_rf(path, e);
}

/* Split "a/b/c" into the parent "a/b" (in dir, a buffer) and "c". */
static const char *split(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        dir[0] = '\0';
        return path;
    }
    snprintf(dir, size, "%.*s", (int)(slash - path), path);
    return slash + 1;
}

/* Rootless, files are the importing user's: keep what the image said of
 * those not root's, setuid/setgid or not u+rwx directories. */
static void record_owner(struct layer *l, const char *path, struct archive_entry *ent, mode_t mode, bool force)
{
    if (l->im->root || !l->owners || l->n_owners >= MAX_OWNERS)
        return;
    int64_t uid = archive_entry_uid(ent), gid = archive_entry_gid(ent);
    if (!force && uid == 0 && gid == 0 && !(mode & (S_ISUID | S_ISGID)))
        return;
    cJSON *row = cJSON_CreateArray();
    if (!row)
        return;
    cJSON_AddItemToArray(row, cJSON_CreateString(path));
    cJSON_AddItemToArray(row, cJSON_CreateNumber((double)uid));
    cJSON_AddItemToArray(row, cJSON_CreateNumber((double)gid));
    cJSON_AddItemToArray(row, cJSON_CreateNumber((double)(mode & 07777)));
    cJSON_AddItemToArray(l->owners, row);
    l->n_owners++;
}

/* Write one regular file's data. */
static int write_data(struct layer *l, struct archive *tar, int fd, int64_t size, const char *path, struct mini_err *e)
{
    for (;;) {
        const void *p;
        size_t n;
        la_int64_t off;
        int r = archive_read_data_block(tar, &p, &n, &off);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            if (l->failed) {
                *e = l->err;
                return -1;
            }
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %.*s: %s", l->im->what, MINI_JSON_SHOW(path),
                                archive_error_string(tar));
        }
        if (off < 0 || (uint64_t)off + n > (uint64_t)size)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %.*s: data beyond its size", l->im->what,
                                MINI_JSON_SHOW(path));
        const char *c = p;
        while (n) {
            ssize_t w = pwrite(fd, c, n, off);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                return mini_err_sys(e, MINI_E_IO, errno, "%s: writing %.*s", l->im->what, MINI_JSON_SHOW(path));
            }
            c += w;
            n -= (size_t)w;
            off += w;
        }
    }
    if (ftruncate(fd, size) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s: %.*s", l->im->what, MINI_JSON_SHOW(path));
    return 0;
}

static bool is_whiteout(const char *base) { return strncmp(base, ".wh.", 4) == 0; }

/* Apply ownership (root only), mode and mtime to a new non-directory. */
static int finish_attrs(struct layer *l, int parent, const char *name, int fd, struct archive_entry *ent, mode_t mode,
                        bool symlink, struct mini_err *e)
{
    if (l->im->root) {
        uid_t uid = (uid_t)archive_entry_uid(ent);
        gid_t gid = (gid_t)archive_entry_gid(ent);
        int r = fd >= 0 ? fchown(fd, uid, gid) : fchownat(parent, name, uid, gid, AT_SYMLINK_NOFOLLOW);
        if (r < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s: chown %.*s", l->im->what, MINI_JSON_SHOW(name));
    }
    if (!symlink && fd >= 0 && fchmod(fd, mode) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s: chmod %.*s", l->im->what, MINI_JSON_SHOW(name));
    struct timespec ts[2] = { { archive_entry_mtime(ent), archive_entry_mtime_nsec(ent) },
                              { archive_entry_mtime(ent), archive_entry_mtime_nsec(ent) } };
    if (fd >= 0)
        futimens(fd, ts);
    else
        utimensat(parent, name, ts, AT_SYMLINK_NOFOLLOW);
    return 0;
}

static int extract_entry(struct layer *l, struct archive *tar, struct archive_entry *ent, struct mini_err *e)
{
    struct import *im = l->im;
    const char *raw = archive_entry_pathname(ent);
    if (!raw)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: an entry without a readable name", im->what);
    _cleanup_free_ char *buf = strdup(raw);
    if (!buf)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const char *path;
    if (clean_name(l, buf, &path, e) < 0)
        return -1;
    l->entries++;
    if (++im->res->entries > im->max_entries)
        return mini_err_set(e, MINI_E_LIMIT, "%s: more than %llu entries", im->what,
                            (unsigned long long)im->max_entries);
    mode_t type = archive_entry_filetype(ent);
    mode_t mode = archive_entry_perm(ent) & 07777;
    const char *hardlink = archive_entry_hardlink(ent);
    struct timespec mtime = { archive_entry_mtime(ent), archive_entry_mtime_nsec(ent) };

    if (!*path) { /* the top directory itself */
        if (type != AE_IFDIR)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the top entry is not a directory", im->what);
        record_owner(l, "", ent, mode, (mode & 0700) != 0700);
        return add_fix(l, "", im->root ? mode & 01777 : (mode & 01777) | 0700, (uid_t)archive_entry_uid(ent),
                       (gid_t)archive_entry_gid(ent), mtime) < 0
            ? mini_err_set(e, MINI_E_NOMEM, "out of memory")
            : 0;
    }
    char dir[4096];
    const char *name = split(path, dir, sizeof dir);

    if (!hardlink && (type == AE_IFCHR || type == AE_IFBLK)) {
        im->res->skipped_devices++;
        return 0;
    }
    if (!hardlink && (type == AE_IFIFO || type == AE_IFSOCK)) {
        im->res->skipped_fifos++;
        return 0;
    }
    record_owner(l, path, ent, mode, type == AE_IFDIR && (mode & 0700) != 0700);
    if (mode & (S_ISUID | S_ISGID)) {
        im->res->stripped_setid++;
        mode &= ~(mode_t)(S_ISUID | S_ISGID);
    }
    int parent = open_parent(l, dir, e);
    if (parent < 0)
        return -1;

    /* A whiteout is kept as an empty marker file, read when the layers
     * are applied: .wh..wh..opq, or .wh.NAME for a real NAME. */
    if (is_whiteout(name)) {
        const char *target = name + 4;
        bool opq = strcmp(name, ".wh..wh..opq") == 0;
        if (!opq && (!*target || !strcmp(target, ".") || !strcmp(target, "..")))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: invalid whiteout \"%.*s\"", im->what, MINI_JSON_SHOW(path));
        if (!opq && strncmp(target, ".wh.", 4) == 0)
            return 0; /* reserved names */
        if (remove_at(parent, name, e) < 0)
            return -1;
        int fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s: whiteout %.*s", im->what, MINI_JSON_SHOW(path));
        close(fd);
        return 0;
    }

    if (hardlink) {
        _cleanup_free_ char *tbuf = strdup(hardlink);
        const char *tpath;
        if (!tbuf)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        if (clean_name(l, tbuf, &tpath, e) < 0)
            return mini_err_prefix(e, "hard link %.*s", MINI_JSON_SHOW(path));
        char tdir[4096];
        const char *tname = split(tpath, tdir, sizeof tdir);
        _cleanup_close_ int tparent = openat2_beneath(l->treefd, tdir, O_PATH | O_DIRECTORY);
        struct stat st;
        int terr = 0; /* why the target is not a file of this layer */
        if (!*tpath)
            terr = EISDIR;
        else if (tparent < 0 || fstatat(tparent, tname, &st, AT_SYMLINK_NOFOLLOW) < 0)
            terr = errno;
        else if (S_ISDIR(st.st_mode))
            terr = EISDIR;
        if (terr == ENOENT && strcmp(tpath, path) != 0) {
            /* Not in this layer: a file of the layers below (OCI allows
             * it), linked when the layers are applied (apply_links), where
             * it must be a file of the image beneath this one. */
            if (l->n_links >= MAX_LINKS)
                return mini_err_set(e, MINI_E_LIMIT, "%s: more than %d hard links to lower layers", im->what,
                                    MAX_LINKS);
            cJSON *row = cJSON_CreateArray();
            if (!row || !cJSON_AddItemToArray(l->links, row) || !cJSON_AddItemToArray(row, cJSON_CreateString(path)) ||
                !cJSON_AddItemToArray(row, cJSON_CreateString(tpath)))
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            l->n_links++;
            return remove_at(parent, name, e);
        }
        if (terr)
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "%s: hard link %.*s points to \"%.*s\", not a file of this layer or those below",
                                im->what, MINI_JSON_SHOW(path), MINI_JSON_SHOW(tpath));
        if (strcmp(tpath, path) == 0)
            return 0;
        if (remove_at(parent, name, e) < 0)
            return -1;
        if (linkat(tparent, tname, parent, name, 0) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s: hard link %.*s", im->what, MINI_JSON_SHOW(path));
        return 0;
    }

    switch (type) {
    case AE_IFDIR: {
        struct stat st;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
            remove_at(parent, name, e) < 0)
            return -1;
        if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
            return mini_err_sys(e, MINI_E_IO, errno, "%s: mkdir %.*s", im->what, MINI_JSON_SHOW(path));
        /* Rootless, the store's owner must be able to walk and remove it:
         * u+rwx (the original mode is in layer.json's owners). */
        mode_t m = im->root ? mode : mode | 0700;
        if (add_fix(l, path, m, (uid_t)archive_entry_uid(ent), (gid_t)archive_entry_gid(ent), mtime) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return 0;
    }
    case AE_IFLNK: {
        const char *target = archive_entry_symlink(ent);
        if (!target || !*target || strlen(target) >= 4096)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: symbolic link %.*s without a valid target", im->what,
                                MINI_JSON_SHOW(path));
        if (remove_at(parent, name, e) < 0)
            return -1;
        /* Its target is never followed here: inside the sandbox it
         * resolves within the image's root. */
        if (symlinkat(target, parent, name) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s: symlink %.*s", im->what, MINI_JSON_SHOW(path));
        return finish_attrs(l, parent, name, -1, ent, mode, true, e);
    }
    case AE_IFREG: {
        int64_t size = archive_entry_size_is_set(ent) ? archive_entry_size(ent) : -1;
        if (size < 0)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %.*s has no size", im->what, MINI_JSON_SHOW(path));
        if ((uint64_t)size > im->max_bytes || im->res->bytes + (uint64_t)size > im->max_bytes) {
            if (!im->max_bytes_default)
                return mini_err_set(e, MINI_E_LIMIT,
                                    "%s: %.*s (%lld bytes) takes the image past its limit of %llu bytes (--max-size)",
                                    im->what, MINI_JSON_SHOW(path), (long long)size, (unsigned long long)im->max_bytes);
            if (im->free_bytes == UINT64_MAX)
                return mini_err_set(e, MINI_E_LIMIT,
                                    "%s: %.*s (%lld bytes) takes the image past its limit of %llu bytes (the "
                                    "default; --max-size sets another)",
                                    im->what, MINI_JSON_SHOW(path), (long long)size, (unsigned long long)im->max_bytes);
            return mini_err_set(e, MINI_E_LIMIT,
                                "%s: %.*s (%lld bytes) takes the image past its limit of %llu bytes (by default "
                                "half of the %llu bytes free in the store's filesystem, at most 64 GiB; --max-size "
                                "sets another)",
                                im->what, MINI_JSON_SHOW(path), (long long)size, (unsigned long long)im->max_bytes,
                                (unsigned long long)im->free_bytes);
        }
        im->res->bytes += (uint64_t)size;
        l->bytes += (uint64_t)size;
        if (remove_at(parent, name, e) < 0)
            return -1;
        _cleanup_close_ int fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s: creating %.*s", im->what, MINI_JSON_SHOW(path));
        if (write_data(l, tar, fd, size, path, e) < 0)
            return -1;
        return finish_attrs(l, parent, name, fd, ent, mode, false, e);
    }
    default: return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %.*s: unknown entry type", im->what, MINI_JSON_SHOW(path));
    }
}

static int fix_cmp(const void *a, const void *b)
{
    const struct dirfix *x = a, *y = b;
    size_t dx = 0, dy = 0;
    if (*x->path)
        dx = 1;
    if (*y->path)
        dy = 1;
    for (const char *c = x->path; *c; c++)
        dx += *c == '/';
    for (const char *c = y->path; *c; c++)
        dy += *c == '/';
    if (dx != dy)
        return dx > dy ? -1 : 1; /* deepest first */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Give directories their final mode, owner and time, deepest first (so
 * that a directory made unwritable no longer needs to be entered). */
static int apply_fixes(int treefd, struct dirfix *f, size_t n, bool root, struct mini_err *e)
{
    qsort(f, n, sizeof *f, fix_cmp);
    for (size_t i = 0; i < n; i++) {
        _cleanup_close_ int fd = openat2_beneath(treefd, f[i].path, O_RDONLY | O_DIRECTORY);
        if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
            continue; /* removed or replaced since (a whiteout, a later entry) */
        if (fd < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "directory \"%.*s\"", MINI_JSON_SHOW(f[i].path));
        if (root && fchown(fd, f[i].uid, f[i].gid) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "chown \"%.*s\"", MINI_JSON_SHOW(f[i].path));
        if (fchmod(fd, f[i].mode) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "chmod \"%.*s\"", MINI_JSON_SHOW(f[i].path));
        if (f[i].mtime.tv_nsec != UTIME_OMIT) {
            struct timespec ts[2] = { f[i].mtime, f[i].mtime };
            futimens(fd, ts);
        }
    }
    return 0;
}

static void layer_free(struct layer *l)
{
    sha_free(&l->blob_sha);
    sha_free(&l->diff_sha);
    if (l->raw)
        archive_read_free(l->raw);
    free(l->cached_parent);
    mini_close(l->cached_fd);
    mini_close(l->treefd);
    for (size_t i = 0; i < l->n_fixes; i++)
        free(l->fixes[i].path);
    free(l->fixes);
    cJSON_Delete(l->owners);
    cJSON_Delete(l->links);
}

/* Extract one layer from a source into tmp/layer-N/tree, leaving its
 * digests in blob_digest and diff_id.  *dirname gets "layer-N". */
static int extract_layer(struct import *im, src_read_fn src, void *arg, int64_t expect_size, char dirname[static 32],
                         struct layer *l, struct mini_err *e)
{
    memset(l, 0, sizeof *l);
    l->im = im;
    l->src = src;
    l->src_arg = arg;
    l->expect_size = expect_size;
    l->cached_fd = -1;
    l->treefd = -1;
    l->stream_cap = im->max_bytes + (im->max_entries < (1u << 20) ? im->max_entries : (1u << 20)) * 4096ull;
    l->owners = im->root ? NULL : cJSON_CreateArray();
    if (!(l->links = cJSON_CreateArray()))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    snprintf(dirname, 32, "layer-%u", im->seq++);
    char tree[64];
    snprintf(tree, sizeof tree, "%s/tree", dirname);
    if (mkdirat(im->tmpfd, dirname, 0700) < 0 || mkdirat(im->tmpfd, tree, 0700) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s/%s", im->tmp, tree);
    l->treefd = openat(im->tmpfd, tree, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (l->treefd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "opening %s/%s", im->tmp, tree);
    /* The top directory: 0755 unless the layer has a "./" entry. */
    if (add_fix(l, "", 0755, 0, 0, (struct timespec){ 0, UTIME_OMIT }) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (sha_init(&l->blob_sha) < 0 || sha_init(&l->diff_sha) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "sha256: out of memory");

    l->raw = archive_read_new();
    _cleanup_archive_ struct archive *tar = archive_read_new();
    if (!l->raw || !tar)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    archive_read_support_filter_all(l->raw);
    archive_read_support_format_raw(l->raw);
    archive_read_support_format_tar(tar);
    if (archive_read_open(l->raw, l, NULL, raw_read, NULL) != ARCHIVE_OK) {
        if (l->failed)
            return *e = l->err, -1;
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %s", im->what, archive_error_string(l->raw));
    }
    struct archive_entry *ent;
    int r = archive_read_next_header(l->raw, &ent);
    if (r != ARCHIVE_OK) {
        if (l->failed)
            return *e = l->err, -1;
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a tar stream (empty?)", im->what);
    }
    if (archive_read_open(tar, l, NULL, tar_read, NULL) != ARCHIVE_OK) {
        if (l->failed)
            return *e = l->err, -1;
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %s", im->what, archive_error_string(tar));
    }
    for (;;) {
        r = archive_read_next_header(tar, &ent);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            if (l->failed)
                return *e = l->err, -1;
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a valid tar stream: %s", im->what,
                                archive_error_string(tar));
        }
        if (extract_entry(l, tar, ent, e) < 0)
            return -1;
    }
    /* The diff id covers the whole stream, padding included: drain it,
     * but not without bound. */
    uint64_t at_end = l->tar_bytes;
    for (;;) {
        la_ssize_t n = archive_read_data(l->raw, im->ubuf, BUF_SIZE);
        if (n < 0) {
            if (l->failed)
                return *e = l->err, -1;
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %s", im->what, archive_error_string(l->raw));
        }
        if (n == 0)
            break;
        sha_update(&l->diff_sha, im->ubuf, (size_t)n);
        l->tar_bytes += (uint64_t)n;
        if (l->tar_bytes - at_end > MAX_TRAILING)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: more than 1 MiB of data after the end of the tar archive",
                                im->what);
    }
    /* And the blob's digest covers every byte of it. */
    for (;;) {
        ssize_t n = src(arg, im->buf, BUF_SIZE, e);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        sha_update(&l->blob_sha, im->buf, (size_t)n);
        l->blob_bytes += (uint64_t)n;
        if (l->expect_size >= 0 && l->blob_bytes > (uint64_t)l->expect_size)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the blob is larger than the %lld bytes its manifest says",
                                im->what, (long long)l->expect_size);
    }
    if (l->expect_size >= 0 && l->blob_bytes != (uint64_t)l->expect_size)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the blob has %llu bytes, its manifest says %lld", im->what,
                            (unsigned long long)l->blob_bytes, (long long)l->expect_size);
    sha_final(&l->blob_sha, l->blob_digest);
    sha_final(&l->diff_sha, l->diff_id);
    free(l->cached_parent);
    l->cached_parent = NULL;
    mini_close(l->cached_fd);
    l->cached_fd = -1;
    if (apply_fixes(l->treefd, l->fixes, l->n_fixes, im->root, e) < 0)
        return mini_err_prefix(e, "%s", im->what);
    return 0;
}

/* Move tmp/DIRNAME into layers/HEX(diff_id), with its layer.json; if
 * another import got there first, ours is dropped (it is the same). */
static int write_layer_json(struct import *im, struct layer *l, const char *dirname, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *j = cJSON_CreateObject();
    if (!j)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    cJSON_AddStringToObject(j, "diff_id", l->diff_id);
    cJSON_AddNumberToObject(j, "size", (double)l->bytes);
    cJSON_AddNumberToObject(j, "entries", (double)l->entries);
    if (l->owners) {
        cJSON_AddItemToObject(j, "owners", l->owners);
        l->owners = NULL;
    }
    _cleanup_free_ char *text = cJSON_PrintUnformatted(j);
    _cleanup_free_ char *path = NULL;
    if (!text || asprintf(&path, "%s/%s/layer.json", im->tmp, dirname) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_write_file_atomic(path, text, strlen(text), 0600, e) < 0)
        return -1;
    if (!l->n_links)
        return 0;
    /* links.json: the hard links to lower layers' files (apply_links). */
    _cleanup_free_ char *links = cJSON_PrintUnformatted(l->links);
    _cleanup_free_ char *lpath = NULL;
    if (!links || asprintf(&lpath, "%s/%s/links.json", im->tmp, dirname) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return mini_write_file_atomic(lpath, links, strlen(links), 0600, e);
}

static int commit_layer(struct import *im, struct layer *l, const char *dirname, struct mini_err *e)
{
    if (write_layer_json(im, l, dirname, e) < 0)
        return -1;
    char dst[128];
    snprintf(dst, sizeof dst, "layers/%s", l->diff_id + 7);
    if (renameat(im->tmpfd, dirname, im->s->dirfd, dst) < 0) {
        if (errno == EEXIST || errno == ENOTEMPTY) {
            im->res->layers_shared++; /* stored already: ours is dropped */
            return 0;
        }
        return mini_err_sys(e, MINI_E_IO, errno, "storing %s", dst);
    }
    return 0;
}

static bool layer_stored(struct import *im, const char *diff_id)
{
    char p[128];
    struct stat st;
    snprintf(p, sizeof p, "layers/%s/layer.json", diff_id + 7);
    return fstatat(im->s->dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* ---- applying layers */

/* Apply the layer tree `ld` onto the image tree `td` (both directories,
 * relative path `rel` for the fixes). */
static int apply_dir(int ld, int td, const char *rel, struct dirfix **fixes, size_t *n, size_t *cap, int depth,
                     struct mini_err *e)
{
    if (depth > MAX_DEPTH + 2)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "paths nested too deep");
    int dfd = dup(ld);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        mini_close(dfd);
        return mini_err_sys(e, MINI_E_IO, errno, "reading layer directory \"%.*s\"", MINI_JSON_SHOW(rel));
    }
    rewinddir(d);
    /* Whiteouts first: they hide what the layers below have. */
    for (struct dirent *de; (de = readdir(d));) {
        if (!is_whiteout(de->d_name))
            continue;
        if (strcmp(de->d_name, ".wh..wh..opq") == 0) {
            int cfd = openat(td, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            DIR *c = cfd < 0 ? NULL : fdopendir(cfd);
            if (!c) {
                mini_close(cfd);
                closedir(d);
                return mini_err_sys(e, MINI_E_IO, errno, "opaque directory \"%.*s\"", MINI_JSON_SHOW(rel));
            }
            for (struct dirent *ce; (ce = readdir(c));) {
                if (strcmp(ce->d_name, ".") && strcmp(ce->d_name, "..") && remove_at(td, ce->d_name, e) < 0) {
                    closedir(c);
                    closedir(d);
                    return -1;
                }
            }
            closedir(c);
        } else if (remove_at(td, de->d_name + 4, e) < 0) {
            closedir(d);
            return -1;
        }
    }
    rewinddir(d);
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..") || is_whiteout(name))
            continue;
        struct stat ls, ts;
        if (fstatat(ld, name, &ls, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = mini_err_sys(e, MINI_E_IO, errno, "layer entry %s", name);
            break;
        }
        bool have = fstatat(td, name, &ts, AT_SYMLINK_NOFOLLOW) == 0;
        if (S_ISDIR(ls.st_mode)) {
            if (have && !S_ISDIR(ts.st_mode) && remove_at(td, name, e) < 0) {
                rc = -1;
                break;
            }
            if ((!have || !S_ISDIR(ts.st_mode)) && mkdirat(td, name, 0700) < 0) {
                rc = mini_err_sys(e, MINI_E_IO, errno, "mkdir %s", name);
                break;
            }
            _cleanup_close_ int lsub = openat(ld, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            _cleanup_close_ int tsub = openat(td, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (lsub < 0 || tsub < 0) {
                rc = mini_err_sys(e, MINI_E_IO, errno, "opening %s", name);
                break;
            }
            /* While we fill it, it must be writable by us. */
            if (have && S_ISDIR(ts.st_mode))
                fchmod(tsub, 0700);
            _cleanup_free_ char *sub = NULL;
            if (asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "", name) < 0) {
                rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
                break;
            }
            if (*n == *cap) {
                struct dirfix *nf = realloc(*fixes, (*cap = *cap ? *cap * 2 : 256) * sizeof *nf);
                if (!nf) {
                    rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
                    break;
                }
                *fixes = nf;
            }
            (*fixes)[*n] = (struct dirfix){ .path = strdup(sub),
                                            .mode = ls.st_mode & 07777,
                                            .uid = ls.st_uid,
                                            .gid = ls.st_gid,
                                            .mtime = ls.st_mtim,
                                            .seq = *n };
            if (!(*fixes)[*n].path) {
                rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
                break;
            }
            (*n)++;
            rc = apply_dir(lsub, tsub, sub, fixes, n, cap, depth + 1, e);
        } else {
            if (have && remove_at(td, name, e) < 0) {
                rc = -1;
                break;
            }
            if (linkat(ld, name, td, name, 0) < 0)
                rc = mini_err_sys(e, MINI_E_IO, errno, "linking %s", name);
        }
    }
    closedir(d);
    return rc;
}

/* A layer's hard links to files of the layers below (its links.json),
 * once the layer is applied on td: each target must be a file (not a
 * directory) of the image as it is now, reached without a symbolic link;
 * one whited out by this layer or never there is refused.  A link whose
 * path the layer itself filled later (its tree has it) is not made. */
static int apply_links(struct import *im, int ld, const char *diff_id, int td, struct mini_err *e)
{
    char p[128];
    snprintf(p, sizeof p, "%s/layers/%s/links.json", im->s->root, diff_id + 7);
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    struct mini_err ignored;
    if (access(p, F_OK) < 0 && errno == ENOENT)
        return 0;
    if (mini_read_file(p, &b, 64u << 20, &ignored) < 0)
        return mini_err_set(e, MINI_E_IO, "%s: %s", p, ignored.msg);
    _cleanup_cjson_ cJSON *links = cJSON_ParseWithLength(b.data, b.len);
    if (!cJSON_IsArray(links))
        return mini_err_set(e, MINI_E_IO, "%s: not a JSON array", p);
    const cJSON *row;
    cJSON_ArrayForEach (row, links) {
        const char *path = cJSON_GetStringValue(cJSON_GetArrayItem(row, 0));
        const char *target = cJSON_GetStringValue(cJSON_GetArrayItem(row, 1));
        if (!path || !target || !*path || !*target)
            return mini_err_set(e, MINI_E_IO, "%s: a malformed row", p);
        char dir[4096], tdir[4096];
        const char *name = split(path, dir, sizeof dir), *tname = split(target, tdir, sizeof tdir);
        struct stat st;
        _cleanup_close_ int lparent = openat2_beneath(ld, dir, O_PATH | O_DIRECTORY);
        if (lparent >= 0 && fstatat(lparent, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            continue;
        _cleanup_close_ int parent = openat2_beneath(td, dir, O_PATH | O_DIRECTORY);
        _cleanup_close_ int tparent = openat2_beneath(td, tdir, O_PATH | O_DIRECTORY);
        if (tparent < 0 || fstatat(tparent, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "hard link %.*s points to \"%.*s\", which is not a file of the layers below "
                                "(whited out, a directory, or behind a symbolic link)",
                                MINI_JSON_SHOW(path), MINI_JSON_SHOW(target));
        if (parent < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "hard link %.*s: its directory", MINI_JSON_SHOW(path));
        if (remove_at(parent, name, e) < 0)
            return -1;
        if (linkat(tparent, tname, parent, name, 0) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "hard link %.*s", MINI_JSON_SHOW(path));
    }
    return 0;
}

/* Build tmp/image/rootfs from the stored layers, in order. */
static int build_rootfs(struct import *im, char **diff_ids, size_t n, struct mini_err *e)
{
    if (mkdirat(im->tmpfd, "image", 0700) < 0 || mkdirat(im->tmpfd, "image/rootfs", 0700) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s/image/rootfs", im->tmp);
    _cleanup_close_ int td = openat(im->tmpfd, "image/rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (td < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "opening %s/image/rootfs", im->tmp);
    struct dirfix *fixes = NULL;
    size_t nf = 0, cap = 0;
    int rc = 0;
    struct stat top = { .st_mode = 0755 };
    for (size_t i = 0; i < n && rc == 0; i++) {
        char p[128];
        snprintf(p, sizeof p, "layers/%s/tree", diff_ids[i] + 7);
        _cleanup_close_ int ld = openat(im->s->dirfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ld < 0 || fstat(ld, &top) < 0) {
            rc = mini_err_sys(e, MINI_E_IO, errno, "opening %s/%s", im->s->root, p);
            break;
        }
        char what[64];
        snprintf(what, sizeof what, "applying layer %zu/%zu", i + 1, n);
        if (im->o->progress)
            im->o->progress(im->o->progress_arg, what, i, n);
        if (apply_dir(ld, td, "", &fixes, &nf, &cap, 0, e) < 0 || apply_links(im, ld, diff_ids[i], td, e) < 0)
            rc = mini_err_prefix(e, "%s", what);
    }
    if (rc == 0 && apply_fixes(td, fixes, nf, im->root, e) == 0) {
        if (im->root)
            fchown(td, top.st_uid, top.st_gid);
        fchmod(td, top.st_mode & 07777);
    } else {
        rc = -1;
    }
    for (size_t i = 0; i < nf; i++)
        free(fixes[i].path);
    free(fixes);
    return rc;
}

/* ---- sources */

struct fd_src {
    int fd;
};

static ssize_t fd_read(void *arg, void *buf, size_t n, struct mini_err *e)
{
    struct fd_src *s = arg;
    ssize_t r = mini_read(s->fd, buf, n);
    if (r < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "reading");
    return r;
}

struct ar_src {
    struct archive *a;
};

static ssize_t ar_read(void *arg, void *buf, size_t n, struct mini_err *e)
{
    struct ar_src *s = arg;
    la_ssize_t r = archive_read_data(s->a, buf, n);
    if (r < 0)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "reading the archive: %s", archive_error_string(s->a));
    return r;
}

/* Whether b (blob p) has the size and digest its descriptor says. */
static int check_blob(const char *p, const struct mini_descriptor *d, const struct mini_buf *b, struct mini_err *e)
{
    if (b->len != (size_t)d->size)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %zu bytes, its descriptor says %lld", p, b->len,
                            (long long)d->size);
    char got[MINI_DIGEST_LEN + 1];
    sha_of(b->data ? b->data : "", b->len, got);
    if (strcmp(got, d->digest) != 0)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: digest mismatch: the content hashes to %s", p, got);
    return 0;
}

/* Read a small blob, checking its size and digest. */
static int read_blob(int dirfd, const struct mini_descriptor *d, struct mini_buf *b, struct mini_err *e)
{
    char p[128];
    snprintf(p, sizeof p, "blobs/sha256/%s", d->digest + 7);
    if (d->size > (int64_t)MINI_IMAGE_META_MAX)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %lld bytes, more than %u for a manifest or config", p,
                            (long long)d->size, MINI_IMAGE_META_MAX);
    _cleanup_close_ int fd = openat(dirfd, p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_BAD_REQUEST, errno, "%s", p);
    if (mini_read_to_end(fd, b, (size_t)d->size) < 0)
        return errno == EFBIG
            ? mini_err_set(e, MINI_E_BAD_REQUEST, "%s: larger than the %lld bytes its descriptor says", p,
                           (long long)d->size)
            : mini_err_sys(e, MINI_E_IO, errno, "reading %s", p);
    return check_blob(p, d, b, e);
}

static bool is_index_type(const char *mt)
{
    return mt &&
        (strcmp(mt, "application/vnd.oci.image.index.v1+json") == 0 ||
         strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json") == 0);
}

/* Layers of an image, as the import finds them. */
struct layers {
    char **diff_ids; /* from the config */
    size_t n;
    unsigned shared;
};

/* Small members of an archive, kept from the first pass over it
 * (sniff_file) so that the second knows the manifests, configs and layers'
 * diff ids before it meets the layers (and skips those already stored),
 * whatever the members' order.  Bounded: members of at most 1 MiB
 * (MINI_IMAGE_META_MAX for index.json), STASH_MAX_MEMBERS of them,
 * STASH_MAX_BYTES in all; past that, members are not kept (and a document
 * that is needed then is missing, with a clear error). */
#define STASH_MAX_MEMBERS 1024
#define STASH_MAX_BYTES (64u << 20)
struct stash {
    char **name;
    struct mini_buf *data;
    size_t n, cap, bytes;
};

static void stash_free(struct stash *st)
{
    for (size_t i = 0; i < st->n; i++) {
        free(st->name[i]);
        mini_buf_free(&st->data[i]);
    }
    free(st->name);
    free(st->data);
    memset(st, 0, sizeof *st);
}

static const struct mini_buf *stash_get(const struct stash *st, const char *name)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->name[i], name) == 0)
            return &st->data[i];
    return NULL;
}

/* Where an OCI layout's documents (index.json, manifests, configs) come
 * from: a layout directory, or an archive of one (oci-archive), whose
 * members the first pass kept. */
struct oci_docs {
    int dfd;                /* the directory, or -1 */
    const struct stash *st; /* else the archive's members */
    const char *where;      /* for messages */
};

static int oci_read_index(const struct oci_docs *d, struct mini_buf *b, struct mini_err *e)
{
    if (d->dfd < 0) {
        const struct mini_buf *m = stash_get(d->st, "index.json");
        if (!m)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: no index.json (or larger than %u bytes)", d->where,
                                MINI_IMAGE_META_MAX);
        return mini_buf_append(b, m->data ? m->data : "", m->len) < 0 ? mini_err_set(e, MINI_E_NOMEM, "out of memory")
                                                                      : 0;
    }
    _cleanup_close_ int fd = openat(d->dfd, "index.json", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_BAD_REQUEST, errno, "%s/index.json", d->where);
    if (mini_read_to_end(fd, b, MINI_IMAGE_META_MAX) < 0)
        return mini_err_sys(e, MINI_E_BAD_REQUEST, errno, "reading %s/index.json", d->where);
    return 0;
}

static int oci_read_blob(const struct oci_docs *d, const struct mini_descriptor *desc, struct mini_buf *b,
                         struct mini_err *e)
{
    if (d->dfd >= 0)
        return read_blob(d->dfd, desc, b, e);
    char p[128];
    snprintf(p, sizeof p, "blobs/sha256/%s", desc->digest + 7);
    const struct mini_buf *m = stash_get(d->st, p);
    if (!m)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: no member %s (or larger than 1 MiB)", d->where, p);
    if (mini_buf_append(b, m->data ? m->data : "", m->len) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return check_blob(p, desc, b, e);
}

/* An index's descriptor may point at another index (a list of
 * platforms, itself listed in index.json...): followed this deep. */
#define MAX_INDEX_DEPTH 8

/* index.json -> (indexes) -> manifest -> config, every blob checked
 * against its descriptor.  m and cfg are filled (free both even on
 * failure); config gets the config's text. */
static int oci_resolve(const struct oci_docs *d, const char *tag, char **name, struct mini_image_manifest *m,
                       struct mini_buf *config, struct mini_image_config *cfg, struct mini_err *e)
{
    memset(m, 0, sizeof *m);
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (oci_read_index(d, &b, e) < 0)
        return -1;
    struct mini_descriptor pick;
    memset(&pick, 0, sizeof pick);
    _cleanup_free_ char *mt = NULL;
    for (int depth = 0;; depth++) {
        struct mini_image_index idx;
        if (mini_image_parse_index(b.data ? b.data : "", b.len, &idx, e) < 0) {
            mini_image_index_free(&idx);
            return depth ? mini_err_prefix(e, "nested index %s", pick.digest) : -1;
        }
        /* The tag picks in index.json; below it, the platform does. */
        const struct mini_descriptor *x = mini_image_index_pick(&idx, depth ? NULL : tag, e);
        if (x) {
            pick.size = x->size;
            memcpy(pick.digest, x->digest, sizeof pick.digest);
            free(mt);
            mt = x->media_type ? strdup(x->media_type) : NULL;
            if (!depth && x->ref_name && !*name && !(*name = strdup(x->ref_name))) {
                mini_image_index_free(&idx);
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            }
        }
        mini_image_index_free(&idx);
        if (!x)
            return depth ? mini_err_prefix(e, "nested index") : -1;
        mini_buf_reset(&b);
        if (oci_read_blob(d, &pick, &b, e) < 0)
            return -1;
        if (!is_index_type(mt))
            break;
        if (depth + 1 >= MAX_INDEX_DEPTH)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "image indexes nested more than %d deep (a loop?)",
                                MAX_INDEX_DEPTH);
    }
    if (mini_image_parse_manifest(b.data ? b.data : "", b.len, m, e) < 0)
        return -1;
    if (oci_read_blob(d, &m->config, config, e) < 0 ||
        mini_image_parse_config(config->data ? config->data : "", config->len, cfg, e) < 0)
        return -1;
    if (cfg->n_diff_ids != m->n_layers)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "config has %zu diff_ids for %zu layers", cfg->n_diff_ids,
                            m->n_layers);
    return 0;
}

static int import_oci(struct import *im, const char *dir, const char *tag, struct mini_buf *config, char **name,
                      struct mini_image_config *cfg, struct layers *ls, struct mini_err *e)
{
    _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", dir);
    struct stat st;
    if (fstatat(dfd, "oci-layout", &st, 0) < 0)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not an OCI image layout (no oci-layout file)", dir);
    struct oci_docs docs = { .dfd = dfd, .where = dir };
    struct mini_image_manifest m;
    int rc = -1;
    if (oci_resolve(&docs, tag, name, &m, config, cfg, e) < 0)
        goto out;
    ls->n = m.n_layers;
    ls->diff_ids = cfg->diff_ids;
    for (size_t i = 0; i < m.n_layers; i++) {
        char what[64];
        snprintf(what, sizeof what, "layer %zu/%zu", i + 1, m.n_layers);
        im->what = what;
        if (layer_stored(im, cfg->diff_ids[i])) {
            ls->shared++;
            continue;
        }
        char p[128], dirname[32];
        snprintf(p, sizeof p, "blobs/sha256/%s", m.layers[i].digest + 7);
        struct fd_src fs = { openat(dfd, p, O_RDONLY | O_CLOEXEC | O_NOCTTY) };
        if (fs.fd < 0) {
            mini_err_sys(e, MINI_E_BAD_REQUEST, errno, "%s: %s", what, p);
            goto out;
        }
        struct layer l;
        int r = extract_layer(im, fd_read, &fs, m.layers[i].size, dirname, &l, e);
        close(fs.fd);
        if (r == 0 && strcmp(l.blob_digest, m.layers[i].digest) != 0)
            r = mini_err_set(e, MINI_E_BAD_REQUEST, "%s: digest mismatch: the blob hashes to %s, the manifest says %s",
                             what, l.blob_digest, m.layers[i].digest);
        if (r == 0 && strcmp(l.diff_id, cfg->diff_ids[i]) != 0)
            r = mini_err_set(e, MINI_E_BAD_REQUEST,
                             "%s: diff id mismatch: the layer's tar hashes to %s, the config says %s", what, l.diff_id,
                             cfg->diff_ids[i]);
        if (r == 0)
            r = commit_layer(im, &l, dirname, e);
        layer_free(&l);
        if (r < 0)
            goto out;
    }
    rc = 0;
out:
    im->what = "image";
    mini_image_manifest_free(&m);
    return rc;
}

/* Member names of a docker archive, normalised ("./x" -> "x"). */
static const char *member_name(struct archive_entry *ent)
{
    const char *n = archive_entry_pathname(ent);
    while (n && n[0] == '.' && n[1] == '/')
        n += 2;
    return n ? n : "";
}

static bool hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* Whether a member name is one a docker archive has (anything else means
 * a root filesystem tarball). */
static bool docker_like(const char *n)
{
    static const char *const fixed[] = { "manifest.json", "repositories", "index.json",   "oci-layout",
                                         "blobs",         "blobs/",       "blobs/sha256", "blobs/sha256/" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(fixed); i++)
        if (strcmp(n, fixed[i]) == 0)
            return true;
    if (strncmp(n, "blobs/sha256/", 13) == 0)
        return true;
    const char *slash = strchr(n, '/');
    size_t first = slash ? (size_t)(slash - n) : strlen(n);
    if (hex64(n, first))
        return true;
    return !slash && strlen(n) == 69 && hex64(n, 64) && strcmp(n + 64, ".json") == 0;
}

static struct archive *open_outer(const char *path, struct mini_err *e)
{
    struct archive *a = archive_read_new();
    if (!a) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    if (archive_read_open_filename(a, path, BUF_SIZE) != ARCHIVE_OK) {
        mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a tar archive (compressed or not): %s", path,
                     archive_error_string(a));
        archive_read_free(a);
        return NULL;
    }
    return a;
}

static bool config_like(const char *n)
{
    if (strlen(n) == 69 && hex64(n, 64) && strcmp(n + 64, ".json") == 0)
        return true;
    return strncmp(n, "blobs/sha256/", 13) == 0 && hex64(n + 13, strlen(n + 13));
}

static int read_member(struct archive *a, struct mini_buf *b, const char *what, struct mini_err *e)
{
    struct ar_src s = { a };
    char chunk[65536];
    for (;;) {
        ssize_t k = ar_read(&s, chunk, sizeof chunk, e);
        if (k < 0)
            return -1;
        if (k == 0)
            return 0;
        if (b->len + (size_t)k > MINI_IMAGE_META_MAX || mini_buf_append(b, chunk, (size_t)k) < 0)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s larger than %u bytes", what, MINI_IMAGE_META_MAX);
    }
}

/* Keep a member of the first pass (see struct stash), when it fits. */
static int stash_add(struct stash *st, struct archive *a, const char *name, int64_t size, size_t max,
                     struct mini_err *e)
{
    if (size < 0 || (uint64_t)size > max || st->n >= STASH_MAX_MEMBERS || st->bytes + (uint64_t)size > STASH_MAX_BYTES)
        return 0;
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        char **nn = realloc(st->name, cap * sizeof *nn);
        if (nn)
            st->name = nn;
        struct mini_buf *nd = nn ? realloc(st->data, cap * sizeof *nd) : NULL;
        if (!nd)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        st->data = nd;
        st->cap = cap;
    }
    if (!(st->name[st->n] = strdup(name)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    memset(&st->data[st->n], 0, sizeof st->data[st->n]);
    st->n++;
    if (read_member(a, &st->data[st->n - 1], name, e) < 0)
        return -1;
    st->bytes += st->data[st->n - 1].len;
    return 0;
}

/* What a file is, from its members: */
enum archive_kind {
    AK_ROOTFS,        /* anything else: a root filesystem tarball */
    AK_DOCKER,        /* manifest.json (docker save, podman save) */
    AK_OCI_ARCHIVE,   /* oci-layout and index.json, no manifest.json (oci-archive) */
    AK_DOCKER_LEGACY, /* repositories and <id>/json, no manifest.json (docker save before 1.10) */
};

/* First pass over a file: its kind, docker's manifest.json read into
 * manifest, and the small members kept in st. */
static int sniff_file(const char *path, struct mini_buf *manifest, struct stash *st, enum archive_kind *kind,
                      struct mini_err *e)
{
    _cleanup_archive_ struct archive *a = open_outer(path, e);
    if (!a)
        return -1;
    struct archive_entry *ent;
    bool docker = false, layout = false, repositories = false;
    *kind = AK_ROOTFS;
    for (;;) {
        int r = archive_read_next_header(a, &ent);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a tar archive: %s", path, archive_error_string(a));
        const char *name = member_name(ent);
        if (!*name || !strcmp(name, "."))
            continue;
        if (!docker_like(name))
            return 0;
        int64_t size = archive_entry_size(ent);
        const char *slash = strchr(name, '/');
        if (strcmp(name, "manifest.json") == 0) {
            if (size > (int64_t)MINI_IMAGE_META_MAX)
                return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: manifest.json larger than %u bytes", path,
                                    MINI_IMAGE_META_MAX);
            if (read_member(a, manifest, "manifest.json", e) < 0)
                return -1;
            docker = true;
        } else if (strcmp(name, "oci-layout") == 0) {
            layout = true;
        } else if (strcmp(name, "index.json") == 0 || strcmp(name, "repositories") == 0) {
            repositories |= name[0] == 'r';
            if (stash_add(st, a, name, size, MINI_IMAGE_META_MAX, e) < 0)
                return -1;
        } else if (config_like(name) || (slash && strcmp(slash, "/json") == 0)) {
            if (stash_add(st, a, name, size, 1u << 20, e) < 0)
                return -1;
        }
    }
    if (docker)
        *kind = AK_DOCKER;
    else if (layout && stash_get(st, "index.json"))
        *kind = AK_OCI_ARCHIVE;
    else if (repositories)
        *kind = AK_DOCKER_LEGACY;
    else
        return mini_err_set(e, MINI_E_BAD_REQUEST,
                            "%s: an image archive with neither manifest.json, nor oci-layout and index.json, nor "
                            "repositories",
                            path);
    return 1;
}

/* A legacy archive's member, from the first pass (mini_member_fn). */
static const char *stash_member(void *arg, const char *name, size_t *len)
{
    const struct mini_buf *b = stash_get(arg, name);
    *len = b ? b->len : 0;
    return b ? (b->data ? b->data : "") : NULL;
}

/* The config of a legacy archive's image: the top layer's config, os and
 * architecture, and the diff ids its layers hashed to. */
static int legacy_config(const cJSON *top, char **diff_ids, size_t n, struct mini_buf *config,
                         struct mini_image_config *cfg, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *c = cJSON_CreateObject();
    const char *arch = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(top, "architecture"));
    const char *os = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(top, "os"));
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(top, "config");
    cJSON *rfs = cJSON_AddObjectToObject(c, "rootfs");
    cJSON *ids = cJSON_AddArrayToObject(rfs, "diff_ids");
    cJSON_AddStringToObject(c, "architecture", arch ? arch : mini_image_host_arch());
    cJSON_AddStringToObject(c, "os", os ? os : "linux");
    cJSON_AddItemToObject(c, "config", cJSON_IsObject(tc) ? cJSON_Duplicate(tc, true) : cJSON_CreateObject());
    cJSON_AddStringToObject(rfs, "type", "layers");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(ids, cJSON_CreateString(diff_ids[i]));
    _cleanup_free_ char *text = cJSON_PrintUnformatted(c);
    if (!text || mini_buf_puts(config, text) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return mini_image_parse_config(config->data, config->len, cfg, e);
}

/* The second pass over an image archive: its layers, as m lists them
 * (members of the archive), extracted and checked.  For a docker-archive
 * the config is the member m->config; for an oci-archive it is in config
 * and cfg already (oci_resolve), and sizes are the layers' per their
 * manifest; for a legacy archive (legacy_top: its top layer's json) it is
 * made from the diff ids found.  A member named blobs/sha256/HEX must
 * hash to HEX. */
static int import_archive(struct import *im, const char *path, const struct mini_docker_manifest *mp,
                          const struct stash *st, const int64_t *sizes, const cJSON *legacy_top,
                          struct mini_buf *config, char **name, struct mini_image_config *cfg, struct layers *ls,
                          struct mini_err *e)
{
    const struct mini_docker_manifest m = *mp;
    int rc = -1;
    char(*dirs)[32] = NULL;
    char **got = NULL; /* computed diff ids, per layer */
    struct archive *a = NULL;
    if (m.n_repo_tags && !*name && mini_image_name_valid(m.repo_tags[0]) && !(*name = strdup(m.repo_tags[0]))) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    dirs = calloc(m.n_layers + 1, sizeof *dirs);
    got = calloc(m.n_layers + 1, sizeof *got);
    if (!dirs || !got) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    if (!(a = open_outer(path, e)))
        goto out;
    bool have_config = config->len > 0;
    for (size_t i = 0; m.config && !have_config && i < st->n; i++) {
        if (strcmp(st->name[i], m.config) != 0)
            continue;
        if (mini_buf_append(config, st->data[i].data ? st->data[i].data : "", st->data[i].len) < 0) {
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            goto out;
        }
        if (mini_image_parse_config(config->data ? config->data : "", config->len, cfg, e) < 0)
            goto out;
        if (cfg->n_diff_ids != m.n_layers) {
            mini_err_set(e, MINI_E_BAD_REQUEST, "config has %zu diff_ids for %zu layers", cfg->n_diff_ids, m.n_layers);
            goto out;
        }
        have_config = true;
    }
    struct archive_entry *ent;
    for (;;) {
        int r = archive_read_next_header(a, &ent);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %s", path, archive_error_string(a));
            goto out;
        }
        const char *mn = member_name(ent);
        if (m.config && strcmp(mn, m.config) == 0 && !have_config) {
            if (archive_entry_size(ent) > (int64_t)MINI_IMAGE_META_MAX) {
                mini_err_set(e, MINI_E_BAD_REQUEST, "%s: config larger than %u bytes", path, MINI_IMAGE_META_MAX);
                goto out;
            }
            if (read_member(a, config, "config", e) < 0)
                goto out;
            if (mini_image_parse_config(config->data ? config->data : "", config->len, cfg, e) < 0)
                goto out;
            if (cfg->n_diff_ids != m.n_layers) {
                mini_err_set(e, MINI_E_BAD_REQUEST, "config has %zu diff_ids for %zu layers", cfg->n_diff_ids,
                             m.n_layers);
                goto out;
            }
            have_config = true;
            continue;
        }
        for (size_t i = 0; i < m.n_layers; i++) {
            if (strcmp(mn, m.layers[i]) != 0 || got[i])
                continue;
            if (have_config && layer_stored(im, cfg->diff_ids[i])) {
                ls->shared++;
                if (!(got[i] = strdup(cfg->diff_ids[i]))) {
                    mini_err_set(e, MINI_E_NOMEM, "out of memory");
                    goto out;
                }
                break;
            }
            char what[64];
            snprintf(what, sizeof what, "layer %zu/%zu", i + 1, m.n_layers);
            im->what = what;
            struct ar_src s = { a };
            struct layer l;
            int64_t size = sizes ? sizes[i] : archive_entry_size_is_set(ent) ? archive_entry_size(ent) : -1;
            int x = extract_layer(im, ar_read, &s, size, dirs[i], &l, e);
            if (x == 0 && strncmp(mn, "blobs/sha256/", 13) == 0 && strcmp(mn + 13, l.blob_digest + 7) != 0)
                x = mini_err_set(e, MINI_E_BAD_REQUEST, "%s: digest mismatch: the blob %s hashes to %s", what, mn,
                                 l.blob_digest);
            if (x == 0 && !(got[i] = strdup(l.diff_id)))
                x = mini_err_set(e, MINI_E_NOMEM, "out of memory");
            if (x == 0)
                x = write_layer_json(im, &l, dirs[i], e);
            layer_free(&l);
            im->what = "image";
            if (x < 0)
                goto out;
            /* The same member listed twice is one layer twice. */
            for (size_t k = i + 1; k < m.n_layers; k++)
                if (strcmp(m.layers[k], m.layers[i]) == 0 && !got[k])
                    got[k] = strdup(got[i]);
            break;
        }
    }
    for (size_t i = 0; legacy_top && i < m.n_layers; i++)
        if (!got[i]) {
            mini_err_set(e, MINI_E_BAD_REQUEST, "%s: no member %s (layer %zu of the parent chain)", path, m.layers[i],
                         i + 1);
            goto out;
        }
    if (legacy_top && legacy_config(legacy_top, got, m.n_layers, config, cfg, e) < 0)
        goto out;
    if (!legacy_top && !have_config) {
        mini_err_set(e, MINI_E_BAD_REQUEST, "%s: no member %s (the config manifest.json names)", path, m.config);
        goto out;
    }
    /* A config named by its digest (NAME.json or blobs/sha256/NAME) is
     * checked against it. */
    if (m.config) {
        const char *base = strrchr(m.config, '/') ? strrchr(m.config, '/') + 1 : m.config;
        char want[MINI_DIGEST_LEN + 1], have[MINI_DIGEST_LEN + 1];
        if (strlen(base) >= 64 && hex64(base, 64)) {
            snprintf(want, sizeof want, "sha256:%.64s", base);
            sha_of(config->data, config->len, have);
            if (strcmp(want, have) != 0) {
                mini_err_set(e, MINI_E_BAD_REQUEST, "%s: digest mismatch: the config hashes to %s", m.config, have);
                goto out;
            }
        }
    }
    for (size_t i = 0; i < m.n_layers; i++) {
        if (!got[i]) {
            mini_err_set(e, MINI_E_BAD_REQUEST, "%s: no member %s (layer %zu in manifest.json)", path, m.layers[i],
                         i + 1);
            goto out;
        }
        if (strcmp(got[i], cfg->diff_ids[i]) != 0) {
            mini_err_set(e, MINI_E_BAD_REQUEST,
                         "layer %zu/%zu: diff id mismatch: the layer's tar hashes to %s, the config says %s", i + 1,
                         m.n_layers, got[i], cfg->diff_ids[i]);
            goto out;
        }
    }
    /* Verified: store them. */
    for (size_t i = 0; i < m.n_layers; i++) {
        if (!dirs[i][0])
            continue;
        char dst[128];
        snprintf(dst, sizeof dst, "layers/%s", got[i] + 7);
        if (renameat(im->tmpfd, dirs[i], im->s->dirfd, dst) < 0 && errno != EEXIST && errno != ENOTEMPTY) {
            mini_err_sys(e, MINI_E_IO, errno, "storing %s", dst);
            goto out;
        }
    }
    ls->n = m.n_layers;
    ls->diff_ids = cfg->diff_ids;
    rc = 0;
out:
    if (a)
        archive_read_free(a);
    if (got)
        for (size_t i = 0; i < m.n_layers; i++)
            free(got[i]);
    free(got);
    free(dirs);
    return rc;
}

/* An image archive of any kind (sniff_file): its manifest, then its
 * layers (import_archive). */
static int import_image_archive(struct import *im, const char *path, enum archive_kind kind,
                                const struct mini_buf *dmanifest, const struct stash *st, const char *tag,
                                struct mini_buf *config, char **name, struct mini_image_config *cfg, struct layers *ls,
                                const char **format, struct mini_err *e)
{
    struct mini_docker_manifest m;
    struct mini_image_manifest om;
    memset(&om, 0, sizeof om);
    _cleanup_cjson_ cJSON *top = NULL;
    _cleanup_free_ int64_t *sizes = NULL;
    int rc = -1;
    memset(&m, 0, sizeof m);
    if (kind == AK_DOCKER) {
        *format = "docker-archive";
        if (mini_image_parse_docker_manifest(dmanifest->data, dmanifest->len, &m, e) < 0)
            goto out;
    } else if (kind == AK_DOCKER_LEGACY) {
        *format = "docker-archive-legacy";
        const struct mini_buf *rb = stash_get(st, "repositories");
        if (mini_image_parse_legacy(rb ? rb->data : NULL, rb ? rb->len : 0, stash_member, (void *)st, name, &m, &top,
                                    e) < 0) {
            mini_err_prefix(e, "%s", path);
            goto out;
        }
    } else {
        /* oci-archive: the layout's documents from the first pass; its
         * layers are the members blobs/sha256/HEX. */
        *format = "oci-archive";
        struct oci_docs docs = { .dfd = -1, .st = st, .where = path };
        if (oci_resolve(&docs, tag, name, &om, config, cfg, e) < 0)
            goto out;
        if (!(m.layers = calloc(om.n_layers + 1, sizeof *m.layers)) ||
            !(sizes = calloc(om.n_layers + 1, sizeof *sizes))) {
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < om.n_layers; i++, m.n_layers++) {
            sizes[i] = om.layers[i].size;
            if (asprintf(&m.layers[i], "blobs/sha256/%s", om.layers[i].digest + 7) < 0) {
                m.layers[i] = NULL;
                mini_err_set(e, MINI_E_NOMEM, "out of memory");
                goto out;
            }
        }
    }
    rc = import_archive(im, path, &m, st, sizes, top, config, name, cfg, ls, e);
out:
    mini_docker_manifest_free(&m);
    mini_image_manifest_free(&om);
    return rc;
}

static int import_rootfs(struct import *im, const char *path, struct mini_buf *config, struct mini_image_config *cfg,
                         struct layers *ls, struct mini_err *e)
{
    struct fd_src fs = { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) };
    if (fs.fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", path);
    struct stat st;
    int64_t size = fstat(fs.fd, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
    char dirname[32];
    struct layer l;
    im->what = "root filesystem";
    int r = extract_layer(im, fd_read, &fs, size, dirname, &l, e);
    close(fs.fd);
    if (r == 0)
        r = commit_layer(im, &l, dirname, e);
    char diff_id[MINI_DIGEST_LEN + 1];
    memcpy(diff_id, l.diff_id, sizeof diff_id);
    layer_free(&l);
    im->what = "image";
    if (r < 0)
        return -1;
    /* Its config, made up: same tarball, same config, same id. */
    _cleanup_cjson_ cJSON *c = cJSON_CreateObject();
    cJSON *cc = cJSON_AddObjectToObject(c, "config");
    cJSON *env = cJSON_AddArrayToObject(cc, "Env");
    cJSON_AddItemToArray(env, cJSON_CreateString("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
    cJSON_AddStringToObject(c, "architecture", mini_image_host_arch());
    cJSON_AddStringToObject(c, "os", "linux");
    cJSON *rfs = cJSON_AddObjectToObject(c, "rootfs");
    cJSON_AddStringToObject(rfs, "type", "layers");
    cJSON *ids = cJSON_AddArrayToObject(rfs, "diff_ids");
    cJSON_AddItemToArray(ids, cJSON_CreateString(diff_id));
    _cleanup_free_ char *text = cJSON_PrintUnformatted(c);
    if (!text || mini_buf_puts(config, text) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_image_parse_config(config->data, config->len, cfg, e) < 0)
        return -1;
    ls->n = 1;
    ls->diff_ids = cfg->diff_ids;
    return 0;
}

/* ---- the whole */

static int write_image(struct import *im, const char *format, const char *src, const struct mini_buf *config,
                       const struct layers *ls, char id[static MINI_DIGEST_LEN + 1], struct mini_err *e)
{
    sha_of(config->data, config->len, id);
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
        int k = sniff_file(dir, &dmanifest, &stash, &kind, e);
        if (k < 0) {
            stash_free(&stash);
            return -1;
        }
        if (fmt == MINI_IMG_DOCKER && k == 0) {
            stash_free(&stash);
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not an image archive (docker-archive or oci-archive)", dir);
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
    if (asprintf(&im.tmp, "%s/tmp/import-XXXXXX", s->root) < 0 || !mkdtemp(im.tmp)) {
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
        r = import_oci(&im, dir, tag, &config, &name, &cfg, &ls, e);
    } else if (fmt == MINI_IMG_DOCKER) {
        r = import_image_archive(&im, dir, kind, &dmanifest, &stash, tag, &config, &name, &cfg, &ls, &format, e);
    } else {
        format = "rootfs";
        r = import_rootfs(&im, dir, &config, &cfg, &ls, e);
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
    if (build_rootfs(&im, ls.diff_ids, ls.n, e) < 0)
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
    stash_free(&stash);
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

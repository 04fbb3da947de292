/* One layer of an import (import_internal.h; image_import.c describes
 * the whole).  Read in one pass: libarchive decompresses the blob (a "raw"
 * reader with every filter), while we hash the compressed bytes (the
 * blob's digest) and the decompressed ones (the diff id), and a second
 * libarchive reader parses the tar stream from those bytes.  Every entry
 * is written by fd: parents are opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), names with O_NOFOLLOW/O_EXCL, so no entry can ever
 * reach outside the layer's directory, whatever its name or the symlinks
 * before it. */
#include "import_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- sha256 */

static int sha_init(struct sha *h)
{
    h->ctx = EVP_MD_CTX_new();
    return h->ctx && EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

static void sha_update(struct sha *h, const void *p, size_t n) { EVP_DigestUpdate(h->ctx, p, n); }

void mini_imp_sha_final(struct sha *h, char out[static MINI_DIGEST_LEN + 1])
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

void mini_imp_sha_of(const void *p, size_t n, char out[static MINI_DIGEST_LEN + 1])
{
    struct sha h;
    if (sha_init(&h) == 0) {
        sha_update(&h, p, n);
        mini_imp_sha_final(&h, out);
    } else {
        out[0] = '\0';
    }
    sha_free(&h);
}

/* ---- sources */

ssize_t mini_imp_fd_read(void *arg, void *buf, size_t n, struct mini_err *e)
{
    struct fd_src *s = arg;
    ssize_t r = mini_read(s->fd, buf, n);
    if (r < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "reading");
    return r;
}

ssize_t mini_imp_ar_read(void *arg, void *buf, size_t n, struct mini_err *e)
{
    struct ar_src *s = arg;
    la_ssize_t r = archive_read_data(s->a, buf, n);
    if (r < 0)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "reading the archive: %s", archive_error_string(s->a));
    return r;
}

/* ---- reading */

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

int mini_imp_openat2_beneath(int dirfd, const char *path, uint64_t flags)
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
    int fd = mini_imp_openat2_beneath(l->treefd, dir, O_PATH | O_DIRECTORY);
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
        fd = mini_imp_openat2_beneath(l->treefd, dir, O_PATH | O_DIRECTORY);
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
int mini_imp_remove_at(int parent, const char *name, struct mini_err *e)
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
const char *mini_imp_split(const char *path, char *dir, size_t size)
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

bool mini_imp_is_whiteout(const char *base) { return strncmp(base, ".wh.", 4) == 0; }

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
    const char *name = mini_imp_split(path, dir, sizeof dir);

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
    if (mini_imp_is_whiteout(name)) {
        const char *target = name + 4;
        bool opq = strcmp(name, ".wh..wh..opq") == 0;
        if (!opq && (!*target || !strcmp(target, ".") || !strcmp(target, "..")))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: invalid whiteout \"%.*s\"", im->what, MINI_JSON_SHOW(path));
        if (!opq && strncmp(target, ".wh.", 4) == 0)
            return 0; /* reserved names */
        if (mini_imp_remove_at(parent, name, e) < 0)
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
        const char *tname = mini_imp_split(tpath, tdir, sizeof tdir);
        _cleanup_close_ int tparent = mini_imp_openat2_beneath(l->treefd, tdir, O_PATH | O_DIRECTORY);
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
            return mini_imp_remove_at(parent, name, e);
        }
        if (terr)
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "%s: hard link %.*s points to \"%.*s\", not a file of this layer or those below",
                                im->what, MINI_JSON_SHOW(path), MINI_JSON_SHOW(tpath));
        if (strcmp(tpath, path) == 0)
            return 0;
        if (mini_imp_remove_at(parent, name, e) < 0)
            return -1;
        if (linkat(tparent, tname, parent, name, 0) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s: hard link %.*s", im->what, MINI_JSON_SHOW(path));
        return 0;
    }

    switch (type) {
    case AE_IFDIR: {
        struct stat st;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
            mini_imp_remove_at(parent, name, e) < 0)
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
        if (mini_imp_remove_at(parent, name, e) < 0)
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
        if (mini_imp_remove_at(parent, name, e) < 0)
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
int mini_imp_apply_fixes(int treefd, struct dirfix *f, size_t n, bool root, struct mini_err *e)
{
    if (n > 1)
        qsort(f, n, sizeof *f, fix_cmp); /* (f may be NULL when n is 0) */
    for (size_t i = 0; i < n; i++) {
        _cleanup_close_ int fd = mini_imp_openat2_beneath(treefd, f[i].path, O_RDONLY | O_DIRECTORY);
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

void mini_imp_layer_free(struct layer *l)
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
int mini_imp_extract_layer(struct import *im, src_read_fn src, void *arg, int64_t expect_size, char dirname[static 32],
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
    if (mkdirat(im->tmpfd, dirname, 0700) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s/%s", im->tmp, dirname);
    if (mkdirat(im->tmpfd, tree, 0700) < 0)
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
    mini_imp_sha_final(&l->blob_sha, l->blob_digest);
    mini_imp_sha_final(&l->diff_sha, l->diff_id);
    free(l->cached_parent);
    l->cached_parent = NULL;
    mini_close(l->cached_fd);
    l->cached_fd = -1;
    if (mini_imp_apply_fixes(l->treefd, l->fixes, l->n_fixes, im->root, e) < 0)
        return mini_err_prefix(e, "%s", im->what);
    return 0;
}

/* Move tmp/DIRNAME into layers/HEX(diff_id), with its layer.json; if
 * another import got there first, ours is dropped (it is the same). */
int mini_imp_write_layer_json(struct import *im, struct layer *l, const char *dirname, struct mini_err *e)
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

int mini_imp_commit_layer(struct import *im, struct layer *l, const char *dirname, struct mini_err *e)
{
    if (mini_imp_write_layer_json(im, l, dirname, e) < 0)
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

bool mini_imp_layer_stored(struct import *im, const char *diff_id)
{
    char p[128];
    struct stat st;
    snprintf(p, sizeof p, "layers/%s/layer.json", diff_id + 7);
    return fstatat(im->s->dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

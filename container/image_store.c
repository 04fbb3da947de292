/* The image store: a directory shared by the daemon and the CLI.
 *
 *   STORE/lock        flock: an import holds it shared for its whole run;
 *                     rm and prune hold it exclusive (they remove layers
 *                     no image uses, which an import may be about to use)
 *   STORE/refs.lock   flock: exclusive while refs.json is rewritten
 *   STORE/refs.json   {"NAME:TAG": "sha256:ID", ...}, written atomically
 *   STORE/layers/HEX/ a layer, extracted (tree/) with layer.json; HEX is
 *                     its diff id (the sha256 of its uncompressed tar)
 *   STORE/images/HEX/ an image: rootfs/ (its layers applied, files
 *                     hard-linked from layers/) and image.json; HEX is the
 *                     sha256 of its config
 *   STORE/tmp/NAME/   work in progress, each under an owner lock
 *
 * Layers and images appear under their final name by rename(2) only
 * when complete, so a crash never leaves a half-imported one in use. */
#include "image.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The store's path: $MINI_IMAGE_STORE, else /var/lib/mini/images for
 * root, else $XDG_DATA_HOME/mini/images, else ~/.local/share/mini/images.
 * Malloc'ed, or NULL with e filled. */
static char *mini_image_store_path(struct mini_err *e)
{
    char *p = NULL;
    const char *env = getenv("MINI_IMAGE_STORE");
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    int r;
    if (env && *env)
        r = asprintf(&p, "%s", env);
    else if (geteuid() == 0)
        r = asprintf(&p, "/var/lib/mini/images");
    else if (xdg && xdg[0] == '/')
        r = asprintf(&p, "%s/mini/images", xdg);
    else if (home && home[0] == '/')
        r = asprintf(&p, "%s/.local/share/mini/images", home);
    else {
        mini_err_set(e, MINI_E_IO, "no image store: set MINI_IMAGE_STORE, XDG_DATA_HOME or HOME");
        return NULL;
    }
    if (r < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    return p;
}

int mini_image_store_open(struct mini_image_store *s, const char *path, struct mini_err *e)
{
    s->dirfd = -1;
    s->root = path ? strdup(path) : mini_image_store_path(e);
    if (!s->root)
        return path ? mini_err_set(e, MINI_E_NOMEM, "out of memory") : -1;
    if (mini_mkdir_p(s->root, 0700, e) < 0)
        goto fail;
    s->dirfd = open(s->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (s->dirfd < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "image store %s", s->root);
        goto fail;
    }
    struct stat st;
    if (fstat(s->dirfd, &st) < 0 || st.st_uid != geteuid()) {
        mini_err_set(e, MINI_E_IO, "image store %s: not owned by uid %u", s->root, (unsigned)geteuid());
        goto fail;
    }
    static const char *const subs[] = { "layers", "images", "tmp" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(subs); i++)
        if (mkdirat(s->dirfd, subs[i], 0700) < 0 && errno != EEXIST) {
            mini_err_sys(e, MINI_E_IO, errno, "image store %s/%s", s->root, subs[i]);
            goto fail;
        }
    return 0;
fail:
    mini_image_store_close(s);
    return -1;
}

void mini_image_store_close(struct mini_image_store *s)
{
    mini_close(s->dirfd);
    s->dirfd = -1;
    free(s->root);
    s->root = NULL;
}

int mini_image_lock(struct mini_image_store *s, const char *which, int how, struct mini_err *e)
{
    int fd = openat(s->dirfd, which, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s/%s", s->root, which);
    int r;
    do
        r = flock(fd, how);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        int err = errno;
        close(fd);
        return mini_err_sys(e, MINI_E_IO, err, "locking %s/%s", s->root, which);
    }
    return fd;
}

/* ---- refs.json */

static cJSON *refs_read(struct mini_image_store *s, struct mini_err *e)
{
    _cleanup_free_ char *path = NULL;
    if (asprintf(&path, "%s/refs.json", s->root) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(path, &b, 64u << 20, e) < 0) {
        if (e->sys_errno == ENOENT)
            return cJSON_CreateObject();
        return NULL;
    }
    cJSON *j = mini_json_parse(b.data, b.len, e);
    if (j && !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        j = NULL;
        mini_err_set(e, MINI_E_IO, "not a JSON object");
    }
    if (!j)
        mini_err_prefix(e, "%s", path);
    return j;
}

static int refs_write(struct mini_image_store *s, const cJSON *refs, struct mini_err *e)
{
    _cleanup_free_ char *path = NULL;
    _cleanup_free_ char *text = cJSON_Print(refs);
    if (!text || asprintf(&path, "%s/refs.json", s->root) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return mini_write_file_atomic(path, text, strlen(text), 0600, e);
}

/* NAME -> NAME:latest, in buf (the tag follows the last '/'; a name
 * with @DIGEST has none). */
static const char *full_name(const char *name, char *buf, size_t size)
{
    const char *slash = strrchr(name, '/');
    if (strchr(name, '@') || strchr(slash ? slash : name, ':'))
        return name;
    snprintf(buf, size, "%s:latest", name);
    return buf;
}

/* The key of name in refs: NAME:TAG as given when refs has it, else its
 * canonical form, under which pulled images are named (python:3.12 ->
 * docker.io/library/python:3.12), when refs has that; else as given. */
static const char *ref_key(const cJSON *refs, const char *name, char *buf, size_t size)
{
    const char *full = full_name(name, buf, size);
    if (cJSON_GetObjectItemCaseSensitive(refs, full))
        return full;
    char canon[600];
    if (mini_image_name_canonical(name, canon, sizeof canon) == 0 && cJSON_GetObjectItemCaseSensitive(refs, canon) &&
        strlen(canon) < size) {
        memcpy(buf, canon, strlen(canon) + 1);
        return buf;
    }
    return full;
}

int mini_image_refs_set(struct mini_image_store *s, const char *name, const char *id, struct mini_err *e)
{
    _cleanup_close_ int lk = mini_image_lock(s, "refs.lock", LOCK_EX, e);
    if (lk < 0)
        return -1;
    _cleanup_cjson_ cJSON *refs = refs_read(s, e);
    if (!refs)
        return -1;
    char buf[300];
    const char *full = full_name(name, buf, sizeof buf);
    cJSON_DeleteItemFromObjectCaseSensitive(refs, full);
    if (!cJSON_AddStringToObject(refs, full, id))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return refs_write(s, refs, e);
}

int mini_image_tag(struct mini_image_store *s, const char *src, const char *dst, char id[static MINI_DIGEST_LEN + 1],
                   struct mini_err *e)
{
    if (!mini_image_name_valid(dst))
        return mini_err_set(e, MINI_E_BAD_REQUEST,
                            "not a valid image name: \"%.*s\" (lower-case [a-z0-9._/-], then an optional :TAG)",
                            MINI_JSON_SHOW(dst));
    /* Shared, as an import: rm and prune wait, so the image found is the
     * one named. */
    _cleanup_close_ int gl = mini_image_lock(s, "lock", LOCK_SH, e);
    if (gl < 0 || mini_image_resolve(s, src, id, e) < 0)
        return -1;
    return mini_image_refs_set(s, dst, id, e);
}

/* ---- reading images */

static cJSON *image_json(struct mini_image_store *s, const char *id, struct mini_err *e)
{
    _cleanup_free_ char *path = NULL;
    if (asprintf(&path, "%s/images/%s/image.json", s->root, id + 7) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(path, &b, MINI_IMAGE_META_MAX * 4, e) < 0)
        return NULL;
    cJSON *j = mini_json_parse(b.data, b.len, e);
    if (!j)
        mini_err_prefix(e, "%s", path);
    return j;
}

static bool image_exists(struct mini_image_store *s, const char *hex)
{
    char p[128];
    struct stat st;
    snprintf(p, sizeof p, "images/%s", hex);
    return fstatat(s->dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

static bool is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* An id or an id prefix: "sha256:HEX" or "HEX" (12 or more digits). */
static int resolve_id(struct mini_image_store *s, const char *ref, char id[static MINI_DIGEST_LEN + 1],
                      struct mini_err *e)
{
    const char *hex = strncmp(ref, "sha256:", 7) == 0 ? ref + 7 : ref;
    size_t n = strlen(hex);
    if (n < 12 || n > 64 || !is_hex(hex, n))
        return 1; /* not an id */
    _cleanup_close_ int dfd = openat(s->dirfd, "images", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d)
        return mini_err_sys(e, MINI_E_IO, errno, "%s/images", s->root);
    dfd = -1;
    int found = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (strlen(de->d_name) == 64 && strncmp(de->d_name, hex, n) == 0) {
            if (found++) {
                closedir(d);
                return mini_err_set(e, MINI_E_BAD_REQUEST, "image id %s is ambiguous", ref);
            }
            snprintf(id, MINI_DIGEST_LEN + 1, "sha256:%s", de->d_name);
        }
    }
    closedir(d);
    return found ? 0 : 1;
}

int mini_image_resolve(struct mini_image_store *s, const char *ref, char id[static MINI_DIGEST_LEN + 1],
                       struct mini_err *e)
{
    if (!ref || !*ref)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "no image named");
    int r = resolve_id(s, ref, id, e);
    if (r <= 0)
        return r;
    if (!mini_image_name_valid(ref))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "not an image name: \"%.*s\"", MINI_JSON_SHOW(ref));
    _cleanup_cjson_ cJSON *refs = refs_read(s, e);
    if (!refs)
        return -1;
    char buf[300];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(refs, ref_key(refs, ref, buf, sizeof buf));
    if (!cJSON_IsString(v) || !mini_digest_valid(v->valuestring) || !image_exists(s, v->valuestring + 7))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "no such image: %s (mini-sandbox image ls lists them)", ref);
    snprintf(id, MINI_DIGEST_LEN + 1, "%s", v->valuestring);
    return 0;
}

static int add_names(cJSON *refs, const char *id, cJSON *arr)
{
    const cJSON *r;
    cJSON_ArrayForEach (r, refs) {
        if (cJSON_IsString(r) && strcmp(r->valuestring, id) == 0)
            if (!cJSON_AddItemToArray(arr, cJSON_CreateString(r->string)))
                return -1;
    }
    return 0;
}

cJSON *mini_image_inspect(struct mini_image_store *s, const char *ref, struct mini_err *e)
{
    char id[MINI_DIGEST_LEN + 1];
    if (mini_image_resolve(s, ref, id, e) < 0)
        return NULL;
    _cleanup_cjson_ cJSON *refs = refs_read(s, e);
    cJSON *j = refs ? image_json(s, id, e) : NULL;
    if (!j)
        return NULL;
    cJSON *names = cJSON_CreateArray();
    if (!names || add_names(refs, id, names) < 0 || !cJSON_AddItemToObject(j, "names", names)) {
        cJSON_Delete(names);
        cJSON_Delete(j);
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    char *path = NULL;
    if (asprintf(&path, "%s/images/%s/rootfs", s->root, id + 7) >= 0) {
        cJSON_AddStringToObject(j, "rootfs", path);
        free(path);
    }
    return j;
}

void mini_image_info_free(struct mini_image_info *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < v[i].n_names; k++)
            free(v[i].names[k]);
        free(v[i].names);
    }
    free(v);
}

static int info_cmp(const void *a, const void *b)
{
    const struct mini_image_info *x = a, *y = b;
    if (!x->n_names || !y->n_names)
        return (x->n_names == 0) - (y->n_names == 0);
    return strcmp(x->names[0], y->names[0]);
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int mini_image_list(struct mini_image_store *s, struct mini_image_info **out, size_t *n, struct mini_err *e)
{
    *out = NULL;
    *n = 0;
    _cleanup_cjson_ cJSON *refs = refs_read(s, e);
    if (!refs)
        return -1;
    int dfd = openat(s->dirfd, "images", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        mini_close(dfd);
        return mini_err_sys(e, MINI_E_IO, errno, "%s/images", s->root);
    }
    size_t cap = 0;
    int rc = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (strlen(de->d_name) != 64 || !is_hex(de->d_name, 64))
            continue;
        char id[MINI_DIGEST_LEN + 1];
        snprintf(id, sizeof id, "sha256:%s", de->d_name);
        struct mini_err ignored;
        _cleanup_cjson_ cJSON *j = image_json(s, id, &ignored);
        if (!j)
            continue; /* being removed */
        if (*n == cap) {
            struct mini_image_info *nv = realloc(*out, (cap = cap ? cap * 2 : 16) * sizeof *nv);
            if (!nv) {
                rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
                break;
            }
            *out = nv;
        }
        struct mini_image_info *v = &(*out)[(*n)++];
        memset(v, 0, sizeof *v);
        memcpy(v->id, id, sizeof v->id);
        int64_t x;
        if (mini_json_get_int(cJSON_GetObjectItemCaseSensitive(j, "size"), 0, MINI_JSON_INT_MAX, &x))
            v->size = x;
        if (mini_json_get_int(cJSON_GetObjectItemCaseSensitive(j, "created"), 0, MINI_JSON_INT_MAX, &x))
            v->created = x;
        v->n_layers = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "layers"));
        const cJSON *r;
        cJSON_ArrayForEach (r, refs) {
            if (!cJSON_IsString(r) || strcmp(r->valuestring, id) != 0)
                continue;
            char **nn = realloc(v->names, (v->n_names + 1) * sizeof *nn);
            if (!nn || !(nn[v->n_names] = strdup(r->string))) {
                if (nn)
                    v->names = nn;
                rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
                break;
            }
            v->names = nn;
            v->n_names++;
        }
        if (v->n_names > 1)
            qsort(v->names, v->n_names, sizeof *v->names, name_cmp);
    }
    closedir(d);
    if (rc < 0) {
        mini_image_info_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, info_cmp);
    return 0;
}

/* ---- in use */

int mini_image_hold(struct mini_image_store *s, const char *id, struct mini_err *e)
{
    char p[128];
    snprintf(p, sizeof p, "images/%s", id + 7);
    int fd = openat(s->dirfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "image %s", id);
    if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
        int err = errno;
        close(fd);
        return mini_err_sys(e, MINI_E_BUSY, err, "image %s is being removed", id);
    }
    return fd;
}

/* Whether a session holds the image (mini_image_hold): 1 yes, 0 no.  On
 * 0, *fd is held exclusive until the caller closes it, so that no
 * session takes it meanwhile. */
static int image_in_use(struct mini_image_store *s, const char *hex, int *fd)
{
    char p[128];
    snprintf(p, sizeof p, "images/%s", hex);
    *fd = openat(s->dirfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0)
        return 0;
    if (flock(*fd, LOCK_EX | LOCK_NB) < 0) {
        close(*fd);
        *fd = -1;
        return 1;
    }
    return 0;
}

/* ---- removal */

/* Move STORE/SUB/HEX into tmp/ (so it is gone from view at once, and a
 * crash mid-removal leaves nothing half-removed in view), then remove it. */
static int remove_entry(struct mini_image_store *s, const char *sub, const char *hex, struct mini_err *e)
{
    char from[128], to[160];
    snprintf(from, sizeof from, "%s/%s", sub, hex);
    snprintf(to, sizeof to, "tmp/rm-%s-%s-%ld", sub, hex, (long)getpid());
    if (renameat(s->dirfd, from, s->dirfd, to) < 0)
        return errno == ENOENT ? 0 : mini_err_sys(e, MINI_E_IO, errno, "removing %s/%s", s->root, from);
    _cleanup_free_ char *path = NULL;
    if (asprintf(&path, "%s/%s", s->root, to) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return mini_rm_rf(path, e);
}

/* Recorded size of layers/HEX (layer.json), 0 when unknown. */
static int64_t recorded_size(struct mini_image_store *s, const char *sub, const char *hex, const char *file)
{
    _cleanup_free_ char *path = NULL;
    if (asprintf(&path, "%s/%s/%s/%s", s->root, sub, hex, file) < 0)
        return 0;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    struct mini_err ignored;
    if (mini_read_file(path, &b, MINI_IMAGE_META_MAX * 4, &ignored) < 0)
        return 0;
    _cleanup_cjson_ cJSON *j = mini_json_parse(b.data, b.len, &ignored);
    int64_t v = 0;
    if (j)
        mini_json_get_int(cJSON_GetObjectItemCaseSensitive(j, "size"), 0, MINI_JSON_INT_MAX, &v);
    return v;
}

/* Remove layers no image uses (the caller holds `lock` exclusive). */
static int gc_layers(struct mini_image_store *s, int64_t *freed, struct mini_err *e)
{
    /* The layers every image uses. */
    _cleanup_cjson_ cJSON *used = cJSON_CreateObject();
    int dfd = openat(s->dirfd, "images", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d || !used) {
        mini_close(dfd);
        return mini_err_sys(e, MINI_E_IO, errno, "%s/images", s->root);
    }
    for (struct dirent *de; (de = readdir(d));) {
        if (strlen(de->d_name) != 64 || !is_hex(de->d_name, 64))
            continue;
        char id[MINI_DIGEST_LEN + 1];
        snprintf(id, sizeof id, "sha256:%s", de->d_name);
        _cleanup_cjson_ cJSON *j = image_json(s, id, e);
        if (!j) {
            closedir(d);
            return mini_err_prefix(e, "not removing layers");
        }
        const cJSON *l;
        cJSON_ArrayForEach (l, cJSON_GetObjectItemCaseSensitive(j, "layers")) {
            const cJSON *di = cJSON_GetObjectItemCaseSensitive(l, "diff_id");
            if (cJSON_IsString(di) && mini_digest_valid(di->valuestring) &&
                !cJSON_GetObjectItemCaseSensitive(used, di->valuestring + 7))
                cJSON_AddTrueToObject(used, di->valuestring + 7);
        }
    }
    closedir(d);
    dfd = openat(s->dirfd, "layers", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        mini_close(dfd);
        return mini_err_sys(e, MINI_E_IO, errno, "%s/layers", s->root);
    }
    int rc = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (strlen(de->d_name) != 64 || !is_hex(de->d_name, 64) || cJSON_GetObjectItemCaseSensitive(used, de->d_name))
            continue;
        int64_t sz = recorded_size(s, "layers", de->d_name, "layer.json");
        if (remove_entry(s, "layers", de->d_name, e) < 0)
            rc = -1;
        else if (freed)
            *freed += sz;
    }
    closedir(d);
    return rc;
}

int mini_image_remove(struct mini_image_store *s, const char *ref, struct mini_err *e)
{
    _cleanup_close_ int gl = mini_image_lock(s, "lock", LOCK_EX, e);
    if (gl < 0)
        return -1;
    char id[MINI_DIGEST_LEN + 1];
    if (mini_image_resolve(s, ref, id, e) < 0)
        return -1;
    bool by_id = resolve_id(s, ref, id, e) == 0;
    _cleanup_close_ int held = -1;
    {
        _cleanup_close_ int lk = mini_image_lock(s, "refs.lock", LOCK_EX, e);
        if (lk < 0)
            return -1;
        _cleanup_cjson_ cJSON *refs = refs_read(s, e);
        if (!refs)
            return -1;
        char buf[300];
        if (!by_id)
            cJSON_DeleteItemFromObjectCaseSensitive(refs, ref_key(refs, ref, buf, sizeof buf));
        bool still = false;
        for (cJSON *r = refs->child, *next; r; r = next) {
            next = r->next;
            if (cJSON_IsString(r) && strcmp(r->valuestring, id) == 0) {
                if (by_id)
                    cJSON_Delete(cJSON_DetachItemViaPointer(refs, r));
                else
                    still = true;
            }
        }
        if (still)
            return refs_write(s, refs, e);
        /* Its last name: not while a sandbox session has it as its root. */
        if (image_in_use(s, id + 7, &held))
            return mini_err_set(e, MINI_E_BUSY,
                                "%s is the root of a sandbox session (mini-sandboxd): close the session first", ref);
        if (refs_write(s, refs, e) < 0)
            return -1;
    }
    if (remove_entry(s, "images", id + 7, e) < 0)
        return -1;
    return gc_layers(s, NULL, e);
}

/* The records of archives imported (archives/sha256/, image_import.c)
 * whose image is gone. */
static void gc_archives(struct mini_image_store *s)
{
    int dfd = openat(s->dirfd, "archives/sha256", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        mini_close(dfd);
        return;
    }
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.')
            continue;
        char buf[512];
        _cleanup_close_ int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        struct mini_err ignored;
        _cleanup_cjson_ cJSON *j = n > 0 ? mini_json_parse(buf, (size_t)n, &ignored) : NULL;
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "id"));
        if (!id || !mini_digest_valid(id) || !image_exists(s, id + 7))
            unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

int mini_image_prune(struct mini_image_store *s, int64_t *freed, struct mini_err *e)
{
    if (freed)
        *freed = 0;
    _cleanup_close_ int gl = mini_image_lock(s, "lock", LOCK_EX, e);
    if (gl < 0)
        return -1;
    /* Images without a name. */
    {
        _cleanup_close_ int lk = mini_image_lock(s, "refs.lock", LOCK_EX, e);
        if (lk < 0)
            return -1;
        _cleanup_cjson_ cJSON *refs = refs_read(s, e);
        if (!refs)
            return -1;
        int dfd = openat(s->dirfd, "images", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
        if (!d) {
            mini_close(dfd);
            return mini_err_sys(e, MINI_E_IO, errno, "%s/images", s->root);
        }
        for (struct dirent *de; (de = readdir(d));) {
            if (strlen(de->d_name) != 64 || !is_hex(de->d_name, 64))
                continue;
            char id[MINI_DIGEST_LEN + 1];
            snprintf(id, sizeof id, "sha256:%s", de->d_name);
            bool named = false;
            const cJSON *r;
            cJSON_ArrayForEach (r, refs) {
                if (cJSON_IsString(r) && strcmp(r->valuestring, id) == 0)
                    named = true;
            }
            int held = -1;
            if (named || image_in_use(s, de->d_name, &held))
                continue; /* named, or a session's root */
            int64_t sz = recorded_size(s, "images", de->d_name, "image.json");
            int rr = remove_entry(s, "images", de->d_name, e);
            mini_close(held);
            if (rr < 0) {
                closedir(d);
                return -1;
            }
            if (freed)
                *freed += sz;
        }
        closedir(d);
    }
    if (gc_layers(s, freed, e) < 0)
        return -1;
    gc_archives(s);
    /* What dead imports left: every tmp/ entry whose owner lock is free
     * (imports hold theirs; rm- entries are ours, left by a crash). */
    int dfd = openat(s->dirfd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        mini_close(dfd);
        return mini_err_sys(e, MINI_E_IO, errno, "%s/tmp", s->root);
    }
    int rc = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.')
            continue;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/tmp/%s", s->root, de->d_name) < 0)
            break;
        int fd = -1;
        int free_ = mini_owner_lock_free(path, true, &fd);
        if (free_ == 0)
            continue; /* an import at work */
        if (mini_rm_rf(path, e) < 0)
            rc = -1;
        mini_close(fd);
    }
    closedir(d);
    return rc;
}

/* An image's own etc/passwd or etc/group: looked up inside its root (a
 * symbolic link there resolves within the image, never on the host), a
 * regular file, bounded.  1 read, 0 absent, -1 with e filled. */
static int read_image_db(int rootfd, const char *name, struct mini_buf *b, struct mini_err *e)
{
    struct open_how how = {
        .flags = O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    _cleanup_close_ int fd = (int)syscall(SYS_openat2, rootfd, name, &how, sizeof how);
    struct stat st;
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
        return 0;
    if (fd < 0 || fstat(fd, &st) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "the image's /%s", name);
    if (!S_ISREG(st.st_mode))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "the image's /%s is not a regular file", name);
    if (mini_read_to_end(fd, b, MINI_IMAGE_META_MAX) < 0)
        return errno == EFBIG
            ? mini_err_set(e, MINI_E_BAD_REQUEST, "the image's /%s is larger than %u bytes", name, MINI_IMAGE_META_MAX)
            : mini_err_sys(e, MINI_E_IO, errno, "reading the image's /%s", name);
    return 1;
}

int mini_image_user_resolve(const char *rootfs, const char *spec, struct mini_image_user *out, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf pw = MINI_BUF_INIT;
    _cleanup_buf_ struct mini_buf gr = MINI_BUF_INIT;
    *out = (struct mini_image_user){ 0, 0 };
    if (!spec || !*spec)
        return 0;
    _cleanup_close_ int root = open(rootfs, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "opening %s", rootfs);
    int hp = read_image_db(root, "etc/passwd", &pw, e);
    int hg = hp < 0 ? -1 : read_image_db(root, "etc/group", &gr, e);
    if (hp < 0 || hg < 0)
        return -1;
    return mini_image_user_parse(spec, hp ? pw.data : NULL, pw.len, hg ? gr.data : NULL, gr.len, out, e);
}

/* The image's root from its stored layers, in order (import_internal.h):
 * files hard-linked from the layers' trees, OCI whiteouts (.wh.NAME and
 * .wh..wh..opq) applied, and the hard links a layer makes to the files of
 * those below. */
#include "import_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        if (!mini_imp_is_whiteout(de->d_name))
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
                if (strcmp(ce->d_name, ".") && strcmp(ce->d_name, "..") && mini_imp_remove_at(td, ce->d_name, e) < 0) {
                    closedir(c);
                    closedir(d);
                    return -1;
                }
            }
            closedir(c);
        } else if (mini_imp_remove_at(td, de->d_name + 4, e) < 0) {
            closedir(d);
            return -1;
        }
    }
    rewinddir(d);
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..") || mini_imp_is_whiteout(name))
            continue;
        struct stat ls, ts;
        if (fstatat(ld, name, &ls, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = mini_err_sys(e, MINI_E_IO, errno, "layer entry %s", name);
            break;
        }
        bool have = fstatat(td, name, &ts, AT_SYMLINK_NOFOLLOW) == 0;
        if (S_ISDIR(ls.st_mode)) {
            if (have && !S_ISDIR(ts.st_mode) && mini_imp_remove_at(td, name, e) < 0) {
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
            if (have && mini_imp_remove_at(td, name, e) < 0) {
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
        const char *name = mini_imp_split(path, dir, sizeof dir), *tname = mini_imp_split(target, tdir, sizeof tdir);
        struct stat st;
        _cleanup_close_ int lparent = mini_imp_openat2_beneath(ld, dir, O_PATH | O_DIRECTORY);
        if (lparent >= 0 && fstatat(lparent, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            continue;
        _cleanup_close_ int parent = mini_imp_openat2_beneath(td, dir, O_PATH | O_DIRECTORY);
        _cleanup_close_ int tparent = mini_imp_openat2_beneath(td, tdir, O_PATH | O_DIRECTORY);
        if (tparent < 0 || fstatat(tparent, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "hard link %.*s points to \"%.*s\", which is not a file of the layers below "
                                "(whited out, a directory, or behind a symbolic link)",
                                MINI_JSON_SHOW(path), MINI_JSON_SHOW(target));
        if (parent < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "hard link %.*s: its directory", MINI_JSON_SHOW(path));
        if (mini_imp_remove_at(parent, name, e) < 0)
            return -1;
        if (linkat(tparent, tname, parent, name, 0) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "hard link %.*s", MINI_JSON_SHOW(path));
    }
    return 0;
}

/* Build tmp/image/rootfs from the stored layers, in order. */
int mini_imp_build_rootfs(struct import *im, char **diff_ids, size_t n, struct mini_err *e)
{
    if (mkdirat(im->tmpfd, "image", 0700) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s/image", im->tmp);
    if (mkdirat(im->tmpfd, "image/rootfs", 0700) < 0)
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
        if (ld < 0) {
            rc = mini_err_sys(e, MINI_E_IO, errno, "opening %s/%s", im->s->root, p);
            break;
        }
        if (fstat(ld, &top) < 0) {
            rc = mini_err_sys(e, MINI_E_IO, errno, "stat %s/%s", im->s->root, p);
            break;
        }
        char what[64];
        snprintf(what, sizeof what, "applying layer %zu/%zu", i + 1, n);
        if (im->o->progress)
            im->o->progress(im->o->progress_arg, what, i, n);
        if (apply_dir(ld, td, "", &fixes, &nf, &cap, 0, e) < 0)
            rc = mini_err_prefix(e, "%s", what);
        else if (apply_links(im, ld, diff_ids[i], td, e) < 0)
            rc = mini_err_prefix(e, "%s: its hard links to lower layers", what);
    }
    if (rc == 0 && mini_imp_apply_fixes(td, fixes, nf, im->root, e) == 0) {
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

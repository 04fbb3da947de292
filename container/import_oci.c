/* OCI image layouts (import_internal.h): index.json -> (indexes) ->
 * manifest -> config, every blob checked against its descriptor, from a
 * layout directory or the documents an oci-archive's first pass kept; and
 * the import of a layout directory. */
#include "import_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether b (blob p) has the size and digest its descriptor says. */
static int check_blob(const char *p, const struct mini_descriptor *d, const struct mini_buf *b, struct mini_err *e)
{
    if (b->len != (size_t)d->size)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %zu bytes, its descriptor says %lld", p, b->len,
                            (long long)d->size);
    char got[MINI_DIGEST_LEN + 1];
    mini_imp_sha_of(b->data ? b->data : "", b->len, got);
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

static int oci_read_index(const struct oci_docs *d, struct mini_buf *b, struct mini_err *e)
{
    if (d->dfd < 0) {
        const struct mini_buf *m = mini_imp_stash_get(d->st, "index.json");
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
    const struct mini_buf *m = mini_imp_stash_get(d->st, p);
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
int mini_imp_oci_resolve(const struct oci_docs *d, const char *tag, char **name, struct mini_image_manifest *m,
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

int mini_imp_import_oci(struct import *im, const char *dir, const char *tag, struct mini_buf *config, char **name,
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
    if (mini_imp_oci_resolve(&docs, tag, name, &m, config, cfg, e) < 0)
        goto out;
    ls->n = m.n_layers;
    ls->diff_ids = cfg->diff_ids;
    for (size_t i = 0; i < m.n_layers; i++) {
        char what[64];
        snprintf(what, sizeof what, "layer %zu/%zu", i + 1, m.n_layers);
        im->what = what;
        if (mini_imp_layer_stored(im, cfg->diff_ids[i])) {
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
        int r = mini_imp_extract_layer(im, mini_imp_fd_read, &fs, m.layers[i].size, dirname, &l, e);
        close(fs.fd);
        if (r == 0 && strcmp(l.blob_digest, m.layers[i].digest) != 0)
            r = mini_err_set(e, MINI_E_BAD_REQUEST, "%s: digest mismatch: the blob hashes to %s, the manifest says %s",
                             what, l.blob_digest, m.layers[i].digest);
        if (r == 0 && strcmp(l.diff_id, cfg->diff_ids[i]) != 0)
            r = mini_err_set(e, MINI_E_BAD_REQUEST,
                             "%s: diff id mismatch: the layer's tar hashes to %s, the config says %s", what, l.diff_id,
                             cfg->diff_ids[i]);
        if (r == 0)
            r = mini_imp_commit_layer(im, &l, dirname, e);
        mini_imp_layer_free(&l);
        if (r < 0)
            goto out;
    }
    rc = 0;
out:
    im->what = "image";
    mini_image_manifest_free(&m);
    return rc;
}

/* What the pieces of the image import share (image_import.c describes
 * the import as a whole; the public API is image.h):
 *   import_layer.c    one layer's tar stream into a tree, entry by entry,
 *                     never outside it; its commit into the store
 *   import_apply.c    the image's root from its stored layers (whiteouts,
 *                     hard links to lower layers)
 *   import_oci.c      OCI image layouts (a directory, or an archive's documents)
 *   import_archive.c  archives: docker-archive (current and legacy),
 *                     oci-archive, root filesystem tarballs
 *   image_import.c    the whole: sources, naming, the image's record */
#ifndef MINI_IMPORT_INTERNAL_H
#define MINI_IMPORT_INTERNAL_H

#include "image.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <time.h>

#define BUF_SIZE (1u << 20)
#define MAX_DEPTH 128
#define MAX_TRAILING (1u << 20) /* bytes after a tar's end-of-archive marker */
#define MAX_OWNERS 100000
#define MAX_LINKS 100000 /* hard links to a lower layer's file, per layer */

struct sha {
    EVP_MD_CTX *ctx;
};

static inline void archive_freep(struct archive **a)
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

/* Byte sources for mini_imp_extract_layer: a file, or the current member of an
 * archive. */
struct fd_src {
    int fd;
};
struct ar_src {
    struct archive *a;
};
ssize_t mini_imp_fd_read(void *arg, void *buf, size_t n, struct mini_err *e);
ssize_t mini_imp_ar_read(void *arg, void *buf, size_t n, struct mini_err *e);

/* Layers of an image, as the import finds them. */
struct layers {
    char **diff_ids; /* from the config */
    size_t n;
    unsigned shared;
};

/* Small members of an archive, kept from the first pass over it
 * (mini_imp_sniff_file) so that the second knows the manifests, configs and layers'
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
void mini_imp_stash_free(struct stash *st);
const struct mini_buf *mini_imp_stash_get(const struct stash *st, const char *name);

/* Where an OCI layout's documents (index.json, manifests, configs) come
 * from: a layout directory, or an archive of one (oci-archive), whose
 * members the first pass kept. */
struct oci_docs {
    int dfd;                /* the directory, or -1 */
    const struct stash *st; /* else the archive's members */
    const char *where;      /* for messages */
};

/* What a file is, from its members: */
enum archive_kind {
    AK_ROOTFS,        /* bin, usr or etc at its top: a root filesystem tarball */
    AK_UNKNOWN,       /* anything else: refused unless --format rootfs */
    AK_DOCKER,        /* manifest.json (docker save, podman save) */
    AK_OCI_ARCHIVE,   /* oci-layout and index.json, no manifest.json (oci-archive) */
    AK_DOCKER_LEGACY, /* repositories and <id>/json, no manifest.json (docker save before 1.10) */
};

/* import_layer.c */
void mini_imp_sha_of(const void *p, size_t n, char out[static MINI_DIGEST_LEN + 1]);
/* The digest so far as "sha256:HEX" (the context is then spent). */
void mini_imp_sha_final(struct sha *h, char out[static MINI_DIGEST_LEN + 1]);
int mini_imp_openat2_beneath(int dirfd, const char *path, uint64_t flags);
/* Remove whatever `name` is in parent, never following a symlink. */
int mini_imp_remove_at(int parent, const char *name, struct mini_err *e);
/* Split "a/b/c" into the parent "a/b" (in dir, a buffer) and "c". */
const char *mini_imp_split(const char *path, char *dir, size_t size);
bool mini_imp_is_whiteout(const char *base);
/* Give directories their final mode, owner and time, deepest first. */
int mini_imp_apply_fixes(int treefd, struct dirfix *f, size_t n, bool root, struct mini_err *e);
/* Extract one layer from a source into tmp/layer-N/tree, leaving its
 * digests in blob_digest and diff_id.  *dirname gets "layer-N".  Free l
 * with mini_imp_layer_free, even on failure. */
int mini_imp_extract_layer(struct import *im, src_read_fn src, void *arg, int64_t expect_size, char dirname[static 32],
                           struct layer *l, struct mini_err *e);
void mini_imp_layer_free(struct layer *l);
int mini_imp_write_layer_json(struct import *im, struct layer *l, const char *dirname, struct mini_err *e);
int mini_imp_commit_layer(struct import *im, struct layer *l, const char *dirname, struct mini_err *e);
bool mini_imp_layer_stored(struct import *im, const char *diff_id);

/* import_apply.c: build tmp/image/rootfs from the stored layers, in order. */
int mini_imp_build_rootfs(struct import *im, char **diff_ids, size_t n, struct mini_err *e);

/* import_oci.c */
int mini_imp_oci_resolve(const struct oci_docs *d, const char *tag, char **name, struct mini_image_manifest *m,
                         struct mini_buf *config, struct mini_image_config *cfg, struct mini_err *e);
int mini_imp_import_oci(struct import *im, const char *dir, const char *tag, struct mini_buf *config, char **name,
                        struct mini_image_config *cfg, struct layers *ls, struct mini_err *e);

/* import_archive.c */
int mini_imp_sniff_file(const char *path, struct mini_buf *manifest, struct stash *st, enum archive_kind *kind,
                        char **foreign, struct mini_err *e);
int mini_imp_import_image_archive(struct import *im, const char *path, enum archive_kind kind,
                                  const struct mini_buf *dmanifest, const struct stash *st, const char *tag,
                                  struct mini_buf *config, char **name, struct mini_image_config *cfg,
                                  struct layers *ls, const char **format, struct mini_err *e);
int mini_imp_import_rootfs(struct import *im, const char *path, struct mini_buf *config, struct mini_image_config *cfg,
                           struct layers *ls, struct mini_err *e);

#endif

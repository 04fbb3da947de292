/* Container images: parsing of OCI and docker-archive metadata
 * (image_parse.c), the content-addressed image store (image_store.c) and
 * importing into it (image_import.c and the import_*.c it calls).
 * docs/images.md describes the store layout, the formats and how hostile
 * images are handled.
 *
 * An image is untrusted input: everything read from it is bounded and
 * checked before use, and nothing is ever written outside the store. */
#ifndef MINI_CONTAINER_IMAGE_H
#define MINI_CONTAINER_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "mini/err.h"

/* Largest manifest, index or config document read (bytes). */
#define MINI_IMAGE_META_MAX (4u << 20)
/* Most layers in one image. */
#define MINI_IMAGE_MAX_LAYERS 256
/* "sha256:" and 64 lower-case hex digits. */
#define MINI_DIGEST_LEN 71

/* ---- metadata parsing (image_parse.c; fuzzed by tests/fuzz/fuzz_image.c) */

struct mini_descriptor {
    char *media_type; /* may be NULL */
    char digest[MINI_DIGEST_LEN + 1];
    int64_t size;
    char *ref_name;      /* org.opencontainers.image.ref.name, or NULL */
    char *platform_os;   /* platform.os, or NULL */
    char *platform_arch; /* platform.architecture, or NULL */
};

struct mini_image_index {
    struct mini_descriptor *manifests;
    size_t n_manifests;
};

struct mini_image_manifest {
    struct mini_descriptor config;
    struct mini_descriptor *layers;
    size_t n_layers;
};

/* What the sandbox needs of an image's config, and its layers' diff ids. */
struct mini_image_config {
    char *os, *architecture;
    char **env; /* "K=V" strings */
    size_t n_env;
    char *working_dir; /* or NULL */
    char *user;        /* or NULL */
    char **diff_ids;   /* "sha256:..." */
    size_t n_diff_ids;
};

/* One entry of a docker-archive's manifest.json. */
struct mini_docker_manifest {
    char *config; /* member name of the config */
    char **repo_tags;
    size_t n_repo_tags;
    char **layers; /* member names of the layers, in order */
    size_t n_layers;
};

/* Whether s is "sha256:" and 64 lower-case hex digits. */
bool mini_digest_valid(const char *s);
/* Whether s is a member name of an archive we may look up: relative, no
 * "." or ".." component, no empty component, printable ASCII. */
bool mini_image_member_valid(const char *s);

/* Each parses p[0..len) and fills *out (zeroed first; free with the
 * matching _free even on failure), or returns -1 with e filled
 * (MINI_E_BAD_REQUEST, saying which field is wrong). */
int mini_image_parse_index(const char *p, size_t len, struct mini_image_index *out, struct mini_err *e);
int mini_image_parse_manifest(const char *p, size_t len, struct mini_image_manifest *out, struct mini_err *e);
int mini_image_parse_config(const char *p, size_t len, struct mini_image_config *out, struct mini_err *e);
/* A docker-archive manifest.json: an array; *out gets its first entry. */
int mini_image_parse_docker_manifest(const char *p, size_t len, struct mini_docker_manifest *out, struct mini_err *e);
/* The pre-2016 docker-archive (no manifest.json): `repositories`
 * ({"NAME": {"TAG": "ID"}}) names the top layer; each layer's member
 * ID/json (got through member: its text and length, NULL when absent)
 * names its parent; layers are ID/layer.tar.  The chain, walked from the
 * top, becomes out's layers (base first; out->config stays NULL); *top
 * gets the top layer's json (its config, os, architecture are the
 * image's), *name "NAME:TAG" when valid and *name was NULL.  A chain
 * longer than MINI_IMAGE_MAX_LAYERS, a loop, a missing or malformed
 * ID/json: -1 with e filled. */
typedef const char *(*mini_member_fn)(void *arg, const char *name, size_t *len);
int mini_image_parse_legacy(const char *repositories, size_t len, mini_member_fn member, void *arg, char **name,
                            struct mini_docker_manifest *out, cJSON **top, struct mini_err *e);
void mini_image_index_free(struct mini_image_index *x);
void mini_image_manifest_free(struct mini_image_manifest *m);
void mini_image_config_free(struct mini_image_config *c);
void mini_docker_manifest_free(struct mini_docker_manifest *m);

/* The descriptor of idx to use: the one whose ref name is tag (when tag
 * is given), else the only one, else the one for linux and this machine's
 * architecture.  NULL with e filled. */
const struct mini_descriptor *mini_image_index_pick(const struct mini_image_index *idx, const char *tag,
                                                    struct mini_err *e);
/* The OCI architecture name of this machine ("amd64", "arm64", ...). */
const char *mini_image_host_arch(void);

/* The ids of an image config's User: "NAME", "UID", "UID:GID",
 * "NAME:GROUP" (or "UID:GROUP", "NAME:GID"); "" is root.  Names are looked
 * up in the image's /etc/passwd and /etc/group texts (NULL: the image has
 * none); a user given alone gets its passwd group, a numeric uid the
 * image does not list gets group 0.  0, or -1 with e filled
 * (MINI_E_BAD_REQUEST: a name that is not there, a malformed spec). */
struct mini_image_user {
    uint32_t uid, gid;
};
int mini_image_user_parse(const char *spec, const char *passwd, size_t plen, const char *group, size_t glen,
                          struct mini_image_user *out, struct mini_err *e);

/* Whether name is a valid image name: [a-z0-9][a-z0-9._/-]* up to 128
 * bytes, optionally ":TAG" with TAG [A-Za-z0-9_][A-Za-z0-9._-]* up to 128. */
bool mini_image_name_valid(const char *name);

/* ---- the store (image_store.c) */

struct mini_image_store {
    char *root; /* the store's directory */
    int dirfd;  /* O_PATH of it */
};

/* Open (creating it 0700 and its subdirectories) the store at path (NULL:
 * the default).  0 or -1 with e filled. */
int mini_image_store_open(struct mini_image_store *s, const char *path, struct mini_err *e);
void mini_image_store_close(struct mini_image_store *s);

/* One image as `image ls` shows it. */
struct mini_image_info {
    char id[MINI_DIGEST_LEN + 1];
    char **names;
    size_t n_names;
    int64_t size;    /* bytes of its files */
    int64_t created; /* import time, seconds since the epoch */
    int n_layers;
};
void mini_image_info_free(struct mini_image_info *v, size_t n);

/* Every image in the store, sorted by name (unnamed ones last). */
int mini_image_list(struct mini_image_store *s, struct mini_image_info **out, size_t *n, struct mini_err *e);
/* Resolve a reference (NAME, NAME:TAG, a full id or an unambiguous id
 * prefix of at least 12 hex digits) to an image id.  0 or -1 with e
 * filled (MINI_E_BAD_REQUEST for no such image). */
int mini_image_resolve(struct mini_image_store *s, const char *ref, char id[static MINI_DIGEST_LEN + 1],
                       struct mini_err *e);
/* The image's record (image.json, with "names" added), or NULL. */
cJSON *mini_image_inspect(struct mini_image_store *s, const char *ref, struct mini_err *e);
/* Resolve spec (an image config's User) against rootfs's own etc/passwd
 * and etc/group, opened inside rootfs (symbolic links resolve within it,
 * never out of it), regular files of at most MINI_IMAGE_META_MAX bytes. */
int mini_image_user_resolve(const char *rootfs, const char *spec, struct mini_image_user *out, struct mini_err *e);
/* A sandbox session's hold on image id (a shared flock on its directory,
 * for the session's life): rm and prune leave a held image alone.  The
 * fd to close when done, or -1 with e filled. */
int mini_image_hold(struct mini_image_store *s, const char *id, struct mini_err *e);
/* Give the image src names (a name, an id or an id prefix) the name dst
 * too (NAME[:TAG], :latest when no tag; replacing what dst named before).
 * id gets the image's id.  0 or -1 with e filled. */
int mini_image_tag(struct mini_image_store *s, const char *src, const char *dst, char id[static MINI_DIGEST_LEN + 1],
                   struct mini_err *e);
/* Remove a name; the image goes with its last name (MINI_E_BUSY while a
 * session holds it).  A reference by id removes the image and all its
 * names. */
int mini_image_remove(struct mini_image_store *s, const char *ref, struct mini_err *e);
/* Remove unnamed images, layers no image uses, and what dead imports left
 * in tmp/.  *freed gets the bytes removed (may be NULL). */
int mini_image_prune(struct mini_image_store *s, int64_t *freed, struct mini_err *e);

/* ---- import (image_import.c; its pieces share import_internal.h) */

/* MINI_IMG_DOCKER: an image archive, told apart by its members:
 * docker-archive (manifest.json, or the legacy repositories form) or
 * oci-archive (an OCI layout in a tar). */
enum mini_image_format { MINI_IMG_AUTO, MINI_IMG_OCI, MINI_IMG_DOCKER, MINI_IMG_ROOTFS };

struct mini_import_opts {
    enum mini_image_format format;
    const char *name;     /* NAME[:TAG] to give it, or NULL for the source's own */
    const char *tag;      /* for an OCI layout: which ref name to take (SRC:TAG) */
    uint64_t max_bytes;   /* total bytes of file content (sparse holes count); 0: the default,
                           * mini_import_default_max_bytes */
    uint64_t max_entries; /* total entries of all layers; 0: default */
    /* Called now and then during a long import (may be NULL). */
    void (*progress)(void *arg, const char *what, uint64_t done, uint64_t total);
    void *progress_arg;
};

/* The default of max_bytes: half of what is free (to an unprivileged user)
 * on the store's filesystem when the import starts, and never more than
 * MINI_IMPORT_DEFAULT_MAX_BYTES.  Without it a small compressed layer
 * (a gzip bomb: 64 MB expanding to 64 GiB) could fill the filesystem
 * before any limit is reached; with it an import stops, on the file sizes
 * in the tar headers and before their data is written, with at least half
 * of the free space left.  *free_bytes gets that free space (UINT64_MAX
 * when the filesystem cannot be asked: then the cap is the default). */
#define MINI_IMPORT_DEFAULT_MAX_BYTES (64ull << 30)
#define MINI_IMPORT_DEFAULT_MAX_ENTRIES 2000000ull

struct mini_import_result {
    char id[MINI_DIGEST_LEN + 1];
    char *name; /* the name given, or NULL */
    unsigned layers, layers_shared;
    uint64_t bytes, entries;
    /* what was neutralised */
    uint64_t skipped_devices, skipped_fifos, stripped_setid;
    /* the sha256 of the archive file ("" for an OCI layout), and whether
     * it was imported before: then only named, nothing read but its bytes */
    char archive[MINI_DIGEST_LEN + 1];
    bool known;
};

/* Import src (a directory: OCI layout; a file: docker-archive or root
 * filesystem tarball, told apart by their members unless opts->format
 * says; "-": such a file read from standard input, spooled into the
 * store's tmp/ first, at most max_bytes of it).  A file whose bytes were
 * imported before (STORE/archives/sha256/) is not read again: its image
 * is named.  0 or -1 with e filled; nothing half-imported remains visible. */
int mini_image_import(struct mini_image_store *s, const char *src, const struct mini_import_opts *opts,
                      struct mini_import_result *res, struct mini_err *e);
void mini_import_result_free(struct mini_import_result *r);

/* Internals shared by image_store.c and the import. */
int mini_image_refs_set(struct mini_image_store *s, const char *name, const char *id, struct mini_err *e);
int mini_image_lock(struct mini_image_store *s, const char *which, int how, struct mini_err *e);

/* ---- registries: references (image_ref.c) and pulling (image_pull.c) */

/* A reference as Docker and podman read it: [REGISTRY[:PORT]/]PATH[:TAG]
 * [@sha256:HEX]; docker.io when no registry is named ("python" is
 * docker.io/library/python:latest).  docs/images.md, "Pulling". */
struct mini_image_ref {
    char registry[256]; /* host or host:port, lower-case; "docker.io" */
    char repo[256];     /* library/python */
    char tag[129];      /* "" when pulled by digest alone */
    char digest[MINI_DIGEST_LEN + 1];
};
int mini_image_ref_parse(const char *s, struct mini_image_ref *r, struct mini_err *e);
/* "REGISTRY/REPO:TAG", or "REGISTRY/REPO@DIGEST" when r has a digest: the
 * name a pulled image is stored under.  -1 when buf is too small. */
int mini_image_ref_name(const struct mini_image_ref *r, char *buf, size_t size);
/* name's canonical form (python:3.12 -> docker.io/library/python:3.12),
 * -1 when name is not a reference. */
int mini_image_name_canonical(const char *name, char *buf, size_t size);

enum mini_pull_output { MINI_PULL_QUIET, MINI_PULL_LINES, MINI_PULL_TTY };

struct mini_pull_opts {
    const char *creds;            /* "USER:PASS" for the reference's registry, or NULL: the auth files */
    const char *cert_dir;         /* DIR with ca.crt, or NULL: /etc/containers/certs.d/HOST, /etc/docker/certs.d/HOST */
    bool tls_verify;              /* false: TLS unverified, and plain HTTP allowed */
    unsigned parallel;            /* layers fetched at once (0: 3) */
    enum mini_pull_output output; /* progress on stderr */
};

struct mini_pull_result {
    char id[MINI_DIGEST_LEN + 1];
    char name[600];
    char manifest_digest[MINI_DIGEST_LEN + 1];
    unsigned layers, layers_fetched;
    uint64_t bytes_fetched;
    bool up_to_date; /* the image was stored already: only its name was set */
};

/* Pull ref from its registry (or a mirror from $MINI_REGISTRY_MIRRORS)
 * into the store: manifest, config and the layers not stored yet, each
 * checked against its digest, then imported (mini_image_import) under
 * the reference's canonical name.  0 or -1 with e filled. */
int mini_image_pull(struct mini_image_store *s, const char *ref, const struct mini_pull_opts *opts,
                    struct mini_pull_result *res, struct mini_err *e);

#endif

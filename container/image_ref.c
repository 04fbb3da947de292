/* Image references as Docker and podman read them (image.h, "pulling"):
 * [REGISTRY[:PORT]/]PATH[:TAG][@sha256:HEX].  The first component is a
 * registry when it has a '.' or a ':', or is "localhost"; else the
 * registry is docker.io, where a one-component path is under library/. */
#include "image.h"

#include <stdio.h>
#include <string.h>

static bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* A path component: [a-z0-9]+ with separators . _ __ - inside. */
static bool path_component_valid(const char *s, size_t n)
{
    if (!n || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

/* host, host:port, [v6]:port; letters are lower-cased into out. */
static bool registry_valid(const char *s, size_t n, char *out, size_t size)
{
    if (!n || n >= size)
        return false;
    size_t i = 0;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return false;
        for (i = 1; s + i < close; i++)
            if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F') ||
                  s[i] == ':'))
                return false;
        i++;
    } else {
        for (; i < n && s[i] != ':'; i++) {
            char c = s[i];
            if (!(lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == '-'))
                return false;
        }
        if (!i || s[0] == '-' || s[0] == '.')
            return false;
    }
    if (i < n) {
        if (s[i] != ':' || i + 1 == n || n - i - 1 > 5)
            return false;
        for (size_t k = i + 1; k < n; k++)
            if (s[k] < '0' || s[k] > '9')
                return false;
    }
    for (size_t k = 0; k < n; k++)
        out[k] = (s[k] >= 'A' && s[k] <= 'Z') ? (char)(s[k] - 'A' + 'a') : s[k];
    out[n] = '\0';
    return true;
}

int mini_image_ref_parse(const char *s, struct mini_image_ref *r, struct mini_err *e)
{
    memset(r, 0, sizeof *r);
    size_t len = s ? strlen(s) : 0;
    if (!len || len > 512)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "not an image reference: \"%.*s\"", 64, s ? s : "");
    const char *at = strchr(s, '@');
    if (at) {
        if (!mini_digest_valid(at + 1))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the digest is not sha256: and 64 lower-case hex digits", s);
        memcpy(r->digest, at + 1, MINI_DIGEST_LEN + 1);
        len = (size_t)(at - s);
    }
    /* The tag: after the last ':' that follows the last '/'. */
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '/')
            colon = NULL;
        else if (s[i] == ':')
            colon = s + i;
    }
    size_t n = len;
    if (colon) {
        const char *t = colon + 1;
        size_t tl = len - (size_t)(t - s);
        if (!tl || tl > 128 || !(lower_alnum(t[0]) || (t[0] >= 'A' && t[0] <= 'Z') || t[0] == '_'))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a valid tag", s);
        for (size_t i = 0; i < tl; i++)
            if (!(lower_alnum(t[i]) || (t[i] >= 'A' && t[i] <= 'Z') || t[i] == '_' || t[i] == '.' || t[i] == '-'))
                return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a valid tag", s);
        memcpy(r->tag, t, tl);
        n = (size_t)(colon - s);
    }
    /* The registry: a first component with '.' or ':', or localhost. */
    const char *path = s;
    const char *first = memchr(s, '/', n);
    if (first) {
        size_t fl = (size_t)(first - s);
        bool is_reg =
            memchr(s, '.', fl) || memchr(s, ':', fl) || (fl == 9 && !strncmp(s, "localhost", 9)) || (s[0] == '[');
        for (size_t i = 0; i < fl && !is_reg; i++)
            if (s[i] >= 'A' && s[i] <= 'Z')
                is_reg = true;
        if (is_reg) {
            if (!registry_valid(s, fl, r->registry, sizeof r->registry))
                return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a valid registry host", s);
            path = first + 1;
        }
    }
    if (!r->registry[0])
        snprintf(r->registry, sizeof r->registry, "docker.io");
    if (!strcmp(r->registry, "index.docker.io") || !strcmp(r->registry, "registry-1.docker.io"))
        snprintf(r->registry, sizeof r->registry, "docker.io");
    size_t pl = n - (size_t)(path - s);
    bool library = !strcmp(r->registry, "docker.io") && !memchr(path, '/', pl);
    if (pl + (library ? 8 : 0) >= sizeof r->repo)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the repository name is too long", s);
    for (const char *c = path; c < path + pl;) {
        const char *end = memchr(c, '/', (size_t)(path + pl - c));
        size_t cl = end ? (size_t)(end - c) : (size_t)(path + pl - c);
        if (!path_component_valid(c, cl))
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "%s: not a valid repository name (lower-case letters, digits, separators . _ -)", s);
        c += cl + (end ? 1 : 0);
        if (end && c == path + pl)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not a valid repository name", s);
    }
    snprintf(r->repo, sizeof r->repo, "%s%.*s", library ? "library/" : "", (int)pl, path);
    if (!r->tag[0] && !r->digest[0])
        snprintf(r->tag, sizeof r->tag, "latest");
    return 0;
}

int mini_image_ref_name(const struct mini_image_ref *r, char *buf, size_t size)
{
    int n = r->digest[0] ? snprintf(buf, size, "%s/%s@%s", r->registry, r->repo, r->digest)
                         : snprintf(buf, size, "%s/%s:%s", r->registry, r->repo, r->tag);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

int mini_image_name_canonical(const char *name, char *buf, size_t size)
{
    struct mini_image_ref r;
    struct mini_err ignored;
    if (mini_image_ref_parse(name, &r, &ignored) < 0)
        return -1;
    return mini_image_ref_name(&r, buf, size);
}

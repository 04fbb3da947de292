/* Pulling images from a registry: the OCI distribution protocol over
 * libcurl (docs/images.md, "Pulling from a registry").
 *
 * The manifest (an index or manifest list is followed down to the host's
 * platform) and the config are fetched into memory, bounded and checked
 * against their digests; the layers not stored yet are fetched a few at
 * a time, each streamed into STORE/tmp/blob-HEX (an owner-locked partial
 * file, resumed with a Range request when a transfer breaks, in this run
 * or a later one), hashed on the way, and moved into an OCI layout in
 * STORE/tmp/pull-XXXXXX only when its size and digest are right.  That
 * layout is then imported (mini_image_import), which checks every layer
 * again while extracting it.
 *
 * Credentials (--creds, or the auth files podman and Docker read) go to
 * the registry they are for, and to the token server its challenge
 * names, never elsewhere: libcurl's own authentication (Basic, Bearer) is
 * used, which it drops on a redirect to another host, port or scheme (a
 * blob store's signed URL), and CURLOPT_UNRESTRICTED_AUTH is never set.
 * Nothing printed contains a credential or a token. */
#include "image.h"
#include "import_internal.h"
#include "mini/clock.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"
#include "mini/str.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ACCEPT_MANIFESTS                                                                            \
    "Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, " \
    "application/vnd.docker.distribution.manifest.list.v2+json, "                                   \
    "application/vnd.docker.distribution.manifest.v2+json"
#define MAX_INDEX_DEPTH 8
#define MAX_TRIES 5       /* per layer: transfers that break are resumed this often */
#define ERR_BODY_MAX 4096 /* of an error response, kept for the message */
#define AUTH_FILE_MAX (1u << 20)

/* ---- registries */

struct reg {
    char host[256];                 /* host[:port] in URLs (registry-1.docker.io for docker.io) */
    const char *scheme;             /* "https" or "http", NULL until pinged */
    bool loopback;                  /* plain HTTP allowed, as Docker allows it */
    char *user, *pass;              /* credentials, or NULL */
    char creds_from[PATH_MAX + 16]; /* "--creds" or the auth file they came from */
    char *token;                    /* a bearer token, or NULL */
    bool basic;                     /* send user and password (Basic) */
    char ca[PATH_MAX];              /* the registry's CA (ca.crt), or "" */
};

static void reg_free(struct reg *r)
{
    if (r->pass)
        explicit_bzero(r->pass, strlen(r->pass));
    if (r->token)
        explicit_bzero(r->token, strlen(r->token));
    free(r->user);
    free(r->pass);
    free(r->token);
    r->user = r->pass = r->token = NULL;
}

/* host without its port (and brackets) into out. */
static void host_only(const char *hp, char *out, size_t size)
{
    if (hp[0] == '[') {
        const char *c = strchr(hp, ']');
        snprintf(out, size, "%.*s", c ? (int)(c - hp - 1) : 0, hp + 1);
        return;
    }
    const char *c = strchr(hp, ':');
    snprintf(out, size, "%.*s", c ? (int)(c - hp) : (int)strlen(hp), hp);
}

/* Loopback as Docker treats it: localhost, 127.0.0.0/8, ::1. */
static bool is_loopback(const char *hostport)
{
    char h[256];
    host_only(hostport, h, sizeof h);
    struct in_addr a4;
    struct in6_addr a6;
    if (!strcasecmp(h, "localhost"))
        return true;
    if (inet_pton(AF_INET, h, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, h, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* "user:pass" -> r's credentials. */
static int set_creds(struct reg *r, const char *up, size_t n, const char *from, struct mini_err *e)
{
    const char *colon = memchr(up, ':', n);
    if (!colon || colon == up)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "credentials from %s: not USER:PASSWORD", from);
    free(r->user);
    free(r->pass);
    r->user = strndup(up, (size_t)(colon - up));
    r->pass = strndup(colon + 1, n - (size_t)(colon + 1 - up));
    if (!r->user || !r->pass)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    snprintf(r->creds_from, sizeof r->creds_from, "%s", from);
    return 0;
}

/* An auth file's key ("host:port", "https://index.docker.io/v1/") is
 * for registry key when its host[:port] part is key. */
static bool auth_key_matches(const char *k, const char *key)
{
    if (!strncmp(k, "https://", 8))
        k += 8;
    else if (!strncmp(k, "http://", 7))
        k += 7;
    size_t n = strcspn(k, "/");
    return strlen(key) == n && !strncasecmp(k, key, n);
}

/* Look up registry (docker.io: also its other names) in the auth files
 * podman and Docker read, in order: $REGISTRY_AUTH_FILE,
 * $XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json.  The
 * first entry found is taken.  0 (found or not), -1 with e filled. */
static int creds_from_files(struct reg *r, const char *registry, struct mini_err *e)
{
    const char *env = getenv("REGISTRY_AUTH_FILE"), *xdg = getenv("XDG_RUNTIME_DIR"), *home = getenv("HOME");
    char files[3][PATH_MAX];
    int nf = 0;
    if (env && *env)
        snprintf(files[nf++], PATH_MAX, "%s", env);
    if (xdg && *xdg)
        snprintf(files[nf++], PATH_MAX, "%s/containers/auth.json", xdg);
    if (home && *home)
        snprintf(files[nf++], PATH_MAX, "%s/.docker/config.json", home);
    static const char *const docker_keys[] = { "docker.io", "index.docker.io", "registry-1.docker.io" };
    bool docker = !strcmp(registry, "docker.io");
    for (int i = 0; i < nf; i++) {
        _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
        struct mini_err ignored;
        if (mini_read_file(files[i], &b, AUTH_FILE_MAX, &ignored) < 0)
            continue;
        _cleanup_cjson_ cJSON *j = mini_json_parse(b.data, b.len, &ignored);
        if (!j)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not JSON", files[i]);
        const cJSON *auths = cJSON_GetObjectItemCaseSensitive(j, "auths"), *a;
        cJSON_ArrayForEach (a, auths) {
            bool match = auth_key_matches(a->string, registry);
            for (size_t k = 0; docker && !match && k < MINI_ARRAY_SIZE(docker_keys); k++)
                match = auth_key_matches(a->string, docker_keys[k]);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "auth");
            if (!match || !cJSON_IsString(v) || !*v->valuestring)
                continue;
            size_t in = strlen(v->valuestring);
            if (in > 4096 || in % 4)
                return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the auth of %s is not base64", files[i], a->string);
            _cleanup_free_ unsigned char *out = malloc(in / 4 * 3 + 1);
            if (!out)
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            int n = EVP_DecodeBlock(out, (const unsigned char *)v->valuestring, (int)in);
            if (n < 0)
                return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the auth of %s is not base64", files[i], a->string);
            for (const char *c = v->valuestring + in; c > v->valuestring && c[-1] == '='; c--)
                n--;
            int rc = set_creds(r, (const char *)out, (size_t)n, files[i], e);
            explicit_bzero(out, in / 4 * 3 + 1);
            return rc;
        }
    }
    return 0;
}

/* The registry's CA: cert_dir/ca.crt, else /etc/containers/certs.d/HOST/
 * or /etc/docker/certs.d/HOST/ca.crt when there. */
static int find_ca(struct reg *r, const char *key, const char *cert_dir, struct mini_err *e)
{
    struct stat st;
    if (cert_dir) {
        snprintf(r->ca, sizeof r->ca, "%s/ca.crt", cert_dir);
        if (stat(r->ca, &st) < 0)
            return mini_err_sys(e, MINI_E_BAD_REQUEST, errno, "--cert-dir: %s", r->ca);
        return 0;
    }
    static const char *const dirs[] = { "/etc/containers/certs.d", "/etc/docker/certs.d" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(dirs); i++) {
        snprintf(r->ca, sizeof r->ca, "%s/%s/ca.crt", dirs[i], key);
        if (stat(r->ca, &st) == 0)
            return 0;
    }
    r->ca[0] = '\0';
    return 0;
}

/* ---- one pull */

struct pull {
    struct mini_image_store *s;
    const struct mini_pull_opts *o;
    struct mini_image_ref ref;
    struct reg *r; /* the registry (or mirror) in use */
    struct mini_pull_result *res;
    char *tmp; /* STORE/tmp/pull-XXXXXX: the OCI layout */
    int tmpfd, lockfd;
};

struct resp {
    long code;
    struct mini_buf body;
    size_t max;
    bool too_big;
    char *www_auth, *content_type;
};

static void resp_free(struct resp *r)
{
    mini_buf_free(&r->body);
    free(r->www_auth);
    free(r->content_type);
    memset(r, 0, sizeof *r);
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    size_t n = size * nmemb;
    if (r->body.len + n > r->max) {
        r->too_big = true;
        return 0;
    }
    return mini_buf_append(&r->body, p, n) < 0 ? 0 : n;
}

/* A header's value (trimmed) when line is "name: value". */
static char *header_value(const char *line, size_t n, const char *name)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
        return NULL;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    return strndup(v, (size_t)(end - v));
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    size_t n = size * nmemb;
    char *v;
    if (n >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after a redirect) */
        free(r->www_auth);
        free(r->content_type);
        r->www_auth = r->content_type = NULL;
    } else if (!r->www_auth && (v = header_value(p, n, "WWW-Authenticate"))) {
        r->www_auth = v;
    } else if (!r->content_type && (v = header_value(p, n, "Content-Type"))) {
        r->content_type = v;
    }
    return n;
}

/* What every request to registry r is made with. */
static void easy_setup(struct pull *p, struct reg *r, CURL *c, const char *url, bool auth)
{
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "mini-sandbox");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    /* Redirects (to a blob store): followed, to plain HTTP only from a
     * registry spoken to in plain HTTP.  libcurl sends the credentials
     * and the token to the first host only. */
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, r->scheme && !strcmp(r->scheme, "http") ? "http,https" : "https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    if (!p->o->tls_verify) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (r->ca[0]) {
        curl_easy_setopt(c, CURLOPT_CAINFO, r->ca);
        curl_easy_setopt(c, CURLOPT_CAPATH, "/etc/ssl/certs");
    }
    if (!auth)
        return;
    if (r->token) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, r->token);
    } else if (r->basic && r->user) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, r->user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, r->pass);
    }
}

/* GET url into resp (at most max bytes of body). 0, or -1 with e filled
 * (a transfer error: *cc says which). */
static int get(struct pull *p, struct reg *r, const char *url, const char *accept, bool auth, size_t max,
               struct resp *out, CURLcode *cc, struct mini_err *e)
{
    memset(out, 0, sizeof *out);
    out->max = max;
    CURL *c = curl_easy_init();
    if (!c)
        return mini_err_set(e, MINI_E_NOMEM, "curl_easy_init failed");
    struct curl_slist *h = accept ? curl_slist_append(NULL, accept) : NULL;
    easy_setup(p, r, c, url, auth);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->code);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    if (cc)
        *cc = rc;
    if (out->too_big)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the response is larger than %zu bytes", url, max);
    if (rc != CURLE_OK)
        return mini_err_set(e, MINI_E_IO, "%s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
    return 0;
}

/* key="value", ... of a challenge: the value of key (malloc'ed) or NULL. */
static char *challenge_param(const char *ch, const char *key)
{
    size_t kl = strlen(key);
    const char *c = ch;
    while (*c) {
        while (*c == ' ' || *c == ',')
            c++;
        const char *k = c;
        while (*c && *c != '=' && *c != ',')
            c++;
        if (*c != '=')
            continue;
        size_t klen = (size_t)(c - k);
        c++;
        struct mini_buf v = MINI_BUF_INIT;
        if (*c == '"') {
            for (c++; *c && *c != '"'; c++) {
                if (*c == '\\' && c[1])
                    c++;
                mini_buf_putc(&v, *c);
            }
            if (*c)
                c++;
        } else {
            for (; *c && *c != ','; c++)
                mini_buf_putc(&v, *c);
        }
        if (klen == kl && !strncasecmp(k, key, kl))
            return v.data ? mini_buf_steal(&v, NULL) : strdup("");
        mini_buf_free(&v);
    }
    return NULL;
}

static bool json_has_string(const struct mini_buf *b, const char *key, char **out)
{
    struct mini_err ignored;
    _cleanup_cjson_ cJSON *j = mini_json_parse(b->data ? b->data : "", b->len, &ignored);
    const cJSON *v = j ? cJSON_GetObjectItemCaseSensitive(j, key) : NULL;
    if (!cJSON_IsString(v) || !*v->valuestring)
        return false;
    *out = strdup(v->valuestring);
    return *out != NULL;
}

static const char *creds_word(const struct reg *r) { return r->user ? r->creds_from : NULL; }

/* Answer challenge ch (a 401's WWW-Authenticate) for repository repo. */
static int authenticate(struct pull *p, struct reg *r, const char *ch, struct mini_err *e)
{
    if (!ch)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: 401 without a WWW-Authenticate challenge", r->host);
    if (!strncasecmp(ch, "Basic", 5)) {
        if (!r->user)
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "%s requires a user and password (--creds USER:PASS, or an entry for %s in an auth "
                                "file: $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, "
                                "~/.docker/config.json)",
                                r->host, r->host);
        if (r->basic)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s refused the user and password from %s (HTTP 401)", r->host,
                                r->creds_from);
        if (!strcmp(r->scheme, "http") && !r->loopback && p->o->tls_verify)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: not sending a password over plain HTTP", r->host);
        r->basic = true;
        return 0;
    }
    if (strncasecmp(ch, "Bearer", 6))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: unsupported authentication scheme in \"%.40s\"", r->host, ch);
    if (r->token)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s refused the token it issued%s%s (HTTP 401)", r->host,
                            r->user ? " for the credentials from " : "", r->user ? r->creds_from : "");
    _cleanup_free_ char *realm = challenge_param(ch + 6, "realm");
    _cleanup_free_ char *service = challenge_param(ch + 6, "service");
    _cleanup_free_ char *scope = challenge_param(ch + 6, "scope");
    if (!realm || (strncmp(realm, "https://", 8) && strncmp(realm, "http://", 7)))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: a Bearer challenge without an http(s) realm", r->host);
    /* The token server: over plain HTTP only when it is on loopback (or
     * TLS is off), and never with a password otherwise. */
    if (!strncmp(realm, "http://", 7) && p->o->tls_verify) {
        char hp[256];
        snprintf(hp, sizeof hp, "%.*s", (int)strcspn(realm + 7, "/?#"), realm + 7);
        if (!is_loopback(hp))
            return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: its token server %s is plain HTTP", r->host, hp);
    }
    CURL *c = curl_easy_init();
    if (!c)
        return mini_err_set(e, MINI_E_NOMEM, "curl_easy_init failed");
    struct mini_buf url = MINI_BUF_INIT;
    mini_buf_puts(&url, realm);
    char sep = strchr(realm, '?') ? '&' : '?';
    if (service) {
        char *x = curl_easy_escape(c, service, 0);
        mini_buf_printf(&url, "%cservice=%s", sep, x ? x : "");
        curl_free(x);
        sep = '&';
    }
    char defscope[400];
    snprintf(defscope, sizeof defscope, "repository:%s:pull", p->ref.repo);
    char *x = curl_easy_escape(c, scope ? scope : defscope, 0);
    mini_buf_printf(&url, "%cscope=%s", sep, x ? x : "");
    curl_free(x);
    curl_easy_cleanup(c);
    /* The token request: user and password as Basic, to the realm the
     * registry named (as Docker and podman do); none when anonymous. */
    struct reg tr = *r;
    tr.token = NULL;
    tr.basic = r->user != NULL;
    tr.scheme = !strncmp(realm, "http://", 7) ? "http" : "https";
    struct resp resp;
    int rc = get(p, &tr, url.data, NULL, true, 1u << 20, &resp, NULL, e);
    mini_buf_free(&url);
    if (rc == 0 && (resp.code == 401 || resp.code == 403))
        rc = r->user
            ? mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the token server refused the credentials from %s (HTTP %ld)",
                           r->host, r->creds_from, resp.code)
            : mini_err_set(e, MINI_E_BAD_REQUEST,
                           "%s: the token server refused anonymous access (HTTP %ld; credentials: --creds "
                           "USER:PASS or an auth file)",
                           r->host, resp.code);
    else if (rc == 0 && resp.code != 200)
        rc = mini_err_set(e, MINI_E_IO, "%s: the token server answered HTTP %ld", r->host, resp.code);
    else if (rc == 0 && !json_has_string(&resp.body, "token", &r->token) &&
             !json_has_string(&resp.body, "access_token", &r->token))
        rc = mini_err_set(e, MINI_E_BAD_REQUEST, "%s: the token server's answer has no token", r->host);
    if (resp.body.data)
        explicit_bzero(resp.body.data, resp.body.len);
    resp_free(&resp);
    return rc;
}

/* Speak to r: https, or plain http for a loopback registry (or with TLS
 * verification off) that does not speak TLS; the /v2/ answer's challenge
 * is answered at once.  0, or -1 with e filled. */
static int ping(struct pull *p, struct reg *r, struct mini_err *e)
{
    bool http_ok = r->loopback || !p->o->tls_verify;
    for (int i = 0; i < 2; i++) {
        r->scheme = i ? "http" : "https";
        char url[400];
        snprintf(url, sizeof url, "%s://%s/v2/", r->scheme, r->host);
        struct resp resp;
        CURLcode cc;
        int rc = get(p, r, url, NULL, false, 64u << 10, &resp, &cc, e);
        if (rc < 0 && !i && http_ok &&
            (cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING)) {
            resp_free(&resp);
            continue; /* not TLS: try plain HTTP */
        }
        if (rc == 0 && resp.code == 401)
            rc = authenticate(p, r, resp.www_auth, e);
        else if (rc == 0 && resp.code != 200)
            rc = mini_err_set(e, MINI_E_IO, "%s: /v2/ answered HTTP %ld (not a registry?)", url, resp.code);
        resp_free(&resp);
        return rc;
    }
    return -1;
}

/* GET /v2/REPO/KIND/REF of the registry in use, answering one more
 * challenge (a token for this repository's scope).  A non-2xx answer is
 * an error saying what. */
static int reg_get(struct pull *p, const char *kind, const char *ref, const char *accept, size_t max, struct resp *out,
                   struct mini_err *e)
{
    struct reg *r = p->r;
    char url[1024];
    snprintf(url, sizeof url, "%s://%s/v2/%s/%s/%s", r->scheme, r->host, p->ref.repo, kind, ref);
    for (int attempt = 0;; attempt++) {
        if (get(p, r, url, accept, true, max, out, NULL, e) < 0) {
            resp_free(out);
            return -1;
        }
        if (out->code == 401 && attempt == 0 && (!r->token && !r->basic)) {
            int rc = authenticate(p, r, out->www_auth, e);
            resp_free(out);
            if (rc < 0)
                return -1;
            continue;
        }
        if (out->code == 401 && r->token && attempt == 0) {
            /* A token of another scope: get this one's. */
            free(r->token);
            r->token = NULL;
            int rc = authenticate(p, r, out->www_auth, e);
            resp_free(out);
            if (rc < 0)
                return -1;
            continue;
        }
        break;
    }
    if (out->code >= 200 && out->code < 300)
        return 0;
    long code = out->code;
    resp_free(out);
    if (code == 401 || code == 403)
        return creds_word(r)
            ? mini_err_set(e, MINI_E_BAD_REQUEST, "%s: access to %s refused with the credentials from %s (HTTP %ld)",
                           r->host, p->ref.repo, r->creds_from, code)
            : mini_err_set(e, MINI_E_BAD_REQUEST,
                           "%s: access to %s refused (HTTP %ld; credentials: --creds USER:PASS or "
                           "an auth file)",
                           r->host, p->ref.repo, code);
    if (code == 404)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: %s %s of %s not found (HTTP 404)", r->host,
                            kind[0] == 'm' ? "manifest" : "blob", ref, p->ref.repo);
    return mini_err_set(e, MINI_E_IO, "%s: %s %s of %s: HTTP %ld", r->host, kind, ref, p->ref.repo, code);
}

/* ---- manifests */

static bool index_type(const char *mt)
{
    return mt &&
        (!strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
         !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json"));
}

static bool manifest_type(const char *mt)
{
    return mt &&
        (!strcmp(mt, "application/vnd.oci.image.manifest.v1+json") ||
         !strcmp(mt, "application/vnd.docker.distribution.manifest.v2+json"));
}

/* The document's media type: its Content-Type, else its mediaType. */
static char *media_type(const struct resp *r, const cJSON *j)
{
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "mediaType");
    if (cJSON_IsString(mt))
        return strdup(mt->valuestring);
    if (r->content_type)
        return strndup(r->content_type, strcspn(r->content_type, "; "));
    /* An OCI index may say neither: "manifests" tells. */
    return strdup(cJSON_GetObjectItemCaseSensitive(j, "manifests") ? "application/vnd.oci.image.index.v1+json"
                                                                   : "application/vnd.oci.image.manifest.v1+json");
}

static const char *host_variant(void)
{
    const char *a = mini_image_host_arch();
    if (!strcmp(a, "arm64"))
        return "v8";
    return NULL;
}

/* The entry of an index for linux and this machine's architecture
 * (GOARCH names), its variant preferred when it says one. */
static int pick_platform(const cJSON *j, char digest[static MINI_DIGEST_LEN + 1], struct mini_err *e)
{
    const char *arch = mini_image_host_arch(), *variant = host_variant();
    const cJSON *m, *best = NULL;
    int best_score = -1, n = 0;
    cJSON_ArrayForEach (m, cJSON_GetObjectItemCaseSensitive(j, "manifests")) {
        n++;
        const cJSON *pl = cJSON_GetObjectItemCaseSensitive(m, "platform");
        const cJSON *os = cJSON_GetObjectItemCaseSensitive(pl, "os");
        const cJSON *ar = cJSON_GetObjectItemCaseSensitive(pl, "architecture");
        const cJSON *va = cJSON_GetObjectItemCaseSensitive(pl, "variant");
        const cJSON *dg = cJSON_GetObjectItemCaseSensitive(m, "digest");
        if (!cJSON_IsString(os) || strcmp(os->valuestring, "linux") || !cJSON_IsString(ar) ||
            strcmp(ar->valuestring, arch) || !cJSON_IsString(dg) || !mini_digest_valid(dg->valuestring))
            continue;
        int score = !cJSON_IsString(va) ? 1 : variant && !strcmp(va->valuestring, variant) ? 2 : 0;
        if (score > best_score)
            best = m, best_score = score;
    }
    if (!best)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "the image index (%d entries) has no image for linux/%s", n, arch);
    snprintf(digest, MINI_DIGEST_LEN + 1, "%s", cJSON_GetObjectItemCaseSensitive(best, "digest")->valuestring);
    return 0;
}

/* The image manifest for this host: *body its bytes, *mt its media type,
 * digest its sha256.  Each document fetched by digest is checked
 * against it. */
static int fetch_manifest(struct pull *p, struct mini_buf *body, char **mt, char digest[static MINI_DIGEST_LEN + 1],
                          struct mini_err *e)
{
    char want[MINI_DIGEST_LEN + 1];
    snprintf(want, sizeof want, "%s", p->ref.digest);
    const char *ref = want[0] ? want : p->ref.tag;
    for (int depth = 0;; depth++) {
        struct resp r;
        if (reg_get(p, "manifests", ref, ACCEPT_MANIFESTS, MINI_IMAGE_META_MAX, &r, e) < 0)
            return -1;
        mini_imp_sha_of(r.body.data ? r.body.data : "", r.body.len, digest);
        if (want[0] && strcmp(want, digest)) {
            resp_free(&r);
            return mini_err_set(e, MINI_E_BAD_REQUEST, "manifest %s: digest mismatch: the content hashes to %s", want,
                                digest);
        }
        _cleanup_cjson_ cJSON *j = mini_json_parse(r.body.data ? r.body.data : "", r.body.len, e);
        if (!j || !cJSON_IsObject(j)) {
            resp_free(&r);
            return mini_err_prefix(e, "manifest %s of %s", ref, p->ref.repo);
        }
        free(*mt);
        *mt = media_type(&r, j);
        if (!*mt) {
            resp_free(&r);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        if (manifest_type(*mt)) {
            mini_buf_free(body);
            *body = r.body;
            r.body = (struct mini_buf)MINI_BUF_INIT;
            resp_free(&r);
            return 0;
        }
        resp_free(&r);
        if (!index_type(*mt))
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "manifest %s of %s: unsupported media type %.100s (Docker schema 1 manifests are not "
                                "supported)",
                                ref, p->ref.repo, *mt);
        if (depth + 1 >= MAX_INDEX_DEPTH)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "image indexes nested more than %d deep", MAX_INDEX_DEPTH);
        if (pick_platform(j, want, e) < 0)
            return mini_err_prefix(e, "%s", ref);
        ref = want;
    }
}

/* ---- layers: fetched in parallel into STORE/tmp/blob-HEX */

struct dl {
    struct pull *p;
    const struct mini_descriptor *d;
    char part[PATH_MAX];
    int fd;
    EVP_MD_CTX *md;
    uint64_t have;      /* bytes in the partial file, hashed */
    int64_t range_from; /* the Range asked, or -1 */
    int64_t cr_start;   /* Content-Range's start of a 206, or -1 */
    int tries;
    double not_before;
    CURL *c;
    struct curl_slist *hdrs;
    long code;
    bool started, active, done, fatal;
    bool net; /* failed on the network, retries spent: its partial file is kept */
    struct mini_buf errbody;
    char err[PATH_MAX + 256];
};

/* Progress on stderr. */
struct prog {
    enum mini_pull_output out;
    struct dl *v;
    size_t n;
    bool drawn;
    double last;
};

static void prog_draw(struct prog *g, bool force)
{
    if (g->out != MINI_PULL_TTY || !g->n)
        return;
    double t = mini_mono_s();
    if (!force && t - g->last < 0.1)
        return;
    g->last = t;
    if (g->drawn)
        fprintf(stderr, "\033[%zuA", g->n);
    for (size_t i = 0; i < g->n; i++) {
        struct dl *d = &g->v[i];
        char a[32], b[32], bar[31];
        mini_human_bytes(a, sizeof a, (double)d->have);
        mini_human_bytes(b, sizeof b, (double)d->d->size);
        int w = d->d->size > 0 ? (int)(30.0 * (double)d->have / (double)d->d->size) : 30;
        for (int k = 0; k < 30; k++)
            bar[k] = k < w ? '=' : ' ';
        bar[30] = '\0';
        fprintf(stderr, "\r\033[K%.19s [%s] %s / %s%s\n", d->d->digest, bar, a, b,
                d->done         ? "  done"
                    : d->tries  ? "  resuming"
                    : d->active ? ""
                                : "  waiting");
    }
    g->drawn = true;
    fflush(stderr);
}

static struct prog *g_prog; /* the pull's progress (one pull at a time per process) */

static size_t dl_header(char *p, size_t size, size_t nmemb, void *arg)
{
    struct dl *d = arg;
    size_t n = size * nmemb;
    _cleanup_free_ char *v = header_value(p, n, "Content-Range");
    long long start;
    if (n >= 5 && !strncmp(p, "HTTP/", 5))
        d->cr_start = -1;
    else if (v && sscanf(v, "bytes %lld-", &start) == 1)
        d->cr_start = start;
    return n;
}

static size_t dl_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct dl *d = arg;
    size_t n = size * nmemb;
    if (!d->started) {
        d->started = true;
        curl_easy_getinfo(d->c, CURLINFO_RESPONSE_CODE, &d->code);
        if (d->code == 206 && d->cr_start != (int64_t)d->have) {
            snprintf(d->err, sizeof d->err, "a partial answer from byte %lld, not %llu", (long long)d->cr_start,
                     (unsigned long long)d->have);
            d->code = 0; /* start over, whole */
            return 0;
        }
        if (d->code == 200 && d->have) { /* the whole blob again: start over */
            if (ftruncate(d->fd, 0) < 0 || lseek(d->fd, 0, SEEK_SET) < 0) {
                snprintf(d->err, sizeof d->err, "truncating %s: %s", d->part, strerror(errno));
                d->fatal = true;
                return 0;
            }
            EVP_DigestInit_ex(d->md, EVP_sha256(), NULL);
            d->have = 0;
        }
    }
    if (d->code != 200 && d->code != 206) {
        if (d->errbody.len < ERR_BODY_MAX)
            mini_buf_append(&d->errbody, ptr, n < ERR_BODY_MAX ? n : ERR_BODY_MAX);
        return n;
    }
    if (d->have + n > (uint64_t)d->d->size) {
        snprintf(d->err, sizeof d->err, "layer %s: more bytes than the %lld the manifest says", d->d->digest,
                 (long long)d->d->size);
        d->fatal = true;
        return 0;
    }
    if (mini_write_all(d->fd, ptr, n) < 0) {
        snprintf(d->err, sizeof d->err, "writing %s: %s", d->part, strerror(errno));
        d->fatal = true;
        return 0;
    }
    EVP_DigestUpdate(d->md, ptr, n);
    d->have += n;
    d->p->res->bytes_fetched += n;
    if (g_prog)
        prog_draw(g_prog, false);
    return n;
}

/* Open (or take up again) d's partial file, hashing what it holds. */
static int dl_open(struct dl *d, struct mini_err *e)
{
    struct pull *p = d->p;
    snprintf(d->part, sizeof d->part, "%s/tmp/blob-%s", p->s->root, d->d->digest + 7);
    d->fd = mini_owner_lock(d->part, false, e);
    if (d->fd < 0)
        return mini_err_prefix(e, "layer %s (another pull fetching it?)", d->d->digest);
    struct stat st;
    if (fstat(d->fd, &st) < 0 || !S_ISREG(st.st_mode))
        return mini_err_sys(e, MINI_E_IO, errno, "%s", d->part);
    if (!(d->md = EVP_MD_CTX_new()) || EVP_DigestInit_ex(d->md, EVP_sha256(), NULL) != 1)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (st.st_size > d->d->size) {
        if (ftruncate(d->fd, 0) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s", d->part);
        st.st_size = 0;
    }
    /* What an interrupted pull left: hashed, then resumed after it. */
    char buf[1 << 16];
    uint64_t left = (uint64_t)st.st_size;
    while (left) {
        ssize_t n = mini_read(d->fd, buf, left < sizeof buf ? left : sizeof buf);
        if (n <= 0) {
            if (ftruncate(d->fd, 0) < 0)
                return mini_err_sys(e, MINI_E_IO, errno, "%s", d->part);
            EVP_DigestInit_ex(d->md, EVP_sha256(), NULL);
            d->have = 0;
            break;
        }
        EVP_DigestUpdate(d->md, buf, (size_t)n);
        d->have += (uint64_t)n;
        left -= (uint64_t)n;
    }
    if (lseek(d->fd, (off_t)d->have, SEEK_SET) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", d->part);
    return 0;
}

static int dl_start(struct dl *d, CURLM *m, struct mini_err *e)
{
    struct pull *p = d->p;
    char url[1024], range[64];
    snprintf(url, sizeof url, "%s://%s/v2/%s/blobs/%s", p->r->scheme, p->r->host, p->ref.repo, d->d->digest);
    if (!(d->c = curl_easy_init()))
        return mini_err_set(e, MINI_E_NOMEM, "curl_easy_init failed");
    easy_setup(p, p->r, d->c, url, true);
    curl_slist_free_all(d->hdrs);
    d->hdrs = NULL;
    d->range_from = -1;
    if (d->have) {
        snprintf(range, sizeof range, "Range: bytes=%llu-", (unsigned long long)d->have);
        d->hdrs = curl_slist_append(NULL, range);
        d->range_from = (int64_t)d->have;
    }
    curl_easy_setopt(d->c, CURLOPT_HTTPHEADER, d->hdrs);
    curl_easy_setopt(d->c, CURLOPT_WRITEFUNCTION, dl_write);
    curl_easy_setopt(d->c, CURLOPT_WRITEDATA, d);
    curl_easy_setopt(d->c, CURLOPT_HEADERFUNCTION, dl_header);
    curl_easy_setopt(d->c, CURLOPT_HEADERDATA, d);
    curl_easy_setopt(d->c, CURLOPT_PRIVATE, d);
    d->started = false;
    d->code = 0;
    d->cr_start = -1;
    d->err[0] = '\0';
    mini_buf_reset(&d->errbody);
    if (curl_multi_add_handle(m, d->c) != CURLM_OK)
        return mini_err_set(e, MINI_E_IO, "curl_multi_add_handle failed");
    d->active = true;
    return 0;
}

static bool retryable(CURLcode rc)
{
    switch (rc) {
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_WRITE_ERROR: /* our own abort to start over (see dl_write) */ return true;
    default: return false;
    }
}

/* A transfer of d ended with rc: 1 done, 0 to try again, -1 failed (e). */
static int dl_finish(struct dl *d, CURLcode rc, struct mini_err *e)
{
    struct pull *p = d->p;
    long code = d->code;
    if (!d->started)
        curl_easy_getinfo(d->c, CURLINFO_RESPONSE_CODE, &code);
    if (d->fatal)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s", d->err);
    if (rc == CURLE_OK && (code == 200 || code == 206) && d->have == (uint64_t)d->d->size) {
        char got[MINI_DIGEST_LEN + 1];
        struct sha h = { d->md };
        mini_imp_sha_final(&h, got);
        if (strcmp(got, d->d->digest)) {
            unlink(d->part);
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "layer %s: digest mismatch: the content fetched hashes to %s (not stored)",
                                d->d->digest, got);
        }
        char dst[128];
        snprintf(dst, sizeof dst, "blobs/sha256/%s", d->d->digest + 7);
        if (renameat(AT_FDCWD, d->part, p->tmpfd, dst) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "moving %s into %s", d->part, p->tmp);
        p->res->layers_fetched++;
        d->done = true;
        if (p->o->output == MINI_PULL_LINES) {
            char a[32];
            mini_human_bytes(a, sizeof a, (double)d->d->size);
            fprintf(stderr, "%s: fetched (%s)\n", d->d->digest, a);
        }
        return 1;
    }
    bool again;
    if (rc != CURLE_OK)
        again = retryable(rc) || (rc == CURLE_WRITE_ERROR && !d->fatal);
    else if (code == 200 || code == 206)
        again = true; /* ended short */
    else
        again = code == 429 || code >= 500;
    if (code == 0 && d->err[0] && strstr(d->err, "partial answer")) { /* a 206 from elsewhere: start over */
        if (ftruncate(d->fd, 0) == 0 && lseek(d->fd, 0, SEEK_SET) == 0) {
            EVP_DigestInit_ex(d->md, EVP_sha256(), NULL);
            d->have = 0;
        }
        again = true;
    }
    char why[300];
    if (rc != CURLE_OK)
        snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
    else if (code == 200 || code == 206)
        snprintf(why, sizeof why, "the transfer ended after %llu of %lld bytes", (unsigned long long)d->have,
                 (long long)d->d->size);
    else
        snprintf(why, sizeof why, "HTTP %ld%s%s", code, code == 401 || code == 403 ? " (access refused)" : "",
                 code == 404 ? " (no such blob)" : "");
    if (again && ++d->tries < MAX_TRIES) {
        d->not_before = mini_mono_s() + 0.5 * d->tries;
        if (p->o->output == MINI_PULL_LINES)
            fprintf(stderr, "%s: %s; resuming from byte %llu\n", d->d->digest, why, (unsigned long long)d->have);
        return 0;
    }
    d->net = again;
    if (again)
        return mini_err_set(e, MINI_E_IO,
                            "layer %s: %s (tried %d times; what was fetched is kept: pull again to resume)",
                            d->d->digest, why, MAX_TRIES);
    return mini_err_set(e, MINI_E_IO, "layer %s: %s", d->d->digest, why);
}

static void dl_release(struct dl *d, CURLM *m)
{
    if (d->c) {
        if (d->active)
            curl_multi_remove_handle(m, d->c);
        curl_easy_cleanup(d->c);
        d->c = NULL;
    }
    d->active = false;
}

/* Fetch the layers of v[0..n) (each to p->tmp/blobs/sha256/HEX). */
static int fetch_layers(struct pull *p, struct dl *v, size_t n, struct mini_err *e)
{
    CURLM *m = curl_multi_init();
    if (!m)
        return mini_err_set(e, MINI_E_NOMEM, "curl_multi_init failed");
    struct prog g = { .out = p->o->output, .v = v, .n = n };
    g_prog = &g;
    unsigned par = p->o->parallel ? p->o->parallel : 3, active = 0;
    int rc = 0;
    bool fatal = false;
    for (size_t i = 0; i < n && rc == 0; i++) {
        v[i].p = p;
        v[i].fd = -1;
        rc = dl_open(&v[i], e);
    }
    size_t left = n;
    while (rc == 0 && left) {
        double t = mini_mono_s();
        for (size_t i = 0; i < n && active < par && rc == 0; i++)
            if (!v[i].done && !v[i].active && v[i].not_before <= t) {
                rc = dl_start(&v[i], m, e);
                if (rc == 0)
                    active++;
            }
        if (rc < 0)
            break;
        int running;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int q;
        while ((msg = curl_multi_info_read(m, &q))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            struct dl *d = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&d);
            CURLcode res = msg->data.result;
            int r = dl_finish(d, res, e);
            dl_release(d, m);
            active--;
            if (r < 0) {
                rc = -1;
                fatal = !d->net;
                break;
            }
            if (r == 1)
                left--;
        }
        prog_draw(&g, false);
        if (rc == 0 && left)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    prog_draw(&g, true);
    g_prog = NULL;
    for (size_t i = 0; i < n; i++) {
        dl_release(&v[i], m);
        /* A layer that failed its check, or any when the pull failed for
         * another reason than the network: nothing is kept.  Else what
         * was fetched stays for the next pull to resume. */
        if (rc < 0 && fatal && !v[i].done && v[i].fd >= 0)
            unlink(v[i].part);
        if (v[i].fd >= 0)
            close(v[i].fd);
        EVP_MD_CTX_free(v[i].md);
        curl_slist_free_all(v[i].hdrs);
        mini_buf_free(&v[i].errbody);
    }
    curl_multi_cleanup(m);
    return rc;
}

/* ---- the pull */

static int write_at(int dfd, const char *name, const void *data, size_t n, struct mini_err *e)
{
    _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || mini_write_all(fd, data, n) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "writing %s", name);
    return 0;
}

/* Whether STORE/SUB/HEX/FILE exists. */
static bool stored(struct mini_image_store *s, const char *sub, const char *hex, const char *file)
{
    char path[160];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s/%s", sub, hex, file);
    return fstatat(s->dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void on_import_progress(void *arg, const char *what, uint64_t done, uint64_t total)
{
    (void)arg;
    (void)done;
    (void)total;
    fprintf(stderr, "\r\033[K%s", what);
}

/* Parse MINI_REGISTRY_MIRRORS (REGISTRY=HOST[,...]) for registry. */
static size_t mirrors_of(const char *registry, char out[][256], size_t max)
{
    const char *env = getenv("MINI_REGISTRY_MIRRORS");
    size_t n = 0;
    for (const char *c = env; c && *c && n < max;) {
        size_t len = strcspn(c, ", ");
        const char *eq = memchr(c, '=', len);
        if (eq && (size_t)(eq - c) == strlen(registry) && !strncmp(c, registry, (size_t)(eq - c)) &&
            len - (size_t)(eq + 1 - c) > 0 && len - (size_t)(eq + 1 - c) < 256) {
            const char *h = eq + 1;
            size_t hl = len - (size_t)(h - c);
            if (hl > 8 && !strncmp(h, "https://", 8))
                h += 8, hl -= 8;
            else if (hl > 7 && !strncmp(h, "http://", 7))
                h += 7, hl -= 7;
            while (hl && h[hl - 1] == '/')
                hl--;
            snprintf(out[n++], 256, "%.*s", (int)hl, h);
        }
        c += len;
        while (*c == ',' || *c == ' ')
            c++;
    }
    return n;
}

/* Registry or mirror `host` (for the image's registry `registry`) set
 * up: its credentials and CA. */
static int reg_init(struct pull *p, struct reg *r, const char *host, bool mirror, struct mini_err *e)
{
    memset(r, 0, sizeof *r);
    snprintf(r->host, sizeof r->host, "%s", !strcmp(host, "docker.io") ? "registry-1.docker.io" : host);
    r->loopback = is_loopback(r->host);
    /* --creds are for the reference's registry only, never a mirror's. */
    if (!mirror && p->o->creds) {
        if (set_creds(r, p->o->creds, strlen(p->o->creds), "--creds", e) < 0)
            return -1;
    } else if (creds_from_files(r, host, e) < 0) {
        return -1;
    }
    return find_ca(r, host, p->o->cert_dir, e);
}

int mini_image_pull(struct mini_image_store *s, const char *refstr, const struct mini_pull_opts *opts,
                    struct mini_pull_result *res, struct mini_err *e)
{
    memset(res, 0, sizeof *res);
    struct pull p = { .s = s, .o = opts, .res = res, .tmpfd = -1, .lockfd = -1 };
    if (mini_image_ref_parse(refstr, &p.ref, e) < 0)
        return -1;
    if (mini_image_ref_name(&p.ref, res->name, sizeof res->name) < 0 || !mini_image_name_valid(res->name))
        return mini_err_set(e, MINI_E_BAD_REQUEST, "%s: too long a name for the store", refstr);
    static bool inited;
    if (!inited && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return mini_err_set(e, MINI_E_IO, "curl_global_init failed");
    inited = true;

    /* The mirrors of its registry, then the registry itself. */
    char hosts[9][256];
    size_t nh = mirrors_of(p.ref.registry, hosts, 8);
    size_t n_mirrors = nh;
    snprintf(hosts[nh++], 256, "%s", p.ref.registry);
    struct reg regs[9];
    memset(regs, 0, sizeof regs);
    _cleanup_buf_ struct mini_buf manifest = MINI_BUF_INIT;
    _cleanup_free_ char *mt = NULL;
    int rc = -1;
    struct mini_image_manifest m;
    struct mini_image_config cfg;
    memset(&m, 0, sizeof m);
    memset(&cfg, 0, sizeof cfg);
    struct resp cr = { 0 };
    struct dl *dls = NULL;
    size_t ndl = 0;
    _cleanup_close_ int gl = -1;
    _cleanup_free_ char *index = NULL; /* the layout's index.json */
    struct mini_err first = { 0 };
    for (size_t i = 0; i < nh; i++) {
        struct mini_err me;
        p.r = &regs[i];
        if (reg_init(&p, p.r, hosts[i], i < n_mirrors, &me) == 0 && ping(&p, p.r, &me) == 0 &&
            fetch_manifest(&p, &manifest, &mt, res->manifest_digest, &me) == 0) {
            rc = 0;
            break;
        }
        if (i < n_mirrors && opts->output != MINI_PULL_QUIET)
            fprintf(stderr, "mini-sandbox: image: mirror %s: %s; trying the next\n", hosts[i], me.msg);
        if (!first.msg[0] || i == nh - 1)
            first = me;
    }
    if (rc < 0) {
        *e = first;
        goto out;
    }
    rc = -1;
    if (mini_image_parse_manifest(manifest.data, manifest.len, &m, e) < 0) {
        mini_err_prefix(e, "manifest %s", res->manifest_digest);
        goto out;
    }
    res->layers = (unsigned)m.n_layers;
    /* Kept from rm and prune (which take it exclusive) from here to the
     * end: the layers found stored stay stored. */
    if ((gl = mini_image_lock(s, "lock", LOCK_SH, e)) < 0)
        goto out;
    memcpy(res->id, m.config.digest, sizeof res->id);
    if (stored(s, "images", m.config.digest + 7, "image.json")) {
        /* The image is stored already (its id is its config's digest). */
        if (mini_image_refs_set(s, res->name, res->id, e) < 0)
            goto out;
        res->up_to_date = true;
        rc = 0;
        goto out;
    }
    if (m.config.size > (int64_t)MINI_IMAGE_META_MAX) {
        mini_err_set(e, MINI_E_BAD_REQUEST, "config %s: %lld bytes, more than %u", m.config.digest,
                     (long long)m.config.size, MINI_IMAGE_META_MAX);
        goto out;
    }
    if (reg_get(&p, "blobs", m.config.digest, NULL, MINI_IMAGE_META_MAX, &cr, e) < 0)
        goto out;
    char got[MINI_DIGEST_LEN + 1];
    mini_imp_sha_of(cr.body.data ? cr.body.data : "", cr.body.len, got);
    if (strcmp(got, m.config.digest) || cr.body.len != (size_t)m.config.size) {
        mini_err_set(e, MINI_E_BAD_REQUEST, "config %s: digest mismatch: the content hashes to %s (%zu bytes)",
                     m.config.digest, got, cr.body.len);
        goto out;
    }
    if (mini_image_parse_config(cr.body.data, cr.body.len, &cfg, e) < 0)
        goto out;
    if (cfg.n_diff_ids != m.n_layers) {
        mini_err_set(e, MINI_E_BAD_REQUEST, "config has %zu diff_ids for %zu layers", cfg.n_diff_ids, m.n_layers);
        goto out;
    }

    /* The OCI layout the import reads: the layers stored already (by
     * their diff id) are not fetched, nor put in it: the import skips
     * them without reading their blobs. */
    if (asprintf(&p.tmp, "%s/tmp/pull-XXXXXX", s->root) < 0 || !mkdtemp(p.tmp)) {
        free(p.tmp);
        p.tmp = NULL;
        mini_err_sys(e, MINI_E_IO, errno, "creating a directory in %s/tmp", s->root);
        goto out;
    }
    if ((p.lockfd = mini_owner_lock(p.tmp, true, e)) < 0)
        goto out;
    if ((p.tmpfd = open(p.tmp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "%s", p.tmp);
        goto out;
    }
    char mpath[128], cpath[128];
    snprintf(mpath, sizeof mpath, "blobs/sha256/%s", res->manifest_digest + 7);
    snprintf(cpath, sizeof cpath, "blobs/sha256/%s", m.config.digest + 7);
    static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
    if (asprintf(&index, "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%zu}]}",
                 mt, res->manifest_digest, manifest.len) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    if (mkdirat(p.tmpfd, "blobs", 0700) < 0 || mkdirat(p.tmpfd, "blobs/sha256", 0700) < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "%s/blobs", p.tmp);
        goto out;
    }
    if (write_at(p.tmpfd, "oci-layout", layout, strlen(layout), e) < 0 ||
        write_at(p.tmpfd, "index.json", index, strlen(index), e) < 0 ||
        write_at(p.tmpfd, mpath, manifest.data, manifest.len, e) < 0 ||
        (strcmp(mpath, cpath) && write_at(p.tmpfd, cpath, cr.body.data, cr.body.len, e) < 0))
        goto out;
    if (!(dls = calloc(m.n_layers ? m.n_layers : 1, sizeof *dls))) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m.n_layers; i++) {
        bool dup = false;
        for (size_t k = 0; k < ndl; k++)
            dup = dup || !strcmp(dls[k].d->digest, m.layers[i].digest);
        if (stored(s, "layers", cfg.diff_ids[i] + 7, "layer.json")) {
            if (opts->output == MINI_PULL_LINES)
                fprintf(stderr, "%s: already stored\n", m.layers[i].digest);
            continue;
        }
        if (!dup)
            dls[ndl++].d = &m.layers[i];
    }
    if (fetch_layers(&p, dls, ndl, e) < 0)
        goto out;

    struct mini_import_opts io = { .format = MINI_IMG_OCI, .name = res->name };
    if (opts->output == MINI_PULL_TTY)
        io.progress = on_import_progress;
    struct mini_import_result ir;
    int r = mini_image_import(s, p.tmp, &io, &ir, e);
    if (opts->output == MINI_PULL_TTY)
        fprintf(stderr, "\r\033[K");
    if (r == 0)
        memcpy(res->id, ir.id, sizeof res->id);
    mini_import_result_free(&ir);
    if (r < 0) {
        mini_err_prefix(e, "importing %s", res->name);
        goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < nh; i++)
        reg_free(&regs[i]);
    resp_free(&cr);
    free(dls);
    mini_image_manifest_free(&m);
    mini_image_config_free(&cfg);
    if (p.tmp) {
        struct mini_err ignored;
        mini_rm_rf(p.tmp, &ignored);
    }
    mini_close(p.tmpfd);
    mini_close(p.lockfd);
    free(p.tmp);
    return rc;
}

/* HTTP POST of JSON over libcurl (see http.h). */
#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <curl/curl.h>

#include "mini/cleanup.h"

struct mini_http {
    CURL *curl;
};

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_global_rc = CURLE_FAILED_INIT;

static void http_global_init(void) { http_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

struct mini_http *mini_http_new(struct mini_err *e)
{
    pthread_once(&http_once, http_global_init);
    if (http_global_rc != CURLE_OK) {
        mini_err_set(e, MINI_E_IO, "curl_global_init: %s", curl_easy_strerror(http_global_rc));
        return NULL;
    }
    struct mini_http *h = calloc(1, sizeof(*h));
    if (!h) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    h->curl = curl_easy_init();
    if (!h->curl) {
        free(h);
        mini_err_set(e, MINI_E_IO, "curl_easy_init failed");
        return NULL;
    }
    return h;
}

void mini_http_free(struct mini_http *h)
{
    if (!h)
        return;
    curl_easy_cleanup(h->curl);
    free(h);
}

void mini_http_response_init(struct mini_http_response *r) { memset(r, 0, sizeof(*r)); }

void mini_http_response_free(struct mini_http_response *r)
{
    mini_buf_free(&r->body);
    mini_http_response_init(r);
}

static void response_reset(struct mini_http_response *r)
{
    mini_buf_reset(&r->body);
    r->status = 0;
    r->retry_after[0] = r->retry_after_ms[0] = r->request_id[0] = '\0';
    r->transport_error = r->retryable = r->cancelled = r->refused = false;
}

struct transfer {
    struct mini_http_response *resp;
    size_t max;
    bool too_big;
    const volatile int *cancel;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct transfer *t = arg;
    size_t len = size * n;
    if (t->resp->body.len + len > t->max) {
        t->too_big = true;
        return 0; /* makes curl fail with CURLE_WRITE_ERROR */
    }
    if (mini_buf_append(&t->resp->body, p, len) < 0)
        return 0;
    return len;
}

/* Copy a header's value (trimmed) into dst[cap], cut to fit. */
static void header_value(char *dst, size_t cap, const char *v, size_t n)
{
    while (n && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static bool header_is(const char *line, size_t n, const char *name, size_t *vstart)
{
    size_t k = strlen(name);
    if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0)
        return false;
    *vstart = k + 1;
    return true;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct transfer *t = arg;
    size_t len = size * n, v;
    struct mini_http_response *r = t->resp;
    if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        /* A new response (after a 100 Continue or a redirect): forget the old headers. */
        r->retry_after[0] = r->retry_after_ms[0] = r->request_id[0] = '\0';
    } else if (header_is(p, len, "retry-after", &v)) {
        header_value(r->retry_after, sizeof(r->retry_after), p + v, len - v);
    } else if (header_is(p, len, "retry-after-ms", &v)) {
        header_value(r->retry_after_ms, sizeof(r->retry_after_ms), p + v, len - v);
    } else if (header_is(p, len, "x-request-id", &v) || header_is(p, len, "request-id", &v)) {
        header_value(r->request_id, sizeof(r->request_id), p + v, len - v);
    }
    return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    struct transfer *t = arg;
    return t->cancel && *t->cancel ? 1 : 0;
}

void mini_http_url_origin(const char *url, bool with_path, char *out, size_t cap)
{
    snprintf(out, cap, "%s", "(invalid URL)");
    CURLU *u = curl_url();
    if (!u)
        return;
    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
        char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
        curl_url_get(u, CURLUPART_HOST, &host, 0);
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
        if (with_path)
            curl_url_get(u, CURLUPART_PATH, &path, 0);
        if (scheme && host)
            snprintf(out, cap, "%s://%s%s%s%s", scheme, host, port ? ":" : "", port ? port : "",
                     path && strcmp(path, "/") ? path : "");
        curl_free(scheme);
        curl_free(host);
        curl_free(port);
        curl_free(path);
    }
    curl_url_cleanup(u);
}

bool mini_http_url_loopback(const char *url)
{
    bool yes = false;
    CURLU *u = curl_url();
    char *host = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host)
        yes = strcasecmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 || strcmp(host, "[::1]") == 0 ||
            strcmp(host, "::1") == 0;
    curl_free(host);
    curl_url_cleanup(u);
    return yes;
}

static bool curl_code_retryable(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_BAD_CONTENT_ENCODING:
#if LIBCURL_VERSION_NUM >= 0x074200
    case CURLE_HTTP3:
#endif
        return true;
    default: return false;
    }
}

int mini_http_post(struct mini_http *h, const struct mini_http_request *req, struct mini_http_response *resp,
                   struct mini_err *e)
{
    response_reset(resp);
    CURL *c = h->curl;
    curl_easy_reset(c);

    struct curl_slist *headers = NULL, *tmp;
    for (size_t i = 0; i < req->n_headers; i++) {
        if (!(tmp = curl_slist_append(headers, req->headers[i]))) {
            curl_slist_free_all(headers);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        headers = tmp;
    }
    static const char *const fixed[] = { "Content-Type: application/json", "Accept: application/json", "Expect:" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(fixed); i++) {
        if (!(tmp = curl_slist_append(headers, fixed[i]))) {
            curl_slist_free_all(headers);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        headers = tmp;
    }

    struct transfer t = {
        .resp = resp,
        .max = req->max_response ? req->max_response : MINI_HTTP_MAX_RESPONSE,
        .cancel = req->cancel,
    };
    char errbuf[CURL_ERROR_SIZE] = "";

    curl_easy_setopt(c, CURLOPT_URL, req->url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "mini/" MINI_VERSION);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    if (req->timeout_ms > 0)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    if (req->connect_timeout_ms > 0)
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms);

    CURLcode rc = curl_easy_perform(c);
    long status = 0, os_errno = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
    /* Forget the pointers into this frame (the connection stays cached). */
    curl_easy_reset(c);
    curl_slist_free_all(headers);

    char origin[256];
    if (rc == CURLE_OK) {
        resp->status = status;
        return 0;
    }
    mini_http_url_origin(req->url, false, origin, sizeof(origin));
    resp->transport_error = true;
    if (t.too_big) {
        resp->status = status;
        resp->retryable = false;
        return mini_err_set(e, MINI_E_IO, "POST %s: response larger than %zu bytes", origin, t.max);
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK && req->cancel && *req->cancel) {
        resp->cancelled = true;
        return mini_err_set(e, MINI_E_IO, "POST %s: interrupted", origin);
    }
    resp->retryable = curl_code_retryable(rc);
    resp->refused = rc == CURLE_COULDNT_CONNECT && os_errno == ECONNREFUSED;
    if (rc == CURLE_WRITE_ERROR)
        return mini_err_set(e, MINI_E_NOMEM, "POST %s: out of memory", origin);
    if (resp->refused)
        return mini_err_set(e, MINI_E_IO, "POST %s: connection refused", origin);
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return mini_err_set(e, MINI_E_IO, "POST %s: timed out after %ld ms", origin, req->timeout_ms);
    return mini_err_set(e, MINI_E_IO, "POST %s: %s", origin, errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

static bool parse_seconds(const char *s, double *out)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

long mini_http_retry_after_ms(const char *retry_after, const char *retry_after_ms, time_t now)
{
    double v;
    const double cap = 86400.0 * 1000; /* a day: keeps the value in a long */
    if (retry_after_ms && *retry_after_ms && parse_seconds(retry_after_ms, &v))
        return (long)fmin(ceil(v), cap);
    if (!retry_after || !*retry_after)
        return -1;
    if (parse_seconds(retry_after, &v))
        return (long)fmin(ceil(v * 1000), cap);
    time_t when = curl_getdate(retry_after, NULL);
    if (when == (time_t)-1)
        return -1;
    if (when <= now)
        return 0;
    return (long)fmin((double)(when - now) * 1000, cap);
}

int mini_http_sleep_ms(long ms, const volatile int *cancel)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long end_ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec + (long long)ms * 1000000LL;
    for (;;) {
        if (cancel && *cancel)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long left = end_ns - ((long long)now.tv_sec * 1000000000LL + now.tv_nsec);
        if (left <= 0)
            return 0;
        if (left > 50000000LL) /* look at the cancel flag every 50 ms */
            left = 50000000LL;
        struct timespec ts = { (time_t)(left / 1000000000LL), (long)(left % 1000000000LL) };
        nanosleep(&ts, NULL);
    }
}

/* HTTP POST of JSON over libcurl, for the model clients.
 *
 * One `struct mini_http` wraps one curl easy handle, so consecutive requests
 * of a model reuse their connection.  A handle is used by one thread at a
 * time; curl_global_init() runs once per process (pthread_once).
 *
 * Library code: nothing is printed.  Error messages name the URL's scheme,
 * host and port only, never the request headers (they carry API keys). */
#ifndef MINI_AGENT_HTTP_H
#define MINI_AGENT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "mini/buf.h"
#include "mini/err.h"

struct mini_http;

struct mini_http_request {
    const char *url;
    const char *const *headers; /* "Name: value" lines */
    size_t n_headers;
    const char *body;
    size_t body_len;
    long timeout_ms;            /* whole transfer; 0: none */
    long connect_timeout_ms;    /* 0: curl's default */
    size_t max_response;        /* body bytes kept at most; 0: 64 MiB */
    const volatile int *cancel; /* non-zero aborts the transfer; may be NULL */
};

struct mini_http_response {
    long status; /* HTTP status, 0 when none was received */
    struct mini_buf body;
    char retry_after[64];    /* "Retry-After" header, "" if absent */
    char retry_after_ms[32]; /* "retry-after-ms" header (OpenAI), "" if absent */
    char request_id[96];     /* "x-request-id" or "request-id", "" if absent */
    /* Set when mini_http_post() failed: */
    bool transport_error; /* no complete response (connect, timeout, reset, ...) */
    bool retryable;       /* worth another attempt */
    bool cancelled;       /* *cancel was set */
    bool refused;         /* the connection was refused (nothing listens) */
};

#define MINI_HTTP_MAX_RESPONSE ((size_t)64 << 20)

/* "scheme://host:port" of a URL, with its path when with_path, for
 * messages: never its user info or query, which may carry credentials. */
void mini_http_url_origin(const char *url, bool with_path, char *out, size_t cap);
/* The URL's host is this machine's loopback (localhost, 127.x, ::1). */
bool mini_http_url_loopback(const char *url);

/* NULL with e filled when curl cannot be initialised. */
struct mini_http *mini_http_new(struct mini_err *e);
void mini_http_free(struct mini_http *h);

/* POST req->body.  Returns 0 when a response (of any status) arrived:
 * resp->status, headers and body are filled.  Returns -1 with e filled
 * (MINI_E_IO) and resp->transport_error/retryable/cancelled set when no
 * complete response arrived, or when the body exceeded max_response.
 * resp must be initialised with mini_http_response_init() and is reset
 * first; free it with mini_http_response_free(). */
int mini_http_post(struct mini_http *h, const struct mini_http_request *req, struct mini_http_response *resp,
                   struct mini_err *e);

void mini_http_response_init(struct mini_http_response *r);
void mini_http_response_free(struct mini_http_response *r);

/* The delay a server asked for, in milliseconds: "retry-after-ms" if valid,
 * else "Retry-After" as delta-seconds (integer or decimal) or as an
 * HTTP-date (relative to `now`).  -1 when neither is present or valid. */
long mini_http_retry_after_ms(const char *retry_after, const char *retry_after_ms, time_t now);

/* Sleep ms milliseconds, waking early (returning -1) when *cancel becomes
 * non-zero.  cancel may be NULL.  0 after the full sleep. */
int mini_http_sleep_ms(long ms, const volatile int *cancel);

#endif

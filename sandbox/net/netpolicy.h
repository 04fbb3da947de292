/* The allowlist network mode's pure parts (docs/profiles.md, "network"):
 * rules and how they match, which addresses are special, and the HTTP
 * proxy's request parser.  No I/O here: the daemon's proxy
 * (sandbox/daemon/proxy.c) drives them, tests/unit and tests/fuzz call
 * them directly. */
#ifndef MINI_NETPOLICY_H
#define MINI_NETPOLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mini/buf.h"

#define MINI_NET_HOST_MAX 253 /* a DNS name's longest text form */

enum mini_netrule_kind {
    MINI_NR_ANY,    /* "*": any name, any public address */
    MINI_NR_HOST,   /* "pypi.org": that name exactly */
    MINI_NR_SUFFIX, /* "*.pythonhosted.org": names below it, not the name itself */
    MINI_NR_ADDR,   /* "10.1.2.3", "10.0.0.0/8", "[fd00::]/8": addresses */
};

struct mini_netrule {
    enum mini_netrule_kind kind;
    char host[MINI_NET_HOST_MAX + 1]; /* HOST and SUFFIX: lower case, no trailing dot (SUFFIX: without "*.") */
    uint8_t addr[16];                 /* ADDR: IPv6, IPv4 as ::ffff:a.b.c.d */
    unsigned prefix;                  /* ADDR: leading bits that must match (IPv4 rules: 96 + n) */
    uint16_t port;                    /* 0: any port */
};

/* Parse one allow/deny entry.  0, or -1 with *why a static explanation. */
int mini_netrule_parse(const char *s, struct mini_netrule *r, const char **why);
/* Whether a rule lets (host, port) through by its name: HOST, SUFFIX and
 * ANY rules only (host as normalised by mini_net_host_norm). */
bool mini_netrule_match_name(const struct mini_netrule *r, const char *host, uint16_t port);
/* Whether an ADDR rule contains (addr, port). */
bool mini_netrule_match_addr(const struct mini_netrule *r, const uint8_t addr[16], uint16_t port);

/* An IP literal (IPv4 dotted quad, or IPv6 without brackets) as 16 bytes,
 * IPv4 mapped.  false when s is not one. */
bool mini_net_parse_ip(const char *s, uint8_t out[16]);
/* Text form of an address (IPv4 for mapped ones). */
void mini_net_addr_str(const uint8_t a[16], char *buf, size_t size);
/* Why an address may not be reached without a rule naming it (loopback,
 * private, link-local, ...), or NULL for a public one.  IPv4 embedded in
 * IPv6 (mapped, NAT64, 6to4) is judged as the IPv4 address. */
const char *mini_net_addr_special(const uint8_t a[16]);
bool mini_net_addr_is_v4(const uint8_t a[16]);

/* Pins: names resolved by the proxy without DNS (mini-sandboxd --resolve,
 * a profile's network.resolve).  "NAME:ADDR", ADDR an IPv4 address or an
 * IPv6 one (bare or in brackets); a name given again gets one more address. */
#define MINI_NET_PIN_ADDRS 16
struct mini_net_pin {
    char name[MINI_NET_HOST_MAX + 1];
    uint8_t addrs[MINI_NET_PIN_ADDRS][16];
    size_t n;
};
struct mini_net_pins {
    struct mini_net_pin *v;
    size_t n;
};
/* 0; -1 with *why (a static explanation; "out of memory" included). */
int mini_net_pins_add(struct mini_net_pins *t, const char *spec, const char **why);
const struct mini_net_pin *mini_net_pins_find(const struct mini_net_pins *t, const char *name);
void mini_net_pins_free(struct mini_net_pins *t);

/* ------------------------------------------------- the proxy's requests */

#define MINI_HTTP_HEAD_MAX 16384 /* request line and headers */
#define MINI_HTTP_HEADERS_MAX 100

struct mini_http_req {
    bool connect;                     /* CONNECT host:port; else an absolute-URI http:// request */
    char method[24];                  /* as sent */
    char host[MINI_NET_HOST_MAX + 1]; /* name (normalised) or IP literal (without brackets) */
    bool host_is_ip;
    uint8_t addr[16]; /* host_is_ip: the address */
    uint16_t port;
    size_t path_off, path_len; /* plain HTTP: origin-form target ("/..." ) within the head */
    size_t version_off;        /* "HTTP/1.x" within the head */
    size_t head_len;           /* bytes of the head, up to and including the blank line */
};

/* Parse a request head from buf[0..len).  1: complete, r filled; 0: needs
 * more bytes (and len < MINI_HTTP_HEAD_MAX); -1: refused, with *status
 * (400, 405, 431, 501) and *why a static explanation. */
int mini_http_req_parse(const char *buf, size_t len, struct mini_http_req *r, int *status, const char **why);
/* The head to send upstream for a plain-HTTP request: origin-form target,
 * Host from the URI, the proxy's own headers dropped, Connection: close.
 * 0, or -1 (out of memory). */
int mini_http_req_rewrite(const char *buf, const struct mini_http_req *r, struct mini_buf *out);

#endif

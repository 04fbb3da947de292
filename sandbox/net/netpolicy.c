/* Allowlist rules, special addresses and the proxy's request parser (see
 * netpolicy.h).  Pure functions over bytes: fuzzed by tests/fuzz/fuzz_proxy.c. */
#include "netpolicy.h"
#include "mini/str.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------- addresses */

static const uint8_t v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool mini_net_addr_is_v4(const uint8_t a[16]) { return memcmp(a, v4_mapped_prefix, 12) == 0; }

bool mini_net_parse_ip(const char *s, uint8_t out[16])
{
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, s, &v4) == 1) {
        memcpy(out, v4_mapped_prefix, 12);
        memcpy(out + 12, &v4, 4);
        return true;
    }
    if (inet_pton(AF_INET6, s, &v6) == 1) {
        memcpy(out, &v6, 16);
        return true;
    }
    return false;
}

void mini_net_addr_str(const uint8_t a[16], char *buf, size_t size)
{
    char tmp[INET6_ADDRSTRLEN];
    if (mini_net_addr_is_v4(a))
        inet_ntop(AF_INET, a + 12, tmp, sizeof tmp);
    else
        inet_ntop(AF_INET6, a, tmp, sizeof tmp);
    snprintf(buf, size, "%s", tmp);
}

static bool in_prefix(const uint8_t *a, const uint8_t *net, unsigned bits)
{
    unsigned full = bits / 8, rest = bits % 8;
    if (memcmp(a, net, full) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[full] & mask) == (net[full] & mask);
}

static const char *v4_special(const uint8_t *b)
{
    static const struct {
        uint8_t net[4];
        unsigned bits;
        const char *why;
    } r[] = {
        { { 0, 0, 0, 0 }, 8, "an unspecified (\"this network\") address" },
        { { 10, 0, 0, 0 }, 8, "a private address" },
        { { 100, 64, 0, 0 }, 10, "a shared (carrier-grade NAT) address" },
        { { 127, 0, 0, 0 }, 8, "a loopback address" },
        { { 169, 254, 0, 0 }, 16, "a link-local address (cloud metadata lives there)" },
        { { 172, 16, 0, 0 }, 12, "a private address" },
        { { 192, 0, 0, 0 }, 24, "an IETF protocol address" },
        { { 192, 0, 2, 0 }, 24, "a documentation address" },
        { { 192, 168, 0, 0 }, 16, "a private address" },
        { { 198, 18, 0, 0 }, 15, "a benchmarking address" },
        { { 198, 51, 100, 0 }, 24, "a documentation address" },
        { { 203, 0, 113, 0 }, 24, "a documentation address" },
        { { 224, 0, 0, 0 }, 4, "a multicast address" },
        { { 240, 0, 0, 0 }, 4, "a reserved or broadcast address" },
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (in_prefix(b, r[i].net, r[i].bits))
            return r[i].why;
    return NULL;
}

const char *mini_net_addr_special(const uint8_t a[16])
{
    static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
    static const uint8_t zero[16] = { 0 };
    if (mini_net_addr_is_v4(a) || memcmp(a, nat64, 12) == 0)
        return v4_special(a + 12);
    if (a[0] == 0x20 && a[1] == 0x02) /* 6to4: 2002:AABB:CCDD::/48 */
        return v4_special(a + 2);
    if (memcmp(a, zero, 15) == 0)
        return a[15] == 1 ? "a loopback address" : "an unspecified address";
    if (memcmp(a, zero, 12) == 0)
        return "an IPv4-compatible address (deprecated)";
    static const struct {
        uint8_t net[4];
        unsigned bits;
        const char *why;
    } r[] = {
        { { 0xfc, 0, 0, 0 }, 7, "a unique-local (private) address" },
        { { 0xfe, 0x80, 0, 0 }, 10, "a link-local address" },
        { { 0xfe, 0xc0, 0, 0 }, 10, "a site-local (private) address" },
        { { 0xff, 0, 0, 0 }, 8, "a multicast address" },
        { { 0x20, 0x01, 0x0d, 0xb8 }, 32, "a documentation address" },
        { { 0x20, 0x01, 0, 0 }, 32, "a Teredo address" },
        { { 0x01, 0, 0, 0 }, 16, "a discard-only address" },
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (in_prefix(a, r[i].net, r[i].bits))
            return r[i].why;
    return NULL;
}

/* -------------------------------------------------------------- names */

static int mini_net_host_norm(const char *in, size_t len, char *out, size_t size)
{
    if (len && in[len - 1] == '.')
        len--;
    if (len == 0 || len > MINI_NET_HOST_MAX || len >= size)
        return -1;
    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (ch == '.') {
            if (label == 0)
                return -1;
            label = 0;
        } else if (isalnum(ch) || ch == '-' || ch == '_') {
            if (++label > 63)
                return -1;
        } else {
            return -1;
        }
        out[i] = (char)tolower(ch);
    }
    if (label == 0)
        return -1;
    out[len] = '\0';
    return 0;
}

/* "123" -> 123 (1..65535).  false on anything else. */
static bool parse_port(const char *s, size_t len, uint16_t *port)
{
    uint64_t v;
    if (!mini_parse_decimal(s, len, 65535, &v) || v == 0)
        return false;
    *port = (uint16_t)v;
    return true;
}

/* Split "host", "host:port", "[v6]", "[v6]:port" (v6 may carry "/n");
 * a bare IPv6 (two or more colons) has no port. */
static int split_host_port(const char *s, size_t len, const char **h, size_t *hlen, uint16_t *port, bool *bracket)
{
    *port = 0;
    *bracket = false;
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return -1;
        *h = s + 1;
        *hlen = (size_t)(close - s - 1);
        *bracket = true;
        size_t rest = len - (size_t)(close - s) - 1;
        if (rest == 0)
            return 0;
        if (close[1] != ':' || !parse_port(close + 2, rest - 1, port))
            return -1;
        return 0;
    }
    const char *colon = memchr(s, ':', len);
    if (colon && memchr(colon + 1, ':', len - (size_t)(colon - s) - 1)) {
        *h = s; /* bare IPv6 */
        *hlen = len;
        return 0;
    }
    *h = s;
    *hlen = colon ? (size_t)(colon - s) : len;
    if (colon && !parse_port(colon + 1, len - *hlen - 1, port))
        return -1;
    return 0;
}

int mini_netrule_parse(const char *s, struct mini_netrule *r, const char **why)
{
    memset(r, 0, sizeof *r);
    size_t len = strlen(s);
    const char *h;
    size_t hlen;
    bool bracket;
    if (len == 0 || len > MINI_NET_HOST_MAX + 16) {
        *why = "must be 1 to 269 characters";
        return -1;
    }
    if (split_host_port(s, len, &h, &hlen, &r->port, &bracket) < 0) {
        *why = "bad port or brackets (a port is 1 to 65535: HOST:PORT, [IPV6]:PORT)";
        return -1;
    }
    if (hlen == 1 && h[0] == '*') {
        r->kind = MINI_NR_ANY;
        return 0;
    }
    char ip[INET6_ADDRSTRLEN + 8];
    const char *slash = memchr(h, '/', hlen);
    size_t iplen = slash ? (size_t)(slash - h) : hlen;
    if (iplen < sizeof ip) {
        memcpy(ip, h, iplen);
        ip[iplen] = '\0';
        if (mini_net_parse_ip(ip, r->addr)) {
            bool v4 = mini_net_addr_is_v4(r->addr) && !strchr(ip, ':');
            unsigned max = v4 ? 32 : 128;
            unsigned bits = max;
            if (slash) {
                size_t n = hlen - iplen - 1;
                char *end;
                char num[8];
                if (n == 0 || n >= sizeof num) {
                    *why = "bad prefix length after /";
                    return -1;
                }
                memcpy(num, slash + 1, n);
                num[n] = '\0';
                unsigned long b = strtoul(num, &end, 10);
                if (*end || !isdigit((unsigned char)num[0]) || b > max) {
                    *why = "bad prefix length after / (0-32 for IPv4, 0-128 for IPv6)";
                    return -1;
                }
                bits = (unsigned)b;
            }
            r->kind = MINI_NR_ADDR;
            r->prefix = v4 ? 96 + bits : bits;
            return 0;
        }
    }
    if (bracket || slash) {
        *why = "not an IP address or CIDR";
        return -1;
    }
    if (hlen > 2 && h[0] == '*' && h[1] == '.') {
        r->kind = MINI_NR_SUFFIX;
        h += 2;
        hlen -= 2;
    } else {
        r->kind = MINI_NR_HOST;
    }
    if (mini_net_host_norm(h, hlen, r->host, sizeof r->host) < 0) {
        *why = "not a host name (letters, digits, '-', '_' and dots; \"*.\" only as a prefix), IP address or CIDR";
        return -1;
    }
    return 0;
}

bool mini_netrule_match_name(const struct mini_netrule *r, const char *host, uint16_t port)
{
    if (r->port && r->port != port)
        return false;
    switch (r->kind) {
    case MINI_NR_ANY: return true;
    case MINI_NR_HOST: return strcmp(r->host, host) == 0;
    case MINI_NR_SUFFIX: {
        size_t hl = strlen(host), sl = strlen(r->host);
        return hl > sl + 1 && host[hl - sl - 1] == '.' && strcmp(host + hl - sl, r->host) == 0;
    }
    case MINI_NR_ADDR: return false;
    }
    return false;
}

bool mini_netrule_match_addr(const struct mini_netrule *r, const uint8_t addr[16], uint16_t port)
{
    if (r->kind != MINI_NR_ADDR || (r->port && r->port != port))
        return false;
    return in_prefix(addr, r->addr, r->prefix);
}

/* -------------------------------------------------------------- pins */

int mini_net_pins_add(struct mini_net_pins *t, const char *spec, const char **why)
{
    const char *colon = strchr(spec, ':');
    char name[MINI_NET_HOST_MAX + 1], addr[INET6_ADDRSTRLEN + 2];
    uint8_t a[16];
    if (!colon || mini_net_host_norm(spec, (size_t)(colon - spec), name, sizeof name) < 0) {
        *why = "expected NAME:ADDRESS (pypi.org:10.0.0.5, pypi.org:[fd00::5])";
        return -1;
    }
    const char *as = colon + 1;
    size_t al = strlen(as);
    if (al >= 2 && as[0] == '[' && as[al - 1] == ']') {
        as++;
        al -= 2;
    }
    if (al >= sizeof addr) {
        *why = "not an IP address after the name";
        return -1;
    }
    memcpy(addr, as, al);
    addr[al] = '\0';
    if (!mini_net_parse_ip(addr, a)) {
        *why = "not an IP address after the name";
        return -1;
    }
    struct mini_net_pin *pin = (struct mini_net_pin *)mini_net_pins_find(t, name);
    if (!pin) {
        struct mini_net_pin *nv = realloc(t->v, (t->n + 1) * sizeof *nv);
        if (!nv) {
            *why = "out of memory";
            return -1;
        }
        t->v = nv;
        pin = &t->v[t->n++];
        memset(pin, 0, sizeof *pin);
        memcpy(pin->name, name, sizeof name);
    }
    if (pin->n >= MINI_NET_PIN_ADDRS) {
        *why = "at most 16 addresses per name";
        return -1;
    }
    memcpy(pin->addrs[pin->n++], a, 16);
    return 0;
}

const struct mini_net_pin *mini_net_pins_find(const struct mini_net_pins *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].name, name) == 0)
            return &t->v[i];
    return NULL;
}

void mini_net_pins_free(struct mini_net_pins *t)
{
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

/* ------------------------------------------------------------ requests */

static bool is_tchar(unsigned char c) { return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c)); }

static int refuse(int *status, const char **why, int code, const char *text)
{
    *status = code;
    *why = text;
    return -1;
}

/* host[:port] of an authority into r (port default `def`; 0: required). */
static int parse_authority(const char *s, size_t len, uint16_t def, struct mini_http_req *r)
{
    const char *h;
    size_t hlen;
    bool bracket;
    if (memchr(s, '@', len) || split_host_port(s, len, &h, &hlen, &r->port, &bracket) < 0)
        return -1;
    if (!r->port) {
        if (!def)
            return -1;
        r->port = def;
    }
    if (hlen == 0 || hlen > MINI_NET_HOST_MAX)
        return -1;
    char tmp[MINI_NET_HOST_MAX + 1];
    memcpy(tmp, h, hlen);
    tmp[hlen] = '\0';
    if (mini_net_parse_ip(tmp, r->addr)) {
        /* An IPv6 literal must be bracketed in an authority. */
        if (strchr(tmp, ':') && !bracket)
            return -1;
        r->host_is_ip = true;
        memcpy(r->host, tmp, hlen + 1);
        return 0;
    }
    if (bracket)
        return -1;
    return mini_net_host_norm(h, hlen, r->host, sizeof r->host);
}

int mini_http_req_parse(const char *buf, size_t len, struct mini_http_req *r, int *status, const char **why)
{
    memset(r, 0, sizeof *r);
    size_t scan = len < MINI_HTTP_HEAD_MAX ? len : MINI_HTTP_HEAD_MAX;
    const char *end = NULL;
    for (size_t i = 0; i + 3 < scan && !end; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
            end = buf + i;
    /* A request line already bad need not wait for the rest. */
    const char *eol = memchr(buf, '\n', scan);
    if (!end) {
        if (len >= MINI_HTTP_HEAD_MAX)
            return refuse(status, why, 431, "the request head is larger than 16 KiB");
        if (!eol)
            return memchr(buf, '\0', scan) ? refuse(status, why, 400, "malformed request line") : 0;
    }
    if (!eol || eol == buf || eol[-1] != '\r')
        return refuse(status, why, 400, "malformed request line (lines end with CRLF)");
    size_t line_len = (size_t)(eol - 1 - buf);
    /* METHOD SP target SP HTTP/1.x */
    const char *sp1 = memchr(buf, ' ', line_len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', line_len - (size_t)(sp1 + 1 - buf)) : NULL;
    if (!sp1 || !sp2 || sp1 == buf || sp2 == sp1 + 1)
        return refuse(status, why, 400, "malformed request line (METHOD TARGET HTTP/1.1)");
    size_t mlen = (size_t)(sp1 - buf), tlen = (size_t)(sp2 - sp1 - 1), vlen = line_len - (size_t)(sp2 + 1 - buf);
    if (mlen >= sizeof r->method)
        return refuse(status, why, 501, "unknown method");
    for (size_t i = 0; i < mlen; i++)
        if (!is_tchar((unsigned char)buf[i]))
            return refuse(status, why, 400, "malformed method");
    if (vlen != 8 || (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 && memcmp(sp2 + 1, "HTTP/1.0", 8) != 0))
        return refuse(status, why, 400, "only HTTP/1.0 and HTTP/1.1 requests are proxied");
    const char *target = sp1 + 1;
    for (size_t i = 0; i < tlen; i++)
        if ((unsigned char)target[i] <= ' ' || target[i] == 0x7f)
            return refuse(status, why, 400, "malformed request target");
    memcpy(r->method, buf, mlen);
    r->method[mlen] = '\0';
    r->version_off = (size_t)(sp2 + 1 - buf);
    r->connect = strcmp(r->method, "CONNECT") == 0;
    if (r->connect) {
        if (parse_authority(target, tlen, 0, r) < 0)
            return refuse(status, why, 400, "CONNECT needs HOST:PORT (a name, an IPv4 address or [IPv6])");
    } else {
        static const char http[] = "http://";
        if (tlen >= 8 && strncasecmp(target, "https://", 8) == 0)
            return refuse(status, why, 400, "https:// URLs go through CONNECT, not a plain request");
        if (tlen < sizeof http || strncasecmp(target, http, sizeof http - 1) != 0)
            return refuse(status, why, 400,
                          "a proxied request needs an absolute http:// URL (origin-form requests are not "
                          "proxied; is HTTP_PROXY set to this proxy by mistake?)");
        const char *auth = target + sizeof http - 1;
        size_t alen = tlen - (sizeof http - 1);
        size_t a = strcspn(auth, "/?#");
        if (a > alen)
            a = alen;
        if (parse_authority(auth, a, 80, r) < 0)
            return refuse(status, why, 400, "bad host in the URL");
        r->path_off = (size_t)(auth + a - buf);
        r->path_len = alen - a;
    }
    if (!end)
        return 0;
    r->head_len = (size_t)(end - buf) + 4;
    /* Headers: NAME ":" VALUE CRLF, no folding, bounded in number. */
    size_t n = 0;
    for (const char *p = eol + 1; p < end + 2;) {
        const char *le = memchr(p, '\n', (size_t)(end + 2 - p));
        if (!le || le == p || le[-1] != '\r')
            return refuse(status, why, 400, "malformed header line (lines end with CRLF)");
        if (++n > MINI_HTTP_HEADERS_MAX)
            return refuse(status, why, 431, "more than 100 header lines");
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (!colon || colon == p)
            return refuse(status, why, 400, "malformed header line (NAME: VALUE)");
        for (const char *q = p; q < colon; q++)
            if (!is_tchar((unsigned char)*q))
                return refuse(status, why, 400, "malformed header name (no folded lines or spaces)");
        for (const char *q = colon + 1; q < le - 1; q++)
            if (*q == '\0' || *q == '\r')
                return refuse(status, why, 400, "malformed header value");
        p = le + 1;
    }
    return 1;
}

static bool header_is(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);
    return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

int mini_http_req_rewrite(const char *buf, const struct mini_http_req *r, struct mini_buf *out)
{
    static const char *const drop[] = { "Host",       "Connection",          "Proxy-Connection",
                                        "Keep-Alive", "Proxy-Authorization", "Proxy-Authenticate" };
    int rc = mini_buf_printf(out, "%s ", r->method);
    if (r->path_len == 0 || buf[r->path_off] != '/')
        rc |= mini_buf_putc(out, '/');
    rc |= mini_buf_append(out, buf + r->path_off, r->path_len);
    rc |= mini_buf_printf(out, " %.8s\r\n", buf + r->version_off);
    bool v6 = r->host_is_ip && strchr(r->host, ':');
    rc |= mini_buf_printf(out, "Host: %s%s%s", v6 ? "[" : "", r->host, v6 ? "]" : "");
    if (r->port != 80)
        rc |= mini_buf_printf(out, ":%u", (unsigned)r->port);
    rc |= mini_buf_puts(out, "\r\n");
    const char *p = memchr(buf, '\n', r->head_len) + 1;
    const char *end = buf + r->head_len - 2;
    while (p < end) {
        const char *le = memchr(p, '\n', (size_t)(end - p)) + 1;
        bool keep = true;
        for (size_t i = 0; i < sizeof drop / sizeof drop[0] && keep; i++)
            keep = !header_is(p, (size_t)(le - p), drop[i]);
        if (keep)
            rc |= mini_buf_append(out, p, (size_t)(le - p));
        p = le;
    }
    rc |= mini_buf_puts(out, "Connection: close\r\n\r\n");
    return rc < 0 ? -1 : 0;
}

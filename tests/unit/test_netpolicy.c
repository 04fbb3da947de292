/* The network allowlist's pure parts (sandbox/net/netpolicy.c): entry
 * syntax, name and address matching, special addresses, the proxy's
 * request parser and its rewrite of plain-HTTP requests. */
#include "check.h"
#include "netpolicy.h"

#include <stdlib.h>

static struct mini_netrule rule(const char *s)
{
    struct mini_netrule r;
    const char *why = NULL;
    int rc = mini_netrule_parse(s, &r, &why);
    CHECK_MSG(rc == 0, "%s: %s", s, why ? why : "");
    return r;
}

static bool bad_rule(const char *s)
{
    struct mini_netrule r;
    const char *why = NULL;
    return mini_netrule_parse(s, &r, &why) < 0 && why && *why;
}

static const uint8_t *ip(const char *s)
{
    static uint8_t a[16];
    CHECK_MSG(mini_net_parse_ip(s, a), "%s", s);
    return a;
}

static void test_rules(void)
{
    struct mini_netrule r = rule("PyPI.org.");
    CHECK(r.kind == MINI_NR_HOST && r.port == 0);
    CHECK_STR(r.host, "pypi.org");
    CHECK(mini_netrule_match_name(&r, "pypi.org", 443) && mini_netrule_match_name(&r, "pypi.org", 80));
    CHECK(!mini_netrule_match_name(&r, "files.pypi.org", 443) && !mini_netrule_match_name(&r, "xpypi.org", 443));

    r = rule("*.pythonhosted.org");
    CHECK(r.kind == MINI_NR_SUFFIX);
    CHECK(mini_netrule_match_name(&r, "files.pythonhosted.org", 443));
    CHECK(mini_netrule_match_name(&r, "a.b.pythonhosted.org", 443));
    CHECK(!mini_netrule_match_name(&r, "pythonhosted.org", 443));
    CHECK(!mini_netrule_match_name(&r, "evilpythonhosted.org", 443));

    r = rule("github.com:443");
    CHECK(r.kind == MINI_NR_HOST && r.port == 443);
    CHECK(mini_netrule_match_name(&r, "github.com", 443) && !mini_netrule_match_name(&r, "github.com", 22));

    r = rule("*");
    CHECK(r.kind == MINI_NR_ANY && mini_netrule_match_name(&r, "anything.example", 1));
    CHECK(!mini_netrule_match_addr(&r, ip("1.2.3.4"), 80)); /* addresses need an address rule */

    r = rule("10.1.2.3:8080");
    CHECK(r.kind == MINI_NR_ADDR && r.port == 8080 && r.prefix == 128);
    CHECK(mini_netrule_match_addr(&r, ip("10.1.2.3"), 8080) && !mini_netrule_match_addr(&r, ip("10.1.2.3"), 80));
    CHECK(mini_netrule_match_addr(&r, ip("::ffff:10.1.2.3"), 8080)); /* v4-mapped is the same address */
    CHECK(!mini_netrule_match_name(&r, "10.1.2.3", 8080));

    r = rule("10.0.0.0/8");
    CHECK(r.kind == MINI_NR_ADDR && r.prefix == 104);
    CHECK(mini_netrule_match_addr(&r, ip("10.255.0.1"), 1) && !mini_netrule_match_addr(&r, ip("11.0.0.1"), 1));
    r = rule("[fd00::/8]:443");
    CHECK(r.kind == MINI_NR_ADDR && r.prefix == 8 && r.port == 443);
    CHECK(mini_netrule_match_addr(&r, ip("fd12::1"), 443) && !mini_netrule_match_addr(&r, ip("fe80::1"), 443));
    r = rule("2001:db8::1");
    CHECK(r.kind == MINI_NR_ADDR && r.port == 0 && mini_netrule_match_addr(&r, ip("2001:db8::1"), 9));
    r = rule("[::1]:8080");
    CHECK(r.kind == MINI_NR_ADDR && r.port == 8080);

    CHECK(bad_rule(""));
    CHECK(bad_rule("a..b"));
    CHECK(bad_rule("a.b:0"));
    CHECK(bad_rule("a.b:65536"));
    CHECK(bad_rule("a.b:http"));
    CHECK(bad_rule("*.")); /* no suffix */
    CHECK(bad_rule("a.*.b"));
    CHECK(bad_rule("a b"));
    CHECK(bad_rule("[a.b]"));
    CHECK(bad_rule("10.0.0.0/33"));
    CHECK(bad_rule("::1/129"));
    CHECK(bad_rule("10.0.0.0/"));
    CHECK(bad_rule("host/8"));
    CHECK(bad_rule("[::1"));
    CHECK(bad_rule("[fd00::]/8"));
    char longname[400];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK(bad_rule(longname));
}

static void test_special(void)
{
    static const char *const special[] = {
        "127.0.0.1",
        "127.9.9.9",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd00:ec2::254",
        "ff02::1",
        "::ffff:127.0.0.1",
        "64:ff9b::a9fe:a9fe", /* NAT64 of 169.254.169.254 */
        "2002:7f00:1::",      /* 6to4 of 127.0.0.1 */
        "::127.0.0.1",        /* IPv4-compatible */
    };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        CHECK_MSG(mini_net_addr_special(ip(special[i])) != NULL, "%s", special[i]);
    static const char *const public[] = { "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8" };
    for (size_t i = 0; i < sizeof public / sizeof public[0]; i++)
        CHECK_MSG(mini_net_addr_special(ip(public[i])) == NULL, "%s", public[i]);
    CHECK_STR(mini_net_addr_special(ip("169.254.169.254")), "a link-local address (cloud metadata lives there)");
    char buf[64];
    mini_net_addr_str(ip("::ffff:10.1.2.3"), buf, sizeof buf);
    CHECK_STR(buf, "10.1.2.3");
    mini_net_addr_str(ip("2001:db8::1"), buf, sizeof buf);
    CHECK_STR(buf, "2001:db8::1");
}

static int parse(const char *s, struct mini_http_req *r, int *status)
{
    const char *why = NULL;
    int rc = mini_http_req_parse(s, strlen(s), r, status, &why);
    CHECK(rc >= 0 || (why && *why));
    return rc;
}

static void test_requests(void)
{
    struct mini_http_req r;
    int st = 0;
    CHECK(parse("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\nTLS", &r, &st) == 1);
    CHECK(r.connect && r.port == 443 && !r.host_is_ip &&
          r.head_len ==
              strlen("CONNECT pypi.org:443 HTTP/1.1\r\n"
                     "Host: pypi.org:443\r\n\r\n"));
    CHECK_STR(r.host, "pypi.org");
    CHECK(parse("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n", &r, &st) == 1 && r.host_is_ip && r.port == 8443);
    CHECK(parse("CONNECT 10.1.2.3:80 HTTP/1.0\r\n\r\n", &r, &st) == 1 && r.host_is_ip);
    CHECK(parse("CONNECT pypi.org HTTP/1.1\r\n\r\n", &r, &st) < 0 && st == 400); /* port required */
    CHECK(parse("CONNECT ::1:443 HTTP/1.1\r\n\r\n", &r, &st) < 0 && st == 400);  /* unbracketed IPv6 */
    CHECK(parse("CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n", &r, &st) < 0);

    const char *get = "GET http://Example.ORG/a/b?c=d HTTP/1.1\r\nHost: wrong\r\nProxy-Connection: keep-alive\r\n"
                      "Accept: */*\r\nConnection: keep-alive\r\n\r\nBODY";
    CHECK(parse(get, &r, &st) == 1 && !r.connect && r.port == 80);
    CHECK_STR(r.host, "example.org");
    struct mini_buf out = MINI_BUF_INIT;
    CHECK(mini_http_req_rewrite(get, &r, &out) == 0);
    CHECK_STR(out.data, "GET /a/b?c=d HTTP/1.1\r\nHost: example.org\r\nAccept: */*\r\nConnection: close\r\n\r\n");
    mini_buf_free(&out);
    const char *q = "POST http://a.test:8080?x HTTP/1.0\r\n\r\n";
    CHECK(parse(q, &r, &st) == 1 && r.port == 8080);
    CHECK(mini_http_req_rewrite(q, &r, &out) == 0);
    CHECK_STR(out.data, "POST /?x HTTP/1.0\r\nHost: a.test:8080\r\nConnection: close\r\n\r\n");
    mini_buf_free(&out);
    const char *v6 = "GET http://[2001:db8::1]:81/ HTTP/1.1\r\n\r\n";
    CHECK(parse(v6, &r, &st) == 1 && r.host_is_ip);
    CHECK(mini_http_req_rewrite(v6, &r, &out) == 0);
    CHECK_STR(out.data, "GET / HTTP/1.1\r\nHost: [2001:db8::1]:81\r\nConnection: close\r\n\r\n");
    mini_buf_free(&out);

    /* Incomplete, then refused for a reason. */
    CHECK(parse("CONNECT pypi.org:443 HTTP/1.1\r\nHost: x", &r, &st) == 0);
    CHECK(parse("GET http://a", &r, &st) == 0);
    CHECK(parse("GET /index.html HTTP/1.1\r\n\r\n", &r, &st) < 0 && st == 400);
    CHECK(parse("GET https://a.test/ HTTP/1.1\r\n\r\n", &r, &st) < 0 && st == 400);
    CHECK(parse("GET http://a.test/ HTTP/2.0\r\n\r\n", &r, &st) < 0 && st == 400);
    CHECK(parse("GET http://a.test/ HTTP/1.1\n\n", &r, &st) < 0 && st == 400);
    CHECK(parse("GET http://a.test/ HTTP/1.1\r\n folded\r\n\r\n", &r, &st) < 0 && st == 400);
    CHECK(parse("GET http://a.test/ HTTP/1.1\r\nNoColon\r\n\r\n", &r, &st) < 0 && st == 400);
    CHECK(parse("G(T http://a.test/ HTTP/1.1\r\n\r\n", &r, &st) < 0 && st == 400);
    CHECK(parse("VERYLONGMETHODNAMEXXXXXXXXXXX http://a/ HTTP/1.1\r\n\r\n", &r, &st) < 0 && st == 501);
    char *big = malloc(MINI_HTTP_HEAD_MAX + 100);
    memset(big, 'a', MINI_HTTP_HEAD_MAX + 99);
    memcpy(big, "GET http://a.test/", 18);
    big[MINI_HTTP_HEAD_MAX + 99] = '\0';
    CHECK(parse(big, &r, &st) < 0 && st == 431);
    free(big);
    struct mini_buf many = MINI_BUF_INIT;
    mini_buf_puts(&many, "GET http://a.test/ HTTP/1.1\r\n");
    for (int i = 0; i < 101; i++)
        mini_buf_printf(&many, "X-%d: y\r\n", i);
    mini_buf_puts(&many, "\r\n");
    CHECK(parse(many.data, &r, &st) < 0 && st == 431);
    mini_buf_free(&many);
    const char nul[] = "GET http://a\0b/ HTTP/1.1\r\n\r\n";
    const char *why;
    CHECK(mini_http_req_parse(nul, sizeof nul - 1, &r, &st, &why) < 0);
}

static void test_pins(void)
{
    struct mini_net_pins t = { 0 };
    const char *why;
    CHECK(mini_net_pins_add(&t, "Pkg.Test:127.0.0.1", &why) == 0);
    CHECK(mini_net_pins_add(&t, "pkg.test:[::1]", &why) == 0);
    CHECK(mini_net_pins_add(&t, "other.test:2001:db8::5", &why) == 0);
    const struct mini_net_pin *p = mini_net_pins_find(&t, "pkg.test");
    CHECK(p && p->n == 2 && mini_net_addr_is_v4(p->addrs[0]) && !mini_net_addr_is_v4(p->addrs[1]));
    p = mini_net_pins_find(&t, "other.test");
    CHECK(p && p->n == 1 && memcmp(p->addrs[0], ip("2001:db8::5"), 16) == 0);
    CHECK(!mini_net_pins_find(&t, "none.test"));
    CHECK(mini_net_pins_add(&t, "noaddr.test", &why) < 0);
    CHECK(mini_net_pins_add(&t, "bad name:1.2.3.4", &why) < 0);
    CHECK(mini_net_pins_add(&t, "x.test:1.2.3", &why) < 0);
    CHECK(mini_net_pins_add(&t, ":1.2.3.4", &why) < 0);
    for (int i = 0; i < 16; i++)
        CHECK(mini_net_pins_add(&t, "many.test:10.0.0.1", &why) == 0);
    CHECK(mini_net_pins_add(&t, "many.test:10.0.0.1", &why) < 0); /* the 17th */
    mini_net_pins_free(&t);
}

int main(void)
{
    test_pins();
    test_rules();
    test_special();
    test_requests();
    return check_summary();
}

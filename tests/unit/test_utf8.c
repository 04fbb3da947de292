#include "check.h"
#include "mini/utf8.h"
#include "utf8_cases.h"

#include <stdlib.h>

int main(void)
{
    for (size_t i = 0; i < sizeof utf8_cases / sizeof utf8_cases[0]; i++) {
        const struct utf8_case *c = &utf8_cases[i];
        struct mini_buf out = MINI_BUF_INIT;
        CHECK(mini_utf8_sanitize(&out, c->in, c->in_len) == 0);
        CHECK_MSG(out.len == c->out_len && memcmp(out.data, c->out, c->out_len) == 0, "case %s", c->name);
        /* Valid input comes back unchanged; invalid input does not. */
        int unchanged = c->in_len == c->out_len && memcmp(c->in, c->out, c->in_len) == 0;
        CHECK_MSG(mini_utf8_valid(c->in, c->in_len) == unchanged, "valid() for %s", c->name);
        CHECK_MSG(mini_utf8_valid(out.data, out.len), "output of %s is valid", c->name);
        mini_buf_free(&out);
    }

    /* Incomplete tails: a stream split inside a character. */
    CHECK(mini_utf8_incomplete_tail("ab\xe2\x82", 4) == 2);
    CHECK(mini_utf8_incomplete_tail("ab\xf0\x9f\x98", 5) == 3);
    CHECK(mini_utf8_incomplete_tail("ab\xc3", 3) == 1);
    CHECK(mini_utf8_incomplete_tail("ab\xe2\x82\xac", 5) == 0);
    CHECK(mini_utf8_incomplete_tail("ab", 2) == 0);
    CHECK(mini_utf8_incomplete_tail("\xed\xa0", 2) == 0); /* surrogate: never completes */
    CHECK(mini_utf8_incomplete_tail("\xff", 1) == 0);
    CHECK(mini_utf8_incomplete_tail("", 0) == 0);

    /* C0 80 (a NUL kept in command output): invalid, so sanitize makes two
     * U+FFFD of it, as Python does of those bytes; sanitize_keep_nul keeps it
     * and repairs the rest alone. */
    {
        struct mini_buf a = MINI_BUF_INIT, k = MINI_BUF_INIT;
        CHECK(!mini_utf8_valid(MINI_UTF8_NUL, 2));
        CHECK(mini_utf8_sanitize(&a, MINI_UTF8_NUL, 2) == 0);
        CHECK(a.len == 6 && memcmp(a.data, "\xEF\xBF\xBD\xEF\xBF\xBD", 6) == 0);
        static const char in[] = "a\xC0\x80\xff\xC0\x80\xE2\x82\xC0\x80\xC0";
        static const char want[] = "a\xC0\x80\xEF\xBF\xBD\xC0\x80\xEF\xBF\xBD\xC0\x80\xEF\xBF\xBD";
        CHECK(mini_utf8_sanitize_keep_nul(&k, in, sizeof in - 1) == 0);
        CHECK(k.len == sizeof want - 1 && memcmp(k.data, want, sizeof want - 1) == 0);
        mini_buf_reset(&k);
        CHECK(mini_utf8_sanitize_keep_nul(&k, "", 0) == 0 && k.data && k.len == 0);
        mini_buf_free(&a);
        mini_buf_free(&k);
    }

    CHECK(mini_utf8_codepoints("h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10) == 4);

    /* Sanitising in pieces split at a character boundary gives the same
     * bytes as sanitising the whole. */
    const char *s = "x\xe2\x82\xacy\xff\xf0\x9f\x98\x80z";
    size_t n = strlen(s);
    struct mini_buf whole = MINI_BUF_INIT, parts = MINI_BUF_INIT;
    mini_utf8_sanitize(&whole, s, n);
    for (size_t cut = 0; cut <= n; cut++) {
        mini_buf_reset(&parts);
        size_t keep = cut - mini_utf8_incomplete_tail(s, cut);
        mini_utf8_sanitize(&parts, s, keep);
        mini_utf8_sanitize(&parts, s + keep, n - keep);
        CHECK_MSG(parts.len == whole.len && memcmp(parts.data, whole.data, whole.len) == 0, "cut %zu", cut);
    }
    mini_buf_free(&whole);
    mini_buf_free(&parts);
    return check_summary();
}

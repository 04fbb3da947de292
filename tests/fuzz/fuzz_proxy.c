/* libFuzzer target: arbitrary bytes as what a sandboxed client sends the
 * network proxy (sandbox/net/netpolicy.c): the request parser at every
 * prefix length (as the bytes arrive), the rewrite of a parsed plain-HTTP
 * request, and the first line as an allowlist entry matched against the
 * parsed host.  Nothing may crash or read past the bytes; a complete
 * request must have a head inside the input, a port, and a host that is a
 * name or an IP literal; a refusal must carry an HTTP status and a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes, so that ASan sees any overread. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct mini_http_req r;
    int status = 0;
    const char *why = NULL;
    int done = 0;
    size_t step = size > 64 ? size / 16 : 1;
    for (size_t len = 0; len <= size && !done; len += step) {
        int rc = mini_http_req_parse(buf, len, &r, &status, &why);
        if (rc < 0) {
            if (status < 400 || status > 599 || !why || !*why)
                abort();
            done = 1;
        } else if (rc == 1) {
            if (r.head_len == 0 || r.head_len > len || r.port == 0 || !r.host[0])
                abort();
            if (!r.connect) {
                struct mini_buf out = MINI_BUF_INIT;
                if (mini_http_req_rewrite(buf, &r, &out) < 0 || out.len < 4 ||
                    memcmp(out.data + out.len - 4, "\r\n\r\n", 4) != 0)
                    abort();
                mini_buf_free(&out);
            }
            const char *nl = memchr(buf, '\n', size);
            size_t ll = nl ? (size_t)(nl - buf) : size;
            char *line = strndup(buf, ll);
            struct mini_netrule rule;
            const char *rwhy;
            if (line && mini_netrule_parse(line, &rule, &rwhy) == 0) {
                if (r.host_is_ip) {
                    (void)mini_netrule_match_addr(&rule, r.addr, r.port);
                    (void)mini_net_addr_special(r.addr);
                } else {
                    (void)mini_netrule_match_name(&rule, r.host, r.port);
                }
            }
            free(line);
            done = 1;
        }
        if (step > 1 && len < size && len + step > size)
            step = size - len;
    }
    free(buf);
    return 0;
}

/* Frames: the incremental reader, encoding, and the blocking JSON helpers. */
#include "check.h"
#include "mini/cleanup.h"
#include "mini/proto.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const payloads[] = {
    "{\"op\":\"stats\",\"id\":1}",
    "x",
    "{}",
    "{\"op\":\"exec\",\"id\":2,\"session\":\"s1\",\"command\":\"echo hello; echo world\"}",
};
#define NPAY (int)MINI_ARRAY_SIZE(payloads)

static void build_stream(struct mini_buf *s)
{
    struct mini_err e;
    for (int i = 0; i < NPAY; i++)
        CHECK(mini_frame_encode(s, payloads[i], strlen(payloads[i]), &e) == 0);
}

/* Take every ready frame and check it against payloads[*next...]. */
static int drain(struct mini_frame_reader *r, int *next)
{
    struct mini_err e;
    const char *p;
    size_t n;
    int k, bad = 0;
    while ((k = mini_frame_reader_next(r, &p, &n, &e)) == 1) {
        if (*next >= NPAY || n != strlen(payloads[*next]) || memcmp(p, payloads[*next], n) != 0)
            bad++;
        (*next)++;
    }
    return k < 0 ? -1 : bad;
}

static void test_encode(void)
{
    struct mini_err e;
    struct mini_buf b = MINI_BUF_INIT;
    CHECK(mini_frame_encode(&b, "abc", 3, &e) == 0);
    CHECK_MEM(b.data, b.len, "\0\0\0\3abc", 7);
    mini_buf_reset(&b);
    CHECK(mini_frame_encode(&b, "", 0, &e) == -1);
    CHECK(e.code == MINI_E_INTERNAL);
    CHECK(b.len == 0);
    /* The length is checked before the payload is looked at. */
    CHECK(mini_frame_encode(&b, "x", (size_t)MINI_FRAME_MAX + 1, &e) == -1);
    CHECK(e.code == MINI_E_LIMIT);
    CHECK(strstr(e.msg, "16777217") != NULL);
    CHECK(b.len == 0);

    /* 300 bytes: the length uses more than the low byte. */
    char big[300];
    memset(big, 'y', sizeof big);
    CHECK(mini_frame_encode(&b, big, sizeof big, &e) == 0);
    CHECK_MEM(b.data, 4, "\0\0\1\x2c", 4);
    mini_buf_free(&b);

    /* encode_json: compact text. */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", "stats");
    cJSON_AddNumberToObject(o, "id", 5);
    CHECK(mini_frame_encode_json(&b, o, &e) == 0);
    CHECK_MEM(b.data, b.len, "\0\0\0\x15{\"op\":\"stats\",\"id\":5}", 25);
    cJSON_Delete(o);
    mini_buf_free(&b);
}

static void test_splits(void)
{
    struct mini_buf s = MINI_BUF_INIT;
    build_stream(&s);
    struct mini_err e;

    /* Two chunks, cut at every byte boundary; then three chunks, at every
     * pair of boundaries. */
    int failures = 0;
    for (size_t i = 0; i <= s.len; i++) {
        for (size_t j = i; j <= s.len; j++) {
            struct mini_frame_reader r;
            mini_frame_reader_init(&r);
            int next = 0, bad = 0;
            bad |= mini_frame_reader_feed(&r, s.data, i, &e) != 0;
            bad |= drain(&r, &next) != 0;
            bad |= mini_frame_reader_feed(&r, s.data + i, j - i, &e) != 0;
            bad |= drain(&r, &next) != 0;
            bad |= mini_frame_reader_feed(&r, s.data + j, s.len - j, &e) != 0;
            bad |= drain(&r, &next) != 0;
            bad |= next != NPAY;
            bad |= mini_frame_reader_eof(&r, &e) != 0;
            failures += bad;
            mini_frame_reader_free(&r);
        }
    }
    CHECK_MSG(failures == 0, "%d split positions failed", failures);

    /* One byte at a time. */
    struct mini_frame_reader r;
    mini_frame_reader_init(&r);
    int next = 0, bad = 0;
    for (size_t i = 0; i < s.len; i++) {
        bad |= mini_frame_reader_feed(&r, s.data + i, 1, &e) != 0;
        bad |= drain(&r, &next) != 0;
    }
    CHECK(bad == 0);
    CHECK(next == NPAY);
    CHECK(mini_frame_reader_eof(&r, &e) == 0);
    mini_frame_reader_free(&r);
    mini_buf_free(&s);
}

static void test_many_in_one_chunk(void)
{
    struct mini_buf s = MINI_BUF_INIT;
    struct mini_err e;
    for (int i = 0; i < 2500; i++)
        build_stream(&s);
    struct mini_frame_reader r;
    mini_frame_reader_init(&r);
    CHECK(mini_frame_reader_feed(&r, s.data, s.len, &e) == 0);
    const char *p;
    size_t n;
    int count = 0, bad = 0, k;
    while ((k = mini_frame_reader_next(&r, &p, &n, &e)) == 1) {
        const char *want = payloads[count % NPAY];
        bad |= n != strlen(want) || memcmp(p, want, n) != 0;
        count++;
    }
    CHECK(k == 0);
    CHECK(bad == 0);
    CHECK(count == 2500 * NPAY);
    CHECK(mini_frame_reader_eof(&r, &e) == 0);
    mini_frame_reader_free(&r);
    mini_buf_free(&s);
}

static void test_bad_headers(void)
{
    struct mini_err e;
    struct mini_frame_reader r;
    const char *p;
    size_t n;

    /* Zero length, after a good frame: the good one comes out first. */
    mini_frame_reader_init(&r);
    CHECK(mini_frame_reader_feed(&r, "\0\0\0\1x\0\0\0\0", 9, &e) == 0);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == 1);
    CHECK(n == 1 && p[0] == 'x');
    mini_err_clear(&e);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == -1);
    CHECK(e.code == MINI_E_BAD_REQUEST);
    CHECK_STR(e.msg, "bad frame: zero length");
    /* The stream stays broken. */
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == -1);
    CHECK(mini_frame_reader_eof(&r, &e) == -1);
    mini_frame_reader_free(&r);

    /* Over 16 MiB: reported as soon as the fourth header byte is in,
     * without waiting for (or buffering) any payload. */
    mini_frame_reader_init(&r);
    CHECK(mini_frame_reader_feed(&r, "\x01\0\0", 3, &e) == 0);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == 0);
    CHECK(mini_frame_reader_feed(&r, "\x01", 1, &e) == 0);
    mini_err_clear(&e);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == -1);
    CHECK(e.code == MINI_E_BAD_REQUEST);
    CHECK_STR(e.msg, "bad frame: length 16777217 is over the limit of 16777216 bytes");
    mini_frame_reader_free(&r);

    mini_frame_reader_init(&r);
    CHECK(mini_frame_reader_feed(&r, "\xff\xff\xff\xff", 4, &e) == 0);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == -1);
    CHECK(strstr(e.msg, "4294967295") != NULL);
    mini_frame_reader_free(&r);

    /* Exactly the limit is fine: more bytes needed. */
    mini_frame_reader_init(&r);
    CHECK(mini_frame_reader_feed(&r, "\x01\0\0\0", 4, &e) == 0);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == 0);
    mini_frame_reader_free(&r);

    /* A reader may have a lower limit. */
    mini_frame_reader_init(&r);
    r.max = 10;
    CHECK(mini_frame_reader_feed(&r,
                                 "\0\0\0\x0a"
                                 "0123456789"
                                 "\0\0\0\x0b",
                                 18, &e) == 0);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == 1 && n == 10);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == -1);
    CHECK_STR(e.msg, "bad frame: length 11 is over the limit of 10 bytes");
    mini_frame_reader_free(&r);
}

static void test_eof(void)
{
    struct mini_err e;
    struct mini_frame_reader r;
    const char *p;
    size_t n;

    mini_frame_reader_init(&r);
    CHECK(mini_frame_reader_eof(&r, &e) == 0); /* nothing at all */
    CHECK(mini_frame_reader_feed(&r, "\0\0", 2, &e) == 0);
    mini_err_clear(&e);
    CHECK(mini_frame_reader_eof(&r, &e) == -1);
    CHECK(e.code == MINI_E_BAD_REQUEST);
    CHECK_STR(e.msg, "truncated frame: the stream ended after 2 of 4 header bytes");
    CHECK(mini_frame_reader_feed(&r, "\0\5ab", 4, &e) == 0);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == 0);
    CHECK(mini_frame_reader_eof(&r, &e) == -1);
    CHECK_STR(e.msg, "truncated frame: the stream ended after 2 of 5 payload bytes");
    CHECK(mini_frame_reader_feed(&r, "cde", 3, &e) == 0);
    /* A complete frame not yet taken is not a truncation... */
    CHECK(mini_frame_reader_eof(&r, &e) == 0);
    /* ...but a partial one after it is. */
    CHECK(mini_frame_reader_feed(&r, "\0", 1, &e) == 0);
    CHECK(mini_frame_reader_eof(&r, &e) == -1);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == 1);
    CHECK_MEM(p, n, "abcde", 5);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == 0);
    CHECK(mini_frame_reader_eof(&r, &e) == -1);
    mini_frame_reader_free(&r);
}

static void test_memory_bounded(void)
{
    struct mini_err e;
    struct mini_buf s = MINI_BUF_INIT;
    build_stream(&s);
    struct mini_frame_reader r;
    mini_frame_reader_init(&r);
    /* Feed the stream in odd-sized chunks, over and over, draining as we go:
     * the buffer must not grow with the total. */
    size_t maxcap = 0;
    int next = 0, bad = 0;
    for (int round = 0; round < 20000; round++) {
        for (size_t off = 0; off < s.len; off += 7) {
            size_t k = s.len - off < 7 ? s.len - off : 7;
            bad |= mini_frame_reader_feed(&r, s.data + off, k, &e) != 0;
            bad |= drain(&r, &next) != 0;
            if (r.in.cap > maxcap)
                maxcap = r.in.cap;
        }
        bad |= next != NPAY;
        next = 0;
    }
    CHECK(bad == 0);
    CHECK_MSG(maxcap <= 256, "buffer grew to %zu bytes", maxcap);

    /* A caller that takes one frame per feed and never sees next() return
     * 0: the space is reclaimed on the next feed. */
    maxcap = 0;
    const char *p;
    size_t n;
    for (int i = 0; i < 100000; i++) {
        bad |= mini_frame_reader_feed(&r, "\0\0\0\3abc", 7, &e) != 0;
        bad |= mini_frame_reader_next(&r, &p, &n, &e) != 1 || n != 3;
        if (r.in.cap > maxcap)
            maxcap = r.in.cap;
    }
    CHECK(bad == 0);
    CHECK_MSG(maxcap <= 256, "buffer grew to %zu bytes", maxcap);
    mini_frame_reader_free(&r);

    /* A large frame's memory is given back once it has been taken. */
    mini_frame_reader_init(&r);
    size_t big = 1u << 20;
    char *payload = malloc(big);
    memset(payload, 'z', big);
    struct mini_buf f = MINI_BUF_INIT;
    CHECK(mini_frame_encode(&f, payload, big, &e) == 0);
    CHECK(mini_frame_reader_feed(&r, f.data, f.len, &e) == 0);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == 1);
    CHECK(n == big && memcmp(p, payload, big) == 0);
    CHECK(mini_frame_reader_next(&r, &p, &n, &e) == 0);
    CHECK(r.in.cap <= 64 * 1024);
    mini_frame_reader_free(&r);
    mini_buf_free(&f);
    free(payload);
    mini_buf_free(&s);
}

static void test_max_frame(void)
{
    /* A frame of exactly MINI_FRAME_MAX bytes goes through, fed in pieces. */
    struct mini_err e;
    char *payload = malloc(MINI_FRAME_MAX);
    memset(payload, 'q', MINI_FRAME_MAX);
    struct mini_buf f = MINI_BUF_INIT;
    CHECK(mini_frame_encode(&f, payload, MINI_FRAME_MAX, &e) == 0);
    CHECK(f.len == (size_t)MINI_FRAME_MAX + 4);
    struct mini_frame_reader r;
    mini_frame_reader_init(&r);
    const char *p;
    size_t n;
    int k = 0;
    for (size_t off = 0; off < f.len && k == 0; off += 65536) {
        size_t len = f.len - off < 65536 ? f.len - off : 65536;
        CHECK(mini_frame_reader_feed(&r, f.data + off, len, &e) == 0);
        k = mini_frame_reader_next(&r, &p, &n, &e);
    }
    CHECK(k == 1 && n == MINI_FRAME_MAX && memcmp(p, payload, n) == 0);
    mini_frame_reader_free(&r);
    mini_buf_free(&f);
    free(payload);
}

static cJSON *make_obj(int id, const char *text)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", "output");
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddStringToObject(o, "data", text);
    return o;
}

static void check_obj(const cJSON *o, int id, const char *text)
{
    CHECK(cJSON_IsObject(o));
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, "id");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "data");
    CHECK(cJSON_IsNumber(i) && i->valuedouble == id);
    CHECK(cJSON_IsString(d) && strcmp(d->valuestring, text) == 0);
}

static void test_send_recv(void)
{
    struct mini_err e;
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    for (int i = 0; i < 3; i++) {
        cJSON *o = make_obj(i, "héllo\n");
        CHECK(mini_frame_send_json(sv[0], o, &e) == 0);
        cJSON_Delete(o);
    }
    close(sv[0]);
    struct mini_frame_reader r;
    mini_frame_reader_init(&r);
    for (int i = 0; i < 3; i++) {
        cJSON *o = NULL;
        CHECK(mini_frame_recv_json(sv[1], &r, &o, &e) == 1);
        check_obj(o, i, "héllo\n");
        cJSON_Delete(o);
    }
    cJSON *o = (cJSON *)1;
    CHECK(mini_frame_recv_json(sv[1], &r, &o, &e) == 0); /* clean EOF */
    CHECK(o == NULL);
    close(sv[1]);
    mini_frame_reader_free(&r);

    /* Truncated stream, bad JSON, and a bad header. */
    static const struct {
        const char *bytes;
        size_t len;
        const char *msg;
    } cases[] = {
        { "\0\0\0\x09{\"op\"", 9, "truncated frame: the stream ended after 5 of 9 payload bytes" },
        { "\0\0\0\x02[]", 6, "message is not a JSON object" },
        { "\0\0\0\x03{\"a", 7, "invalid JSON at byte 2: syntax error" },
        { "\0\0\0\0", 4, "bad frame: zero length" },
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(cases); i++) {
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        CHECK(write(sv[0], cases[i].bytes, cases[i].len) == (ssize_t)cases[i].len);
        close(sv[0]);
        mini_frame_reader_init(&r);
        mini_err_clear(&e);
        CHECK(mini_frame_recv_json(sv[1], &r, &o, &e) == -1);
        CHECK(o == NULL);
        CHECK(e.code == MINI_E_BAD_REQUEST);
        CHECK_STR(e.msg, cases[i].msg);
        mini_frame_reader_free(&r);
        close(sv[1]);
    }

    /* Over a pipe (send falls back to write), and to a closed peer (EPIPE,
     * not SIGPIPE). */
    int pp[2];
    CHECK(pipe(pp) == 0);
    o = make_obj(9, "via pipe");
    CHECK(mini_frame_send_json(pp[1], o, &e) == 0);
    cJSON_Delete(o);
    close(pp[1]);
    mini_frame_reader_init(&r);
    CHECK(mini_frame_recv_json(pp[0], &r, &o, &e) == 1);
    check_obj(o, 9, "via pipe");
    cJSON_Delete(o);
    mini_frame_reader_free(&r);
    close(pp[0]);

    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    close(sv[1]);
    o = make_obj(1, "nobody listens");
    mini_err_clear(&e);
    CHECK(mini_frame_send_json(sv[0], o, &e) == -1);
    CHECK(e.code == MINI_E_IO && e.sys_errno == EPIPE);
    cJSON_Delete(o);
    close(sv[0]);

    /* A NULL object (a failed to_json) is reported, not sent. */
    CHECK(mini_frame_send_json(1, NULL, &e) == -1);
    CHECK(e.code == MINI_E_NOMEM);
}

static void test_send_recv_large(void)
{
    /* 4 MiB through a socket: many reads per frame. */
    struct mini_err e;
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    size_t big = 4u << 20;
    char *text = malloc(big + 1);
    for (size_t i = 0; i < big; i++)
        text[i] = (char)('a' + i % 26);
    text[big] = '\0';
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[1]);
        cJSON *o = make_obj(42, text);
        int r = mini_frame_send_json(sv[0], o, &e);
        r |= mini_frame_send_json(sv[0], o, &e);
        _exit(r == 0 ? 0 : 1);
    }
    close(sv[0]);
    struct mini_frame_reader r;
    mini_frame_reader_init(&r);
    for (int i = 0; i < 2; i++) {
        cJSON *o = NULL;
        CHECK(mini_frame_recv_json(sv[1], &r, &o, &e) == 1);
        check_obj(o, 42, text);
        cJSON_Delete(o);
    }
    cJSON *o = NULL;
    CHECK(mini_frame_recv_json(sv[1], &r, &o, &e) == 0);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    mini_frame_reader_free(&r);
    close(sv[1]);
    free(text);
}

int main(void)
{
    test_encode();
    test_splits();
    test_many_in_one_chunk();
    test_bad_headers();
    test_eof();
    test_memory_bounded();
    test_max_frame();
    test_send_recv();
    test_send_recv_large();
    return check_summary();
}

/* A fault for tests/reliability/seccomp_compile.sh, loaded into
 * mini-sandboxd with LD_PRELOAD: libseccomp's seccomp_export_bpf fails
 * (ECANCELED) while the file MINI_TEST_FAIL_EXPORT names exists, so that
 * compiling a seccomp program fails exactly when the test wants it to.
 * Otherwise the real function is called. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int seccomp_export_bpf(const void *ctx, int fd);

int seccomp_export_bpf(const void *ctx, int fd)
{
    const char *flag = getenv("MINI_TEST_FAIL_EXPORT");
    if (flag && access(flag, F_OK) == 0)
        return -ECANCELED;
    int (*real)(const void *, int) = (int (*)(const void *, int))dlsym(RTLD_NEXT, "seccomp_export_bpf");
    return real ? real(ctx, fd) : -ENOSYS;
}

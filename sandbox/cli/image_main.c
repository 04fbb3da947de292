/* mini-sandbox-image (libexec/mini): `mini-sandbox image ...`, which execs
 * it with argv from "image" on.  A program of its own so that only it
 * loads the import's libraries (libarchive, libcrypto and what they pull
 * in): `mini-sandbox run` starts without them (docs/sandbox-lifecycle.md,
 * "One-shot runs"; the figures in docs/performance.md). */
#include "cli_image.h"
#include "cli_util.h"
#include "mini/log.h"

#include <string.h>

int main(int argc, char **argv)
{
    mini_log_init("mini-sandbox", MINI_LOG_WARN);
    if (argc < 2 || strcmp(argv[1], "image") != 0) {
        fprintf(stderr, "mini-sandbox-image: internal to mini-sandbox; run: mini-sandbox image --help\n");
        return MINI_CLI_USAGE;
    }
    return mini_cli_stdout_status(mini_cli_image(argc - 1, argv + 1), 0);
}

/* mini-sandbox image: the image store's subcommands (docs/images.md). */
#ifndef MINI_SANDBOX_CLI_IMAGE_H
#define MINI_SANDBOX_CLI_IMAGE_H

/* argv[0] is "image".  Returns the exit status. */
int mini_cli_image(int argc, char **argv);

#endif

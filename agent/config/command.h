/* `mini config`: mini-swe-agent's `mini-extra config set|unset|edit`, on
 * the same global .env file (docs/config.md). */
#ifndef MINI_AGENT_CONFIG_COMMAND_H
#define MINI_AGENT_CONFIG_COMMAND_H

/* Run `config ARGS...` (argv[0] is "config"); prints what it has to say
 * and returns the exit status: 0 done, 1 failed, 2 bad usage. */
int mini_config_command(int argc, char **argv);

#endif

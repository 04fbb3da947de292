/* mini inspect: browse trajectories in the terminal, as plain text or as
 * one HTML file (docs/inspect.md). */
#ifndef MINI_AGENT_INSPECT_H
#define MINI_AGENT_INSPECT_H

/* `mini inspect ...` with argv[0] == "inspect"; the exit status. */
int mini_inspect_main(int argc, char **argv);

#endif

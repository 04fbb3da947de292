/* `mini-sandbox check [--profile NAME|FILE] [--json]`: what isolation this
 * machine offers, probed locally with the daemon's own code (caps.h), and
 * per profile (every built-in one, or the one named) whether it runs in
 * full, degraded (what is missing and what replaces it) or is refused
 * (reason and remedy).
 *
 * Output: a table on stdout, or with --json one object
 *   {"machine": mini_caps_to_json(), "profiles": {"NAME": mini_assessment_to_json(), ...}}
 * Exit status: 0 when every listed profile can run (full or degraded),
 * 1 when one is refused, 2 on a usage error or a profile that fails to
 * load (message on stderr as "mini-sandbox: check: ..."). */
#ifndef MINI_SANDBOX_CLI_CHECK_H
#define MINI_SANDBOX_CLI_CHECK_H

/* argv[0] is "check"; the options follow.  Prints; returns the exit status. */
int mini_cli_check(int argc, char **argv);

#endif

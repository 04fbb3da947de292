# Security tests (label security): tests/security/attacks.sh tries to break
# the strict profile from inside the sandbox.  Registered twice: as the
# invoking user, and with MINI_TEST_ROOTLESS=1 (label rootless), where a
# root invoker re-runs the script as an unprivileged user (tests/lib.sh);
# 77 means "skipped" (no setpriv, no unprivileged user namespaces).

# The probe the script copies into the workspace and runs inside.  Built
# without sanitizers: LeakSanitizer needs ptrace, which the sandbox denies,
# and the probe must behave the same in every build.
add_executable(mini-test-probe ${CMAKE_CURRENT_LIST_DIR}/probe.c)
target_compile_options(mini-test-probe PRIVATE -fno-sanitize=all)
target_link_options(mini-test-probe PRIVATE -fno-sanitize=all)

mini_e2e_test(security_attacks SCRIPT ${CMAKE_CURRENT_LIST_DIR}/attacks.sh LABELS security TIMEOUT 600)

# The degraded path: the daemon under a Docker-style filter that blocks
# user namespaces (mini-test-nouserns), as root and rootless.
add_executable(mini-test-nouserns ${CMAKE_CURRENT_LIST_DIR}/nouserns.c)
target_link_libraries(mini-test-nouserns PRIVATE PkgConfig::SECCOMP)
mini_e2e_test(security_degraded SCRIPT ${CMAKE_CURRENT_LIST_DIR}/degraded.sh LABELS security)

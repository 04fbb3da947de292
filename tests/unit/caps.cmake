# Capability detection and per-profile assessment (sandbox/isolation/caps_probe.c,
# caps_assess.c) and
# `mini-sandbox check` (sandbox/cli/cli_check.c).  test_caps_blocked re-runs
# the detection where user namespaces are blocked (a seccomp filter like
# Docker's; max_user_namespaces 0 inside a user namespace): label security.
mini_c_test(test_caps SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_caps.c
            LIBS minisandbox LABELS unit ARGS ${PROJECT_SOURCE_DIR}/profiles)
mini_c_test(test_cli_check SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cli_check.c
                                    ${PROJECT_SOURCE_DIR}/sandbox/cli/cli_check.c
            LIBS minisandbox LABELS unit ARGS ${PROJECT_SOURCE_DIR}/profiles)
mini_c_test(test_caps_blocked SOURCES ${PROJECT_SOURCE_DIR}/tests/security/test_caps_blocked.c
            LIBS minisandbox LABELS security ARGS ${PROJECT_SOURCE_DIR}/profiles)
# The sandbox's headers are private to it: name the folders.
target_include_directories(test_caps PRIVATE ${PROJECT_SOURCE_DIR}/sandbox/isolation)
target_include_directories(test_caps_blocked PRIVATE ${PROJECT_SOURCE_DIR}/sandbox/isolation)
target_include_directories(test_cli_check PRIVATE ${PROJECT_SOURCE_DIR}/sandbox/cli ${PROJECT_SOURCE_DIR}/sandbox/isolation)
set_tests_properties(test_caps test_cli_check test_caps_blocked PROPERTIES SKIP_RETURN_CODE 77)

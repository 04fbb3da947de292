# Per-command limits and the degraded path: cgroups (sandbox/isolation/cgroup.c:
# OOM kill reported, pids limit, kill, nothing left behind; "none" mode
# when rootless) and Landlock (sandbox/isolation/landlock.c).  Both need real kernel
# features and skip (77) where those are truly absent.
mini_c_test(test_cgroup SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cgroup.c
            LIBS minisandbox LABELS security TIMEOUT 300)
mini_c_test(test_landlock SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_landlock.c
            LIBS minisandbox LABELS security ARGS ${PROJECT_SOURCE_DIR}/profiles)
target_include_directories(test_cgroup PRIVATE ${PROJECT_SOURCE_DIR}/sandbox/isolation)
target_include_directories(test_landlock PRIVATE ${PROJECT_SOURCE_DIR}/sandbox/isolation)
set_tests_properties(test_cgroup test_landlock PROPERTIES SKIP_RETURN_CODE 77)

# Limits end to end through the daemon, as root (cgroups) and rootless (rlimits).
mini_e2e_test(security_limits SCRIPT ${CMAKE_CURRENT_LIST_DIR}/limits.sh LABELS security TIMEOUT 600)

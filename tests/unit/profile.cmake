# Sandbox profiles and seccomp programs (sandbox/isolation/profile.c, sandbox/isolation/seccomp.c).
mini_c_test(test_profile SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_profile.c
            LIBS minisandbox LABELS unit ARGS ${PROJECT_SOURCE_DIR}/profiles)
mini_c_test(test_seccomp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_seccomp.c
            LIBS minisandbox LABELS unit ARGS ${PROJECT_SOURCE_DIR}/profiles)
target_include_directories(test_seccomp PRIVATE ${PROJECT_SOURCE_DIR}/sandbox/isolation)

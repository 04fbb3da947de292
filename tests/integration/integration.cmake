# Integration tests (label integration): tests/integration/run.sh drives
# mini-sandboxd and `mini-sandbox run` end to end.  Registered twice: as the
# invoking user, and with MINI_TEST_ROOTLESS=1 (label rootless), where a
# root invoker re-runs the script as an unprivileged user (tests/lib.sh);
# 77 means "skipped".
mini_sh_test(integration_run SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run.sh
             LABELS integration TIMEOUT 600)
mini_sh_test(integration_run_rootless SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run.sh
             LABELS integration rootless TIMEOUT 600)
set_property(TEST integration_run_rootless APPEND PROPERTY ENVIRONMENT MINI_TEST_ROOTLESS=1)
set_tests_properties(integration_run integration_run_rootless PROPERTIES SKIP_RETURN_CODE 77)
# The sandbox tests start daemons and many sandboxes: keep them from
# competing with each other for the machine under ctest -j.
set_tests_properties(integration_run integration_run_rootless PROPERTIES RESOURCE_LOCK mini_sandbox_e2e)

# The prepared-sandbox pool, end to end over the wire protocol:
# tests/integration/pool.sh with tests/integration/pool_client.py and
# pool_checks.py.  Registered twice, like run.sh.
mini_sh_test(integration_pool SCRIPT ${CMAKE_CURRENT_LIST_DIR}/pool.sh
             LABELS integration TIMEOUT 300)
mini_sh_test(integration_pool_rootless SCRIPT ${CMAKE_CURRENT_LIST_DIR}/pool.sh
             LABELS integration rootless TIMEOUT 300)
set_property(TEST integration_pool_rootless APPEND PROPERTY ENVIRONMENT MINI_TEST_ROOTLESS=1)
set_tests_properties(integration_pool integration_pool_rootless PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(integration_pool integration_pool_rootless PROPERTIES RESOURCE_LOCK mini_sandbox_e2e)

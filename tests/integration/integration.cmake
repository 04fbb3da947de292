# Integration tests (label integration), each as the invoking user and
# rootless (mini_e2e_test in tests/CMakeLists.txt):
# - run.sh drives mini-sandboxd and `mini-sandbox run` end to end;
# - pool.sh checks the prepared-sandbox pool over the wire protocol, with
#   pool_client.py and pool_checks.py.
mini_e2e_test(integration_run SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run.sh LABELS integration TIMEOUT 600)
mini_e2e_test(integration_pool SCRIPT ${CMAKE_CURRENT_LIST_DIR}/pool.sh LABELS integration)

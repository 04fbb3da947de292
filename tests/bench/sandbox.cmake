# Benchmark of the sandbox (label bench, excluded from CI's default run by
# -LE bench): `mini-sandbox bench` with its table printed.  The smoke variant
# (label integration) runs it for a few iterations so that the command, its
# namespace-floor series and its JSON stay working in CI.
mini_sh_test(bench_sandbox SCRIPT ${CMAKE_CURRENT_LIST_DIR}/sandbox_bench.sh
             LABELS bench TIMEOUT 900)
mini_sh_test(integration_bench_smoke SCRIPT ${CMAKE_CURRENT_LIST_DIR}/sandbox_bench.sh
             LABELS integration TIMEOUT 120)
set_property(TEST integration_bench_smoke APPEND PROPERTY ENVIRONMENT BENCH_SMOKE=1)
set_tests_properties(bench_sandbox integration_bench_smoke PROPERTIES SKIP_RETURN_CODE 77
                     RESOURCE_LOCK mini_sandbox_e2e)

# The daemon's life cycle under faults (issue P7c): kill -9 and the leak
# census on both isolation paths, SIGTERM, the state directory deleted or
# full.  As root and rootless.
mini_e2e_test(reliability_lifecycle SCRIPT ${CMAKE_CURRENT_LIST_DIR}/lifecycle.sh LABELS reliability TIMEOUT 300)

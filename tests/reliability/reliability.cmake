# Reliability under load and faults (issue P7c): the daemon's connections.
mini_e2e_test(reliability_connections SCRIPT ${CMAKE_CURRENT_LIST_DIR}/connections.sh LABELS reliability TIMEOUT 300)
mini_e2e_test(reliability_streaming SCRIPT ${CMAKE_CURRENT_LIST_DIR}/streaming.sh LABELS reliability TIMEOUT 300)

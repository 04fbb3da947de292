# What the daemon keeps and shares: abstract sockets under permissive's
# host network, overlays of a dead daemon (tests/security/daemon_state.sh).
mini_e2e_test(security_daemon_state SCRIPT ${CMAKE_CURRENT_LIST_DIR}/daemon_state.sh LABELS security)

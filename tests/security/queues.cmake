# Bounded queues and counts: busy, unread replies, cut frames, root clients.
mini_e2e_test(security_queues SCRIPT ${CMAKE_CURRENT_LIST_DIR}/queues.sh LABELS security TIMEOUT 300)

# End-to-end tests of `mini` (label integration): tests/integration/agent.sh
# runs the whole program against the mock LLM server (tests/mock_llm.py, on
# 127.0.0.1) under --sandbox strict and --sandbox off, as the invoking user
# and rootless (mini_e2e_test).
mini_e2e_test(integration_agent SCRIPT ${CMAKE_CURRENT_LIST_DIR}/agent.sh LABELS integration)

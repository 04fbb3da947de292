# Security tests of the workspace (label security): tests/security/workspace.sh
# attacks through the workspace itself: ownership and groups of what the
# sandbox writes under a root daemon, setuid/setgid files, symlinked and
# planted workspace paths, system directories, the daemon's socket, home
# directories and mini's config directory.  Registered as root and rootless
# (root-only checks skip when rootless).
mini_e2e_test(security_workspace SCRIPT ${CMAKE_CURRENT_LIST_DIR}/workspace.sh LABELS security TIMEOUT 600)

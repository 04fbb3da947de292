#!/bin/bash
# A command printing a gigabyte: it returns, whole to its end, and the
# daemon's memory stays bounded (its output buffer keeps head and tail:
# docs/sandbox-lifecycle.md, "Output").  Apart from limits.sh because it is the one check
# that needs the machine to itself: streaming 1 GiB through an ASan+UBSan
# daemon and client takes about 33 s alone, and more than its 60 s beside
# three other tests.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
# In a sanitizer build, freed memory sits in ASan's quarantine (256 MiB by
# default), which would read as growth in the peak-memory check below.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
start_daemon
SBX_PROFILE=strict

hwm() { awk '/VmHWM/ {print $2}' "/proc/$DAEMON_PID/status"; }
before=$(hwm)
t0=$(now_ms)
RC=0
OUT=$(sbx -- 'head -c 1073741824 /dev/zero | tr "\0" x; echo; echo end-of-output' | tail -c 14) || RC=$?
t1=$(now_ms)
after=$(hwm)
if [[ $RC == 0 ]] && [[ $OUT == *end-of-output* ]]; then
    pass "a command printing 1 GiB returns ($((t1 - t0)) ms, daemon peak RSS $before -> $after KiB)"
else
    fail "a command printing 1 GiB returns"
fi
check "the daemon's peak memory grew by less than 64 MiB for 1 GiB of output ($((after - before)) KiB)" \
    test $((after - before)) -lt 65536

finish

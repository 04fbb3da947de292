#!/bin/bash
# Regenerate the seed corpus of fuzz_frame: one file per message (framed),
# and one stream of all of them.  Usage: gen_frame_corpus.sh [DIR]
set -euo pipefail
dir=${1:-$(dirname "$0")/corpus/frame}
mkdir -p "$dir"
frame() {   # frame NAME JSON: append one frame to NAME and to the stream
    local n=${#2}
    printf "\\x$(printf %02x $((n >> 24 & 255)))\\x$(printf %02x $((n >> 16 & 255)))\\x$(printf %02x $((n >> 8 & 255)))\\x$(printf %02x $((n & 255)))%s" "$2" \
        | tee -a "$dir/all" >> "$dir/$1"
}
export LC_ALL=C   # ${#s} counts bytes
rm -f "$dir"/*
frame hello '{"op":"hello","id":0,"version":1,"client":"mini/0.1.0"}'
frame open '{"op":"open","id":1,"workspace":"/home/u/proj","profile":"strict","overrides":{"limits":{"timeout":30}},"env":{"LANG":"C.UTF-8"}}'
frame open_data '{"op":"open","id":2,"workspace":"/w","profile_data":{"name":"mine","network":"none","limits":{"memory":"512M","pids":[1,2.5,null,true]}}}'
frame exec_command '{"op":"exec","id":3,"session":"s-1","command":"echo hi | tr a-z A-Z","cwd":"sub","env":{"A":"1"},"timeout":2.5,"stdin":"line\n\u00e9\ud83d\ude00","stream":true}'
frame exec_argv '{"op":"exec","id":4,"session":"s-1","argv":["python3","-c","print(1)"],"timeout":1e6,"stream":false,"last":true}'
frame cancel '{"op":"cancel","id":5,"target":3}'
frame close '{"op":"close","id":6,"session":"s-1"}'
frame stats '{"op":"stats","id":9007199254740991}'
frame rep_hello '{"op":"hello","id":0,"version":1,"server":"mini-sandboxd 0.1.0","features":{"userns":true,"landlock_abi":3}}'
frame rep_opened '{"op":"opened","id":1,"session":"s-1","profile":"strict","isolation":{"namespaces":["user","pid"]},"notes":["no cgroup delegation"]}'
frame rep_output '{"op":"output","id":3,"data":"HI\n"}'
frame rep_exit '{"op":"exit","id":3,"returncode":124,"signal":0,"timed_out":true,"oom_killed":false,"output":"HI\n","truncated":false,"output_bytes":3,"duration_ms":2500,"cpu_ms":1,"max_rss_kb":1024,"limit":"timeout","notes":[]}'
frame rep_exit_signal '{"op":"exit","id":4,"returncode":137,"signal":9,"timed_out":false,"oom_killed":true,"output":"head\n\ttail \u00e9","truncated":true,"output_bytes":123456789012,"duration_ms":3,"cpu_ms":2,"max_rss_kb":65536,"limit":null,"notes":["memory limit via RLIMIT_AS"]}'
frame rep_ok '{"op":"ok","id":5}'
frame rep_stats '{"op":"stats","id":7,"sessions":1,"running":0,"execs_total":2,"clients":1,"uptime_ms":12345}'
frame rep_error '{"op":"error","id":null,"code":"bad_request","message":"exec.timeout: must be a positive number"}'

#!/bin/sh
# Every C source and header of the project follows .clang-format (the
# generated agent/template/unicode_tables.c aside).  Prints the files that
# do not, and "format: N files checked, N to format"; exit 1 when any.
#
#   scripts/check-format.sh          check
#   scripts/check-format.sh --fix    format them in place
set -eu
cd "$(dirname "$0")/.."
fix=0
[ "${1:-}" = --fix ] && fix=1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files '*.c' '*.h')
else
    files=$(find agent container include lib sandbox tests -name '*.c' -o -name '*.h')
fi
n=0 bad=0
for f in $files; do
    case $f in */unicode_tables.c) continue ;; esac
    n=$((n + 1))
    if [ $fix = 1 ]; then
        clang-format -i "$f"
    elif ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "$f"
        bad=$((bad + 1))
    fi
done
echo "format: $n files checked, $bad to format (scripts/check-format.sh --fix)"
[ $bad = 0 ]

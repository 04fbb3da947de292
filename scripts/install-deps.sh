#!/bin/sh
# The Debian packages (Debian 12 or later) mini needs to build and to run
# its tests, installed only when missing.  Used by the README, scripts/demo.sh
# and .ci/run; safe to run again.
#
#   scripts/install-deps.sh            build and test packages (what CI needs)
#   scripts/install-deps.sh --build    only what building needs (a packager)
#   scripts/install-deps.sh --test     only what the test suite adds
#   scripts/install-deps.sh --check    say what is missing, install nothing
#
# It checks first: with everything present it exits 0 as any user.  Only
# installing needs root (or password-less sudo); otherwise it prints the
# apt-get command to run and exits 1.
set -eu

# Building: compiler, CMake, the libraries' -dev packages; musl-tools links
# mini-sandbox-init with musl (else static glibc); scdoc makes the man pages.
BUILD_PACKAGES="
  build-essential cmake pkg-config
  libcurl4-openssl-dev libcjson-dev libpcre2-dev libseccomp-dev libcap-dev libyaml-dev libedit-dev libncurses-dev
  libarchive-dev libssl-dev
  musl-tools
  scdoc
"
# The test suite: clang (the sanitizers, libFuzzer), Python for the mock
# model and the differential tests, the tools the tests drive, a Slurm
# cluster, the shells whose completions are checked, the package checks.
TEST_PACKAGES="
  clang clang-format
  python3 python3-jinja2 python3-yaml python3-dotenv
  util-linux procps iproute2 bubblewrap tmux git busybox-static mmdebstrap chromium curl openssl
  docker-registry skopeo time
  slurmctld slurmd slurm-client munge
  zsh fish bash-completion apparmor lintian dpkg-dev
"

usage() {
    sed -n '2,14s/^# \{0,1\}//p' "$0"
}

want_build=0 want_test=0 check_only=0
for arg in "$@"; do
    case $arg in
    --build) want_build=1 ;;
    --test) want_test=1 ;;
    --check) check_only=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install-deps: unknown option $arg (try --help)" >&2; exit 2 ;;
    esac
done
if [ $want_build = 0 ] && [ $want_test = 0 ]; then
    want_build=1 want_test=1
fi
PACKAGES=""
[ $want_build = 1 ] && PACKAGES="$PACKAGES $BUILD_PACKAGES"
[ $want_test = 1 ] && PACKAGES="$PACKAGES $TEST_PACKAGES"

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps: dpkg-query not found: this script knows Debian's packages only. Needed:" >&2
    echo "  $(echo $PACKAGES)" >&2
    exit 1
fi
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
if [ $check_only = 1 ]; then
    echo "install-deps: missing:$missing" >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        exec sudo -n "$0" "$@"
    fi
    echo "install-deps: missing:$missing" >&2
    echo "install-deps: installing needs root; run:" >&2
    echo "  sudo apt-get install -y --no-install-recommends$missing" >&2
    exit 1
fi
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing

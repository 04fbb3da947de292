#!/bin/sh
# Install what mini needs to build and test on Debian (12 or later).
# Used by the README and by .ci/run; safe to run again.
set -eu

PACKAGES="
  build-essential cmake pkg-config clang
  libcurl4-openssl-dev libcjson-dev libpcre2-dev libseccomp-dev libcap-dev libyaml-dev libedit-dev libncurses-dev
  libarchive-dev libssl-dev busybox-static mmdebstrap
  musl-tools python3 python3-jinja2 python3-yaml python3-dotenv
  util-linux procps iproute2 bubblewrap tmux git chromium curl openssl
  slurmctld slurmd slurm-client munge
"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
# Only installing needs root (scripts/demo.sh runs this as any user).
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        exec sudo -n "$0" "$@"
    fi
    echo "install-deps: not root. Install these Debian packages, then build:" >&2
    echo "  sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing

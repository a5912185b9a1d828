#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian machine as root: installs what
# the tests use (curl, ss from iproute2; nginx and lighttpd for shootouts),
# then runs the tests. Tests that need one of these fail, never skip, when
# it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v curl >/dev/null || need+=(curl)
command -v ss >/dev/null || need+=(iproute2)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v lighttpd >/dev/null || [ -x /usr/sbin/lighttpd ] || need+=(lighttpd)
command -v wrk >/dev/null || need+=(wrk)
command -v python3 >/dev/null || need+=(python3)
command -v gzip >/dev/null || need+=(gzip)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "scripts/test.sh: missing ${need[*]}; run as root or install them" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    # The Debian packages start their services; the tests start their own.
    systemctl stop nginx lighttpd >/dev/null 2>&1 || true
fi

cargo test --workspace --all-targets "$@"

#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian machine as root: installs what
# the tests use (curl, openssl, ss from iproute2; ab from apache2-utils; siege; nginx, lighttpd and haproxy for
# shootouts; ruby with WEBrick for a proxy test origin; php-fpm for FastCGI;
# slowhttptest for the slow-client test; chromium for post-quantum TLS; pebble for ACME; h2load and nghttp (nghttp2-client),
# h2o and Python's h2 for HTTP/2; Python's grpcio for gRPC; Python's brotli and zstandard decoders;
# kubernetes-validate, REDbot and pylsqpack, in a venv under /opt/ringside-test, for
# the Kubernetes manifests, compressed responses and QPACK; httpwg, built with cargo
# under /opt/ringside-test, for HTTP/2 conformance),
# then runs the tests.
# Tests that need one of these fail, never skip, when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v curl >/dev/null || need+=(curl)
# openssl s_client checks SNI, ALPN and session resumption against ringside.
command -v openssl >/dev/null || need+=(openssl)
command -v ss >/dev/null || need+=(iproute2)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v lighttpd >/dev/null || [ -x /usr/sbin/lighttpd ] || need+=(lighttpd)
command -v wrk >/dev/null || need+=(wrk)
# ApacheBench (ab -k) drives FastCGI with HTTP/1.0 keep-alive requests.
command -v ab >/dev/null || need+=(apache2-utils)
# ringside-bench's ab and siege modes are checked against the real ab and
# siege on the same origin (bench/tests/like_ab_and_siege.rs).
command -v siege >/dev/null || need+=(siege)
command -v python3 >/dev/null || need+=(python3)
command -v gzip >/dev/null || need+=(gzip)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
command -v ruby >/dev/null || need+=(ruby)
command -v shellcheck >/dev/null || need+=(shellcheck)
# Headless Chromium negotiates X25519MLKEM768 with ringside, read from its
# net log (proxy/tests/tls_pq.rs).
command -v chromium >/dev/null || need+=(chromium)
command -v slowhttptest >/dev/null || need+=(slowhttptest)
# ACME: Pebble, Let's Encrypt's test CA, and its DNS stand-in
# pebble-challtestsrv (proxy/tests/acme.rs, acme/tests/pebble.rs).
if ! command -v pebble >/dev/null || ! command -v pebble-challtestsrv >/dev/null; then
    need+=(pebble)
fi
# HTTP/2: h2load and nghttp (both in nghttp2-client) load and inspect h2;
# h2o is a benchmark peer; the attack tests write raw frames with Python's h2.
if ! command -v h2load >/dev/null || ! command -v nghttp >/dev/null; then
    need+=(nghttp2-client)
fi
command -v h2o >/dev/null || [ -x /usr/bin/h2o ] || [ -x /usr/sbin/h2o ] || need+=(h2o)
/usr/bin/python3 -c 'import h2' >/dev/null 2>&1 || need+=(python3-h2)
# gRPC through the proxy is tested with grpcio on both sides.
/usr/bin/python3 -c 'import grpc' >/dev/null 2>&1 || need+=(python3-grpcio)
# The metrics test parses /metrics with Prometheus's own Python client.
/usr/bin/python3 -c 'import prometheus_client' >/dev/null 2>&1 || need+=(python3-prometheus-client)
# Compression on the fly is decoded by Python's own decoders for each
# coding (gzip is in the standard library).
/usr/bin/python3 -c 'import brotli' >/dev/null 2>&1 || need+=(python3-brotli)
/usr/bin/python3 -c 'import zstandard' >/dev/null 2>&1 || need+=(python3-zstandard)
# Basic auth's user files are written by the real tools: htpasswd -B
# (apache2-utils, for ab too) and argon2.
command -v htpasswd >/dev/null || need+=(apache2-utils)
command -v argon2 >/dev/null || need+=(argon2)
# The Kubernetes manifests are validated with kubernetes-validate (PyPI),
# in a venv of its own: Debian's Python refuses pip installs (PEP 668).
/usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
# The cgroup quota test runs ringside in a mount namespace of its own.
command -v unshare >/dev/null || need+=(util-linux)
# php-fpm, the FastCGI peer: any version will do (Debian bookworm's is
# php8.2-fpm, /usr/sbin/php-fpm8.2; the php-fpm package depends on it).
if ! compgen -G '/usr/sbin/php-fpm*' >/dev/null && ! compgen -c php-fpm >/dev/null; then
    need+=(php-fpm)
fi
# HTTP/3: ngtcp2's example client (gtlsclient, in ngtcp2-client) for NAT
# rebinding, a changed local address and key updates; Caddy (quic-go) is
# ringside-bench --h3's peer (proxy/tests/h3_interop.rs, bench/tests).
command -v gtlsclient >/dev/null || need+=(ngtcp2-client)
command -v caddy >/dev/null || need+=(caddy)
# Ruby 3.x no longer bundles WEBrick; Debian ships it as ruby-webrick.
if ! command -v ruby >/dev/null || ! ruby -e 'require "webrick"' >/dev/null 2>&1; then
    need+=(ruby-webrick)
fi
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "scripts/test.sh: missing ${need[*]}; run as root or install them" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    # The Debian packages start their services; the tests start their own.
    # Containers often have no systemd, so try service(8) as well.
    for svc in nginx lighttpd haproxy h2o; do
        systemctl stop "$svc" >/dev/null 2>&1 || service "$svc" stop >/dev/null 2>&1 || true
    done
    # php-fpm's service is named after its version (php8.2-fpm).
    for fpm in /usr/sbin/php-fpm*; do
        [ -x "$fpm" ] || continue
        svc="php$(basename "$fpm" | sed 's/^php-fpm//')-fpm"
        systemctl stop "$svc" >/dev/null 2>&1 || service "$svc" stop >/dev/null 2>&1 || true
    done
fi

venv=/opt/ringside-test/venv
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "scripts/test.sh: missing $venv/bin/kubernetes-validate; run as root or install it" >&2
        exit 1
    fi
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q kubernetes-validate
fi
# REDbot (PyPI redbot), HTTP's lint, checks compressed responses; in the
# same venv.
if [ ! -x "$venv/bin/redbot" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "scripts/test.sh: missing $venv/bin/redbot; run as root or install it" >&2
        exit 1
    fi
    "$venv/bin/pip" install -q redbot
fi
# pylsqpack (PyPI), ls-qpack's Python binding, is the QPACK peer of
# the HTTP/3 codec's QPACK interop test (http/tests/h3_qpack_interop.rs);
# in the same venv.
if ! "$venv/bin/python3" -c 'import pylsqpack' >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "scripts/test.sh: missing pylsqpack in $venv; run as root or install it" >&2
        exit 1
    fi
    "$venv/bin/pip" install -q pylsqpack
fi
# aioquic (PyPI) is the HTTP/3 client of proxy/tests/h3_interop.rs.
if ! "$venv/bin/python3" -c 'import aioquic' >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "scripts/test.sh: missing aioquic in $venv; run as root or install it" >&2
        exit 1
    fi
    "$venv/bin/pip" install -q aioquic
fi

# httpwg (crates.io's httpwg-cli, from the loona project: the h2spec
# replacement) runs the RFC 9113 cases against ringside over h2c.
httpwg=/opt/ringside-test/httpwg
if [ ! -x "$httpwg/bin/httpwg" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "scripts/test.sh: missing $httpwg/bin/httpwg; run as root or install it" >&2
        exit 1
    fi
    cargo install -q --locked httpwg-cli --version 0.2.5 --root "$httpwg"
fi

# --no-fail-fast: a failing test binary must not keep the ones after it
# from running (cargo stops at the first otherwise, and hides what else
# fails). Both runs go on whatever the first found; the script fails if
# either did.
failed=0
cargo test --workspace --all-targets --no-fail-fast "$@" || failed=$?

# The HTTP suites again on the readiness path (POLL_ADD, then recv(2) and
# send(2)) that io_uring workers take where the kernel has no buffer rings,
# and that RINGSIDE_URING_RECV=poll asks for; the run above took multishot
# receives and ring sends.
RINGSIDE_URING_RECV=poll cargo test --no-fail-fast -p ringside --test static_semantics \
    --test proxy_semantics --test h1_security_framing --test slow_clients \
    --test h2_interop --test proxy_faults --test uring_recv_ring || failed=$?
exit "$failed"

#!/usr/bin/env python3
"""The HTTP cache conformance suite (http-tests/cache-tests, the suite behind
https://cache-tests.fyi/) run against ringside as a reverse-proxy cache.

Starts the suite's own origin server (node, on a free port), ringside in
front of it (one worker, 127.0.0.1 on a free port, a proxy route "/" to the
origin, with a cache unless --no-cache), then the suite's command-line
client against ringside, and classifies every test as cache-tests.fyi does,
with the suite's own determineTestResult (dependencies honoured: a test whose
prerequisite failed is "dependency failed", not a failure of its own). It
prints one summary line:

    cache-tests (ringside, no cache): 365 run, 22 passed, 6 required failures,
    23 optional failures, 27 checks (5 yes, 22 no), 287 untested

as cache-tests.fyi shows them: "passed" its green ticks (required and
optimal tests passed); "required failures" its red crosses (a required test
failed: a MUST broken); "optional failures" its yellow marks (an optimal test
failed); "checks" its grey Y and N (check tests only report a behaviour,
and pass or fail nothing); "untested" the run tests
whose setup failed (the origin never saw what it expected), whose harness
failed, or whose prerequisite failed. Tests the suite does not run against
a proxy (browser_only) are in none of these.

The suite is installed by scripts/test.sh with npm under
/opt/ringside-test/cache-tests. npm's http-cache-tests 0.4.5 is the GitHub
repository as of 2021-01-08 (commit 1715051: 350 tests run against a proxy,
the engine at the package's top, node-fetch), not what cache-tests.fyi runs
today. --suite takes another copy, such as a checkout of the GitHub
repository (365 run, the engine under test-engine/, node's own fetch and
undici), placed beneath /opt/ringside-test/cache-tests so that node finds
undici there (or given a node_modules link to it):

    git clone https://github.com/http-tests/cache-tests /opt/ringside-test/cache-tests/github
    bench/scripts/cache_tests.py --suite /opt/ringside-test/cache-tests/github --no-cache

Only that reproduces cache-tests.fyi's figures (nginx 1.22's proxy_cache:
158 passed, 33 required failures; a proxy that stores nothing: 22 passed).

usage: cache_tests.py [--ringside BIN] [--cache NAME | --no-cache]
                      [--peer nginx] [--suite DIR] [--list] [--json FILE]
                      [--id TEST] [--timeout S]
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from cpu_per_request import free_port  # noqa: E402
SUITE = "/opt/ringside-test/cache-tests/node_modules/http-cache-tests"

# Run with node in the suite's directory: prints one JSON object per test.
# Takes the suite's test list and determineTestResult as its command-line
# client and cache-tests.fyi do (the 0.4.5 client adds the surrogate-control
# tests to the list; the newer one has them in the list).
CLASSIFY = r"""
import fs from 'fs'
import path from 'path'
import { pathToFileURL } from 'url'

const [suiteDir, resultsPath] = process.argv.slice(2)
const load = async rel => import(pathToFileURL(path.join(suiteDir, rel)).href)
const newer = fs.existsSync(path.join(suiteDir, 'test-engine', 'lib', 'results.mjs'))
const tests = (await load('tests/index.mjs')).default
let determineTestResult
if (newer) {
  determineTestResult = (await load('test-engine/lib/results.mjs')).determineTestResult
} else {
  determineTestResult = (await load('lib/display.mjs')).determineTestResult
  tests.push((await load('tests/surrogate-control.mjs')).default)
}
// determineTestResult answers with one of its resultTypes; the third
// element (the CLI's symbol) names it.
const names = {
  '-': 'untested', '✅': 'pass', '⛔️': 'fail', '⚠️': 'optional_fail', Y: 'yes',
  N: 'no', '🔹': 'setup_fail', '⁉️': 'harness_fail', '⚪️': 'dependency_fail', '↻': 'retry'
}
const results = JSON.parse(fs.readFileSync(resultsPath, 'utf8'))
for (const suite of tests) {
  for (const test of suite.tests) {
    const symbol = determineTestResult(tests, test.id, results)[2]
    const raw = results[test.id]
    console.log(JSON.stringify({
      id: test.id,
      suite: suite.id,
      name: test.name,
      kind: test.kind || 'required',
      run: raw !== undefined,
      browser_only: test.browser_only === true,
      result: names[symbol] || symbol,
      error: Array.isArray(raw) ? raw[0] : null,
      message: Array.isArray(raw) ? raw[1] : null
    }))
  }
}
"""

CATEGORY = {
    "pass": "passed",
    "fail": "required",
    "optional_fail": "optional",
    "yes": "check_yes",
    "no": "check_no",
    "setup_fail": "untested",
    "harness_fail": "untested",
    "dependency_fail": "untested",
    "retry": "untested",
    "untested": "untested",
}

NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    proxy_temp_path {tmp}/proxy_temp;
    # As the suite's docker/nginx/nginx.conf: no proxy_cache_valid, so the
    # origin's headers decide what is stored and for how long.
    proxy_cache_path {tmp}/cache levels=1:2 keys_zone=suite:8m max_size=1000m inactive=600m;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{origin};
            proxy_cache suite;
            proxy_cache_revalidate on;
            proxy_http_version 1.1;
        }}
    }}
}}
"""


def wait_port(port, proc, errpath, timeout=15.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited early with {proc.returncode}: {tail(errpath)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{proc.args[0]}: port {port} never opened: {tail(errpath)}")


def tail(path, n=800):
    try:
        with open(path, errors="replace") as f:
            return f.read().strip()[-n:]
    except OSError:
        return ""


def launch(cmd, port, tmp, name, env=None, cwd=None):
    # Output goes to a file, not a pipe nobody reads (a chatty server would
    # block on a full pipe), and is quoted when the server fails to start.
    errpath = os.path.join(tmp, f"{name}.log")
    with open(errpath, "wb") as err:
        try:
            proc = subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        except OSError as e:
            raise RuntimeError(f"cannot run {cmd[0]}: {e}")
    try:
        wait_port(port, proc, errpath)
    except RuntimeError:
        stop(proc)
        raise
    return proc


def stop(proc):
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def suite_env(**config):
    """The environment for the suite's scripts, which read their settings as
    npm passes a package's config: npm_config_KEY, else npm_package_config_KEY.
    Both are set: the client takes an empty npm_config_id as missing, falls
    back to npm_package_config_id, and without that (node run directly, not
    by npm run) runs the single test "undefined"."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("npm_")}
    for k, v in config.items():
        env[f"npm_config_{k}"] = env[f"npm_package_config_{k}"] = str(v)
    return env


def engine(suite, name):
    """Path of the suite's script NAME: under test-engine/ in the GitHub
    repository's layout, at the top in the npm package's 0.4.5."""
    newer = os.path.join(suite, "test-engine", name)
    return newer if os.path.exists(os.path.join(suite, "test-engine")) else os.path.join(suite, name)


def ringside_config(tmp, port, origin, cache):
    lines = [
        "[runtime]",
        "workers = 1",
        "",
        "[server]",
        f'listen = ["127.0.0.1:{port}"]',
        "",
        "[upstream.suite]",
        f'servers = ["127.0.0.1:{origin}"]',
        "",
        "[[route]]",
        'prefix = "/"',
        'upstream = "suite"',
    ]
    if cache:
        lines.append(f'cache = "{cache}"')
        lines += ["", f"[cache.{cache}]"]
    path = os.path.join(tmp, "ringside.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def start_proxy(args, tmp, origin):
    port = free_port()
    if args.peer == "nginx":
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(tmp=tmp, port=port, origin=origin))
        cmd = [exe, "-p", tmp, "-c", conf]
    else:
        conf = ringside_config(tmp, port, origin, None if args.no_cache else args.cache)
        cmd = [args.ringside, "--config", conf, "--admin", "off"]
    return launch(cmd, port, tmp, "proxy"), port


def classify(suite, results, tmp):
    script = os.path.join(tmp, "classify.mjs")
    with open(script, "w") as f:
        f.write(CLASSIFY)
    path = os.path.join(tmp, "results.json")
    with open(path, "w") as f:
        json.dump(results, f)
    out = subprocess.run(["node", "--no-warnings", script, suite, path], cwd=suite,
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"classifying failed: {out.stderr.strip()[-800:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def run_suite(args, suite, base, tmp):
    cli = engine(suite, "cli.mjs")
    env = suite_env(base=base, id=args.id or "")
    if args.id:
        # The client's single-test mode dumps each request and response.
        return subprocess.run(["node", "--no-warnings", cli], cwd=suite, env=env,
                              timeout=args.timeout).returncode
    out = subprocess.run(["node", "--no-warnings", cli], cwd=suite, env=env,
                         capture_output=True, text=True, timeout=args.timeout)
    # The 0.4.5 client prints its error and exits 0 when a run fails: the
    # JSON is what says it finished.
    start = out.stdout.find("{")
    try:
        results = json.loads(out.stdout[start:]) if start >= 0 else None
    except ValueError:
        results = None
    if out.returncode != 0 or not isinstance(results, dict):
        raise RuntimeError(f"the suite's client failed (exit {out.returncode}): "
                           f"{(out.stderr or out.stdout).strip()[-800:]}")
    return results


def report(args, tests):
    run = [t for t in tests if t["run"]]
    counts = {"passed": 0, "required": 0, "optional": 0, "check_yes": 0, "check_no": 0, "untested": 0}
    by_result = {}
    for t in run:
        counts[CATEGORY[t["result"]]] += 1
        by_result[t["result"]] = by_result.get(t["result"], 0) + 1
    if args.list:
        for t in run:
            if t["result"] in ("pass", "yes"):
                continue
            why = t["message"] if t["message"] is not None else ""
            if t["error"] and t["error"] not in ("Assertion", "AssertionError"):
                why = f"{t['error']}: {why}"
            print(f"{t['result']:<15} {t['kind']:<8} {t['id']}: {why}")
    target = args.peer or ("ringside, no cache" if args.no_cache else f"ringside, cache {args.cache}")
    print(f"cache-tests ({target}): {len(run)} run, {counts['passed']} passed, "
          f"{counts['required']} required failures, {counts['optional']} optional failures, "
          f"{counts['check_yes'] + counts['check_no']} checks ({counts['check_yes']} yes, "
          f"{counts['check_no']} no), {counts['untested']} untested")
    print("  by result: " + ", ".join(f"{k} {v}" for k, v in sorted(by_result.items())) +
          f"; not run against a proxy: {len(tests) - len(run)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": target, "counts": dict(counts, run=len(run)),
                       "by_result": by_result, "tests": tests}, f, indent=1)
            f.write("\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ringside", default=os.path.join(REPO, "target", "release", "ringside"))
    p.add_argument("--cache", default="suite", metavar="NAME",
                   help='the cache section named for the route (default "suite")')
    p.add_argument("--no-cache", action="store_true", help="no cache section: a proxy that stores nothing")
    p.add_argument("--peer", choices=["nginx"], help="run the suite against this peer instead (proxy_cache)")
    p.add_argument("--suite", default=SUITE, help=f"the suite's directory (default {SUITE})")
    p.add_argument("--list", action="store_true", help="print each test that did not pass")
    p.add_argument("--json", metavar="FILE", help="write each test's classification to FILE")
    p.add_argument("--id", metavar="TEST", help="run only TEST, with the suite's dump of its exchanges")
    p.add_argument("--timeout", type=float, default=900, help="seconds the suite's client may take")
    args = p.parse_args()
    if args.cache.lower() == "none":
        args.no_cache = True
    if not os.path.isdir(args.suite):
        raise SystemExit(f"no suite at {args.suite}: scripts/test.sh installs it (or pass --suite)")
    if shutil.which("node") is None:
        raise SystemExit("node is not installed")
    suite = os.path.abspath(args.suite)
    tmp = tempfile.mkdtemp(prefix="cache-tests-")
    procs = []
    try:
        origin = free_port()
        procs.append(launch(["node", engine(suite, os.path.join("server", "server.mjs"))], origin, tmp,
                            "origin", env=suite_env(protocol="http", port=origin,
                                                    pidfile=os.path.join(tmp, "origin.pid")), cwd=suite))
        proxy, port = start_proxy(args, tmp, origin)
        procs.append(proxy)
        results = run_suite(args, suite, f"http://127.0.0.1:{port}", tmp)
        if args.id:
            return results
        report(args, classify(suite, results, tmp))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"cache_tests.py: {e}", file=sys.stderr)
        return 1
    finally:
        for proc in reversed(procs):
            stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

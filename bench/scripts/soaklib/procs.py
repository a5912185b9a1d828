"""Processes this soak starts, and stops by pid whatever happens."""
import ctypes
import os
import signal
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child_setup():
    # Runs in the child between fork and exec. Default SIGINT and SIGTERM
    # (a shell may have started this script with them ignored, which the
    # child would inherit), and SIGTERM the child if this script dies (the
    # flag survives the exec of taskset and of the program).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Procs:
    """Everything this script started, stopped by pid: the load generators
    first (tier 0), then ringside (1), then its origin and php-fpm (2)."""

    def __init__(self):
        self.items = []  # (name, Popen, tier)

    def start(self, name, cmd, stdout, stderr, env=None, tier=2):
        # A session of its own: Ctrl-C reaches this script only, which then
        # stops each child itself, in order.
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_child_setup)
        self.items.append((name, proc, tier))
        return proc

    def stop(self, *procs, timeout=15):
        """SIGTERMs the given processes by pid, then waits for each; kills
        one that lingers. Returns the exit status of the last."""
        names = {id(p): n for n, p, _ in self.items}
        for proc in procs:
            if proc.poll() is None:
                try:
                    proc.terminate()
                except ProcessLookupError:
                    pass
        end = time.monotonic() + timeout
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"{names.get(id(proc), proc.args[0])} (pid {proc.pid}) did not stop in {timeout}s: "
                      f"killing it", flush=True)
                proc.kill()
                proc.wait()
        return procs[-1].returncode if procs else None

    def stop_all(self):
        for tier in (0, 1, 2):
            group = [p for _, p, t in self.items if t == tier and p.returncode is None]
            if group:
                self.stop(*group, timeout=40 if tier == 1 else 15)


def wait_port(port, proc, what, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what}: port {port} never opened")


def tail(path, n=800):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:].strip()
    except OSError:
        return ""


def binaries(bin_dir=None):
    """ringside and ringside-bench from bin_dir, else from target/release,
    built there when either is missing."""
    exes = [os.path.join(bin_dir or os.path.join(REPO, "target", "release"), n)
            for n in ("ringside", "ringside-bench")]
    if not all(os.access(e, os.X_OK) for e in exes):
        if bin_dir:
            raise SystemExit(f"missing {' or '.join(exes)}: cargo build -p ringside -p ringside-bench")
        print("building: cargo build --release -p ringside -p ringside-bench", flush=True)
        subprocess.run(["cargo", "build", "--release", "-p", "ringside", "-p", "ringside-bench"],
                       cwd=REPO, check=True)
    return exes


def wait_until(what, check, timeout, poll=0.2):
    """Polls check() until it returns true; (ok, seconds waited)."""
    t0 = time.monotonic()
    while True:
        if check():
            return True, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            print(f"gave up waiting for {what} after {timeout:.0f}s", flush=True)
            return False, time.monotonic() - t0
        time.sleep(poll)

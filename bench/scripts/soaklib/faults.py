"""The heavy profile's faults, injected on a schedule while the load runs:
a config reload every minute (every fourth one broken), the HTTP origin
restarted every 3 minutes, php-fpm every 5, and the origin hung (SIGSTOP)
for 20 s once. Each fault leaves a window: the time it may explain
failures in, the part of the site it hits, and the statuses it explains."""
import os
import signal
import threading
import time
import urllib.request

from .servers import FAIL_COOLDOWN_S, RESPONSE_TIMEOUT_S, start_fpm, start_origin, write_config

GRACE_S = 5  # scheduling slack, and a request in flight at a window's edge
EARLY_S = 1.5  # the access log's times are whole seconds
HANG_S = 20


class Window:
    def __init__(self, what, cls, start, end, statuses):
        self.what, self.cls, self.start, self.end, self.statuses = what, cls, start, end, statuses

    def covers(self, t0, t1=None):
        """Whether [t0, t1] (a moment when t1 is None) meets the window."""
        return t0 <= self.end and (t1 if t1 is not None else t0) >= self.start - EARLY_S


def reloads_total(admin_port):
    """(ok, failed) from /metrics."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    ok = failed = 0
    for line in text.splitlines():
        if line.startswith('ringside_reloads_total{result="ok"}'):
            ok = int(float(line.split()[-1]))
        elif line.startswith('ringside_reloads_total{result="failed"}'):
            failed = int(float(line.split()[-1]))
    return ok, failed


class Faults(threading.Thread):
    """Injects the faults between `start` and `end` seconds after t0. `env`
    holds what it needs: procs, the ringside exe, the settings dict `s`,
    ringside's pid, the origin and php-fpm processes, the side CPU."""

    def __init__(self, env, t0, start, end):
        super().__init__(name="faults", daemon=True)
        self.env, self.t0, self.start_s, self.end_s = env, t0, start, end
        self.windows = []
        self.done = []  # (t, what, note)
        self.reloads = {"ok": 0, "failed": 0, "unexpected": []}
        self.stop = threading.Event()
        self.finished = threading.Event()
        self.failure = None
        self.lock = threading.Lock()

    def schedule(self):
        at = []
        span = self.end_s - self.start_s
        t, i = self.start_s + 30, 0
        while t < self.end_s:
            at.append((t, "reload", i % 4 == 3))
            t, i = t + 60, i + 1
        t = self.start_s + 60
        while t < self.end_s:
            at.append((t, "origin", None))
            t += 180
        t = self.start_s + 120
        while t < self.end_s:
            at.append((t, "fpm", None))
            t += 300
        # Between the first two origin restarts, clear of both.
        at.append((self.start_s + min(135, span / 2), "hang", None))
        return sorted(at, key=lambda x: x[0])

    def now(self):
        return time.monotonic() - self.t0

    def run(self):
        try:
            for t, what, arg in self.schedule():
                delay = self.t0 + t - time.monotonic()
                if delay > 0 and self.stop.wait(delay):
                    return
                getattr(self, what)(arg)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.failure = f"{type(e).__name__}: {e}"
        finally:
            self.finished.set()
        # The servers this thread restarted die with it (PR_SET_PDEATHSIG is
        # per thread): it lives until the soak is over.
        self.stop.wait()

    def window(self, *args):
        with self.lock:
            self.windows.append(Window(*args))

    def reload(self, broken):
        env = self.env
        env["generation"] += 1
        before = reloads_total(env["s"]["admin_port"])
        t = self.now()
        write_config(env["s"], env["generation"], broken)
        os.kill(env["pid"], signal.SIGHUP)
        want = "failed" if broken else "ok"
        got = None
        for _ in range(100):
            after = reloads_total(env["s"]["admin_port"])
            if before and after and after != before:
                got = "ok" if after[0] > before[0] else "failed"
                break
            time.sleep(0.1)
        self.reloads[want] += 1
        if got != want:
            self.reloads["unexpected"].append(f"t={t:.0f}s: wanted {want}, got {got}")
        # A refused reload is logged; an accepted one explains nothing.
        if broken:
            self.window("broken reload", "log", t, self.now() + GRACE_S, set())
        self.done.append((t, "broken reload" if broken else "reload", got))

    def restart(self, what, key, cls, start):
        """Stops env[key] and starts it again with start(); the window runs
        from the stop to its readiness plus the cooldown."""
        t = self.now()
        self.env["procs"].stop(self.env[key])
        self.env[key] = start()
        up = self.now()
        self.window(what, cls, t, up + FAIL_COOLDOWN_S + GRACE_S, {502, 503})
        self.done.append((t, what, f"down {up - t:.2f} s"))

    def origin(self, _):
        env, s = self.env, self.env["s"]
        self.restart("origin restart", "origin", "up",
                     lambda: start_origin(env["procs"], env["exe"], s["tmp"], s["origin_port"], env["cpu"]))

    def fpm(self, _):
        env, s = self.env, self.env["s"]
        self.restart("php-fpm restart", "fpm", "php",
                     lambda: start_fpm(env["procs"], s["tmp"], s["fpm_children"], env["cpu"], port=s["fpm_port"])[0])

    def hang(self, _):
        env = self.env
        t = self.now()
        pid = env["origin"].pid
        os.kill(pid, signal.SIGSTOP)
        try:
            self.stop.wait(HANG_S)
        finally:
            os.kill(pid, signal.SIGCONT)
        # 504 while it hangs; after its timeouts the server is held down for
        # the cooldown, and requests then find no server (502/503).
        self.window("origin hang", "up", t, self.now() + RESPONSE_TIMEOUT_S + FAIL_COOLDOWN_S + GRACE_S,
                    {504, 502, 503})
        self.done.append((t, "origin hang", f"{HANG_S} s"))

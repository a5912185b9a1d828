"""The servers of a soak: ringside under test, its HTTP origin (a second
ringside), php-fpm, and what they serve."""
import os
import random
import shutil
import subprocess
import time

from .procs import REPO, free_port, tail, wait_port

PHP_SUPPORT = os.path.join(REPO, "proxy", "tests", "support", "php")
FPM_TEMPLATE = os.path.join(REPO, "deploy", "bench", "php-fpm.conf")

SMALL = b"hello from the ringside soak\n"
FILES = {  # name under static/ (and in the origin's root): size in bytes
    "small.txt": len(SMALL),
    "page.html": 4 << 10,
    "mid.bin": 48 << 10,  # below cache_max_file (64k): cached per core
    "big.bin": 768 << 10,  # above it: spliced file -> pipe -> socket
    # Only for abort-large: larger than what the kernel's socket buffers
    # take at once, so that the reset lands while ringside is still sending.
    "huge.bin": 8 << 20,
    # Text above cache_max_file: gzip-compressed per request when asked
    # (the heavy profile's filler, which costs ringside far more CPU than
    # its client, so that one core can be kept busy from the other).
    "book.txt": 256 << 10,
}
PHP_SCRIPTS = ("hello.php", "index.php", "headers.php", "echo.php", "stream.php")
RESPONSE_TIMEOUT_S = 5  # the origin's: a hung origin is a 504 this soon
FAIL_COOLDOWN_S = 10  # how long a server that failed stays down (passive)


def fpm_exe():
    """Debian's php-fpm8.2, else any /usr/sbin/php-fpm*, else one on PATH."""
    if os.path.exists("/usr/sbin/php-fpm8.2"):
        return "/usr/sbin/php-fpm8.2"
    for d in ["/usr/sbin"] + os.environ.get("PATH", "").split(os.pathsep):
        if os.path.isdir(d):
            found = sorted(f for f in os.listdir(d) if f.startswith("php-fpm"))
            if found:
                return os.path.join(d, found[-1])
    raise SystemExit("php-fpm is needed (scripts/test.sh installs it)")


def start_fpm(procs, tmp, children, cpu, port=None):
    """php-fpm on a loopback TCP port, ready when its master says so.
    php-fpm cannot listen on port 0; without `port` a port taken in the
    meantime is tried again with another one. With `port` (a restart) the
    same one is tried until it binds."""
    prefix = os.path.join(tmp, "fpm")
    os.makedirs(prefix, exist_ok=True)
    root = os.geteuid() == 0
    with open(FPM_TEMPLATE) as f:
        template = f.read()
    for _attempt in range(3 if port is None else 50):
        use = port or free_port()
        text = (template.replace("@PREFIX@", prefix).replace("@LISTEN@", f"127.0.0.1:{use}")
                .replace("@CHILDREN@", str(children))
                .replace("@USERLINES@", "user = root\ngroup = root" if root else ""))
        conf = os.path.join(prefix, "php-fpm.conf")
        with open(conf, "w") as f:
            f.write(text)
        log = os.path.join(prefix, "php-fpm.log")
        if os.path.exists(log):
            os.unlink(log)
        errpath = os.path.join(prefix, "stderr.log")
        with open(errpath, "wb") as err:
            proc = procs.start("php-fpm", ["taskset", "-c", str(cpu), fpm_exe(), "-F", "-y", conf]
                               + (["-R"] if root else []), subprocess.DEVNULL, err)
        end = time.time() + 10
        while True:
            text = tail(log, 100000)
            if "ready to handle connections" in text:
                return proc, use
            if proc.poll() is not None or time.time() > end:
                procs.stop(proc)
                break
            time.sleep(0.02)
        if "Address already in use" not in text:
            raise RuntimeError(f"php-fpm did not start: {text[-500:]} {tail(errpath, 500)}")
        time.sleep(0.1)
    raise RuntimeError("php-fpm: no free port after its tries")


def make_files(root):
    os.makedirs(root, exist_ok=True)
    rnd = random.Random(42)
    words = [b"ringside", b"soak", b"edge", b"proxy", b"core", b"ring", b"request", b"file", b"cache"]
    for name, size in FILES.items():
        with open(os.path.join(root, name), "wb") as f:
            if name == "small.txt":
                f.write(SMALL)
            elif name == "book.txt":
                text = b" ".join(rnd.choice(words) for _ in range(size // 4))
                f.write(text[:size])
            else:
                f.write(rnd.randbytes(size))


def make_cert(tmp):
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", key, "-out", cert], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"openssl req failed: {r.stderr.strip()}")
    return cert, key


def prepare_www(tmp):
    www = os.path.join(tmp, "www")
    make_files(os.path.join(www, "static"))
    os.makedirs(os.path.join(www, "php"))
    for name in PHP_SCRIPTS:
        shutil.copy(os.path.join(PHP_SUPPORT, name), os.path.join(www, "php", name))
    return www


def config_text(s, generation=0, broken=False):
    """ringside's config for the settings `s` (a dict). `generation` changes
    a header on each reload, so that a reload really swaps the handlers;
    `broken` writes one the reload must refuse (a bad value for a key)."""
    tls = ""
    if s.get("tls_port"):
        tls = (f', {{ addr = "127.0.0.1:{s["tls_port"]}", '
               f'tls = {{ cert = "{s["cert"]}", key = "{s["key"]}" }} }}')
    max_open = '"lots"' if broken else "256"
    return f"""# ringside under test, written by bench/scripts/soak.py (generation {generation})
[runtime]
workers = {s["workers"]}
cpu_affinity = true
backend = "auto"

[server]
listen = ["127.0.0.1:{s["port"]}"{tls}]
root = "{s["www"]}"
pid_file = "{s["tmp"]}/ringside.pid"

[static]
cache_max_open = {max_open}

[admin]
listen = "127.0.0.1:{s["admin_port"]}"

[access_log]
path = "{s["tmp"]}/access.log"
format = "json"

[[route]]
prefix = "/static/"
root = "{s["www"]}"
cache_control = "max-age={60 + generation}"

[upstream.origin]
servers = ["127.0.0.1:{s["origin_port"]}"]
idle_timeout = "{s["idle_timeout"]}s"
response_timeout = "{RESPONSE_TIMEOUT_S}s"
fail_cooldown = "{FAIL_COOLDOWN_S}s"

[[route]]
prefix = "/up/"
upstream = "origin"
strip_prefix = true

[upstream.php]
protocol = "fastcgi"
servers = ["127.0.0.1:{s["fpm_port"]}"]
max_conns = {s["fpm_children"]}
idle_timeout = "{s["idle_timeout"]}s"
fail_cooldown = "{FAIL_COOLDOWN_S}s"

[[route]]
prefix = "/php/"
upstream = "php"
root = "{s["www"]}"
"""


def write_config(s, generation=0, broken=False):
    conf = os.path.join(s["tmp"], "ringside.toml")
    tmp = conf + ".new"
    with open(tmp, "w") as f:
        f.write(config_text(s, generation, broken))
    os.replace(tmp, conf)  # a reload never reads half a file
    return conf


def start_ringside(procs, exe, tmp, name, cmd_tail, port, cpu=None, env_extra=None):
    errpath = os.path.join(tmp, f"{name}.stderr.log")
    env = dict(os.environ, RUST_LOG="warn", **(env_extra or {}))
    cmd = ([] if cpu is None else ["taskset", "-c", str(cpu)]) + [exe] + cmd_tail
    with open(errpath, "ab") as err:
        proc = procs.start(name, cmd, subprocess.DEVNULL, err, env=env, tier=1 if name == "ringside" else 2)
    try:
        wait_port(port, proc, name)
    except RuntimeError as e:
        raise RuntimeError(f"{e}: {tail(errpath)}")
    return proc, errpath


def start_origin(procs, exe, tmp, port, cpu):
    root = os.path.join(tmp, "origin")
    if not os.path.isdir(root):
        make_files(root)
    return start_ringside(procs, exe, tmp, "origin",
                          ["--workers", "1", "--listen", f"127.0.0.1:{port}", "--root", root, "--admin", "off"],
                          port, cpu=cpu)[0]

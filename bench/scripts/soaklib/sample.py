"""What a soak watches in ringside: RSS, descriptors by kind, CPU time and
/metrics, sampled into a CSV."""
import csv
import os
import socket
import struct
import urllib.request

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of pid, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def cpu_ticks(cpu):
    """(busy, all) jiffies of one CPU from /proc/stat."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                v = [int(x) for x in line.split()[1:]]
                idle = v[3] + v[4]
                return sum(v) - idle, sum(v)
    return 0, 1


def rss_kib(pid, field="VmRSS"):
    """VmRSS (or RssAnon, RssFile) of pid and of its child processes, if any."""
    pids = [pid]
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == str(pid):
                        pids.append(int(p))
            except (OSError, IndexError):
                pass
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def threads(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def fds(pid):
    """Open fds by kind: {'socket': n, 'pipe': n, 'file': n, 'other': n}."""
    kinds = {"socket": 0, "pipe": 0, "file": 0, "other": 0}
    d = f"/proc/{pid}/fd"
    for fd in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, fd))
        except OSError:
            continue  # closed while we looked
        if target.startswith("socket:"):
            kinds["socket"] += 1
        elif target.startswith("pipe:"):
            kinds["pipe"] += 1
        elif target.startswith("/"):
            kinds["file"] += 1
        else:
            kinds["other"] += 1  # anon_inode: io_uring, eventfd, epoll...
    return kinds


def fd_listing(pid):
    out = {}
    d = f"/proc/{pid}/fd"
    for fd in os.listdir(d):
        try:
            out[int(fd)] = os.readlink(os.path.join(d, fd))
        except OSError:
            pass
    return out


def socket_table():
    """socket inode: 'tcp LOCAL -> REMOTE STATE' from /proc/net/{tcp,tcp6}."""
    states = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN",
              "0B": "CLOSING"}

    def addr(a):
        host, port = a.split(":")
        if len(host) == 8:
            host = socket.inet_ntop(socket.AF_INET, struct.pack("<I", int(host, 16)))
        return f"{host}:{int(port, 16)}"
    out = {}
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/net/{name}") as f:
                for line in list(f)[1:]:
                    c = line.split()
                    out[c[9]] = f"{name} {addr(c[1])} -> {addr(c[2])} {states.get(c[3], c[3])}"
        except OSError:
            pass
    return out


def tcp_conns(pid):
    """ringside's fds that are TCP sockets other than listeners: client and
    upstream connections, whatever the gauges say (an fd outlives its
    connection's gauge until the close completes)."""
    table = socket_table()
    n = 0
    for target in fd_listing(pid).values():
        if target.startswith("socket:["):
            entry = table.get(target[len("socket:["):-1])
            if entry and not entry.endswith("LISTEN"):
                n += 1
    return n


def metrics(admin_port):
    """/metrics summed per family name; None if it cannot be fetched."""
    req = urllib.request.Request(f"http://127.0.0.1:{admin_port}/metrics", headers={"Connection": "close"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    sums = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0]
        try:
            sums[name] = sums.get(name, 0.0) + float(value)
        except ValueError:
            pass
    return sums


def upstream_conns(m, kind):
    return int(m.get(f"ringside_upstream_{kind}_connections", 0)) if m else None


def pools(m):
    """What ringside keeps open on purpose, from /metrics: (now, most) for
    spare pipes (pipes, two fds each), files the static caches hold open,
    and idle upstream connections."""
    def n(name):
        return int(m.get(name, 0)) if m else 0
    return {"pipes": (n("ringside_spare_pipes"), n("ringside_spare_pipes_max")),
            "files": (n("ringside_file_cache_open_files"), n("ringside_file_cache_open_files_max")),
            "idle": (n("ringside_upstream_idle_connections"), n("ringside_upstream_max_idle_connections"))}


CSV_FIELDS = ["t_s", "phase", "cpu_busy", "side_cpu_busy", "rss_kib", "rss_anon_kib", "rss_file_kib",
              "fds", "fd_socket", "fd_pipe", "fd_file", "fd_other", "tcp_conns", "threads",
              "open_conns", "accepted_total", "requests_total", "upstream_active", "upstream_idle",
              "spare_pipes", "cached_files", "buffer_kib"]


class Sampler:
    def __init__(self, pid, admin_port, out, side_cpu):
        """side_cpu: the CPU the clients and backends share, whose use
        (all processes) is sampled too, to show the load was not starved."""
        self.pid, self.admin_port, self.side_cpu = pid, admin_port, side_cpu
        self.last_side = cpu_ticks(side_cpu)
        self.rows = []
        self.f = open(out, "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=CSV_FIELDS)
        self.w.writeheader()
        self.last = None
        self.last_cpu = None

    def sample(self, t, phase, quiet=False):
        # Descriptors first: asking /metrics opens an admin connection that
        # ringside closes only once it has read the client's end, which a
        # core shared with other work may not have done yet. Counted after,
        # each look saw its own connection as one socket too many (the
        # light soak failed so with `yes` on CPU 1, every look alike).
        k = fds(self.pid)
        m = metrics(self.admin_port)
        cpu = (t, cpu_seconds(self.pid))
        busy = ""
        if self.last_cpu and t > self.last_cpu[0]:
            busy = round((cpu[1] - self.last_cpu[1]) / (t - self.last_cpu[0]), 3)
        self.last_cpu = cpu
        side = cpu_ticks(self.side_cpu)
        side_busy = round((side[0] - self.last_side[0]) / max(1, side[1] - self.last_side[1]), 3)
        self.last_side = side
        p = pools(m)
        row = {
            "t_s": round(t, 1), "phase": phase, "cpu_busy": busy, "side_cpu_busy": side_busy, "rss_kib": rss_kib(self.pid),
            "rss_anon_kib": rss_kib(self.pid, "RssAnon"), "rss_file_kib": rss_kib(self.pid, "RssFile"),
            "fds": sum(k.values()), "fd_socket": k["socket"], "fd_pipe": k["pipe"],
            "fd_file": k["file"], "fd_other": k["other"], "tcp_conns": tcp_conns(self.pid),
            "threads": threads(self.pid),
            "open_conns": int(m.get("ringside_open_connections", 0)) if m else "",
            "accepted_total": int(m.get("ringside_accepted_connections_total", 0)) if m else "",
            "requests_total": int(m.get("ringside_requests_total", 0)) if m else "",
            "upstream_active": upstream_conns(m, "active") if m else "",
            "upstream_idle": upstream_conns(m, "idle") if m else "",
            "spare_pipes": p["pipes"][0], "cached_files": p["files"][0],
            "buffer_kib": int(m.get("ringside_request_buffer_bytes", 0)) // 1024 if m else 0,
        }
        self.w.writerow(row)
        self.f.flush()
        self.rows.append(row)
        if not quiet:
            rate = ""
            if phase in ("warmup", "load") and self.last and m and self.last["requests_total"] != "":
                rate = f"{(row['requests_total'] - self.last['requests_total']) / (t - self.last['t_s']):6.0f} req/s"
            cpu_text = f"cpu {busy * 100:3.0f}% (side {side_busy * 100:3.0f}%) " if busy != "" else ""
            print(f"t={t:6.1f}s {phase:7s} {cpu_text}rss {row['rss_kib']:6d} KiB (anon {row['rss_anon_kib']}, "
                  f"file {row['rss_file_kib']})  fds {row['fds']:3d} "
                  f"(sock {k['socket']}: tcp {row['tcp_conns']}; pipe {k['pipe']}, file {k['file']}, "
                  f"other {k['other']})  open {row['open_conns']}  "
                  f"up act/idle {row['upstream_active']}/{row['upstream_idle']}  {rate}", flush=True)
        self.last = row
        return row, m

    def close(self):
        self.f.close()



//! The `process_*` families under the names Prometheus's own clients give
//! them, so the usual dashboards and alerts work unchanged. Read from
//! `/proc` when scraped, never kept: nothing here costs a request anything.
//! Where `/proc` cannot be read (a system without it) the families are left
//! out rather than written as zero.

use std::fmt::Write;

use super::text::family;

/// What `/proc/self/stat` says, with the units converted.
struct Stat {
    cpu_seconds: f64,
    start_time: f64,
    virtual_bytes: u64,
    resident_bytes: u64,
}

fn sysconf(name: libc::c_int) -> Option<u64> {
    // SAFETY: sysconf reads a constant of the system.
    let v = unsafe { libc::sysconf(name) };
    (v > 0).then_some(v as u64)
}

/// The boot time, in seconds since the epoch: process start times in
/// `/proc/self/stat` count clock ticks from it.
fn boot_time() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

fn stat() -> Option<Stat> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name is in parentheses and may hold spaces: fields are
    // counted from the last ')', whose next field is the third (state).
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    let ticks = sysconf(libc::_SC_CLK_TCK)? as f64;
    let page = sysconf(libc::_SC_PAGESIZE)?;
    Some(Stat {
        cpu_seconds: (n(11)? + n(12)?) as f64 / ticks,
        start_time: boot_time()? as f64 + n(19)? as f64 / ticks,
        virtual_bytes: n(20)?,
        resident_bytes: n(21)? * page,
    })
}

fn open_fds() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count())
}

fn max_fds() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    // rlim_t is u64 on Linux but i64 on the BSDs.
    #[allow(clippy::unnecessary_cast)]
    let cur = lim.rlim_cur as u64;
    (r == 0).then_some(cur)
}

pub fn render(out: &mut String) {
    if let Some(s) = stat() {
        family(
            out,
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
        );
        let _ = writeln!(out, "process_cpu_seconds_total {}", s.cpu_seconds);
        family(
            out,
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
        );
        let _ = writeln!(out, "process_resident_memory_bytes {}", s.resident_bytes);
        family(
            out,
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
        );
        let _ = writeln!(out, "process_virtual_memory_bytes {}", s.virtual_bytes);
        family(
            out,
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since unix epoch in seconds.",
        );
        let _ = writeln!(out, "process_start_time_seconds {}", s.start_time);
    }
    if let Some(n) = open_fds() {
        family(
            out,
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
        );
        let _ = writeln!(out, "process_open_fds {n}");
    }
    if let Some(n) = max_fds() {
        family(
            out,
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
        );
        let _ = writeln!(out, "process_max_fds {n}");
    }
}

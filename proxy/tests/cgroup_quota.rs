//! `workers = "auto"` under a cgroup CPU quota, through the real binary:
//! a Kubernetes CPU limit without the static CPU manager leaves the
//! container every CPU of the node and rations their time. ringside must
//! then start as many workers as the quota pays for, unpinned; without a
//! quota, one pinned worker per CPU.
//!
//! The machine's own cgroups stay untouched: each server runs in a mount
//! namespace of its own (`unshare --mount`, or with `--map-root-user` when
//! not root) where a made-up tree is bound over `/sys/fs/cgroup`, shaped
//! after this process's real `/proc/self/cgroup`, which the kernel still
//! answers.

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::{Ringside, TempDir, BIN};

/// The CPUs this process may run on.
fn allowed_cpus() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        libc::CPU_COUNT(&set) as usize
    }
}

/// A cgroup tree in which this process's cgroup (v2, and v1's cpu
/// controller where it has one) has `cpu.max` = `max`.
fn fake_cgroups(dir: &TempDir, max: &str) {
    let membership = fs::read_to_string("/proc/self/cgroup").unwrap();
    let mut v1 = max.split_whitespace();
    let quota = match v1.next().unwrap() {
        "max" => "-1",
        q => q,
    };
    let period = v1.next().unwrap();
    for line in membership.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next(), f.next().unwrap(), f.next().unwrap());
        // Relative, so that it lands beneath `dir`.
        let path = Path::new(path.trim_start_matches('/'));
        if controllers.is_empty() {
            write(&dir.path().join(path).join("cpu.max"), max);
        } else if controllers.split(',').any(|c| c == "cpu") {
            let d = dir.path().join(controllers).join(path);
            write(&d.join("cpu.cfs_quota_us"), quota);
            write(&d.join("cpu.cfs_period_us"), period);
        }
    }
}

fn write(file: &Path, line: &str) {
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(file, format!("{line}\n")).unwrap();
}

/// ringside with workers = "auto" and cpu_affinity = "auto" (the defaults),
/// seeing `cgroups` as /sys/fs/cgroup.
fn start_under(cgroups: &Path, root: &Path) -> Ringside {
    // SAFETY: geteuid cannot fail.
    let root_user = unsafe { libc::geteuid() } == 0;
    let mut cmd = Command::new("unshare");
    if !root_user {
        cmd.arg("--map-root-user");
    }
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$0" /sys/fs/cgroup && exec "$@""#)
        .arg(cgroups)
        .arg(BIN)
        .args(["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        .args(["--workers", "auto", "--root"])
        .arg(root);
    Ringside::start_with(&mut cmd)
}

/// Each worker thread's allowed CPUs, as the kernel lists them.
fn worker_affinity(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for task in fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let task = task.unwrap().path();
        let comm = fs::read_to_string(task.join("comm")).unwrap_or_default();
        if !comm.starts_with("ringside-w") {
            continue;
        }
        let status = fs::read_to_string(task.join("status")).unwrap();
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string();
        out.push(cpus);
    }
    out
}

fn run(max: &str) -> (String, Vec<String>, String) {
    let cgroups = TempDir::new("cgroups");
    fake_cgroups(&cgroups, max);
    let root = TempDir::new("cgroup-root");
    root.write("a.txt", b"served\n");
    let server = start_under(cgroups.path(), root.path());
    assert_eq!(server.get("/a.txt"), (200, b"served\n".to_vec()));
    let banner = server.banner.clone();
    let affinity = worker_affinity(server.child.id());
    let log = server.stop();
    (banner, affinity, log)
}

fn all_cpus() -> String {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn one_cpu_quota_starts_one_unpinned_worker() {
    let cpus = allowed_cpus();
    let (banner, affinity, log) = run("100000 100000");
    assert!(banner.contains("(workers: 1,"), "{banner}");
    assert_eq!(affinity.len(), 1, "{affinity:?}");
    if cpus > 1 {
        assert_eq!(affinity, vec![all_cpus()], "the worker was pinned");
        assert!(
            log.contains(&format!(
                "cgroup CPU quota 100000/100000 us = 1 CPU (rounded up), below the {cpus} CPUs"
            )) && log.contains("workers 1, not pinned"),
            "{log}"
        );
    }
}

#[test]
fn fractional_quota_rounds_up() {
    let cpus = allowed_cpus();
    let (banner, affinity, _) = run("150000 100000");
    let want = cpus.min(2);
    assert!(banner.contains(&format!("(workers: {want},")), "{banner}");
    assert_eq!(affinity.len(), want, "{affinity:?}");
}

/// No quota: one worker per CPU. Where the test may run on every CPU of
/// the machine, none is pinned (nothing says the CPUs are ringside's own)
/// and the log says why; under a narrower CPU set (taskset), each is
/// pinned to a CPU of its own.
#[test]
fn no_quota_one_worker_per_cpu_pinned_only_on_cpus_handed_over() {
    let cpus = allowed_cpus();
    // SAFETY: sysconf has no memory effects.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } as usize;
    let (banner, affinity, log) = run("max 100000");
    assert!(banner.contains(&format!("(workers: {cpus},")), "{banner}");
    assert!(!log.contains("cgroup CPU quota"), "{log}");
    if cpus == online {
        assert_eq!(affinity, vec![all_cpus(); cpus], "a worker was pinned");
        assert!(
            log.contains(&format!(
                "this process may run on all {cpus} CPUs of the machine"
            )),
            "{log}"
        );
    } else {
        let mut one_each: Vec<&String> = affinity.iter().collect();
        one_each.sort();
        one_each.dedup();
        assert_eq!(one_each.len(), cpus, "{affinity:?}");
        assert!(
            affinity.iter().all(|a| a.parse::<usize>().is_ok()),
            "{affinity:?}"
        );
    }
}

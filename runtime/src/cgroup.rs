//! The CPU time this process's cgroup may spend: a quota per period, as a
//! Kubernetes CPU limit or `docker run --cpus` sets it.
//!
//! The affinity mask says which CPUs the process may run on, not how much of
//! them it may use: under Kubernetes' default CPU manager a pod limited to
//! 4 CPUs still runs on every CPU of the node, and 64 workers there would
//! be throttled in turn. So `workers = "auto"` also counts this quota, as
//! Go's automaxprocs and the JVM do.
//!
//! cgroup v2 first (`0::/path` in `/proc/self/cgroup`, then `cpu.max`),
//! cgroup v1 as well (`cpu.cfs_quota_us` and `cpu.cfs_period_us` under the
//! `cpu` controller's mount). Every ancestor's limit applies too (a pod's
//! cgroup caps the sum of its containers), so the smallest of them wins.
//! Directories that do not exist are passed over: inside a container the
//! mount often starts at the container's own cgroup, not at the path that
//! `/proc/self/cgroup` names, and walking up still finds it there.

use std::cmp::Ordering;
use std::path::Path;

/// `quota` microseconds of CPU time every `period` microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    pub quota: u64,
    pub period: u64,
}

impl Quota {
    /// Whole CPUs' worth, rounded up (1.5 CPUs keep two workers busy part
    /// of the time; one would leave half a CPU unused), at least one.
    pub fn cpus(self) -> usize {
        usize::try_from(self.quota.div_ceil(self.period))
            .unwrap_or(usize::MAX)
            .max(1)
    }

    fn cmp_share(self, other: Quota) -> Ordering {
        (u128::from(self.quota) * u128::from(other.period))
            .cmp(&(u128::from(other.quota) * u128::from(self.period)))
    }
}

/// The quota that applies to this process, or `None` when nothing limits
/// it (or the files cannot be read, as off Linux).
pub fn cpu_quota() -> Option<Quota> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    quota_in(Path::new("/sys/fs/cgroup"), &membership)
}

/// [`cpu_quota`] for a process whose `/proc/self/cgroup` reads
/// `membership`, with the cgroup file systems mounted beneath `root`.
pub fn quota_in(root: &Path, membership: &str) -> Option<Quota> {
    let mut found: Vec<Quota> = Vec::new();
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        // Outside its cgroup namespace's root a process sees `/../..`
        // paths, which would lead out of the cgroup file system.
        if path.split('/').any(|c| c == "..") {
            continue;
        }
        if controllers.is_empty() {
            for dir in ancestors(&root.join(relative(path)), root) {
                found.extend(read(&dir.join("cpu.max")).and_then(|t| parse_cpu_max(&t)));
            }
        } else if controllers.split(',').any(|c| c == "cpu") {
            // Mounted under its own name ("cpu,cpuacct"), often with a
            // "cpu" link beside it.
            for mount in [root.join(controllers), root.join("cpu")] {
                for dir in ancestors(&mount.join(relative(path)), &mount) {
                    let quota = read(&dir.join("cpu.cfs_quota_us"));
                    let period = read(&dir.join("cpu.cfs_period_us"));
                    if let (Some(q), Some(p)) = (quota, period) {
                        found.extend(parse_v1(&q, &p));
                    }
                }
            }
        }
    }
    found.into_iter().min_by(|a, b| a.cmp_share(*b))
}

fn relative(path: &str) -> &str {
    path.trim().trim_start_matches('/')
}

/// `dir` and its parents up to and including `top`.
fn ancestors<'a>(dir: &'a Path, top: &'a Path) -> impl Iterator<Item = &'a Path> {
    dir.ancestors().take_while(move |d| d.starts_with(top))
}

fn read(file: &Path) -> Option<String> {
    std::fs::read_to_string(file).ok()
}

/// cgroup v2's `cpu.max`: `"max 100000"` (no limit) or `"400000 100000"`.
pub fn parse_cpu_max(text: &str) -> Option<Quota> {
    let mut fields = text.split_whitespace();
    let quota = fields.next()?.parse::<u64>().ok()?;
    let period = match fields.next() {
        Some(p) => p.parse::<u64>().ok()?,
        None => 100_000,
    };
    (quota > 0 && period > 0).then_some(Quota { quota, period })
}

/// cgroup v1's `cpu.cfs_quota_us` (`-1`: no limit) and `cpu.cfs_period_us`.
pub fn parse_v1(quota: &str, period: &str) -> Option<Quota> {
    let quota = quota.trim().parse::<i64>().ok()?;
    let period = period.trim().parse::<u64>().ok()?;
    let quota = u64::try_from(quota).ok()?;
    (quota > 0 && period > 0).then_some(Quota { quota, period })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    struct Tree(PathBuf);

    impl Tree {
        fn new(tag: &str) -> Tree {
            let dir =
                std::env::temp_dir().join(format!("ringside-cgroup-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Tree(dir)
        }

        fn write(&self, file: &str, text: &str) -> &Tree {
            let path = self.0.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
            self
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn cpus(q: Option<Quota>) -> Option<usize> {
        q.map(Quota::cpus)
    }

    #[test]
    fn cpu_max() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(cpus(parse_cpu_max("400000 100000\n")), Some(4));
        assert_eq!(cpus(parse_cpu_max("150000 100000\n")), Some(2));
        assert_eq!(cpus(parse_cpu_max("50000 100000\n")), Some(1));
        assert_eq!(cpus(parse_cpu_max("200000\n")), Some(2));
        assert_eq!(parse_cpu_max(""), None);
        assert_eq!(parse_cpu_max("0 100000"), None);
        assert_eq!(parse_cpu_max("x 100000"), None);
    }

    #[test]
    fn v1_files() {
        assert_eq!(parse_v1("-1\n", "100000\n"), None);
        assert_eq!(cpus(parse_v1("300000\n", "100000\n")), Some(3));
        assert_eq!(cpus(parse_v1("250000\n", "100000\n")), Some(3));
        assert_eq!(parse_v1("100000", "0"), None);
    }

    #[test]
    fn v2_the_smallest_of_the_cgroup_and_its_parents() {
        let t = Tree::new("v2");
        t.write("cpu.max", "max 100000\n")
            .write("kubepods/cpu.max", "max 100000\n")
            .write("kubepods/pod1/cpu.max", "200000 100000\n")
            .write("kubepods/pod1/ctr/cpu.max", "400000 100000\n");
        let q = quota_in(&t.0, "0::/kubepods/pod1/ctr\n");
        assert_eq!(cpus(q), Some(2));
        // Without limits anywhere, none.
        assert_eq!(quota_in(&t.0, "0::/\n"), None);
        assert_eq!(quota_in(&t.0, "0::/kubepods\n"), None);
        // The container's own limit when it is the smaller.
        t.write("kubepods/pod1/ctr/cpu.max", "150000 100000\n");
        assert_eq!(cpus(quota_in(&t.0, "0::/kubepods/pod1/ctr\n")), Some(2));
        assert_eq!(
            quota_in(&t.0, "0::/kubepods/pod1/ctr\n"),
            Some(Quota {
                quota: 150_000,
                period: 100_000
            })
        );
    }

    #[test]
    fn v2_inside_a_cgroup_namespace() {
        // The container's own cgroup is the root it sees.
        let t = Tree::new("ns");
        t.write("cpu.max", "400000 100000\n");
        assert_eq!(cpus(quota_in(&t.0, "0::/\n")), Some(4));
    }

    #[test]
    fn v2_mount_starting_below_the_named_path() {
        // /proc/self/cgroup names a path the mount does not show: the
        // container's cgroup is the mount's root.
        let t = Tree::new("below");
        t.write("cpu.max", "300000 100000\n");
        assert_eq!(cpus(quota_in(&t.0, "0::/kubepods/pod1/ctr\n")), Some(3));
    }

    #[test]
    fn v1_fallback_and_hybrid() {
        let t = Tree::new("v1");
        t.write("cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
            .write("cpu,cpuacct/cpu.cfs_period_us", "100000\n")
            .write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n")
            .write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
            // Hybrid: the unified hierarchy without the cpu controller.
            .write("unified/cgroup.controllers", "\n");
        let membership = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/docker/abc\n";
        assert_eq!(cpus(quota_in(&t.0, membership)), Some(3));
        t.write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
        assert_eq!(quota_in(&t.0, membership), None);
    }

    #[test]
    fn nothing_to_read() {
        let t = Tree::new("empty");
        assert_eq!(quota_in(&t.0, "0::/a/b\n"), None);
        assert_eq!(quota_in(&t.0, ""), None);
        assert_eq!(quota_in(&t.0, "garbage\n"), None);
    }
}

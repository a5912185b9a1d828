//! Which CPUs this process may be pinned to.
//!
//! On Linux the answer is the process's affinity mask, read from the
//! `Cpus_allowed_list` line of `/proc/self/status` (so it honours `taskset`
//! and container cpusets, and needs no libc call). Elsewhere, or when that
//! file cannot be read, it is `0..std::thread::available_parallelism()`.
//!
//! A cgroup CPU quota does not narrow this list (the CPUs stay allowed, only
//! their time is rationed); the runtime counts it when it starts `workers =
//! "auto"` (`ringside_runtime::cgroup`).

use std::thread;

/// The CPU numbers this process may run on, ascending.
pub fn allowed_cpus() -> Vec<usize> {
    if cfg!(target_os = "linux") {
        if let Some(cpus) = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .and_then(|list| parse_cpu_list(list.trim()))
            })
        {
            return cpus;
        }
    }
    let n = thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
}

/// Parses the kernel's list form, `0-3,8,10-11`.
fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi) = (lo.parse::<usize>().ok()?, hi.parse::<usize>().ok()?);
        if lo > hi {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// Writes ascending CPU numbers in the kernel's list form, `0-3,8`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Checks one CPU of a `cpu_affinity` list against those already listed and
/// those allowed.
pub fn check_cpu(cpu: i64, seen: &[usize], allowed: &[usize]) -> Result<usize, String> {
    let n = usize::try_from(cpu).map_err(|_| format!("expected a CPU number, got {cpu}"))?;
    if seen.contains(&n) {
        return Err(format!("CPU {n} is listed twice"));
    }
    if !allowed.contains(&n) {
        return Err(format!(
            "CPU {n} is not available to this process (available: {})",
            format_cpu_list(allowed)
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3"), Some(vec![0, 1, 2, 3]));
        assert_eq!(parse_cpu_list("0,2,4-5"), Some(vec![0, 2, 4, 5]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[5]), "5");
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        assert!(allowed.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn checks() {
        let allowed = [0, 1, 2, 3];
        assert_eq!(check_cpu(2, &[0], &allowed), Ok(2));
        assert_eq!(
            check_cpu(0, &[0], &allowed).unwrap_err(),
            "CPU 0 is listed twice"
        );
        assert_eq!(
            check_cpu(-1, &[], &allowed).unwrap_err(),
            "expected a CPU number, got -1"
        );
        assert_eq!(
            check_cpu(4, &[], &allowed).unwrap_err(),
            "CPU 4 is not available to this process (available: 0-3)"
        );
    }
}

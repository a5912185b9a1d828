//! What a shootout measured: one [`Cell`] per scenario × workers ×
//! concurrency × server, each with its repeats. Written as JSON beside the
//! report, and read back by `shootout --report JSON` to redraw it.

use serde::{Deserialize, Serialize};

/// One run of the client against one server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub requests_per_second: f64,
    /// Latency percentiles of this run, in milliseconds.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub complete: u64,
    /// Failed requests and non-2xx answers together.
    pub failed: u64,
}

/// One server in one scenario at one worker count and concurrency.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub scenario: String,
    pub server: String,
    pub workers: usize,
    pub concurrency: usize,
    /// One per repeat that ran; repeats interleave servers.
    pub samples: Vec<Sample>,
    /// Why a repeat failed to run (the server did not start, the client
    /// failed); the cell's figures are then from the repeats that ran.
    pub errors: Vec<String>,
}

/// A server left out of the whole shootout, and why ("not installed:
/// apt-get install h2o").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub server: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// The definition file's name, e.g. "seeds".
    pub name: String,
    /// "2 CPUs, Intel Xeon ..., Linux 6.18", from /proc.
    pub machine: String,
    /// UTC, "2026-12-01 03:14".
    pub date: String,
    pub duration_s: f64,
    pub repeats: usize,
    /// In the order the definition lists them; ringside first.
    pub servers: Vec<String>,
    pub scenarios: Vec<String>,
    pub skipped: Vec<Skipped>,
    pub cells: Vec<Cell>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl Cell {
    fn of(&self, f: impl Fn(&Sample) -> f64) -> Vec<f64> {
        self.samples.iter().map(f).collect()
    }

    pub fn median_rps(&self) -> Option<f64> {
        median(self.of(|s| s.requests_per_second))
    }

    /// (min, max) of req/s over the repeats.
    pub fn spread_rps(&self) -> Option<(f64, f64)> {
        let v = self.of(|s| s.requests_per_second);
        let min = v.iter().copied().reduce(f64::min)?;
        let max = v.iter().copied().reduce(f64::max)?;
        Some((min, max))
    }

    pub fn median_p50_ms(&self) -> Option<f64> {
        median(self.of(|s| s.p50_ms))
    }

    pub fn median_p99_ms(&self) -> Option<f64> {
        median(self.of(|s| s.p99_ms))
    }

    /// Failed requests over all repeats.
    pub fn failed(&self) -> u64 {
        self.samples.iter().map(|s| s.failed).sum()
    }
}

impl Results {
    pub fn cell(
        &self,
        scenario: &str,
        server: &str,
        workers: usize,
        concurrency: usize,
    ) -> Option<&Cell> {
        self.cells.iter().find(|c| {
            c.scenario == scenario
                && c.server == server
                && c.workers == workers
                && c.concurrency == concurrency
        })
    }

    /// The worker counts and concurrencies present, each sorted.
    pub fn axes(&self) -> (Vec<usize>, Vec<usize>) {
        let mut w: Vec<usize> = self.cells.iter().map(|c| c.workers).collect();
        let mut c: Vec<usize> = self.cells.iter().map(|c| c.concurrency).collect();
        w.sort_unstable();
        w.dedup();
        c.sort_unstable();
        c.dedup();
        (w, c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rps: f64) -> Sample {
        Sample {
            requests_per_second: rps,
            p50_ms: rps / 1000.0,
            p99_ms: rps / 100.0,
            complete: 10,
            failed: 1,
        }
    }

    #[test]
    fn medians_and_spread_over_repeats() {
        let mut c = Cell {
            scenario: "s".into(),
            server: "x".into(),
            workers: 1,
            concurrency: 10,
            samples: vec![sample(3.0), sample(1.0), sample(2.0)],
            errors: vec![],
        };
        assert_eq!(c.median_rps(), Some(2.0));
        assert_eq!(c.spread_rps(), Some((1.0, 3.0)));
        assert_eq!(c.failed(), 3);
        c.samples.push(sample(10.0));
        assert_eq!(c.median_rps(), Some(2.5));
        c.samples.clear();
        assert_eq!(c.median_rps(), None);
        assert_eq!(c.spread_rps(), None);
    }
}

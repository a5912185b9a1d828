//! Progress on stderr, drawn by the main thread (the cores only store a
//! per-core count; see [`crate::cores::Shared`]).
//!
//! - Lines, as ab: "Completed N requests" each tenth of `-n` (at least every
//!   100), only when `-n` is over 150, then "Finished N requests". With a
//!   duration and no `-n`, a line each tenth of the duration.
//! - A live bar with the current rate when stderr is a terminal (or
//!   `--progress bar`), redrawn every 100 ms on one line, then cleared.
//! - Nothing with `-q` (or `--progress none`); ab then prints "...done".

use std::io::Write;
use std::time::Duration;

use crate::args::{Config, ProgressMode};

enum Mode {
    Quiet,
    /// Print at each multiple of `every` requests.
    Lines {
        every: u64,
        next: u64,
    },
    /// Print at each multiple of `every` of time.
    TimedLines {
        every: Duration,
        next: Duration,
    },
    Bar,
}

pub struct Progress {
    mode: Mode,
    requests: Option<u64>,
    duration: Option<Duration>,
    last: (u64, Duration),
    rate: f64,
}

fn stderr_is_tty() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(2) == 1 }
}

impl Progress {
    pub fn new(cfg: &Config) -> Progress {
        let mode = match cfg.progress {
            _ if cfg.quiet => ProgressMode::None,
            ProgressMode::Auto if stderr_is_tty() => ProgressMode::Bar,
            ProgressMode::Auto => ProgressMode::Lines,
            m => m,
        };
        let mode = match (mode, cfg.requests, cfg.duration) {
            (ProgressMode::None, ..) => Mode::Quiet,
            (ProgressMode::Bar, ..) => Mode::Bar,
            // ab's heartbeat: a tenth of -n, at least 100, and only over 150.
            (_, Some(n), _) if n > 150 => {
                let every = (n / 10).max(100);
                Mode::Lines { every, next: every }
            }
            (_, None, Some(d)) => Mode::TimedLines {
                every: d / 10,
                next: d / 10,
            },
            _ => Mode::Quiet,
        };
        Progress {
            mode,
            requests: cfg.requests,
            duration: cfg.duration,
            last: (0, Duration::ZERO),
            rate: 0.0,
        }
    }

    /// Whether anything is shown (ab's banner then ends with a newline,
    /// otherwise with "..." and "done" after the run).
    pub fn shows(&self) -> bool {
        !matches!(self.mode, Mode::Quiet)
    }

    pub fn tick(&mut self, done: u64, elapsed: Duration) {
        let mut err = std::io::stderr().lock();
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Lines { every, next } => {
                while done >= *next {
                    let _ = writeln!(err, "Completed {next} requests");
                    *next += *every;
                }
            }
            Mode::TimedLines { every, next } => {
                if elapsed >= *next {
                    let _ = writeln!(err, "Completed {done} requests");
                    while elapsed >= *next {
                        *next += *every;
                    }
                }
            }
            Mode::Bar => {
                let dt = elapsed.saturating_sub(self.last.1).as_secs_f64();
                if dt >= 0.25 {
                    self.rate = (done - self.last.0) as f64 / dt;
                    self.last = (done, elapsed);
                }
                let frac = match (self.requests, self.duration) {
                    (_, Some(d)) => elapsed.as_secs_f64() / d.as_secs_f64(),
                    (Some(n), None) => done as f64 / n as f64,
                    (None, None) => 0.0,
                };
                let _ = write!(err, "\r{}", bar(frac, done, self.rate));
                let _ = err.flush();
            }
        }
    }

    pub fn finish(&mut self, done: u64) {
        let mut err = std::io::stderr().lock();
        match self.mode {
            Mode::Quiet => {}
            Mode::Bar => {
                let _ = writeln!(err, "\r\x1b[2KFinished {done} requests");
            }
            _ => {
                let _ = writeln!(err, "Finished {done} requests");
            }
        }
    }
}

/// `[#####.....]  50%  12345 requests  67890 req/s`
pub fn bar(frac: f64, done: u64, rate: f64) -> String {
    const WIDTH: usize = 30;
    let frac = frac.clamp(0.0, 1.0);
    let filled = (frac * WIDTH as f64).round() as usize;
    format!(
        "[{}{}] {:3.0}%  {done} requests  {rate:.0} req/s\x1b[K",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        frac * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_shape() {
        let b = bar(0.5, 1234, 5678.9);
        assert!(
            b.starts_with("[###############...............]  50%  1234 requests  5679 req/s"),
            "{b}"
        );
        assert!(bar(2.0, 0, 0.0).contains("100%"));
    }

    #[test]
    fn ab_heartbeat() {
        let parse = |a: &[&str]| {
            let mut v = vec!["ringside-bench", "--progress", "lines"];
            v.extend_from_slice(a);
            v.push("http://h/");
            crate::args::parse(v).unwrap()
        };
        let p = Progress::new(&parse(&["-n", "150"]));
        assert!(!p.shows());
        match Progress::new(&parse(&["-n", "2000"])).mode {
            Mode::Lines { every, .. } => assert_eq!(every, 200),
            _ => panic!("expected lines"),
        }
        match Progress::new(&parse(&["-n", "500"])).mode {
            Mode::Lines { every, .. } => assert_eq!(every, 100),
            _ => panic!("expected lines"),
        }
        assert!(!Progress::new(&parse(&["-q", "-n", "2000"])).shows());
    }
}

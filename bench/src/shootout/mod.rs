//! `ringside-bench shootout FILE.toml`: the seeds' comparisons as one
//! command. For each scenario and worker count it starts the backend and
//! then, repeat after repeat, each front end in turn (pinned: the servers
//! on the first `workers` CPUs, the client and the backend on the rest, or
//! on the last CPU when the servers take them all): started, warmed up and
//! measured at each concurrency, stopped. Interleaving spreads the drift
//! of a shared machine over all of them. ringside-bench itself is
//! the client (`--http1.1 -k -c N --duration DUR --json` for HTTP/1.1, see
//! [`client_args`]); scenarios over TLS share one self-signed certificate
//! made at the start. It writes `results.json`,
//! `report.md` (also printed) and SVG charts into `--out` (default
//! `shootout-NAME`); `--report results.json` redraws them.

pub mod def;
pub mod procs;
pub mod report;
pub mod results;
pub mod servers;
pub mod tls;

use std::path::{Path, PathBuf};

use def::{Definition, Kind, Protocol, Scenario};
use procs::{run_pinned, Scratch};
use results::{Cell, Results, Sample, Skipped};
use servers::{missing, request_path, serves, start_backend, start_front, Paths};
use tls::Tls;

pub const USAGE: &str = "usage: ringside-bench shootout FILE.toml [--out DIR] [--repo DIR] \
     [--duration DUR] [--warmup DUR] [--repeats N] | --report RESULTS.json [--out DIR]";

/// The `shootout` subcommand; `args` are what follows it.
pub fn main(args: &[String]) -> i32 {
    match run_cli(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ringside-bench shootout: {e}");
            2
        }
    }
}

fn run_cli(args: &[String]) -> Result<(), String> {
    let mut file = None;
    let mut out = None;
    let mut repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut redraw = None;
    let mut duration = None;
    let mut warmup = None;
    let mut repeats = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or(format!("{a} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--out" => out = Some(PathBuf::from(value()?)),
            "--repo" => repo = PathBuf::from(value()?),
            "--report" => redraw = Some(PathBuf::from(value()?)),
            "--duration" => duration = Some(crate::args::parse_duration(&value()?)?),
            "--warmup" => warmup = Some(crate::args::parse_duration(&value()?)?),
            "--repeats" => {
                let n: usize = value()?.parse().map_err(|e| format!("--repeats: {e}"))?;
                repeats = Some(n.max(1));
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            f if !f.starts_with('-') && file.is_none() => file = Some(PathBuf::from(f)),
            other => return Err(format!("unexpected {other:?}\n{USAGE}")),
        }
    }
    let results = match (redraw, file) {
        (Some(json), None) => {
            let text =
                std::fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()))?;
            serde_json::from_str::<Results>(&text)
                .map_err(|e| format!("{}: {e}", json.display()))?
        }
        (None, Some(file)) => {
            let cpus = allowed_cpus();
            let mut def = Definition::load(&file, cpus.len())?;
            def.duration = duration.unwrap_or(def.duration);
            def.warmup = warmup.unwrap_or(def.warmup);
            def.repeats = repeats.unwrap_or(def.repeats);
            run(&def, &cpus, &Paths::from_repo(&repo))?
        }
        _ => return Err(USAGE.into()),
    };
    let out = out.unwrap_or_else(|| PathBuf::from(format!("shootout-{}", results.name)));
    write(&results, &out)
}

/// Writes the JSON, the markdown (also to stdout) and the charts.
fn write(r: &Results, out: &Path) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", out.display());
    std::fs::create_dir_all(out).map_err(err)?;
    let json = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
    std::fs::write(out.join("results.json"), json + "\n").map_err(err)?;
    let md = report::markdown(r);
    std::fs::write(out.join("report.md"), &md).map_err(err)?;
    let charts = report::write_charts(r, &out.join("charts")).map_err(err)?;
    print!("{md}");
    eprintln!(
        "wrote {}/results.json, report.md and {} charts",
        out.display(),
        charts.len()
    );
    Ok(())
}

/// The CPUs this process may run on, in order.
fn allowed_cpus() -> Vec<usize> {
    let ids = crate::worker::allowed_cpus();
    if ids.is_empty() {
        vec![0]
    } else {
        ids
    }
}

/// Servers on the first `workers` CPUs; client and backend on the rest,
/// or on the last CPU when the servers take them all.
fn placement(cpus: &[usize], workers: usize) -> (Vec<usize>, Vec<usize>) {
    let n = workers.min(cpus.len()).max(1);
    let server = cpus[..n].to_vec();
    let client = if cpus.len() > n {
        cpus[n..].to_vec()
    } else {
        vec![cpus[cpus.len() - 1]]
    };
    (server, client)
}

fn run(def: &Definition, cpus: &[usize], paths: &Paths) -> Result<Results, String> {
    let mut skipped = Vec::new();
    let mut servers = Vec::new();
    for s in &def.servers {
        match missing(s, paths) {
            Some(reason) if s == "ringside" => return Err(format!("ringside: {reason}")),
            Some(reason) => {
                eprintln!("{s} skipped: {reason}");
                skipped.push(Skipped {
                    server: s.clone(),
                    reason,
                });
            }
            None => servers.push(s.clone()),
        }
    }
    let files = Scratch::new("files");
    for s in &def.scenarios {
        if let (Kind::Static, Some(name), Some(size)) = (s.kind, &s.file, s.size) {
            std::fs::write(files.0.join(name), file_bytes(name, size))
                .map_err(|e| format!("{}: {e}", files.0.display()))?;
        }
    }
    // Kept to the end of the run, with the certificate it holds.
    let cert = match def.scenarios.iter().any(|s| s.protocol.tls()) {
        true => {
            let dir = Scratch::new("tls");
            let tls = Tls::generate(&dir.0)?;
            Some((dir, tls))
        }
        false => None,
    };
    let tls = cert.as_ref().map(|(_, t)| t);
    let client = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cells = Vec::new();
    for scenario in &def.scenarios {
        for &workers in &def.workers {
            let (server_cpus, client_cpus) = placement(cpus, workers);
            let mut got = run_group(
                def,
                scenario,
                workers,
                &servers,
                &server_cpus,
                &client_cpus,
                &files.0,
                tls,
                paths,
                &client,
            );
            cells.append(&mut got);
        }
    }
    Ok(Results {
        name: def.name.clone(),
        machine: machine(),
        date: utc_now(),
        duration_s: def.duration.as_secs_f64(),
        repeats: def.repeats,
        servers,
        scenarios: def.scenarios.iter().map(Scenario::label).collect(),
        skipped,
        cells,
    })
}

/// One scenario at one worker count: every server, every concurrency.
#[allow(clippy::too_many_arguments)]
fn run_group(
    def: &Definition,
    scenario: &Scenario,
    workers: usize,
    servers: &[String],
    server_cpus: &[usize],
    client_cpus: &[usize],
    files: &Path,
    tls: Option<&Tls>,
    paths: &Paths,
    client: &Path,
) -> Vec<Cell> {
    let mut cells: Vec<Cell> = Vec::new();
    let label = scenario.label();
    let in_play: Vec<&String> = servers
        .iter()
        .filter(|s| serves(s, scenario.kind, scenario.protocol))
        .collect();
    for s in &in_play {
        for &c in &def.concurrency {
            cells.push(Cell {
                scenario: label.clone(),
                server: (*s).clone(),
                workers,
                concurrency: c,
                samples: Vec::new(),
                errors: Vec::new(),
            });
        }
    }
    let backend = match start_backend(
        scenario.kind,
        scenario.fpm_pool(),
        client_cpus,
        files,
        paths,
    ) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{label}: backend failed: {e}");
            for c in &mut cells {
                c.errors.push(format!("backend: {e}"));
            }
            return cells;
        }
    };
    let path = request_path(scenario.kind, scenario.file.as_deref());
    let dur = format!("{}ms", def.duration.as_millis());
    let warm = format!("{}ms", def.warmup.as_millis());
    let streams = scenario.streams();
    let args = |port: u16, c: usize, dur: &str| {
        client_args(scenario.protocol, streams, port, &path, c, dur)
    };
    // Each server runs alone, started afresh for each repeat and stopped
    // after it, so none holds the backend's connections (php-fpm's
    // children) while another is measured.
    for repeat in 0..def.repeats {
        for s in &in_play {
            let front = match start_front(
                s,
                workers,
                server_cpus,
                &backend.behind,
                scenario.protocol,
                tls,
                paths,
            ) {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("{label} w{workers}: {s} failed to start: {e}");
                    for x in cells.iter_mut().filter(|x| x.server == **s) {
                        x.errors.push(format!("start: {e}"));
                    }
                    continue;
                }
            };
            let port = front.1;
            for &c in &def.concurrency {
                if !def.warmup.is_zero() {
                    let _ = client_run(client, client_cpus, &args(port, c, &warm));
                }
                let Some(cell) = cells
                    .iter_mut()
                    .find(|x| x.server == **s && x.concurrency == c)
                else {
                    continue;
                };
                match client_run(client, client_cpus, &args(port, c, &dur)) {
                    Ok(sample) => {
                        eprintln!(
                            "{label} w{workers} c{c} #{} {s}: {:.0} req/s, p99 {:.2} ms{}",
                            repeat + 1,
                            sample.requests_per_second,
                            sample.p99_ms,
                            if sample.failed > 0 {
                                format!(", {} failed", sample.failed)
                            } else {
                                String::new()
                            }
                        );
                        cell.samples.push(sample);
                    }
                    Err(e) => {
                        eprintln!("{label} w{workers} c{c} #{} {s}: {e}", repeat + 1);
                        cell.errors.push(e);
                    }
                }
            }
            drop(front);
        }
    }
    drop(backend);
    cells
}

/// The client's arguments for one run (after its own path): keep-alive,
/// quiet, JSON out, a 10 s timeout per request. Over TLS it takes any
/// certificate, the shootout's being self-signed; over HTTP/2, `streams`
/// requests at a time on each of the `c` connections, as h2load's `-m`.
pub fn client_args(
    protocol: Protocol,
    streams: usize,
    port: u16,
    path: &str,
    c: usize,
    dur: &str,
) -> Vec<String> {
    let mut a: Vec<String> = vec!["-k".into(), "-q".into(), "-c".into(), c.to_string()];
    a.extend(["--duration".into(), dur.to_owned()]);
    a.extend(["-s".into(), "10".into()]);
    let flags: &[&str] = match protocol {
        // The peers are compared on HTTP/1.1 keep-alive, not ab's HTTP/1.0.
        Protocol::Http => &["--http1.1"],
        Protocol::Https => &["--http1.1", "--insecure"],
        Protocol::H2 => &["--h2", "--insecure"],
        Protocol::H2c => &["--h2c"],
    };
    a.extend(flags.iter().map(|f| f.to_string()));
    if protocol.http2() {
        a.extend(["--streams".into(), streams.to_string()]);
    }
    let scheme = if protocol.tls() { "https" } else { "http" };
    a.extend([
        "--json".into(),
        format!("{scheme}://127.0.0.1:{port}{path}"),
    ]);
    a
}

/// One run of the client; its figures.
fn client_run(client: &Path, cpus: &[usize], args: &[String]) -> Result<Sample, String> {
    let mut argv = vec![client.to_string_lossy().into_owned()];
    argv.extend_from_slice(args);
    let out = run_pinned(&argv, cpus)?;
    let v: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| format!("client output: {e}"))?;
    let num = |p: &str| {
        v.pointer(p)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0)
    };
    Ok(Sample {
        requests_per_second: num("/requests_per_second"),
        p50_ms: num("/latency/percentiles/50"),
        p99_ms: num("/latency/percentiles/99"),
        complete: num("/complete_requests") as u64,
        failed: (num("/failed_requests") + num("/counts/non_2xx")) as u64,
    })
}

/// `size` bytes that look like what the name says (the seeds served an
/// index page and an image).
fn file_bytes(name: &str, size: u64) -> Vec<u8> {
    let pattern: &[u8] = if name.ends_with(".html") {
        b"<p>ringside shootout page: the seeds' index.html, padded to size.</p>\n"
    } else if name.ends_with(".jpg") {
        b"\xff\xd8\xff\xe0JFIF\0 not a real image, only its size matters "
    } else {
        b"abcdefghijklmnopqrstuvwxyz"
    };
    pattern
        .iter()
        .copied()
        .cycle()
        .take(size as usize)
        .collect()
}

/// "2 CPUs (MODEL), Linux RELEASE".
fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let n = std::thread::available_parallelism().map_or(1, usize::from);
    format!("{n} CPUs ({model}), Linux {}", release.trim())
}

/// UTC now as "YYYY-MM-DD HH:MM".
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_keeps_the_client_off_the_servers_when_it_can() {
        assert_eq!(placement(&[0, 1], 1), (vec![0], vec![1]));
        assert_eq!(placement(&[0, 1], 2), (vec![0, 1], vec![1]));
        assert_eq!(placement(&[0, 1, 2, 3], 2), (vec![0, 1], vec![2, 3]));
        assert_eq!(placement(&[5], 1), (vec![5], vec![5]));
    }

    #[test]
    fn client_args_per_protocol() {
        let args =
            |p, streams| client_args(p, streams, 8080, "/hello.txt", 100, "5000ms").join(" ");
        assert_eq!(
            args(Protocol::Http, 1),
            "-k -q -c 100 --duration 5000ms -s 10 --http1.1 --json http://127.0.0.1:8080/hello.txt"
        );
        assert_eq!(
            args(Protocol::Https, 1),
            "-k -q -c 100 --duration 5000ms -s 10 --http1.1 --insecure --json \
             https://127.0.0.1:8080/hello.txt"
        );
        assert_eq!(
            args(Protocol::H2, 10),
            "-k -q -c 100 --duration 5000ms -s 10 --h2 --insecure --streams 10 --json \
             https://127.0.0.1:8080/hello.txt"
        );
        assert_eq!(
            args(Protocol::H2c, 4),
            "-k -q -c 100 --duration 5000ms -s 10 --h2c --streams 4 --json http://127.0.0.1:8080/hello.txt"
        );
    }

    #[test]
    fn files_have_their_size() {
        for (name, size) in [("a.txt", 26), ("i.html", 11 * 1024), ("p.jpg", 12 * 1024)] {
            assert_eq!(file_bytes(name, size).len() as u64, size);
        }
        assert!(file_bytes("p.jpg", 10).starts_with(b"\xff\xd8"));
    }

    #[test]
    fn utc_dates_look_like_dates() {
        let d = utc_now();
        assert_eq!(d.len(), 16, "{d}");
        assert!(d.starts_with("20"), "{d}");
    }
}

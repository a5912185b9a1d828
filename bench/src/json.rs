//! `--json`: everything the reports say, and more, for machines.
//!
//! Times are in milliseconds as floats (microsecond resolution), counts as
//! integers, rates per second. `latency` is from each request's intended
//! send time with `-R` (`corrected: true`), else the same as
//! `service_time`, which is always from the request's actual start (its
//! connect, or its send on a kept-alive connection). `client_cpu` is this
//! process's own CPU time over the run, divided per request: the load
//! generator's cost, to compare with other clients.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::hist::Series;
use crate::stats::Counts;
use crate::Finished;

/// Percentiles reported: ab's, and the tail.
const PERCENTILES: [(&str, f64); 12] = [
    ("50", 0.50),
    ("66", 0.66),
    ("75", 0.75),
    ("80", 0.80),
    ("90", 0.90),
    ("95", 0.95),
    ("98", 0.98),
    ("99", 0.99),
    ("99.9", 0.999),
    ("99.99", 0.9999),
    ("99.999", 0.99999),
    ("100", 1.0),
];

#[derive(Serialize)]
pub struct SeriesJson {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub sd: f64,
    pub median: f64,
    pub max: f64,
    pub percentiles: BTreeMap<&'static str, f64>,
}

/// Microseconds to milliseconds, keeping whole microseconds.
fn ms(us: f64) -> f64 {
    us.round() / 1000.0
}

impl From<&Series> for SeriesJson {
    fn from(s: &Series) -> SeriesJson {
        SeriesJson {
            count: s.count(),
            min: ms(s.min_us() as f64),
            mean: ms(s.mean_us()),
            sd: ms(s.sd_us()),
            median: ms(s.quantile_us(0.5) as f64),
            max: ms(s.max_us() as f64),
            percentiles: PERCENTILES
                .iter()
                .map(|&(k, q)| (k, ms(s.quantile_us(q) as f64)))
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub struct Report<'a> {
    pub tool: &'static str,
    pub version: &'static str,
    pub backend: &'static str,
    pub cores: usize,
    pub urls: Vec<String>,
    pub server_software: String,
    pub server_hostname: &'a str,
    pub server_port: u16,
    pub document_path: &'a str,
    /// None with -l.
    pub document_length: Option<u64>,
    pub concurrency: usize,
    pub keepalive: bool,
    pub pipeline: usize,
    pub http_version: &'static str,
    /// HTTP/2 and HTTP/3: streams in flight per connection (null for HTTP/1).
    pub streams: Option<usize>,
    /// https: the first handshake's protocol, suite and keys (null for http).
    pub tls: Option<crate::tls::TlsInfo>,
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub target_rate: Option<f64>,
    pub time_taken_s: f64,
    pub complete_requests: u64,
    pub failed_requests: u64,
    pub counts: Counts,
    pub requests_per_second: f64,
    pub time_per_request_ms: f64,
    pub time_per_request_all_ms: f64,
    pub transfer_rate_kbytes_s: f64,
    pub client_cpu: ClientCpu,
    pub connection_times: BTreeMap<&'static str, SeriesJson>,
    pub latency: Latency,
    pub service_time: SeriesJson,
}

#[derive(Serialize)]
pub struct ClientCpu {
    pub user_s: f64,
    pub sys_s: f64,
    pub us_per_request: f64,
}

#[derive(Serialize)]
pub struct Latency {
    pub corrected: bool,
    #[serde(flatten)]
    pub series: SeriesJson,
}

pub fn render(f: &Finished) -> String {
    let r = &f.result;
    let st = &r.stats;
    let c = &st.counts;
    let cfg = f.cfg;
    let secs = r.elapsed.as_secs_f64();
    let done = c.complete as f64;
    let div = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let cpu = (r.cpu_user + r.cpu_sys).as_secs_f64();
    let url = &f.targets[0].url;
    let report = Report {
        tool: "ringside-bench",
        version: env!("CARGO_PKG_VERSION"),
        backend: r.backend,
        cores: r.cores,
        urls: f
            .targets
            .iter()
            .map(|t| format!("http://{}{}", t.url.authority, t.url.path))
            .collect(),
        server_software: f.server().to_string(),
        server_hostname: &url.host,
        server_port: url.port,
        document_path: &url.path,
        document_length: if cfg.variable_length {
            None
        } else {
            f.doc_len()
        },
        concurrency: cfg.concurrency,
        keepalive: cfg.keepalive,
        pipeline: cfg.pipeline,
        http_version: match (cfg.h3, cfg.h2, cfg.http10) {
            (true, _, _) => "3",
            (false, Some(_), _) => "2",
            (false, None, true) => "1.0",
            (false, None, false) => "1.1",
        },
        streams: (cfg.h2.is_some() || cfg.h3).then_some(cfg.streams),
        tls: f.shared.tls_info.get().cloned(),
        requests: cfg.requests,
        duration_s: cfg.duration.map(|d| d.as_secs_f64()),
        target_rate: cfg.rate,
        time_taken_s: secs,
        complete_requests: c.complete,
        failed_requests: c.failed(),
        counts: *c,
        requests_per_second: div(done, secs),
        time_per_request_ms: div(cfg.concurrency as f64 * secs * 1000.0, done),
        time_per_request_all_ms: div(secs * 1000.0, done),
        transfer_rate_kbytes_s: div(c.bytes_read as f64 / 1024.0, secs),
        client_cpu: ClientCpu {
            user_s: r.cpu_user.as_secs_f64(),
            sys_s: r.cpu_sys.as_secs_f64(),
            us_per_request: div(cpu * 1e6, done + c.socket_failures() as f64),
        },
        connection_times: [
            ("connect", (&st.connect).into()),
            ("processing", (&st.processing).into()),
            ("waiting", (&st.waiting).into()),
            ("total", (&st.total).into()),
        ]
        .into_iter()
        .collect(),
        latency: Latency {
            corrected: cfg.rate.is_some(),
            series: (&st.latency).into(),
        },
        service_time: (&st.total).into(),
    };
    let mut s = serde_json::to_string_pretty(&report).expect("serializable");
    s.push('\n');
    s
}

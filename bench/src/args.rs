//! Command-line flags: ApacheBench's, letter for letter, and what ab lacks.
//!
//! Parsing happens in two layers, like the server's config: clap reads the
//! raw flags into [`Flags`], and [`Config::try_from`] turns them into
//! checked values (durations, a request count or none, a method and body).
//! Errors name the flag.
//!
//! Every ab 2.3 flag means what it means in ab (`ab -h`), `-d` (no
//! percentile table) and `-f` (TLS protocol) included; what ab lacks has
//! long names ab does not use: `--duration`, `--file` (siege's URL file,
//! also `--urls-file`), `--http1.1`, `--siege`, `--json`, `--cores`...
//!
//! Where ab and this tool differ, on purpose:
//! - `-n` with `-t`: an explicit `-n` wins whatever the order (ab takes the
//!   last one given); `-t` alone still means ab's `-n 50000`.
//! - `-r` (don't exit on receive errors) is accepted and changes nothing:
//!   errors are always counted, never fatal.
//! - `-C` is repeatable (ab's help says so, but ab 2.3 keeps only the last).
//! - `-E`, `-Z`, `-f` and `-I` are checked as ab checks them (`-E` must
//!   name a readable file, as ab loads it even for http; `-f` one of ab's
//!   protocol names; `-Z` OpenSSL cipher-list characters only). Over https
//!   `-f` picks TLS1.2 or TLS1.3 (rustls has none older: the others are
//!   refused there) and `-Z` the suites by their OpenSSL names, in its
//!   order; without `-Z` AES-128-GCM is offered first (see `crate::tls`).
//!   `-E` and `-I` change nothing.
//! - https: the certificate is verified (system roots, or `--cacert`),
//!   where ab never verifies; `--insecure` skips it.
//! - `--h2` and `--h2c` speak HTTP/2, which ab does not; `--streams N`
//!   keeps N requests in flight per connection (h2load's `-m`: ab's `-m` is
//!   the method). HTTP/2 connections are always kept, `-k` or not.
//! - `--h3` speaks HTTP/3 over QUIC (https:// URLs, UDP to the same port),
//!   with `--streams` as for HTTP/2; always TLS 1.3 (`-f` may say no
//!   other), never through a proxy.
//! - `-B` and `-b` make each connect a blocking one (see [`crate::sock`]).
//! - `-R` with neither `-n` nor a duration runs for
//!   [`RATE_DEFAULT_DURATION`] (wrk2's default), not for ab's one request.
//! - With `--siege` the requests are siege's HTTP/1.1 (see
//!   [`crate::request`]); `--http1.0` asks for siege's `protocol = HTTP/1.0`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// ab's ceiling for `-t` without `-n` (ab's MAX_REQUESTS).
pub const TIMELIMIT_REQUESTS: u64 = 50_000;

/// How long `-R` runs with neither `-n` nor a duration: wrk2's default.
pub const RATE_DEFAULT_DURATION: Duration = Duration::from_secs(10);

#[derive(Parser, Debug)]
#[command(
    name = "ringside-bench",
    version,
    about = "An ApacheBench- and siege-compatible HTTP/1.x and HTTP/2 load generator: thread-per-core on io_uring, \
             open-loop rate mode with coordinated-omission-corrected latency",
    after_help = "Reports ab's layout by default, --siege for siege's, --json for machines.\n\n\
                  Commands:\n  \
                  shootout FILE.toml  Compare servers under load (ringside-bench help shootout)\n  \
                  help shootout       Print the shootout command's usage"
)]
pub struct Flags {
    /// Number of requests to perform (ab -n); unlimited with --duration, 50000 with -t
    #[arg(short = 'n', value_name = "requests")]
    pub requests: Option<u64>,
    /// Number of multiple requests to make at a time (connections)
    #[arg(short = 'c', value_name = "concurrency", default_value_t = 1)]
    pub concurrency: usize,
    /// Seconds to max. to spend on benchmarking (implies -n 50000 unless -n is given)
    #[arg(short = 't', value_name = "timelimit")]
    pub timelimit: Option<f64>,
    /// Run for this long: 10s, 500ms, 2m, or plain seconds (not an ab flag)
    #[arg(long = "duration", value_name = "duration")]
    pub duration: Option<String>,
    /// Seconds to wait for each connect, write and response (ab -s)
    #[arg(short = 's', value_name = "timeout", default_value_t = 30.0)]
    pub timeout: f64,
    /// Use HTTP KeepAlive: reuse each connection
    #[arg(short = 'k')]
    pub keepalive: bool,
    /// Add an arbitrary header line, e.g. 'Accept-Encoding: gzip' (repeatable)
    #[arg(short = 'H', value_name = "attribute")]
    pub headers: Vec<String>,
    /// Add cookie, e.g. 'Apache=1234' (repeatable)
    #[arg(short = 'C', value_name = "attribute")]
    pub cookies: Vec<String>,
    /// Add Basic WWW Authentication: user:password
    #[arg(short = 'A', value_name = "attribute")]
    pub auth: Option<String>,
    /// Method name
    #[arg(short = 'm', value_name = "method")]
    pub method: Option<String>,
    /// Use HEAD instead of GET
    #[arg(short = 'i')]
    pub head: bool,
    /// File containing data to POST (remember also to set -T)
    #[arg(short = 'p', value_name = "postfile")]
    pub postfile: Option<PathBuf>,
    /// File containing data to PUT (remember also to set -T)
    #[arg(short = 'u', value_name = "putfile")]
    pub putfile: Option<PathBuf>,
    /// Content-type header for POSTing, e.g. 'application/x-www-form-urlencoded'
    #[arg(short = 'T', value_name = "content-type")]
    pub content_type: Option<String>,
    /// Do not show progress
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Accept variable document length (no Length failures)
    #[arg(short = 'l')]
    pub variable_length: bool,
    /// Accepted for ab compatibility: receive errors are always counted, never fatal
    #[arg(short = 'r')]
    pub ignore_recv_errors: bool,
    /// How much troubleshooting info to print (2: response codes, 4: also the request)
    #[arg(short = 'v', value_name = "verbosity", default_value_t = 0)]
    pub verbosity: u8,
    /// Output CSV file with percentages served
    #[arg(short = 'e', value_name = "filename")]
    pub csv: Option<PathBuf>,
    /// Output collected data to gnuplot format file (one line a request)
    #[arg(short = 'g', value_name = "filename")]
    pub gnuplot: Option<PathBuf>,
    /// Do not show percentiles served table
    #[arg(short = 'd')]
    pub no_percentiles: bool,
    /// Do not show confidence estimators and warnings
    #[arg(short = 'S')]
    pub no_confidence: bool,
    /// Print out results in HTML tables
    #[arg(short = 'w')]
    pub html: bool,
    /// String to insert as table attributes (with -w)
    #[arg(short = 'x', value_name = "attributes")]
    pub table_attrs: Option<String>,
    /// String to insert as tr attributes (with -w)
    #[arg(short = 'y', value_name = "attributes")]
    pub tr_attrs: Option<String>,
    /// String to insert as td or th attributes (with -w)
    #[arg(short = 'z', value_name = "attributes")]
    pub td_attrs: Option<String>,
    /// Proxyserver and port number to use
    #[arg(short = 'X', value_name = "proxy:port")]
    pub proxy: Option<String>,
    /// Add Basic Proxy Authentication: user:password
    #[arg(short = 'P', value_name = "attribute")]
    pub proxy_auth: Option<String>,
    /// Size of TCP send/receive buffer, in bytes
    #[arg(short = 'b', value_name = "windowsize")]
    pub window: Option<u32>,
    /// Address to bind to when making outgoing connections
    #[arg(short = 'B', value_name = "address")]
    pub bind: Option<String>,
    /// Specify optional client certificate chain and private key (TLS)
    #[arg(short = 'E', value_name = "certfile")]
    pub client_cert: Option<PathBuf>,
    /// Specify SSL/TLS cipher suite (See openssl ciphers)
    #[arg(short = 'Z', value_name = "ciphersuite")]
    pub ciphers: Option<String>,
    /// Specify SSL/TLS protocol (SSL2, SSL3, TLS1, TLS1.1, TLS1.2, TLS1.3 or ALL)
    #[arg(short = 'f', value_name = "protocol")]
    pub tls_protocol: Option<String>,
    /// Disable TLS Server Name Indication (SNI) extension
    #[arg(short = 'I')]
    pub no_sni: bool,
    /// Print the results as JSON on stdout instead of a report
    #[arg(long)]
    pub json: bool,
    /// Act as siege: its request headers, its HTML parser (fetch each page's
    /// images, scripts and stylesheets), its report
    #[arg(long)]
    pub siege: bool,
    /// With --siege: do not fetch the assets of HTML pages (siege --no-parser)
    #[arg(long)]
    pub no_parser: bool,
    /// Runtimes, one per core, each pinned; connections are spread across them
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub cores: usize,
    /// Do not pin the runtimes to CPUs
    #[arg(long)]
    pub no_pin: bool,
    /// Open loop: send at this constant total rate (requests/second) and
    /// measure latency from each request's intended send time; 10 s unless -n or --duration
    #[arg(short = 'R', long = "rate", value_name = "RATE")]
    pub rate: Option<f64>,
    /// Requests written back to back on a connection before reading (implies -k)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub pipeline: usize,
    /// Send HTTP/1.1 requests (without -k: Connection: close) instead of ab's HTTP/1.0
    #[arg(long = "http1.1", alias = "http11", conflicts_with = "http10")]
    pub http11: bool,
    /// Send HTTP/1.0 requests, as ab does (the default; with --siege, siege's HTTP/1.1 is)
    #[arg(long = "http1.0", alias = "http10")]
    pub http10: bool,
    /// Read URLs from a file, one a line (siege's --file format: URL [POST data | POST <file])
    #[arg(long = "file", alias = "urls-file", value_name = "FILE")]
    pub url_file: Option<PathBuf>,
    /// I/O engine: auto (io_uring, or epoll when the kernel refuses it), io-uring, epoll
    #[arg(long, value_name = "NAME", default_value = "auto")]
    pub backend: String,
    /// io_uring, closed loop: wait up to this long for half of a core's connections to have news before handling any (0: wake for each; see README)
    #[arg(long = "batch-wait", value_name = "DURATION", default_value = "50us")]
    pub batch_wait: String,
    /// Progress display on stderr: auto (a live bar on a terminal, ab's lines otherwise), lines, bar, none
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub progress: String,
    // HTTPS and HTTP/2: long flags only, none of them ab's (ab's -Z/-f
    // pick ciphers and protocols; these pick verification and HTTP/2).
    /// https: do not verify the server's certificate (as curl -k)
    #[arg(long)]
    pub insecure: bool,
    /// https: verify against the PEM certificates in FILE instead of the system's
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https: offer these key-exchange groups only, `:`-separated (x25519mlkem768, x25519, p256, p384)
    #[arg(long, value_name = "GROUP")]
    pub tls_group: Option<String>,
    /// https: never resume a TLS session, so every handshake is a full one
    #[arg(long)]
    pub tls_no_resume: bool,
    /// HTTP/2 over TLS (https:// URLs), chosen by ALPN
    #[arg(long)]
    pub h2: bool,
    /// HTTP/2 over plain TCP by prior knowledge (http:// URLs)
    #[arg(long)]
    pub h2c: bool,
    /// HTTP/3 over QUIC (https:// URLs; UDP to the URL's port)
    #[arg(long)]
    pub h3: bool,
    /// With --h2/--h2c/--h3: concurrent streams per connection (h2load's -m)
    #[arg(long, value_name = "N")]
    pub streams: Option<usize>,

    /// http://hostname[:port]/path, or https://
    #[arg(value_name = "URL")]
    pub url: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Auto,
    IoUring,
    Epoll,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    Auto,
    Lines,
    Bar,
    None,
}

/// ab's HTML table attributes (-x, -y, -z), with ab's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HtmlAttrs {
    pub table: String,
    pub tr: String,
    pub td: String,
}

/// ab's -f values, compared case-insensitively as ab does.
pub const TLS_PROTOCOLS: [&str; 7] = ["SSL2", "SSL3", "TLS1", "TLS1.1", "TLS1.2", "TLS1.3", "ALL"];

/// Which HTTP/2, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum H2 {
    /// Over TLS, by ALPN.
    Tls,
    /// Cleartext, by prior knowledge.
    Cleartext,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportKind {
    Ab,
    Siege,
    Json,
}

/// The checked run description.
#[derive(Clone, Debug)]
pub struct Config {
    /// None: until the duration is over.
    pub requests: Option<u64>,
    pub concurrency: usize,
    pub duration: Option<Duration>,
    pub timeout: Duration,
    pub keepalive: bool,
    pub headers: Vec<(String, String)>,
    pub cookies: Vec<String>,
    pub auth: Option<String>,
    pub method: String,
    pub body: Option<Vec<u8>>,
    pub content_type: String,
    pub quiet: bool,
    pub variable_length: bool,
    pub verbosity: u8,
    pub csv: Option<PathBuf>,
    /// ab's -g: every request's times, tab-separated.
    pub gnuplot: Option<PathBuf>,
    /// ab's -d: no percentile table.
    pub no_percentiles: bool,
    /// ab's -S: Connection Times as min/avg/max, no sd, median or warnings.
    pub no_confidence: bool,
    /// ab's -w, with its -x, -y, -z attributes.
    pub html: Option<HtmlAttrs>,
    /// ab's -X: connect here and send absolute-form targets.
    pub proxy: Option<(String, u16)>,
    /// ab's -P: user:password for Proxy-Authorization.
    pub proxy_auth: Option<String>,
    /// ab's -b: SO_SNDBUF and SO_RCVBUF, in bytes.
    pub window: Option<u32>,
    /// ab's -B: the local address connections are bound to.
    pub bind: Option<std::net::IpAddr>,
    /// ab's -E, -Z, -f and -I: for https URLs (ab ignores them for http).
    pub tls_client_cert: Option<PathBuf>,
    pub tls_ciphers: Option<String>,
    pub tls_protocol: Option<String>,
    pub tls_no_sni: bool,
    /// --siege without --no-parser: fetch the assets of HTML pages.
    pub siege_parser: bool,
    pub report: ReportKind,
    pub cores: usize,
    pub pin: bool,
    pub rate: Option<f64>,
    pub pipeline: usize,
    pub http10: bool,
    pub url_file: Option<PathBuf>,
    pub url: Option<String>,
    pub backend: Backend,
    /// Longest coalesced wait of a closed-loop core on io_uring (zero: off).
    pub batch_wait: Duration,
    pub progress: ProgressMode,
    pub insecure: bool,
    pub cacert: Option<PathBuf>,
    /// --tls-group and --tls-no-resume (see `crate::tls::TlsOptions`).
    pub tls_group: Option<String>,
    pub tls_no_resume: bool,
    pub h2: Option<H2>,
    /// `--h3`: HTTP/3 over QUIC.
    pub h3: bool,
    /// Streams in flight per HTTP/2 or HTTP/3 connection.
    pub streams: usize,
}

/// Reads `10s`, `500ms`, `50us`, `2m`, `1h` or plain (fractional) seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Duration::from_secs_f64(v * scale)),
        _ => Err(format!(
            "expected a positive duration like 10s, 500ms or 2m, got {s:?}"
        )),
    }
}

fn positive_secs(flag: &str, v: f64) -> Result<Duration, String> {
    if v.is_finite() && v > 0.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(format!(
            "{flag}: expected a positive number of seconds, got {v}"
        ))
    }
}

impl TryFrom<Flags> for Config {
    type Error = String;

    fn try_from(f: Flags) -> Result<Config, String> {
        if f.concurrency == 0 {
            return Err("-c: the concurrency level must be at least 1".into());
        }
        if f.cores == 0 {
            return Err("--cores: at least 1".into());
        }
        if f.pipeline == 0 {
            return Err("--pipeline: at least 1".into());
        }
        if f.requests == Some(0) {
            return Err("-n: at least 1 request".into());
        }
        let mut duration = None;
        if let Some(t) = f.timelimit {
            duration = Some(positive_secs("-t", t)?);
        }
        if let Some(d) = &f.duration {
            if duration.is_some() {
                return Err("-t and --duration both set a duration; give one".into());
            }
            duration = Some(parse_duration(d).map_err(|e| format!("--duration: {e}"))?);
        }
        let requests = match (f.requests, f.timelimit, &f.duration) {
            (Some(n), _, _) => Some(n),
            (None, Some(_), _) => Some(TIMELIMIT_REQUESTS),
            (None, None, Some(_)) => None,
            // A rate alone runs for wrk2's default time, not for ab's 1 request.
            (None, None, None) if f.rate.is_some() => {
                duration = Some(RATE_DEFAULT_DURATION);
                None
            }
            (None, None, None) => Some(1),
        };
        if let Some(n) = requests {
            if duration.is_none() && (f.concurrency as u64) > n {
                return Err(
                    "Cannot use concurrency level greater than total number of requests".into(),
                );
            }
        }
        if let Some(r) = f.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(format!("-R: expected a positive rate, got {r}"));
            }
        }
        if f.rate.is_some() && f.pipeline > 1 {
            return Err("-R and --pipeline don't mix: a rate schedules single requests".into());
        }
        let timeout = positive_secs("-s", f.timeout)?;
        let mut headers = Vec::new();
        for h in &f.headers {
            let (name, value) = h
                .split_once(':')
                .ok_or_else(|| format!("-H: expected 'Name: value', got {h:?}"))?;
            let name = name.trim();
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Err(format!("-H: invalid header name {name:?}"));
            }
            let value = value.trim();
            if value.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(format!("-H: header {name} has a line break in its value"));
            }
            headers.push((name.to_string(), value.to_string()));
        }
        for c in &f.cookies {
            if c.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err("-C: line break in a cookie".into());
            }
        }
        if f.postfile.is_some() && f.putfile.is_some() {
            return Err("-p and -u: give one body file".into());
        }
        let (body, default_method) = match (&f.postfile, &f.putfile) {
            (Some(p), _) => (Some(read_file("-p", p)?), "POST"),
            (_, Some(p)) => (Some(read_file("-u", p)?), "PUT"),
            _ if f.head => (None, "HEAD"),
            _ => (None, "GET"),
        };
        let method = match &f.method {
            Some(m) if m.is_empty() || !m.bytes().all(is_tchar) => {
                return Err(format!("-m: invalid method {m:?}"))
            }
            Some(m) => m.clone(),
            None => default_method.to_string(),
        };
        let report = match (f.json, f.siege) {
            (true, true) => return Err("--json and --siege: give one".into()),
            (true, false) => ReportKind::Json,
            (false, true) => ReportKind::Siege,
            (false, false) => ReportKind::Ab,
        };
        let backend = match f.backend.as_str() {
            "auto" => Backend::Auto,
            "io-uring" | "io_uring" | "iouring" => Backend::IoUring,
            "epoll" => Backend::Epoll,
            other => {
                return Err(format!(
                    "--backend: expected auto, io-uring or epoll, got {other:?}"
                ))
            }
        };
        let batch_wait = match f.batch_wait.trim() {
            "0" => Duration::ZERO,
            w => parse_duration(w).map_err(|e| format!("--batch-wait: {e} (or 0: off)"))?,
        };
        if batch_wait > Duration::from_millis(10) {
            return Err(format!(
                "--batch-wait: at most 10ms (it delays what a core sees), got {}",
                f.batch_wait
            ));
        }
        let progress = match f.progress.as_str() {
            "auto" => ProgressMode::Auto,
            "lines" => ProgressMode::Lines,
            "bar" => ProgressMode::Bar,
            "none" => ProgressMode::None,
            other => {
                return Err(format!(
                    "--progress: expected auto, lines, bar or none, got {other:?}"
                ))
            }
        };
        let h2 = match (f.h2, f.h2c) {
            (true, true) => return Err("--h2 and --h2c: give one".into()),
            (true, false) => Some(H2::Tls),
            (false, true) => Some(H2::Cleartext),
            (false, false) => None,
        };
        if f.h3 && h2.is_some() {
            return Err("--h3 and --h2/--h2c: give one".into());
        }
        let streams = f.streams.unwrap_or(1);
        if h2.is_none() && !f.h3 && f.streams.is_some() {
            return Err("--streams needs --h2, --h2c or --h3".into());
        }
        if streams == 0 {
            return Err("--streams: at least 1".into());
        }
        if h2.is_some() || f.h3 {
            let which = if f.h3 { "--h3" } else { "--h2/--h2c" };
            if f.pipeline > 1 {
                return Err(format!(
                    "--pipeline is HTTP/1.1's; with {which} use --streams"
                ));
            }
            if f.rate.is_some() {
                return Err(format!("-R is not supported with {which}"));
            }
            if f.http10 {
                return Err(format!("--http1.0 and {which}: give one"));
            }
            if f.siege {
                return Err(format!(
                    "--siege speaks HTTP/1.x, as siege does: no {which}"
                ));
            }
        }
        if f.h3 {
            if f.proxy.is_some() {
                return Err("-X: no proxy for --h3 (QUIC goes straight to the server)".into());
            }
            if f.tls_protocol.as_deref().is_some_and(|p| {
                !p.eq_ignore_ascii_case("TLS1.3") && !p.eq_ignore_ascii_case("ALL")
            }) {
                return Err("-f: QUIC is TLS1.3 only (--h3)".into());
            }
        }
        if f.url.is_none() && f.url_file.is_none() {
            return Err("give a URL (http://host[:port]/path) or --file FILE".into());
        }
        let proxy = match &f.proxy {
            Some(p) => Some(parse_proxy(p)?),
            None => None,
        };
        for (flag, v) in [("-A", &f.auth), ("-P", &f.proxy_auth)] {
            if v.as_ref().is_some_and(|a| !a.contains(':')) {
                return Err(format!("{flag}: expected user:password"));
            }
        }
        if f.window == Some(0) {
            return Err("-b: the buffer size must be at least 1 byte".into());
        }
        let bind = match &f.bind {
            Some(a) => Some(parse_bind(a)?),
            None => None,
        };
        if let Some(c) = &f.client_cert {
            // ab loads the file at startup, whatever the URL's scheme.
            std::fs::File::open(c)
                .map_err(|e| format!("-E: unable to get certificate from {}: {e}", c.display()))?;
        }
        if let Some(z) = &f.ciphers {
            let ok = |b: u8| b.is_ascii_alphanumeric() || b"-_:+!@=.,".contains(&b);
            if z.is_empty() || !z.bytes().all(ok) {
                return Err(format!("-Z: error setting ciphersuite list [{z}]"));
            }
        }
        if let Some(p) = &f.tls_protocol {
            if !TLS_PROTOCOLS.iter().any(|t| t.eq_ignore_ascii_case(p)) {
                return Err(format!(
                    "-f: expected one of {}, got {p:?}",
                    TLS_PROTOCOLS.join(", ")
                ));
            }
        }
        if let Some(g) = &f.tls_group {
            crate::tls::groups_named(g)?;
        }
        let http10 = if f.siege { f.http10 } else { !f.http11 };
        Ok(Config {
            requests,
            concurrency: f.concurrency,
            duration,
            timeout,
            keepalive: f.keepalive || f.pipeline > 1,
            headers,
            cookies: f.cookies,
            auth: f.auth,
            method,
            body,
            content_type: f.content_type.unwrap_or_else(|| "text/plain".to_string()),
            quiet: f.quiet,
            variable_length: f.variable_length,
            verbosity: f.verbosity,
            csv: f.csv,
            gnuplot: f.gnuplot,
            no_percentiles: f.no_percentiles,
            no_confidence: f.no_confidence,
            html: f.html.then(|| HtmlAttrs {
                table: f.table_attrs.unwrap_or_default(),
                tr: f.tr_attrs.unwrap_or_default(),
                td: f.td_attrs.unwrap_or_else(|| "bgcolor=white".into()),
            }),
            proxy,
            proxy_auth: f.proxy_auth,
            window: f.window,
            bind,
            tls_client_cert: f.client_cert,
            tls_ciphers: f.ciphers,
            tls_protocol: f.tls_protocol,
            tls_no_sni: f.no_sni,
            siege_parser: f.siege && !f.no_parser,
            report,
            cores: f.cores,
            pin: !f.no_pin,
            rate: f.rate,
            pipeline: f.pipeline,
            http10,
            url_file: f.url_file,
            url: f.url,
            backend,
            batch_wait,
            progress,
            insecure: f.insecure,
            cacert: f.cacert,
            tls_group: f.tls_group,
            tls_no_resume: f.tls_no_resume,
            h2,
            h3: f.h3,
            streams,
        })
    }
}

/// ab's -X: `host[:port]`, port 80 when left out.
fn parse_proxy(p: &str) -> Result<(String, u16), String> {
    let (host, port) = match p.rsplit_once(':') {
        Some((h, port)) if !h.ends_with(']') || h.starts_with('[') => (
            h,
            port.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("-X: invalid port in {p:?}"))?,
        ),
        _ => (p, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("-X: expected proxy:port, got {p:?}"));
    }
    Ok((host.to_string(), port))
}

/// ab's -B: an address (or a name resolving to one) to bind to.
fn parse_bind(a: &str) -> Result<std::net::IpAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(ip) = a.trim_matches(['[', ']']).parse() {
        return Ok(ip);
    }
    (a, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .map(|sa| sa.ip())
        .ok_or_else(|| format!("-B: cannot resolve {a:?}"))
}

fn read_file(flag: &str, p: &PathBuf) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{flag}: cannot read {}: {e}", p.display()))
}

/// RFC 9110 §5.6.2 token characters.
pub fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Parses the command line; clap prints help, version and its own errors.
pub fn parse<I, T>(args: I) -> Result<Config, ArgError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let flags = Flags::try_parse_from(args).map_err(ArgError::Clap)?;
    Config::try_from(flags).map_err(ArgError::Invalid)
}

#[derive(Debug)]
pub enum ArgError {
    Clap(clap::Error),
    Invalid(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(args: &[&str]) -> Result<Config, String> {
        let mut v = vec!["ringside-bench"];
        v.extend_from_slice(args);
        parse(v).map_err(|e| match e {
            ArgError::Clap(e) => e.to_string(),
            ArgError::Invalid(s) => s,
        })
    }

    #[test]
    fn durations() {
        for (s, ms) in [
            ("10s", 10_000),
            ("500ms", 500),
            ("2m", 120_000),
            ("1.5", 1500),
            ("1h", 3_600_000),
        ] {
            assert_eq!(parse_duration(s).unwrap(), Duration::from_millis(ms), "{s}");
        }
        assert_eq!(parse_duration("50us").unwrap(), Duration::from_micros(50));
        for (flag, want) in [("0", 0), ("50us", 50), ("2ms", 2000)] {
            let c = cfg(&["--batch-wait", flag, "http://h/"]).unwrap();
            assert_eq!(c.batch_wait, Duration::from_micros(want), "{flag}");
        }
        assert_eq!(
            cfg(&["http://h/"]).unwrap().batch_wait,
            Duration::from_micros(50)
        );
        for bad in ["20ms", "soon", "-1"] {
            assert!(cfg(&["--batch-wait", bad, "http://h/"]).is_err(), "{bad}");
        }
        for bad in ["", "0", "-1s", "abc", "10x"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ab_defaults_and_request_counts() {
        let c = cfg(&["http://h/"]).unwrap();
        assert_eq!(
            (c.requests, c.concurrency, c.keepalive),
            (Some(1), 1, false)
        );
        assert_eq!(c.timeout, Duration::from_secs(30));
        let c = cfg(&["-t", "2", "http://h/"]).unwrap();
        assert_eq!(c.requests, Some(TIMELIMIT_REQUESTS));
        let c = cfg(&["-t", "2", "-n", "7", "http://h/"]).unwrap();
        assert_eq!(c.requests, Some(7));
        let c = cfg(&["--duration", "3s", "http://h/"]).unwrap();
        assert_eq!(
            (c.requests, c.duration),
            (None, Some(Duration::from_secs(3)))
        );
        assert!(cfg(&["-n", "2", "-c", "3", "http://h/"])
            .unwrap_err()
            .contains("concurrency level greater"));
        assert!(cfg(&["-t", "1", "--duration", "1s", "http://h/"]).is_err());
        let c = cfg(&["-R", "100", "http://h/"]).unwrap();
        assert_eq!(
            (c.requests, c.duration),
            (None, Some(RATE_DEFAULT_DURATION))
        );
        let c = cfg(&["-R", "100", "-n", "5", "http://h/"]).unwrap();
        assert_eq!((c.requests, c.duration), (Some(5), None));
    }

    #[test]
    fn methods_bodies_and_headers() {
        let c = cfg(&["-i", "http://h/"]).unwrap();
        assert_eq!(c.method, "HEAD");
        let c = cfg(&[
            "-m",
            "DELETE",
            "-H",
            "X-A: 1",
            "-H",
            "Accept:text/html",
            "http://h/",
        ])
        .unwrap();
        assert_eq!(c.method, "DELETE");
        assert_eq!(
            c.headers,
            vec![
                ("X-A".into(), "1".into()),
                ("Accept".into(), "text/html".into())
            ]
        );
        assert!(cfg(&["-H", "NoColon", "http://h/"]).is_err());
        assert!(cfg(&["-H", "Bad Name: x", "http://h/"]).is_err());
        assert!(cfg(&["-m", "GE T", "http://h/"]).is_err());
        assert!(cfg(&["-p", "/nonexistent/file", "http://h/"]).is_err());
    }

    #[test]
    fn beyond_ab() {
        let c = cfg(&["--pipeline", "8", "--cores", "2", "-R", "1000", "http://h/"]);
        assert!(c.is_err(), "rate with pipeline");
        let c = cfg(&["--pipeline", "8", "http://h/"]).unwrap();
        assert!(c.keepalive);
        let c = cfg(&["--json", "http://h/"]).unwrap();
        assert!(c.http10, "ab's HTTP/1.0 by default");
        let c = cfg(&["--http1.1", "--json", "http://h/"]).unwrap();
        assert!(!c.http10);
        assert!(
            !cfg(&["--siege", "http://h/"]).unwrap().http10,
            "siege's HTTP/1.1"
        );
        assert!(cfg(&["--siege", "--http1.0", "http://h/"]).unwrap().http10);
        assert!(cfg(&["--http1.1", "--http1.0", "http://h/"]).is_err());
        assert_eq!(c.report, ReportKind::Json);
        assert!(cfg(&["--json", "--siege", "http://h/"]).is_err());
        assert!(cfg(&["-R", "0", "http://h/"]).is_err());
        assert!(cfg(&["--backend", "kqueue", "http://h/"]).is_err());
        assert!(cfg(&[]).unwrap_err().contains("give a URL"));
        let c = cfg(&["--file", "urls.txt"]).unwrap();
        assert!(c.url.is_none());
        assert!(cfg(&["--urls-file", "urls.txt"]).unwrap().url.is_none());
    }

    #[test]
    fn ab_flags_mean_what_ab_says() {
        let c = cfg(&["-d", "-S", "-g", "/tmp/g.tsv", "http://h/"]).unwrap();
        assert!(c.no_percentiles && c.no_confidence);
        assert_eq!(
            c.gnuplot.as_deref(),
            Some(std::path::Path::new("/tmp/g.tsv"))
        );
        assert_eq!(c.duration, None, "-d takes no value and sets no duration");
        let c = cfg(&["-w", "-x", "border=1", "http://h/"]).unwrap();
        let h = c.html.unwrap();
        assert_eq!(
            (h.table.as_str(), h.tr.as_str(), h.td.as_str()),
            ("border=1", "", "bgcolor=white")
        );
        let c = cfg(&["-X", "proxy.example:3128", "-P", "u:p", "http://h/"]).unwrap();
        assert_eq!(c.proxy, Some(("proxy.example".into(), 3128)));
        assert_eq!(
            cfg(&["-X", "px", "http://h/"]).unwrap().proxy,
            Some(("px".into(), 80))
        );
        assert!(cfg(&["-X", "px:0", "http://h/"]).is_err());
        assert!(cfg(&["-P", "nocolon", "http://h/"]).is_err());
        let c = cfg(&["-b", "65536", "-B", "127.0.0.1", "http://h/"]).unwrap();
        assert_eq!(c.window, Some(65536));
        assert_eq!(c.bind, Some("127.0.0.1".parse().unwrap()));
        assert!(cfg(&["-b", "0", "http://h/"]).is_err());
        let c = cfg(&[
            "-f",
            "tls1.2",
            "-Z",
            "ECDHE-RSA-AES128-GCM-SHA256",
            "-I",
            "http://h/",
        ])
        .unwrap();
        assert_eq!(c.tls_protocol.as_deref(), Some("tls1.2"));
        assert_eq!(
            c.tls_ciphers.as_deref(),
            Some("ECDHE-RSA-AES128-GCM-SHA256")
        );
        assert!(c.tls_no_sni);
        assert!(cfg(&["-f", "TLS9", "http://h/"]).is_err());
        assert!(cfg(&["-Z", "bad cipher", "http://h/"]).is_err());
        assert!(cfg(&["-E", "/nonexistent/cert.pem", "http://h/"])
            .unwrap_err()
            .contains("unable to get certificate"));
        let c = cfg(&["--siege", "http://h/"]).unwrap();
        assert!(c.siege_parser);
        assert!(
            !cfg(&["--siege", "--no-parser", "http://h/"])
                .unwrap()
                .siege_parser
        );
    }

    #[test]
    fn tls_and_h2() {
        let c = cfg(&["--h2", "--streams", "10", "https://h/"]).unwrap();
        assert_eq!((c.h2, c.streams), (Some(H2::Tls), 10));
        let c = cfg(&["--h2c", "http://h/"]).unwrap();
        assert_eq!((c.h2, c.streams), (Some(H2::Cleartext), 1));
        assert!(cfg(&["--h2", "--h2c", "http://h/"]).is_err());
        assert!(cfg(&["--streams", "4", "http://h/"]).is_err());
        assert!(cfg(&["--h2c", "--streams", "0", "http://h/"]).is_err());
        assert!(cfg(&["--h2c", "--pipeline", "2", "http://h/"]).is_err());
        let c = cfg(&["--insecure", "--cacert", "x.pem", "https://h/"]).unwrap();
        assert!(c.insecure && c.cacert.is_some());
        let c = cfg(&[
            "--tls-group",
            "X25519MLKEM768",
            "--tls-no-resume",
            "https://h/",
        ])
        .unwrap();
        assert_eq!(c.tls_group.as_deref(), Some("X25519MLKEM768"));
        assert!(c.tls_no_resume);
        assert!(cfg(&["--tls-group", "x448", "https://h/"])
            .unwrap_err()
            .contains("--tls-group"));
    }

    #[test]
    fn h3() {
        let c = cfg(&[
            "--h3",
            "--streams",
            "10",
            "-n",
            "8",
            "-c",
            "4",
            "https://h/",
        ])
        .unwrap();
        assert!(c.h3);
        assert_eq!((c.h2, c.streams, c.concurrency), (None, 10, 4));
        let c = cfg(&["--h3", "https://h/"]).unwrap();
        assert_eq!((c.h3, c.streams), (true, 1));
        assert!(!cfg(&["--h2", "https://h/"]).unwrap().h3);
        for other in ["--h2", "--h2c"] {
            assert!(cfg(&["--h3", other, "https://h/"])
                .unwrap_err()
                .contains("--h3 and --h2/--h2c"));
        }
        assert!(cfg(&["--h3", "--streams", "0", "https://h/"]).is_err());
        for bad in [
            &["--pipeline", "2"][..],
            &["-R", "100"],
            &["--http1.0"],
            &["--siege"],
            &["-X", "proxy:3128"],
            &["-f", "TLS1.2"],
        ] {
            let mut a = vec!["--h3"];
            a.extend_from_slice(bad);
            a.push("https://h/");
            assert!(cfg(&a).is_err(), "{bad:?}");
        }
        assert!(cfg(&["--h3", "-f", "TLS1.3", "--insecure", "https://h/"]).is_ok());
        assert!(cfg(&["--streams", "4", "https://h/"])
            .unwrap_err()
            .contains("--h3"));
    }
}

//! ApacheBench's report, line for line: the same labels, column widths,
//! units, rounding and conditional lines as ab 2.3's `output_results`, so
//! that eyes and scripts used to ab read it unchanged. Compared against
//! `ab` line by line (see the tests of this crate).
//!
//! ab's conventions kept here:
//! - times in the Connection Times table are whole milliseconds, rounded
//!   half up (`ap_round_ms`); the sd is the sample standard deviation with
//!   one decimal;
//! - "Failed requests" has its breakdown line only when non-zero; "Write
//!   errors", "Non-2xx responses", "Keep-Alive requests", "Total body sent"
//!   and the sent/total transfer lines appear only when ab would print them;
//! - the WARNING/ERROR lines under the table when a row's mean and median
//!   are more than one (two) standard deviations apart;
//! - the percentile table only with more than one complete request.
//!
//! - `-d`: no percentile table; `-S`: the Connection Times table as
//!   min/avg/max, without sd, median or the warnings; `-g`: ab's gnuplot
//!   file (see [`gnuplot`]); `-w`: the HTML tables of [`crate::report_html`].
//!
//! Beyond ab, and only with the flags that ab lacks, `-R`:
//! - a "Target rate" line, and a WARNING (also on stderr) when the
//!   achieved rate fell below [`RATE_SHORTFALL`] of it;
//! - "Time per request (mean)" is the mean latency measured, not ab's
//!   concurrency × time / requests, which only equals it in a closed loop;
//! - the percentile table is of latency measured from each request's
//!   intended send time (see [`crate::rate`]), said under it, in µs when
//!   the median is under a millisecond (ab's whole milliseconds would print
//!   a column of zeros), else in ms.
//!
//! With `--h2`/`--h2c`/`--h3`: "Streams per connection" (and "Streams
//! reset" when the server reset any). Over https: ab's own TLS lines after "Server
//! Port", and "TLS sessions resumed", which ab lacks.

use std::fmt::Write;

use crate::hist::{round_ms, Series};
use crate::Finished;

/// Below this share of the `-R` target, the report warns.
pub const RATE_SHORTFALL: f64 = 0.95;

/// The warning for a rate that fell short of `-R`, if it did.
pub fn rate_warning(target: f64, achieved: f64) -> Option<String> {
    (achieved < target * RATE_SHORTFALL).then(|| {
        format!(
            "WARNING: achieved {achieved:.2} [#/sec], {:.1}% of the -R target of {target:.2}; \
             the server (or this client) could not keep up",
            achieved / target * 100.0
        )
    })
}

/// The percentiles ab prints.
pub const AB_PERCENTILES: [u32; 9] = [50, 66, 75, 80, 90, 95, 98, 99, 100];

/// ab's banner, before the run.
pub fn banner(host: &str, progress_lines: bool) -> String {
    format!(
        "This is ringside-bench, Version {}\n\
         An ApacheBench-compatible load generator, thread-per-core on io_uring\n\
         Licensed under MIT OR Apache-2.0\n\
         \n\
         Benchmarking {host} (be patient){}",
        env!("CARGO_PKG_VERSION"),
        if progress_lines { "\n" } else { "..." }
    )
}

pub fn render(f: &Finished) -> String {
    let cfg = f.cfg;
    let c = &f.result.stats.counts;
    let st = &f.result.stats;
    let url = &f.targets[0].url;
    let secs = f.result.elapsed.as_secs_f64();
    let done = c.complete;
    let mut o = String::new();
    let _ = writeln!(o, "\n");
    let _ = writeln!(o, "Server Software:        {}", f.server());
    let _ = writeln!(o, "Server Hostname:        {}", url.host);
    let _ = writeln!(o, "Server Port:            {}", url.port);
    if let Some(t) = f.shared.tls_info.get() {
        let _ = writeln!(
            o,
            "SSL/TLS Protocol:       {},{},{},{}",
            t.protocol, t.cipher, t.key_bits, t.cipher_bits
        );
        if !t.temp_key.is_empty() {
            let _ = writeln!(o, "Server Temp Key:        {}", t.temp_key);
        }
        // Beyond ab: the group by name, X25519MLKEM768 being no "temp key".
        if !t.group.is_empty() {
            let _ = writeln!(o, "TLS Key Exchange:       {}", t.group);
        }
        if let Some(name) = &t.server_name {
            let _ = writeln!(o, "TLS Server Name:        {name}");
        }
        // Beyond ab: how many handshakes resumed a session.
        let _ = writeln!(
            o,
            "TLS sessions resumed:   {} of {} handshakes",
            c.tls_resumed, c.tls_handshakes
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Document Path:          {}", url.path);
    match f.doc_len() {
        Some(len) if !cfg.variable_length => {
            let _ = writeln!(o, "Document Length:        {len} bytes");
        }
        Some(_) => {
            let _ = writeln!(o, "Document Length:        Variable");
        }
        None => {
            let _ = writeln!(o, "Document Length:        0 bytes");
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Concurrency Level:      {}", cfg.concurrency);
    if cfg.h2.is_some() || cfg.h3 {
        // Beyond ab: HTTP/2's (or 3's) requests in flight per connection.
        let _ = writeln!(o, "Streams per connection: {}", cfg.streams);
    }
    let _ = writeln!(o, "Time taken for tests:   {secs:.3} seconds");
    let _ = writeln!(o, "Complete requests:      {done}");
    let _ = writeln!(o, "Failed requests:        {}", c.failed());
    if c.failed() > 0 {
        let _ = writeln!(
            o,
            "   (Connect: {}, Receive: {}, Length: {}, Exceptions: {})",
            c.failed_connect, c.failed_receive, c.failed_length, c.failed_exception
        );
    }
    if c.write_errors > 0 {
        let _ = writeln!(o, "Write errors:           {}", c.write_errors);
    }
    if c.h2_resets > 0 {
        let _ = writeln!(o, "Streams reset:          {}", c.h2_resets);
    }
    if c.non_2xx > 0 {
        let _ = writeln!(o, "Non-2xx responses:      {}", c.non_2xx);
    }
    if cfg.keepalive {
        let _ = writeln!(o, "Keep-Alive requests:    {}", c.keepalive);
    }
    let _ = writeln!(o, "Total transferred:      {} bytes", c.bytes_read);
    let body = f.targets.iter().any(|t| t.body_len > 0);
    if body {
        let _ = writeln!(o, "Total body sent:        {}", c.body_sent);
    }
    let _ = writeln!(o, "HTML transferred:       {} bytes", c.body_bytes);
    if secs > 0.0 && done > 0 {
        let d = done as f64;
        let _ = writeln!(o, "Requests per second:    {:.2} [#/sec] (mean)", d / secs);
        if let Some(r) = cfg.rate {
            let _ = writeln!(o, "Target rate:            {r:.2} [#/sec] (-R)");
            if let Some(w) = rate_warning(r, d / secs) {
                let _ = writeln!(o, "{w}");
            }
        }
        let per_request_ms = match cfg.rate {
            Some(_) => st.latency.mean_us() / 1000.0,
            None => cfg.concurrency as f64 * secs * 1000.0 / d,
        };
        let _ = writeln!(o, "Time per request:       {per_request_ms:.3} [ms] (mean)");
        let _ = writeln!(
            o,
            "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
            secs * 1000.0 / d
        );
        let _ = writeln!(
            o,
            "Transfer rate:          {:.2} [Kbytes/sec] received",
            c.bytes_read as f64 / 1024.0 / secs
        );
        if body {
            let _ = writeln!(
                o,
                "                        {:.2} kb/s sent",
                c.body_sent as f64 / 1024.0 / secs
            );
            let _ = writeln!(
                o,
                "                        {:.2} kb/s total",
                (c.bytes_read + c.body_sent) as f64 / 1024.0 / secs
            );
        }
    }
    if done > 0 {
        if cfg.no_confidence {
            connection_times_short(&mut o, st);
        } else {
            connection_times(&mut o, st);
        }
        if done > 1 && !cfg.no_percentiles {
            percentiles(&mut o, cfg.rate.is_some(), st);
        }
    }
    o
}

fn percentiles(o: &mut String, rate: bool, st: &crate::stats::Stats) {
    let micros = rate && st.latency.quantile_us(0.5) < 1000;
    let unit = if micros { "us" } else { "ms" };
    let fmt = |us: u64| if micros { us } else { round_ms(us as f64) };
    let _ = writeln!(
        o,
        "\nPercentage of the requests served within a certain time ({unit})"
    );
    for p in AB_PERCENTILES {
        let v = fmt(st.latency.quantile_us(f64::from(p) / 100.0));
        if p == 100 {
            let _ = writeln!(o, " 100%  {v:5} (longest request)");
        } else {
            let _ = writeln!(o, "  {p}%  {v:5}");
        }
    }
    if rate {
        let scale = if micros { 1.0 } else { 1000.0 };
        let _ = writeln!(
            o,
            "  (-R: from each request's intended send time, coordinated omission corrected;\n   \
             from the actual send: 50% {:.3} {unit}, 99% {:.3} {unit}, 100% {:.3} {unit})",
            st.total.quantile_us(0.5) as f64 / scale,
            st.total.quantile_us(0.99) as f64 / scale,
            st.total.max_us() as f64 / scale
        );
    }
}

/// The rows of ab's Connection Times, labelled as ab labels them.
fn time_rows(st: &crate::stats::Stats) -> [(&'static str, &crate::hist::Series); 4] {
    [
        ("Connect:    ", &st.connect),
        ("Processing: ", &st.processing),
        ("Waiting:    ", &st.waiting),
        ("Total:      ", &st.total),
    ]
}

/// ab's `-S` table: min, avg and max, no spread and no warnings.
fn connection_times_short(o: &mut String, st: &crate::stats::Stats) {
    let _ = writeln!(o, "\nConnection Times (ms)");
    let _ = writeln!(o, "              min   avg   max");
    for (label, s) in time_rows(st) {
        let (min, mean, _, _, max) = row(s);
        // ab's format has no space before the max column.
        let _ = writeln!(o, "{label}{min:5} {mean:5}{max:5}");
    }
}

/// ab's `-g` file: a header, then one line per request, sorted by total
/// time as ab leaves them: its start (ctime format, local time, and epoch
/// seconds), then connect, processing, total and waiting times in ms.
pub fn gnuplot(samples: &[crate::stats::Sample]) -> String {
    let (now_i, now_s) = (std::time::Instant::now(), std::time::SystemTime::now());
    let mut sorted: Vec<&crate::stats::Sample> = samples.iter().collect();
    sorted.sort_by_key(|s| s.total_us);
    let mut o = String::from("starttime\tseconds\tctime\tdtime\tttime\twait\n");
    for s in sorted {
        let wall = now_s - now_i.saturating_duration_since(s.start);
        let secs = wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let _ = writeln!(
            o,
            "{}\t{secs}\t{}\t{}\t{}\t{}",
            ctime(secs as i64),
            round_ms(s.connect_us as f64),
            round_ms(s.total_us.saturating_sub(s.connect_us) as f64),
            round_ms(s.total_us as f64),
            round_ms(s.wait_us as f64)
        );
    }
    o
}

/// `Fri Dec 04 10:01:43 2026`, local time, as apr_ctime writes it.
fn ctime(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = secs as libc::time_t;
    // SAFETY: localtime_r reads t and writes only into the struct we pass.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::localtime_r(&t, &mut tm) };
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} {}",
        DAYS[tm.tm_wday.clamp(0, 6) as usize],
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}

/// One row's figures in ab's units: (min, mean, sd, median, max).
pub fn row(s: &Series) -> (u64, u64, f64, u64, u64) {
    (
        round_ms(s.min_us() as f64),
        // ab divides the µs total by the count in integers, then rounds.
        round_ms(s.mean_us().floor()),
        s.sd_us() / 1000.0,
        round_ms(s.quantile_us(0.5) as f64),
        round_ms(s.max_us() as f64),
    )
}

fn connection_times(o: &mut String, st: &crate::stats::Stats) {
    let _ = writeln!(o, "\nConnection Times (ms)");
    let _ = writeln!(o, "              min  mean[+/-sd] median   max");
    for (label, s) in time_rows(st) {
        let (min, mean, sd, median, max) = row(s);
        let _ = writeln!(o, "{label}{min:5} {mean:4} {sd:5.1} {median:6} {max:7}");
    }
    let sane = [
        ("the initial connection time", &st.connect),
        ("the processing time", &st.processing),
        ("the waiting time", &st.waiting),
        ("the total time", &st.total),
    ];
    for (what, s) in sane {
        let (_, mean, sd, median, _) = row(s);
        let d = (mean as f64 - median as f64).abs();
        if d > 2.0 * sd {
            let _ = writeln!(
                o,
                "ERROR: The median and mean for {what} are more than twice the standard\n       \
                 deviation apart. These results are NOT reliable."
            );
        } else if d > sd {
            let _ = writeln!(
                o,
                "WARNING: The median and mean for {what} are not within a normal deviation\n        \
                 These results are probably not that reliable."
            );
        }
    }
}

/// ab's `-e` file: the time (ms) within which each percentage (0..=100)
/// of the requests was served.
pub fn csv(s: &Series) -> String {
    let mut o = String::from("Percentage served,Time in ms\n");
    for i in 0..=100u32 {
        let _ = writeln!(
            o,
            "{i},{:.3}",
            s.quantile_us(f64::from(i) / 100.0) as f64 / 1000.0
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_like_ab() {
        let mut s = Series::new();
        for us in [400, 600, 1500, 2600] {
            s.record(us);
        }
        let (min, mean, sd, median, max) = row(&s);
        // Median: the histogram's 50% value, 600 us.
        assert_eq!((min, mean, median, max), (0, 1, 1, 3));
        assert!((sd - 1.0046).abs() < 1e-3, "{sd}");
    }

    #[test]
    fn rate_percentiles_in_the_unit_that_fits() {
        let mut st = crate::stats::Stats::default();
        for us in [150, 200, 250, 300, 2600] {
            st.latency.record(us);
            st.total.record(us);
        }
        let mut o = String::new();
        percentiles(&mut o, true, &st);
        assert!(o.contains("within a certain time (us)"), "{o}");
        assert!(
            o.contains("  50%    250\n") || o.contains("  50%    200\n"),
            "{o}"
        );
        assert!(o.contains(" 100%   2600 (longest request)"), "{o}");
        // ab's whole milliseconds without -R, and when the median is 1 ms or more.
        let mut o = String::new();
        percentiles(&mut o, false, &st);
        assert!(o.contains("within a certain time (ms)"), "{o}");
        for us in [3000, 4000, 5000, 6000] {
            st.latency.record(us);
        }
        let mut o = String::new();
        percentiles(&mut o, true, &st);
        assert!(o.contains("within a certain time (ms)"), "{o}");
    }

    #[test]
    fn rate_shortfall_warns_below_95_percent() {
        assert!(rate_warning(1000.0, 960.0).is_none());
        let w = rate_warning(1000.0, 500.0).unwrap();
        assert!(w.contains("50.0% of the -R target"), "{w}");
    }

    #[test]
    fn gnuplot_lines_are_abs() {
        let start = std::time::Instant::now();
        let s = |total_us| crate::stats::Sample {
            start,
            connect_us: 400,
            total_us,
            wait_us: 1500,
        };
        let text = gnuplot(&[s(2600), s(900)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "starttime\tseconds\tctime\tdtime\tttime\twait");
        let f: Vec<&str> = lines[1].split('\t').collect();
        // Sorted by total time; a ctime date; ms rounded as ab rounds them.
        assert_eq!(&f[2..], ["0", "1", "1", "2"]);
        assert_eq!(f[0].len(), "Fri Dec 04 10:01:43 2026".len(), "{}", f[0]);
        assert!(f[1].parse::<u64>().unwrap() > 1_700_000_000);
        assert_eq!(lines[2].split('\t').nth(4), Some("3"));
    }

    #[test]
    fn csv_has_101_rows() {
        let mut s = Series::new();
        for us in 1..=1000 {
            s.record(us);
        }
        let text = csv(&s);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 102);
        assert_eq!(lines[0], "Percentage served,Time in ms");
        assert_eq!(lines[1], "0,0.001");
        assert_eq!(lines[101], "100,1.000");
    }
}

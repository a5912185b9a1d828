//! ab's `-w` report: its HTML tables, row for row as ab 2.3's
//! `output_html_results` prints them, with the `-x`, `-y` and `-z`
//! attributes on the table, row and cell tags (`bgcolor=white` on cells
//! unless `-z` says otherwise). Like ab's, it has no Waiting row and no
//! percentile table, and its Connection Times are min/avg/max with the
//! processing column derived from the total and connect ones.

use std::fmt::Write;

use crate::hist::round_ms;
use crate::Finished;

/// ab's banner under `-w`, before the run.
pub fn banner() -> String {
    format!(
        "<p>\n \
         This is ringside-bench, Version {} <i>&lt;ApacheBench-compatible&gt;</i><br>\n \
         Licensed under MIT OR Apache-2.0<br>\n\
         </p>\n<p>\n",
        env!("CARGO_PKG_VERSION")
    )
}

fn row(o: &mut String, tr: &str, td: &str, label: &str, value: String) {
    let _ = writeln!(
        o,
        "<tr {tr}><th colspan=2 {td}>{label}:</th><td colspan=2 {td}>{value}</td></tr>"
    );
}

pub fn render(f: &Finished) -> String {
    let cfg = f.cfg;
    let a = cfg.html.as_ref().expect("-w");
    let (tr, td) = (a.tr.as_str(), a.td.as_str());
    let c = &f.result.stats.counts;
    let st = &f.result.stats;
    let url = &f.targets[0].url;
    let secs = f.result.elapsed.as_secs_f64();
    let mut o = String::new();
    let _ = writeln!(o, "\n\n<table {}>", a.table);
    row(&mut o, tr, td, "Server Software", f.server().to_string());
    row(&mut o, tr, td, "Server Hostname", url.host.clone());
    row(&mut o, tr, td, "Server Port", url.port.to_string());
    row(&mut o, tr, td, "Document Path", url.path.clone());
    row(
        &mut o,
        tr,
        td,
        "Document Length",
        if cfg.variable_length {
            "Variable".into()
        } else {
            format!("{} bytes", f.doc_len().unwrap_or(0))
        },
    );
    row(
        &mut o,
        tr,
        td,
        "Concurrency Level",
        cfg.concurrency.to_string(),
    );
    row(
        &mut o,
        tr,
        td,
        "Time taken for tests",
        format!("{secs:.3} seconds"),
    );
    row(&mut o, tr, td, "Complete requests", c.complete.to_string());
    row(&mut o, tr, td, "Failed requests", c.failed().to_string());
    if c.failed() > 0 {
        let _ = writeln!(
            o,
            "<tr {tr}><td colspan=4 {td} >   (Connect: {}, Length: {}, Exceptions: {})</td></tr>",
            c.failed_connect,
            c.failed_length,
            c.failed_exception + c.failed_receive
        );
    }
    if c.non_2xx > 0 {
        row(&mut o, tr, td, "Non-2xx responses", c.non_2xx.to_string());
    }
    if cfg.keepalive {
        row(
            &mut o,
            tr,
            td,
            "Keep-Alive requests",
            c.keepalive.to_string(),
        );
    }
    row(
        &mut o,
        tr,
        td,
        "Total transferred",
        format!("{} bytes", c.bytes_read),
    );
    let body = f.targets.iter().any(|t| t.body_len > 0);
    if body {
        row(&mut o, tr, td, "Total body sent", c.body_sent.to_string());
    }
    row(
        &mut o,
        tr,
        td,
        "HTML transferred",
        format!("{} bytes", c.body_bytes),
    );
    if secs > 0.0 {
        row(
            &mut o,
            tr,
            td,
            "Requests per second",
            format!("{:.2}", c.complete as f64 / secs),
        );
        row(
            &mut o,
            tr,
            td,
            "Transfer rate",
            format!("{:.2} kb/s received", c.bytes_read as f64 / 1024.0 / secs),
        );
    }
    if secs > 0.0 && body {
        for (what, bytes) in [("sent", c.body_sent), ("total", c.bytes_read + c.body_sent)] {
            let _ = writeln!(
                o,
                "<tr {tr}><td colspan=2 {td}>&nbsp;</td><td colspan=2 {td}>{:.2} kb/s {what}</td></tr>",
                bytes as f64 / 1024.0 / secs
            );
        }
    }
    if let Some(n) = std::num::NonZeroU64::new(c.complete) {
        let n = n.get();
        // ab rounds the sums to ms, then divides in integers.
        let min_con = round_ms(st.connect.min_us() as f64);
        let max_con = round_ms(st.connect.max_us() as f64);
        let min_tot = round_ms(st.total.min_us() as f64);
        let max_tot = round_ms(st.total.max_us() as f64);
        let sum_con = round_ms(st.connect.sum_us());
        let sum_tot = round_ms(st.total.sum_us());
        let _ = writeln!(
            o,
            "<tr {tr}><th {td} colspan=4>Connection Times (ms)</th></tr>"
        );
        let _ = writeln!(
            o,
            "<tr {tr}><th {td}>&nbsp;</th> <th {td}>min</th>   <th {td}>avg</th>   <th {td}>max</th></tr>"
        );
        let rows = [
            ("Connect", min_con, sum_con / n, max_con),
            (
                "Processing",
                min_tot.saturating_sub(min_con),
                (sum_tot / n).saturating_sub(sum_con / n),
                max_tot.saturating_sub(max_con),
            ),
            ("Total", min_tot, sum_tot / n, max_tot),
        ];
        for (label, min, avg, max) in rows {
            let _ = writeln!(
                o,
                "<tr {tr}><th {td}>{label}:</th><td {td}>{min:5}</td><td {td}>{avg:5}</td><td {td}>{max:5}</td></tr>"
            );
        }
    }
    let _ = writeln!(o, "</table>");
    o
}

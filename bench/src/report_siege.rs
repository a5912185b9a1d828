//! siege's end-of-run report (`--siege`), in siege 4's text layout: labels,
//! tabs and `%12` columns as siege prints them.
//!
//! siege's meanings, mapped onto this tool's counts:
//! - Transactions: complete responses ("hits"), whatever their status,
//!   the pages' assets included (see [`crate::assets`]), so `-n N -c C`
//!   counts as `siege -r N/C -c C`;
//! - Availability: transactions / (transactions + socket failures), in %;
//! - Data transferred: body bytes, assets' included, in MB (2^20 bytes);
//! - Response time: mean time per transaction, in seconds;
//! - Transaction rate: transactions per second of elapsed time;
//! - Throughput: MB of bodies per second;
//! - Concurrency: total time spent in transactions / elapsed time, the
//!   average number of transactions in flight;
//! - Successful transactions: responses with a status below 400;
//! - Failed transactions: requests that got no response (Connect, Receive,
//!   Exceptions; a Length mismatch is not a failure to siege);
//! - Longest and Shortest transaction: in seconds.

use std::fmt::Write;

use crate::Finished;

pub fn render(f: &Finished) -> String {
    let c = &f.result.stats.counts;
    let total = &f.result.stats.total;
    let elapsed = f.result.elapsed.as_secs_f64();
    let hits = c.complete;
    let failed = c.socket_failures();
    let mb = c.body_bytes as f64 / (1024.0 * 1024.0);
    let per_sec = |v: f64| if elapsed > 0.0 { v / elapsed } else { 0.0 };
    let availability = if hits == 0 {
        0.0
    } else {
        hits as f64 / (hits + failed) as f64 * 100.0
    };
    let secs = |us: f64| us / 1e6;
    let mut o = String::new();
    let _ = writeln!(o, "\nTransactions:\t\t{hits:12} hits");
    let _ = writeln!(o, "Availability:\t\t{availability:12.2} %");
    let _ = writeln!(o, "Elapsed time:\t\t{elapsed:12.2} secs");
    let _ = writeln!(o, "Data transferred:\t{mb:12.2} MB");
    let _ = writeln!(o, "Response time:\t\t{:12.2} secs", secs(total.mean_us()));
    let _ = writeln!(
        o,
        "Transaction rate:\t{:12.2} trans/sec",
        per_sec(hits as f64)
    );
    let _ = writeln!(o, "Throughput:\t\t{:12.2} MB/sec", per_sec(mb));
    let _ = writeln!(o, "Concurrency:\t\t{:12.2}", per_sec(secs(total.sum_us())));
    let _ = writeln!(o, "Successful transactions:{:12}", c.below_400());
    let _ = writeln!(o, "Failed transactions:\t{failed:12}");
    let _ = writeln!(
        o,
        "Longest transaction:\t{:12.2}",
        secs(total.max_us() as f64)
    );
    let _ = writeln!(
        o,
        "Shortest transaction:\t{:12.2}",
        secs(total.min_us() as f64)
    );
    let _ = writeln!(o, " ");
    o
}

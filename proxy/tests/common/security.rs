//! The harness of the `h1_security_*` suites: raw requests sent to the real
//! binary, proxying to a [`Recorder`], each followed by a pipelined request
//! that must run only when the one before it was sound.
//!
//! For every case it checks both ends: what the client got, and what the
//! upstream received. A refused request must reach the upstream not at all
//! (a cut body may start, never complete); an accepted one must arrive
//! exactly once, framed one way, with the body the client meant.
#![allow(dead_code)]

use std::time::Duration;

use super::client::Conn;
use super::recorder::{Recorded, Recorder};
use super::{Ringside, TempDir};

/// What a case must lead to.
#[derive(Clone, Copy, Debug)]
pub enum Want {
    /// This status from ringside, `Connection: close`, the connection
    /// closed, the pipelined request never run, nothing upstream.
    Refused(u16),
    /// Forwarded once with this body, then the pipelined request too.
    Passed(&'static [u8]),
}

pub struct Case {
    pub name: &'static str,
    pub bytes: &'static [u8],
    pub want: Want,
}

pub const fn case(name: &'static str, bytes: &'static [u8], want: Want) -> Case {
    Case { name, bytes, want }
}

/// The request pipelined behind every case.
pub const FOLLOW: &[u8] = b"GET /after HTTP/1.1\r\nHost: t\r\n\r\n";

pub struct Bench {
    pub rs: Ringside,
    pub rec: Recorder,
    _dir: TempDir,
}

impl Bench {
    /// ringside (1 worker, io_uring) proxying everything to a recorder;
    /// `extra` is added to the config (e.g. a `[limits]` table).
    pub fn start(extra: &str) -> Bench {
        let rec = Recorder::start();
        let dir = TempDir::new("h1sec");
        let cfg = dir.write(
            "ringside.toml",
            format!(
                "{extra}\n[upstream.rec]\nservers = [\"127.0.0.1:{}\"]\n\n[[route]]\nprefix = \"/\"\nupstream = \"rec\"\n",
                rec.port()
            )
            .as_bytes(),
        );
        let rs = Ringside::configured("io-uring", &cfg);
        Bench { rs, rec, _dir: dir }
    }

    /// Runs every case, then fails listing each one that went wrong.
    pub fn run(&self, cases: &[Case]) {
        let mut failures = Vec::new();
        for c in cases {
            if let Err(why) = self.run_one(c) {
                failures.push(format!("{}: {why}", c.name));
            }
        }
        let anomalies = self.rec.anomalies();
        assert!(
            failures.is_empty() && anomalies.is_empty(),
            "{} of {} cases failed:\n  {}\nupstream saw ambiguous requests:\n  {}",
            failures.len(),
            cases.len(),
            failures.join("\n  "),
            anomalies.join("\n  ")
        );
    }

    /// Sends one case with [`FOLLOW`] behind it and checks both ends.
    pub fn run_one(&self, c: &Case) -> Result<(), String> {
        let before = self.rec.count();
        let mut conn = Conn::open(self.rs.addr);
        let mut bytes = c.bytes.to_vec();
        bytes.extend_from_slice(FOLLOW);
        conn.send(&bytes);
        let first = conn.read(false).ok_or("no response")?;
        match c.want {
            Want::Refused(status) => {
                if first.status != status {
                    return Err(format!("status {} (want {status})", first.status));
                }
                if first.header("connection").as_deref() != Some("close") {
                    return Err("no Connection: close on a refusal".into());
                }
                if let Some(r) = conn.read(false) {
                    return Err(format!("pipelined request ran: {}", r.status));
                }
                let got = self.rec.count() - before;
                if got != 0 {
                    return Err(format!("{got} request(s) reached the upstream"));
                }
            }
            Want::Passed(body) => {
                if first.status != 200 || first.header("x-recorder").is_none() {
                    return Err(format!(
                        "status {} not from upstream: {}",
                        first.status, first.head
                    ));
                }
                let after = conn.read(false).ok_or("pipelined request not answered")?;
                if after.status != 200 {
                    return Err(format!("pipelined request got {}", after.status));
                }
                let new: Vec<Recorded> = self.rec.requests().split_off(before);
                let [req, next] = &new[..] else {
                    return Err(format!("{} requests upstream, want 2: {new:?}", new.len()));
                };
                check_forwarded(req, body)?;
                if next.target != "/after" {
                    return Err(format!("second upstream request is {}", next.target));
                }
            }
        }
        Ok(())
    }

    /// The last request the upstream got.
    pub fn last(&self) -> Recorded {
        self.rec.requests().pop().expect("a request upstream")
    }

    /// Sends `bytes` alone and returns the first response's status, for
    /// cases that need a closer look than a table row.
    pub fn status_of(&self, bytes: &[u8]) -> u16 {
        let mut conn = Conn::open(self.rs.addr);
        conn.send(bytes);
        conn.read(false).map_or(0, |r| r.status)
    }
}

/// One forwarded request: the body meant, framed by exactly one field that
/// the proxy wrote itself, no trailers, one Host.
fn check_forwarded(req: &Recorded, body: &[u8]) -> Result<(), String> {
    if req.body != body {
        return Err(format!(
            "upstream body {:?}, want {:?}",
            String::from_utf8_lossy(&req.body),
            String::from_utf8_lossy(body)
        ));
    }
    let cl = req.header("content-length");
    let te = req.header("transfer-encoding");
    let framed = match (&cl[..], &te[..]) {
        ([n], []) => n.parse::<usize>().ok() == Some(body.len()),
        ([], ["chunked"]) => true,
        ([], []) => body.is_empty(),
        _ => false,
    };
    if !framed {
        return Err(format!("upstream framing CL {cl:?} TE {te:?}"));
    }
    if !req.trailers.is_empty() {
        return Err(format!("trailers forwarded: {:?}", req.trailers));
    }
    for (n, _) in &req.headers {
        // Names a backend may read as a framing or hop-by-hop field.
        let canon = n.to_ascii_lowercase().replace('_', "-");
        if n.contains('_')
            && matches!(
                canon.as_str(),
                "content-length" | "transfer-encoding" | "host" | "connection"
            )
        {
            return Err(format!("look-alike of a framing field forwarded: {n}"));
        }
    }
    Ok(())
}

/// A bound for waits in these tests, never a readiness signal.
pub const LIMIT: Duration = Duration::from_secs(20);

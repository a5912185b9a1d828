//! Access log lines: nginx's "combined" (with the request time appended, as
//! nginx's commonly used `$request_time` extension) and one JSON object per
//! line.
//!
//! Bytes from the client are escaped as nginx escapes them (`"`, `\`, and
//! bytes outside printable ASCII as `\xHH`), so a request cannot forge a
//! line or break the format.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ringside_http::date::civil_from_days;

use crate::upstream::outcome::Outcome;

/// What a line says about one request.
pub struct Entry<'a> {
    pub peer: Option<SocketAddr>,
    /// The user basic auth took the request for (nginx's `$remote_user`).
    pub user: Option<&'a [u8]>,
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub version: &'a str,
    pub status: u16,
    pub body_bytes: u64,
    pub referer: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
    pub host: Option<&'a [u8]>,
    pub elapsed: Duration,
    /// What the request's upstream tries came to (empty when none).
    pub upstream: Outcome,
    /// The limit that refused it: `"rate"` (a `[[rate_limit]]`) or
    /// `"connections"` (`max_client_connections`).
    pub limited: Option<&'static str>,
    /// What a route's cache did (nginx's `$upstream_cache_status`: HIT,
    /// MISS, EXPIRED, REVALIDATED, STALE, UPDATING, BYPASS); none on a
    /// route without a cache.
    pub cache: Option<&'static str>,
    /// The client came on a unix socket: without an address, the line
    /// says `unix:` as nginx's `$remote_addr` does.
    pub unix: bool,
    /// The subject of the connection's verified client certificate
    /// (nginx's `$ssl_client_s_dn`), JSON only.
    pub client_cert_subject: Option<&'a str>,
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The wall-clock second now, and its (year, month, day, h, m, s) in UTC.
fn now_utc() -> (u64, (u32, u32, u32, u64, u64, u64)) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, mo, d) = civil_from_days(secs / 86_400);
    let s = secs % 86_400;
    (secs, (y, mo, d, s / 3600, s / 60 % 60, s % 60))
}

thread_local! {
    /// This second's two time strings, made once per second per core.
    static TIMES: std::cell::RefCell<(u64, String, String)> =
        const { std::cell::RefCell::new((u64::MAX, String::new(), String::new())) };
}

fn with_times<R>(f: impl FnOnce(&str, &str) -> R) -> R {
    TIMES.with(|t| {
        let mut t = t.borrow_mut();
        let (secs, (y, mo, d, h, mi, s)) = now_utc();
        if t.0 != secs {
            t.0 = secs;
            t.1 = format!(
                "{d:02}/{}/{y}:{h:02}:{mi:02}:{s:02} +0000",
                MONTHS[mo as usize - 1]
            );
            t.2 = format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z");
        }
        f(&t.1, &t.2)
    })
}

/// Appends `bytes` with `"` and `\` backslashed and every byte outside
/// printable ASCII written by `other` (`\xHH` for combined, `\u00hh` for
/// JSON, one code point per byte so nothing is lost).
fn escape(out: &mut Vec<u8>, bytes: &[u8], other: fn(&mut Buf<'_>, u8) -> std::fmt::Result) {
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                out.push(b'\\');
                out.push(b);
            }
            0x20..=0x7e => out.push(b),
            _ => {
                let _ = other(&mut Buf(out), b);
            }
        }
    }
}

fn esc_combined(out: &mut Vec<u8>, bytes: &[u8]) {
    escape(out, bytes, |w, b| write!(w, "\\x{b:02X}"));
}

fn esc_json(out: &mut Vec<u8>, bytes: &[u8]) {
    escape(out, bytes, |w, b| write!(w, "\\u{b:04x}"));
}

/// `fmt::Write` into a byte buffer.
struct Buf<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Buf<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// `$remote_addr - $remote_user [$time_local] "$request" $status
/// $body_bytes_sent "$http_referer" "$http_user_agent" $request_time`
pub fn combined(out: &mut Vec<u8>, e: &Entry<'_>) {
    let _ = match e.peer {
        Some(p) => write!(Buf(out), "{} - ", p.ip()),
        None if e.unix => write!(Buf(out), "unix: - "),
        None => write!(Buf(out), "- - "),
    };
    match e.user {
        Some(u) => esc_combined(out, u),
        None => out.push(b'-'),
    }
    with_times(|local, _| {
        let _ = write!(Buf(out), " [{local}] \"");
    });
    if e.method.is_empty() {
        // No request could be read (nginx writes "-" too).
        out.push(b'-');
    } else {
        esc_combined(out, e.method);
        out.push(b' ');
        esc_combined(out, e.target);
        out.push(b' ');
        out.extend_from_slice(e.version.as_bytes());
    }
    let _ = write!(Buf(out), "\" {} {} \"", e.status, e.body_bytes);
    esc_combined(out, e.referer.unwrap_or(b"-"));
    out.extend_from_slice(b"\" \"");
    esc_combined(out, e.user_agent.unwrap_or(b"-"));
    let _ = writeln!(Buf(out), "\" {:.3}", e.elapsed.as_secs_f64());
}

/// One JSON object: time, remote, user (basic auth's, else null), method,
/// uri, protocol, status,
/// body_bytes, referer, user_agent, host, request_time (seconds),
/// upstream_status (as nginx's `$upstream_status`: `"502, 200"` after a
/// retry, `"-"` without a status), upstream_error (the reason of the
/// last failed try, `"-"` when none failed), limited (`"rate"` or
/// `"connections"` for a request a limit refused, else null) and cache
/// (what a route's cache did, see [`Entry::cache`], else null), and
/// client_cert_subject where the connection verified a client certificate.
pub fn json(out: &mut Vec<u8>, e: &Entry<'_>) {
    with_times(|_, iso| {
        let _ = write!(Buf(out), "{{\"time\":\"{iso}\",\"remote\":");
    });
    match e.peer {
        Some(p) => {
            let _ = write!(Buf(out), "\"{}\"", p.ip());
        }
        None if e.unix => out.extend_from_slice(b"\"unix:\""),
        None => out.extend_from_slice(b"null"),
    }
    match e.user {
        Some(u) => {
            out.extend_from_slice(b",\"user\":\"");
            esc_json(out, u);
            out.push(b'"');
        }
        None => out.extend_from_slice(b",\"user\":null"),
    }
    for (key, value) in [("method", Some(e.method)), ("uri", Some(e.target))] {
        let _ = write!(Buf(out), ",\"{key}\":\"");
        esc_json(out, value.unwrap_or(b""));
        out.push(b'"');
    }
    let _ = write!(
        Buf(out),
        ",\"protocol\":\"{}\",\"status\":{},\"body_bytes\":{}",
        e.version,
        e.status,
        e.body_bytes
    );
    for (key, value) in [
        ("referer", e.referer),
        ("user_agent", e.user_agent),
        ("host", e.host),
    ] {
        match value {
            Some(v) => {
                let _ = write!(Buf(out), ",\"{key}\":\"");
                esc_json(out, v);
                out.push(b'"');
            }
            None => {
                let _ = write!(Buf(out), ",\"{key}\":null");
            }
        }
    }
    let _ = write!(
        Buf(out),
        ",\"request_time\":{:.6},\"upstream_status\":\"",
        e.elapsed.as_secs_f64()
    );
    let _ = e.upstream.write_status(&mut Buf(out));
    let _ = write!(
        Buf(out),
        "\",\"upstream_error\":\"{}\",\"limited\":",
        e.upstream.error()
    );
    let _ = match e.limited {
        Some(l) => write!(Buf(out), "\"{l}\""),
        None => write!(Buf(out), "null"),
    };
    let _ = match e.cache {
        Some(c) => write!(Buf(out), ",\"cache\":\"{c}\""),
        None => write!(Buf(out), ",\"cache\":null"),
    };
    // Only where there is one: a config without client certificates
    // writes the lines it wrote before.
    if let Some(s) = e.client_cert_subject {
        out.extend_from_slice(b",\"client_cert_subject\":\"");
        esc_json(out, s.as_bytes());
        out.push(b'"');
    }
    out.extend_from_slice(b"}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(target: &'a [u8], ua: Option<&'a [u8]>) -> Entry<'a> {
        Entry {
            peer: Some("127.0.0.1:5555".parse().unwrap()),
            user: None,
            method: b"GET",
            target,
            version: "HTTP/1.1",
            status: 200,
            body_bytes: 26,
            referer: None,
            user_agent: ua,
            host: Some(b"example.com"),
            elapsed: Duration::from_micros(1500),
            upstream: Outcome::default(),
            limited: None,
            cache: None,
            unix: false,
            client_cert_subject: None,
        }
    }

    #[test]
    fn combined_escapes_what_could_forge_a_line() {
        let mut out = Vec::new();
        combined(&mut out, &entry(b"/a\"b", Some(b"x\n\"y\\")));
        let line = String::from_utf8(out).unwrap();
        assert!(line.starts_with("127.0.0.1 - - ["), "{line}");
        assert!(
            line.ends_with("] \"GET /a\\\"b HTTP/1.1\" 200 26 \"-\" \"x\\x0A\\\"y\\\\\" 0.002\n"),
            "{line}"
        );
        assert_eq!(line.matches('\n').count(), 1);

        let mut out = Vec::new();
        let mut e = entry(b"/", None);
        e.user = Some(b"al\"ice");
        combined(&mut out, &e);
        let line = String::from_utf8(out).unwrap();
        assert!(line.starts_with("127.0.0.1 - al\\\"ice ["), "{line}");
    }

    #[test]
    fn a_unix_socket_client_is_unix() {
        let e = Entry {
            peer: None,
            unix: true,
            ..entry(b"/", None)
        };
        let mut out = Vec::new();
        combined(&mut out, &e);
        assert!(
            out.starts_with(b"unix: - - ["),
            "{}",
            String::from_utf8_lossy(&out)
        );
        out.clear();
        json(&mut out, &e);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(",\"remote\":\"unix:\","), "{text}");
    }

    #[test]
    fn json_is_one_object_per_line() {
        let mut out = Vec::new();
        json(&mut out, &entry(b"/\xff", None));
        let line = String::from_utf8(out).unwrap();
        let v: serde_json::Value = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(v["uri"], "/\u{ff}");
        assert_eq!(v["status"], 200);
        assert_eq!(v["user_agent"], serde_json::Value::Null);
        assert_eq!(v["host"], "example.com");
        assert_eq!(v["request_time"], 0.0015);
        assert_eq!(v["upstream_status"], "-");
        assert_eq!(v["upstream_error"], "-");
        assert_eq!(v["limited"], serde_json::Value::Null);
        assert_eq!(v["user"], serde_json::Value::Null);

        let mut out = Vec::new();
        let mut e = entry(b"/", None);
        e.status = 429;
        e.limited = Some("rate");
        json(&mut out, &e);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            (v["status"].as_u64(), v["limited"].as_str()),
            (Some(429), Some("rate"))
        );
    }
}

//! gRPC through the proxy: which requests are gRPC, their own deadline
//! (`grpc-timeout`), and failures of ringside's own answered in gRPC's
//! terms (HTTP 200 with `grpc-status`), never with an HTML error page.

use std::time::Duration;

use ringside_http::{Error, Exchange, Kind};

/// gRPC status codes ringside answers with.
pub const DEADLINE_EXCEEDED: u32 = 4;
pub const RESOURCE_EXHAUSTED: u32 = 8;
pub const INTERNAL: u32 = 13;
pub const UNAVAILABLE: u32 = 14;
pub const INVALID_ARGUMENT: u32 = 3;

/// Whether the request is gRPC by its content-type (`application/grpc`,
/// `application/grpc+proto`...; gRPC-Web is not).
pub fn is_grpc(ex: &Exchange<'_>) -> bool {
    ex.header("content-type").is_some_and(|v| {
        let v = v.to_ascii_lowercase();
        v == b"application/grpc"
            || v.starts_with(b"application/grpc+")
            || v.starts_with(b"application/grpc;")
    })
}

/// `grpc-timeout`: up to 8 digits and a unit (H, M, S, m, u, n).
pub fn timeout(ex: &Exchange<'_>) -> Option<Duration> {
    parse_timeout(ex.header("grpc-timeout")?)
}

pub fn parse_timeout(v: &[u8]) -> Option<Duration> {
    let (&unit, digits) = v.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The gRPC status for a failure of ringside's own; `deadline_passed`:
/// the call's `grpc-timeout` ran out.
pub fn status_of(e: &Error, deadline_passed: bool) -> u32 {
    if deadline_passed {
        return DEADLINE_EXCEEDED;
    }
    match e.kind() {
        Kind::BodyTooLarge | Kind::HeadersTooLarge | Kind::Overloaded => RESOURCE_EXHAUSTED,
        Kind::BadRequest | Kind::UriTooLong | Kind::NotImplemented => INVALID_ARGUMENT,
        Kind::ClientTimeout => DEADLINE_EXCEEDED,
        Kind::Internal => INTERNAL,
        _ => UNAVAILABLE,
    }
}

/// Answers a failed call: a trailers-only response before any head went
/// out, else the trailers that end the response under way.
pub async fn answer(ex: &mut Exchange<'_>, status: u32, message: &str) -> Result<(), Error> {
    let mut d = [0u8; 20];
    let code = ringside_http::grammar::decimal(u64::from(status), &mut d).to_vec();
    let msg = percent_encode(message);
    let trailers = [
        (&b"grpc-status"[..], &code[..]),
        (&b"grpc-message"[..], msg.as_bytes()),
    ];
    if ex.responded() {
        return ex.finish_with_trailers(trailers.into_iter()).await;
    }
    let hs = [(&b"content-type"[..], &b"application/grpc"[..])]
        .into_iter()
        .chain(trailers);
    ex.start_from(200, hs, ringside_http::Body::Sized(0))
}

/// `grpc-message` is percent-encoded (gRPC's HTTP/2 protocol spec).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (b' '..=b'~').contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_read_as_the_spec_writes_them() {
        assert_eq!(parse_timeout(b"100m"), Some(Duration::from_millis(100)));
        assert_eq!(parse_timeout(b"2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse_timeout(b"1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_timeout(b"5000u"), Some(Duration::from_millis(5)));
        assert_eq!(parse_timeout(b"123456789S"), None);
        assert_eq!(parse_timeout(b"S"), None);
        assert_eq!(parse_timeout(b"10x"), None);
        assert_eq!(parse_timeout(b"-1S"), None);
    }

    #[test]
    fn messages_are_percent_encoded() {
        assert_eq!(percent_encode("no server: 100%"), "no server: 100%25");
        assert_eq!(percent_encode("é"), "%C3%A9");
    }
}

//! The CGI response head at the start of a FastCGI application's STDOUT
//! (RFC 3875 §6), parsed strictly.
//!
//! # Background
//!
//! A CGI response is header fields, an empty line, then the body
//! (RFC 3875 §6.2). There is no status line: the `Status` field sets the
//! status (§6.3.3), a `Location` without it is a redirect (§6.2.3, §6.2.4),
//! and otherwise the status is 200. Scripts end lines with LF or CRLF
//! (§6.1 allows the system's newline), so both are accepted, mixed too.
//!
//! # How it works
//!
//! [`parse_cgi_head`] is called with the STDOUT content gathered so far.
//! Like the upstream response parser it never allocates and never guesses:
//!
//! 1. Only the first `max` bytes are looked at (at most 65 535, so spans
//!    fit `u16`); a head not ended within them is
//!    [`CgiHeadError::TooLarge`]. An incomplete head is `Ok(false)`, never
//!    an error, but the lines already complete are checked at once.
//! 2. Each line is `name ":" value`. The name must be a token (RFC 9110
//!    §5.1), with nothing before the colon; a line starting with a space or
//!    tab is obs-fold (RFC 9112 §5.2) and refused; a value with a control
//!    byte other than tab (a bare CR among them) is refused, so a script
//!    cannot split the response. Values are returned without the spaces and
//!    tabs around them.
//! 3. `Status` must be a three-digit code in 200..=599, alone or followed
//!    by whitespace and a reason phrase; more than one is refused. A 1xx is
//!    refused too: a script cannot send an interim response before its
//!    real one. `Status` is taken out of the header list; its reason is
//!    kept in [`CgiHead::reason`].
//! 4. `Location` without `Status` makes the status 302: for a
//!    client redirect (absolute URL) as RFC 3875 §6.2.3 says, and also for
//!    a local redirect (a path, §6.2.2), which this server does not follow
//!    internally but passes to the client. An empty `Location` is refused.
//! 5. `Content-Length` must be 1*DIGIT, at most 2^62; several fields must
//!    agree. It stays in the header list and is also reported in
//!    [`CgiHead::content_length`], for the caller to check the body against.
//! 6. A head with no field at all is refused (§6.2: a response has at least
//!    one CGI field).
//!
//! Hop-by-hop fields (`Connection`, `Transfer-Encoding`, ...) are not the
//! script's to send (§6.3: fields about the client connection are the
//! server's); they are kept in the list, and [`is_hop_by_hop`] tells the
//! caller which to drop.

use ringside_http::grammar::{is_tchar, parse_length};
use ringside_http::head::{Fields, Span};

/// Header fields kept for one head (`Status` not counted); more is
/// [`CgiHeadError::TooManyHeaders`].
pub const MAX_CGI_HEADERS: usize = 100;

/// Largest `Content-Length` accepted (2^62), as for upstream responses.
pub const MAX_CONTENT_LENGTH: u64 = 1 << 62;

/// A parsed CGI response head. Spans refer to the parsed buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgiHead {
    /// From `Status`, else 302 with a `Location`, else 200.
    pub status: u16,
    /// The reason phrase after the `Status` code; empty if none.
    pub reason: Span,
    /// Bytes of the head, through the empty line. The body starts here.
    pub head_len: usize,
    /// The script's valid `Content-Length`, if it sent one.
    pub content_length: Option<u64>,
    fields: Fields,
}

impl CgiHead {
    /// A blank slot for [`parse_cgi_head`].
    pub fn empty() -> Self {
        CgiHead {
            status: 0,
            reason: Span::default(),
            head_len: 0,
            content_length: None,
            fields: Fields::with_capacity(MAX_CGI_HEADERS),
        }
    }

    /// Header fields in order, `Status` left out, as (name as sent, value
    /// without surrounding whitespace).
    pub fn headers<'a>(
        &'a self,
        buf: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone + 'a {
        self.fields.iter(buf)
    }

    /// Value of the first header named `name` (ASCII case-insensitive).
    #[cfg(test)]
    pub fn header<'a>(&self, buf: &'a [u8], name: &str) -> Option<&'a [u8]> {
        self.fields.get(buf, name)
    }

    /// The reason phrase from `Status`; empty if none.
    #[cfg(test)]
    pub fn reason<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        self.reason.get(buf)
    }
}

/// Why a CGI response head was refused: the proxy answers the client 502.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CgiHeadError {
    #[error("CGI response head too large")]
    TooLarge,
    #[error("CGI response head with too many header fields")]
    TooManyHeaders,
    #[error("CGI response head without any header field")]
    NoHeaders,
    #[error("CGI response header line without a valid field name")]
    BadName,
    #[error("CGI response header folded over lines (obs-fold)")]
    ObsFold,
    #[error("CGI response header value with a control character")]
    BadValue,
    #[error("CGI Status not a code in 200..=599 with an optional reason, or repeated")]
    BadStatus,
    #[error("CGI Content-Length invalid or conflicting")]
    BadContentLength,
    #[error("CGI Location empty")]
    BadLocation,
}

use CgiHeadError::*;

pub use ringside_http::hop::is_hop_by_hop;

fn span(start: usize, end: usize) -> Span {
    Span {
        start: start as u16,
        end: end as u16,
    }
}

/// `Status`: the code, and where the reason starts within `v` (trimmed).
fn parse_status(v: &[u8]) -> Option<(u16, usize)> {
    let digits = v.get(..3)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let code = digits.iter().fold(0u16, |n, d| n * 10 + (d - b'0') as u16);
    if !(200..=599).contains(&code) {
        return None;
    }
    match v.get(3) {
        None => Some((code, 3)),
        Some(b' ' | b'\t') => {
            let ws = v[3..]
                .iter()
                .take_while(|&&b| b == b' ' || b == b'\t')
                .count();
            Some((code, 3 + ws))
        }
        Some(_) => None,
    }
}

/// Parses the CGI response head at the start of `buf` into `out`.
///
/// `Ok(false)`: the head is not complete yet (read more and call again with
/// the longer buffer; `out` is then unspecified). `Ok(true)`: `out` holds a
/// complete, valid head; the body starts at `out.head_len`. `max` bounds the
/// head (capped at 65 535).
pub fn parse_cgi_head(buf: &[u8], max: usize, out: &mut CgiHead) -> Result<bool, CgiHeadError> {
    let max = max.min(u16::MAX as usize);
    let window = &buf[..buf.len().min(max)];
    out.reason = Span::default();
    out.content_length = None;
    out.fields.clear();
    let mut status = None;
    let mut location = false;
    let mut fields = 0usize;
    let mut pos = 0;
    loop {
        let Some(nl) = window[pos..].iter().position(|&b| b == b'\n') else {
            // A full window that is still partial can never complete within it.
            return if window.len() >= max {
                Err(TooLarge)
            } else {
                Ok(false)
            };
        };
        let next = pos + nl + 1;
        let mut end = pos + nl;
        if end > pos && window[end - 1] == b'\r' {
            end -= 1;
        }
        let line = &window[pos..end];
        if line.is_empty() {
            if fields == 0 {
                return Err(NoHeaders);
            }
            out.status = status.unwrap_or(if location { 302 } else { 200 });
            out.head_len = next;
            return Ok(true);
        }
        if line[0] == b' ' || line[0] == b'\t' {
            return Err(ObsFold);
        }
        let colon = line.iter().position(|&b| b == b':').ok_or(BadName)?;
        let name = &line[..colon];
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            return Err(BadName);
        }
        let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
        let lead = line[colon + 1..].iter().take_while(|b| is_ows(b)).count();
        let trail = line[colon + 1 + lead..]
            .iter()
            .rev()
            .take_while(|b| is_ows(b))
            .count();
        let (vstart, vend) = (pos + colon + 1 + lead, end - trail);
        let value = &window[vstart..vend];
        if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(BadValue);
        }
        let start = pos;
        fields += 1;
        pos = next;

        if name.eq_ignore_ascii_case(b"status") {
            if status.is_some() {
                return Err(BadStatus);
            }
            let (code, reason) = parse_status(value).ok_or(BadStatus)?;
            status = Some(code);
            out.reason = span(vstart + reason, vend);
            continue;
        }
        if name.eq_ignore_ascii_case(b"location") {
            if value.is_empty() {
                return Err(BadLocation);
            }
            location = true;
        } else if name.eq_ignore_ascii_case(b"content-length") {
            let n = parse_length(value, MAX_CONTENT_LENGTH).ok_or(BadContentLength)?;
            if out.content_length.is_some_and(|m| m != n) {
                return Err(BadContentLength);
            }
            out.content_length = Some(n);
        }
        if out.fields.len() == MAX_CGI_HEADERS {
            return Err(TooManyHeaders);
        }
        out.fields
            .push(span(start, start + colon), span(vstart, vend));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (status, headers, head_len, content_length)
    type Head = (u16, Vec<(String, String)>, usize, Option<u64>);
    type Outcome = Result<Option<Head>, CgiHeadError>;

    fn parse(input: &[u8], max: usize) -> Outcome {
        let mut out = CgiHead::empty();
        let done = parse_cgi_head(input, max, &mut out)?;
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Ok(done.then(|| {
            let headers = out.headers(input).map(|(n, v)| (s(n), s(v))).collect();
            (out.status, headers, out.head_len, out.content_length)
        }))
    }

    fn done(status: u16, headers: &[(&str, &str)], head_len: usize, cl: Option<u64>) -> Outcome {
        let h = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        Ok(Some((status, h, head_len, cl)))
    }

    const MORE: Outcome = Ok(None);
    const CT: (&str, &str) = ("Content-Type", "text/html");

    #[test]
    fn head_table() {
        #[rustfmt::skip]
        let cases: Vec<(&[u8], Outcome)> = vec![
            // default, Status, Location
            (b"Content-Type: text/html\r\n\r\nbody", done(200, &[CT], 27, None)),
            (b"Status: 404 Not Found\r\nContent-Type: text/html\r\n\r\n", done(404, &[CT], 50, None)),
            (b"Content-Type: text/html\r\nstatus:  503\r\n\r\n", done(503, &[CT], 41, None)),
            (b"Status: 200\r\n\r\n", done(200, &[], 15, None)),
            (b"STATUS: 599 x\r\n\r\n", done(599, &[], 17, None)),
            (b"Location: https://example.com/\r\n\r\n", done(302, &[("Location", "https://example.com/")], 34, None)),
            (b"Location: /local/path?q\r\n\r\n", done(302, &[("Location", "/local/path?q")], 27, None)),
            (b"Status: 301 Moved\r\nLocation: /x\r\n\r\n", done(301, &[("Location", "/x")], 35, None)),
            (b"Location: /x\r\nStatus: 201\r\n\r\n", done(201, &[("Location", "/x")], 29, None)),
            // LF only, mixed line ends, whitespace trimmed, names as sent
            (b"Content-Type: text/html\n\nbody", done(200, &[CT], 25, None)),
            (b"Status: 404\nX-A: 1\r\nX-B:2\n\r\n", done(404, &[("X-A", "1"), ("X-B", "2")], 28, None)),
            (b"x-a: \t spaced \t \r\n\n", done(200, &[("x-a", "spaced")], 19, None)),
            (b"X-Empty:\r\nX-Empty2:   \r\n\r\n", done(200, &[("X-Empty", ""), ("X-Empty2", "")], 26, None)),
            (b"X-Obs: caf\xc3\xa9 a\tb\n\n", done(200, &[("X-Obs", "café a\tb")], 18, None)),
            (b"Connection: close\nTransfer-Encoding: chunked\n\n", done(200, &[("Connection", "close"), ("Transfer-Encoding", "chunked")], 46, None)),
            // Content-Length
            (b"Content-Length: 5\r\n\r\nhello", done(200, &[("Content-Length", "5")], 21, Some(5))),
            (b"Content-Length: 0\nContent-Length: 0\n\n", done(200, &[("Content-Length", "0"), ("Content-Length", "0")], 37, Some(0))),
            (b"Content-Length: 4611686018427387904\n\n", done(200, &[("Content-Length", "4611686018427387904")], 37, Some(1 << 62))),
            (b"Content-Length: 4611686018427387905\n\n", Err(BadContentLength)),
            (b"Content-Length: 99999999999999999999\n\n", Err(BadContentLength)),
            (b"Content-Length: 5\nContent-Length: 6\n\n", Err(BadContentLength)),
            (b"Content-Length: 5, 5\n\n", Err(BadContentLength)),
            (b"Content-Length: +5\n\n", Err(BadContentLength)),
            (b"Content-Length: -1\n\n", Err(BadContentLength)),
            (b"Content-Length:\n\n", Err(BadContentLength)),
            // incomplete, checked as far as it goes
            (b"", MORE),
            (b"Content-Type: text/html", MORE),
            (b"Content-Type: text/html\r\n", MORE),
            (b"Content-Type: text/html\r\n\r", MORE),
            (b"Status: 404\r\nX-A: 1", MORE),
            (b"Status: 99\r\nX-A: 1", Err(BadStatus)),
            // Status errors
            (b"Status: 99\n\n", Err(BadStatus)),
            (b"Status: 100 Continue\n\n", Err(BadStatus)),
            (b"Status: 199\n\n", Err(BadStatus)),
            (b"Status: 600\n\n", Err(BadStatus)),
            (b"Status: 4040\n\n", Err(BadStatus)),
            (b"Status: 404x\n\n", Err(BadStatus)),
            (b"Status: abc\n\n", Err(BadStatus)),
            (b"Status:\n\n", Err(BadStatus)),
            (b"Status: 200\nStatus: 200\n\n", Err(BadStatus)),
            // names, folding, control bytes
            (b"X A: 1\n\n", Err(BadName)),
            (b"X-A : 1\n\n", Err(BadName)),
            (b": 1\n\n", Err(BadName)),
            (b"no colon here\n\n", Err(BadName)),
            (b"X(A): 1\n\n", Err(BadName)),
            (b"X-A: 1\n continued\n\n", Err(ObsFold)),
            (b"X-A: 1\n\tcontinued\n\n", Err(ObsFold)),
            (b" X-A: 1\n\n", Err(ObsFold)),
            (b"X-A: a\rb\n\n", Err(BadValue)),
            (b"X-A: a\r\r\n\r\n", Err(BadValue)),
            (b"X-A: a\x00b\n\n", Err(BadValue)),
            (b"X-A: a\x7f\n\n", Err(BadValue)),
            (b"\r\r\n\r\n", Err(BadName)),
            // no fields, empty Location
            (b"\r\nbody", Err(NoHeaders)),
            (b"\n", Err(NoHeaders)),
            (b"Location:  \n\n", Err(BadLocation)),
        ];
        for (i, (input, want)) in cases.iter().enumerate() {
            let got = parse(input, 8192);
            assert_eq!(got, *want, "case {i}: {:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn size_limit_table() {
        let head = b"Content-Type: text/html\r\n\r\n"; // 27 bytes
                                                       // (bytes given, max, outcome)
        #[rustfmt::skip]
        let cases: &[(usize, usize, bool, Option<CgiHeadError>)] = &[
            (27, 27, true, None),
            (27, 100, true, None),
            (27, 26, false, Some(TooLarge)),
            (26, 26, false, Some(TooLarge)),
            (26, 27, false, None),
            (20, 27, false, None),
        ];
        for &(given, max, complete, err) in cases {
            let got = parse(&head[..given], max);
            match err {
                Some(e) => assert_eq!(got, Err(e), "{given}/{max}"),
                None => assert_eq!(got.unwrap().is_some(), complete, "{given}/{max}"),
            }
        }
        // max is capped at 65 535 so spans fit.
        let mut big = b"X-Big: ".to_vec();
        big.extend_from_slice(&[b'a'; 70_000]);
        assert_eq!(parse(&big, usize::MAX), Err(TooLarge));
    }

    #[test]
    fn too_many_headers() {
        let mut head = String::new();
        for i in 0..MAX_CGI_HEADERS {
            head.push_str(&format!("X-{i}: {i}\r\n"));
        }
        let full = format!("Status: 204\r\n{head}\r\n");
        let got = parse(full.as_bytes(), 65535).unwrap().unwrap();
        assert_eq!((got.0, got.1.len()), (204, MAX_CGI_HEADERS));
        let over = format!("{head}X-Over: 1\r\n\r\n");
        assert_eq!(parse(over.as_bytes(), 65535), Err(TooManyHeaders));
    }

    #[test]
    fn reason_and_lookup() {
        let buf = b"Status: 418  I'm a teapot \r\nX-Powered-By: PHP\r\n\r\n";
        let mut out = CgiHead::empty();
        assert_eq!(parse_cgi_head(buf, 1024, &mut out), Ok(true));
        assert_eq!(out.reason(buf), b"I'm a teapot");
        assert_eq!(out.header(buf, "x-powered-by"), Some(&b"PHP"[..]));
        assert_eq!(out.header(buf, "status"), None);
        // A reused slot forgets the previous head.
        let buf2 = b"Content-Type: a\n\n";
        assert_eq!(parse_cgi_head(buf2, 1024, &mut out), Ok(true));
        assert_eq!((out.status, out.reason(buf2)), (200, &b""[..]));
        assert_eq!(out.headers(buf2).count(), 1);
    }
}

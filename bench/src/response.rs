//! An incremental HTTP/1.x response parser that never allocates.
//!
//! The connection reads into one reused buffer and hands the unconsumed
//! bytes to [`ResponseParser::parse`], which consumes as much as it can and
//! stops at the end of one response. A head is parsed with httparse only
//! once it is complete (`Partial` is not an error: the bytes stay in the
//! buffer for the next read); bodies are counted, not kept.
//!
//! Body framing follows RFC 9112 §6.3, in order:
//! 1. a response to HEAD, and 1xx, 204 and 304, have no body; an interim 1xx
//!    (100, 102, 103) is skipped and the final response parsed after it;
//! 2. `Transfer-Encoding` whose last coding is `chunked`: chunked, decoded
//!    here (sizes, data, CRLFs, trailers); any other coding: until close;
//! 3. `Content-Length`: that many bytes; differing or non-numeric values are
//!    an error (§6.3 rule 5);
//! 4. otherwise the body runs until the server closes.
//!
//! Persistence (RFC 9112 §9.3): HTTP/1.1 unless `Connection: close`;
//! HTTP/1.0 only with `Connection: keep-alive`; never after a body that
//! runs until close. After an HTTP/1.0 request (`http10_request`), only
//! with `Connection: keep-alive` whatever the response's version: the
//! client asked for the old rules, and ab keeps a connection only then.
//!
//! For siege's HTML parser, [`ResponseParser::capture`] keeps the next
//! response's body (up to [`MAX_CAPTURE`] bytes) and whether it was
//! `text/html`.

/// Largest head accepted; the connection's buffer is at least this big.
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 100;
/// Most of a page's body kept for siege's parser.
pub const MAX_CAPTURE: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// httparse refused the head (bad status line, bad header, too many).
    Head,
    HeadTooLarge,
    BadContentLength,
    BadChunk,
}

/// A response read to its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    pub status: u16,
    pub keep_alive: bool,
    /// Body bytes (decoded, for chunked).
    pub body_len: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkDataEnd,
    Trailers,
    UntilClose,
}

#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    status: u16,
    keep_alive: bool,
    body_len: u64,
    /// Whether any byte of the current response was consumed.
    started: bool,
    /// Keep the Server header of the next head (for the report, once).
    pub want_server: bool,
    pub server: Option<String>,
    /// The requests are HTTP/1.0: persistence needs `keep-alive`.
    pub http10_request: bool,
    /// Some: keep the body of the response in progress (or the next).
    pub capture: Option<Vec<u8>>,
    /// Whether the last head had a `text/html` Content-Type.
    pub html: bool,
}

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser::new()
    }
}

impl ResponseParser {
    pub fn new() -> ResponseParser {
        ResponseParser {
            state: State::Head,
            status: 0,
            keep_alive: false,
            body_len: 0,
            started: false,
            want_server: false,
            server: None,
            http10_request: false,
            capture: None,
            html: false,
        }
    }

    /// Forgets a response in progress (the connection broke).
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.started = false;
    }

    /// Whether the next bytes start a head (none of a body is pending).
    pub fn in_head(&self) -> bool {
        self.state == State::Head
    }

    /// Whether bytes of the current response have arrived: a connection that
    /// closes before that closed between responses, not in one.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Consumes from `buf`, for a response to a HEAD request when `head`.
    /// Returns the bytes consumed and, when a response ended, what it was.
    /// Unconsumed bytes must be offered again, after more are read.
    pub fn parse(&mut self, buf: &[u8], head: bool) -> Result<(usize, Option<Done>), ParseError> {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            match self.state {
                State::Head => {
                    if rest.is_empty() {
                        return Ok((pos, None));
                    }
                    self.started = true;
                    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                    let mut r = httparse::Response::new(&mut headers);
                    let n = match r.parse(rest) {
                        Ok(httparse::Status::Complete(n)) => n,
                        Ok(httparse::Status::Partial) if rest.len() >= MAX_HEAD => {
                            return Err(ParseError::HeadTooLarge)
                        }
                        Ok(httparse::Status::Partial) => return Ok((pos, None)),
                        Err(_) => return Err(ParseError::Head),
                    };
                    pos += n;
                    let status = r.code.unwrap_or(0);
                    if (100..200).contains(&status) && status != 101 {
                        continue; // interim: the final response follows
                    }
                    self.status = status;
                    self.body_len = 0;
                    self.state = self.head_done(&r, head)?;
                    if self.state == State::Head {
                        return Ok((pos, Some(self.finish())));
                    }
                }
                State::Length(left) => {
                    let take = (rest.len() as u64).min(left);
                    self.keep(&rest[..take as usize]);
                    pos += take as usize;
                    self.body_len += take;
                    if take == left {
                        return Ok((pos, Some(self.finish())));
                    }
                    self.state = State::Length(left - take);
                    return Ok((pos, None));
                }
                State::ChunkSize => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((n, 0))) => {
                        pos += n;
                        self.state = State::Trailers;
                    }
                    Ok(httparse::Status::Complete((n, size))) => {
                        pos += n;
                        self.state = State::ChunkData(size);
                    }
                    Ok(httparse::Status::Partial) if rest.len() >= MAX_HEAD => {
                        return Err(ParseError::BadChunk)
                    }
                    Ok(httparse::Status::Partial) => return Ok((pos, None)),
                    Err(_) => return Err(ParseError::BadChunk),
                },
                State::ChunkData(left) => {
                    let take = (rest.len() as u64).min(left);
                    self.keep(&rest[..take as usize]);
                    pos += take as usize;
                    self.body_len += take;
                    if take < left {
                        self.state = State::ChunkData(left - take);
                        return Ok((pos, None));
                    }
                    self.state = State::ChunkDataEnd;
                }
                State::ChunkDataEnd => {
                    if rest.len() < 2 {
                        return Ok((pos, None));
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(ParseError::BadChunk);
                    }
                    pos += 2;
                    self.state = State::ChunkSize;
                }
                State::Trailers => {
                    // Trailer lines until an empty one ends the message.
                    if rest.len() < 2 {
                        return Ok((pos, None));
                    }
                    if &rest[..2] == b"\r\n" {
                        pos += 2;
                        return Ok((pos, Some(self.finish())));
                    }
                    match rest.windows(2).position(|w| w == b"\r\n") {
                        Some(i) => pos += i + 2,
                        None if rest.len() >= MAX_HEAD => return Err(ParseError::BadChunk),
                        None => return Ok((pos, None)),
                    }
                }
                State::UntilClose => {
                    self.keep(rest);
                    pos += rest.len();
                    self.body_len += rest.len() as u64;
                    return Ok((pos, None));
                }
            }
        }
    }

    fn keep(&mut self, body: &[u8]) {
        if let Some(c) = &mut self.capture {
            let room = MAX_CAPTURE.saturating_sub(c.len());
            c.extend_from_slice(&body[..body.len().min(room)]);
        }
    }

    /// The server closed: ends a body that runs until close, or says the
    /// response was cut short (None).
    pub fn eof(&mut self) -> Option<Done> {
        if self.state == State::UntilClose {
            Some(self.finish())
        } else {
            None
        }
    }

    fn finish(&mut self) -> Done {
        let d = Done {
            status: self.status,
            keep_alive: self.keep_alive,
            body_len: self.body_len,
        };
        self.state = State::Head;
        self.started = false;
        d
    }

    /// Reads framing and persistence from a complete head.
    fn head_done(&mut self, r: &httparse::Response, head: bool) -> Result<State, ParseError> {
        let mut length: Option<u64> = None;
        let mut chunked = None;
        let mut close = false;
        let mut keep_alive = false;
        let mut html = false;
        for h in r.headers.iter() {
            let name = h.name;
            if name.eq_ignore_ascii_case("content-length") {
                let v = parse_length(h.value).ok_or(ParseError::BadContentLength)?;
                if length.is_some_and(|l| l != v) {
                    return Err(ParseError::BadContentLength);
                }
                length = Some(v);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                let last = h.value.rsplit(|&b| b == b',').next().unwrap_or_default();
                chunked = Some(trim(last).eq_ignore_ascii_case(b"chunked"));
            } else if name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',') {
                    let t = trim(token);
                    close |= t.eq_ignore_ascii_case(b"close");
                    keep_alive |= t.eq_ignore_ascii_case(b"keep-alive");
                }
            } else if self.capture.is_some() && name.eq_ignore_ascii_case("content-type") {
                let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
                html = v.contains("text/html");
            } else if self.want_server && name.eq_ignore_ascii_case("server") {
                self.server = Some(String::from_utf8_lossy(h.value).into_owned());
            }
        }
        if self.want_server {
            self.want_server = false;
            self.server.get_or_insert_with(String::new);
        }
        self.html = html;
        self.keep_alive = match r.version {
            Some(1) if !self.http10_request => !close,
            _ => keep_alive && !close,
        };
        let no_body = head || self.status == 204 || self.status == 304 || self.status < 200;
        Ok(if no_body {
            State::Head
        } else if let Some(c) = chunked {
            if c {
                State::ChunkSize
            } else {
                self.keep_alive = false;
                State::UntilClose
            }
        } else if let Some(0) = length {
            State::Head
        } else if let Some(l) = length {
            State::Length(l)
        } else {
            self.keep_alive = false;
            State::UntilClose
        })
    }
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &v[start..end]
}

fn parse_length(v: &[u8]) -> Option<u64> {
    let v = trim(v);
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` whole, then byte by byte; both must agree.
    fn run(input: &[u8], head: bool) -> Result<Vec<Done>, ParseError> {
        let whole = feed(input, head, input.len().max(1))?;
        let bytewise = feed(input, head, 1)?;
        assert_eq!(whole, bytewise, "whole and byte-by-byte disagree");
        Ok(whole)
    }

    fn feed(input: &[u8], head: bool, step: usize) -> Result<Vec<Done>, ParseError> {
        let mut p = ResponseParser::new();
        let mut out = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        for piece in input.chunks(step) {
            buf.extend_from_slice(piece);
            loop {
                let (n, done) = p.parse(&buf, head)?;
                buf.drain(..n);
                match done {
                    Some(d) => out.push(d),
                    None => break,
                }
            }
        }
        out.extend(p.eof());
        Ok(out)
    }

    fn d(status: u16, keep_alive: bool, body_len: u64) -> Done {
        Done {
            status,
            keep_alive,
            body_len,
        }
    }

    #[test]
    fn table() {
        type Case = (&'static [u8], bool, Result<Vec<Done>, ParseError>);
        let cases: &[Case] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, Ok(vec![d(200, true, 5)])),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, Ok(vec![d(200, true, 0)])),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 404 NF\r\nContent-Length: 1\r\n\r\nx", false, Ok(vec![d(200, true, 2), d(404, true, 1)])),
            (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", false, Ok(vec![d(200, false, 1)])),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", false, Ok(vec![d(200, false, 1)])),
            (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx", false, Ok(vec![d(200, true, 1)])),
            (b"HTTP/1.1 200 OK\r\n\r\nuntil close", false, Ok(vec![d(200, false, 11)])),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, Ok(vec![d(200, true, 0)])),
            (b"HTTP/1.1 204 No Content\r\n\r\n", false, Ok(vec![d(204, true, 0)])),
            (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", false, Ok(vec![d(304, true, 0)])),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", false, Ok(vec![d(200, true, 1)])),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\n\r\n", false, Ok(vec![d(200, true, 8)])),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n1\r\nx\r\n0\r\nT: v\r\n\r\n", false, Ok(vec![d(200, true, 1)])),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc", false, Ok(vec![d(200, false, 3)])),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", false, Ok(vec![d(200, true, 3)])),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc", false, Err(ParseError::BadContentLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc", false, Err(ParseError::BadContentLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", false, Err(ParseError::BadContentLength)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, Err(ParseError::BadChunk)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n", false, Err(ParseError::BadChunk)),
            (b"HTTP/1.1 2000 OK\r\n\r\n", false, Err(ParseError::Head)),
            (b"garbage\r\n\r\n", false, Err(ParseError::Head)),
            // Cut short: no response.
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", false, Ok(vec![])),
            (b"HTTP/1.1 200 OK\r\nContent-Le", false, Ok(vec![])),
        ];
        for (i, (input, head, want)) in cases.iter().enumerate() {
            assert_eq!(
                &run(input, *head),
                want,
                "case {i}: {}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn started_marks_bytes_of_a_response() {
        let mut p = ResponseParser::new();
        assert!(!p.started());
        assert_eq!(p.parse(b"HTTP/1.1 2", false), Ok((0, None)));
        assert!(p.started());
        let full = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(
            p.parse(full, false),
            Ok((full.len(), Some(d(200, true, 1))))
        );
        assert!(!p.started());
    }

    #[test]
    fn server_header_once() {
        let mut p = ResponseParser::new();
        p.want_server = true;
        let r = b"HTTP/1.1 200 OK\r\nServer: nginx/1.2\r\nContent-Length: 0\r\n\r\n";
        p.parse(r, false).unwrap();
        assert_eq!(p.server.as_deref(), Some("nginx/1.2"));
        assert!(!p.want_server);
        let mut p = ResponseParser::new();
        p.want_server = true;
        p.parse(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false)
            .unwrap();
        assert_eq!(p.server.as_deref(), Some(""));
    }

    #[test]
    fn http10_requests_keep_alive_only_when_told() {
        let mut p = ResponseParser::new();
        p.http10_request = true;
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(p.parse(r, false), Ok((r.len(), Some(d(200, false, 1)))));
        let r = b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(p.parse(r, false), Ok((r.len(), Some(d(200, true, 1)))));
        let r = b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(p.parse(r, false), Ok((r.len(), Some(d(200, false, 1)))));
    }

    #[test]
    fn capture_keeps_a_body_and_its_type() {
        let mut p = ResponseParser::new();
        p.capture = Some(Vec::new());
        let r = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n<a>\r\n2\r\nbc\r\n0\r\n\r\n";
        assert_eq!(p.parse(r, false), Ok((r.len(), Some(d(200, true, 5)))));
        assert!(p.html);
        assert_eq!(p.capture.take().as_deref(), Some(&b"<a>bc"[..]));
    }

    #[test]
    fn head_too_large() {
        let mut big = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        big.resize(MAX_HEAD + 10, b'a');
        assert_eq!(
            ResponseParser::new().parse(&big, false),
            Err(ParseError::HeadTooLarge)
        );
    }
}

//! Building the request bytes, once per URL, before the run.
//!
//! A connection sends each request with one `send` of these prebuilt bytes
//! (pipelined requests: one `send` for the batch), so nothing is formatted
//! or allocated per request.
//!
//! The head is ab's, header for header (captured from ab 2.3): the request
//! line (HTTP/1.0 unless `--http1.1`; the absolute URL through a proxy,
//! `-X`), `Connection: Keep-Alive` under `-k`, the cookies, Authorization
//! and Proxy-Authorization, for a body Content-length and Content-type,
//! the `-H` lines, then Host, User-Agent and Accept unless a `-H` line
//! names them. Only the User-Agent is ours; it changes no response.
//!
//! HTTP/1.1 keeps connections open by default, so with `--http1.1` and
//! without `-k` the request says `Connection: close` (RFC 9112 §9.3).
//!
//! `--siege` sends what siege 4.0.7 sends with its default siegerc
//! (`protocol = HTTP/1.1`, `connection = close`, `accept-encoding = gzip,
//! deflate`): Host, Accept, Accept-Encoding, its User-Agent, Connection.

use crate::args::{Config, ReportKind};
use crate::url::Url;

pub const USER_AGENT: &str = concat!("ringside-bench/", env!("CARGO_PKG_VERSION"));

/// siege 4.0.7's User-Agent on Linux x86-64.
pub const SIEGE_USER_AGENT: &str = "Mozilla/5.0 (pc-x86_64-linux-gnu) Siege/4.0.7";

pub fn build(cfg: &Config, url: &Url, method: &str, body: Option<&[u8]>) -> Vec<u8> {
    if cfg.report == ReportKind::Siege {
        return build_siege(cfg, url, method, body);
    }
    let overridden = |name: &str| {
        cfg.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let version = if cfg.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    let mut h = if cfg.proxy.is_some() {
        format!(
            "{method} http://{}{} {version}\r\n",
            url.authority, url.path
        )
    } else {
        format!("{method} {} {version}\r\n", url.path)
    };
    if !overridden("connection") {
        match (cfg.http10, cfg.keepalive) {
            (false, false) => h.push_str("Connection: close\r\n"),
            (true, true) => h.push_str("Connection: Keep-Alive\r\n"),
            _ => {}
        }
    }
    credentials(&mut h, cfg);
    if let Some(b) = body {
        h.push_str(&format!("Content-length: {}\r\n", b.len()));
        if !overridden("content-type") {
            h.push_str(&format!("Content-type: {}\r\n", cfg.content_type));
        }
    }
    for (n, v) in &cfg.headers {
        h.push_str(&format!("{n}: {v}\r\n"));
    }
    if !overridden("host") {
        h.push_str(&format!("Host: {}\r\n", url.authority));
    }
    if !overridden("user-agent") {
        h.push_str(&format!("User-Agent: {USER_AGENT}\r\n"));
    }
    if !overridden("accept") {
        h.push_str("Accept: */*\r\n");
    }
    finish(h, body)
}

fn build_siege(cfg: &Config, url: &Url, method: &str, body: Option<&[u8]>) -> Vec<u8> {
    let overridden = |name: &str| {
        cfg.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let version = if cfg.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    let target = if cfg.proxy.is_some() {
        format!("http://{}{}", url.authority, url.path)
    } else {
        url.path.clone()
    };
    let mut h = format!("{method} {target} {version}\r\n");
    let defaults = [
        ("Host", url.authority.as_str()),
        ("Accept", "*/*"),
        ("Accept-Encoding", "gzip, deflate"),
        ("User-Agent", SIEGE_USER_AGENT),
        (
            "Connection",
            if cfg.keepalive { "keep-alive" } else { "close" },
        ),
    ];
    for (n, v) in defaults {
        if !overridden(n) {
            h.push_str(&format!("{n}: {v}\r\n"));
        }
    }
    credentials(&mut h, cfg);
    for (n, v) in &cfg.headers {
        h.push_str(&format!("{n}: {v}\r\n"));
    }
    if let Some(b) = body {
        if !overridden("content-type") {
            h.push_str(&format!("Content-type: {}\r\n", cfg.content_type));
        }
        h.push_str(&format!("Content-length: {}\r\n", b.len()));
    }
    finish(h, body)
}

fn finish(mut h: String, body: Option<&[u8]>) -> Vec<u8> {
    h.push_str("\r\n");
    let mut out = h.into_bytes();
    if let Some(b) = body {
        out.extend_from_slice(b);
    }
    out
}

/// The HTTP/2 request's header blocks (RFC 9113 §8.3), HPACK-encoded once
/// per URL. The fields are ab's, as in [`build`], less the
/// connection-specific ones HTTP/2 forbids (Connection and its kin); Host
/// becomes `:authority`.
///
/// Three forms: every field a literal *without indexing* (RFC 7541
/// §6.2.2), good on any connection at any time; and, for a run of one
/// URL, the first request on a connection with its literals *indexed*
/// into the server's dynamic table, then every later one as a few bytes
/// of indices into it, as h2load and browsers send them: the server
/// decodes a few bytes per request rather than every literal again.
#[derive(Clone, Debug, Default)]
pub struct H2Blocks {
    pub plain: Vec<u8>,
    pub first: Vec<u8>,
    pub again: Vec<u8>,
    /// What `first` puts in the server's table (RFC 7541 §4.1), in bytes.
    pub table: usize,
}

/// A header block in the making: fields as exact static entries, or
/// literals each form encodes its own way.
#[derive(Default)]
struct Parts {
    parts: Vec<Part>,
}

enum Part {
    Raw(u8),
    /// A literal: its static name index (0: the name is given), its name
    /// (for the table's accounting) and its value.
    Field(usize, Vec<u8>, Vec<u8>),
}

impl Parts {
    fn raw(&mut self, byte: u8) {
        self.parts.push(Part::Raw(byte));
    }

    fn field(&mut self, index: usize, name: &[u8], value: &[u8]) {
        self.parts
            .push(Part::Field(index, name.to_vec(), value.to_vec()));
    }

    fn blocks(self) -> H2Blocks {
        let fields = self
            .parts
            .iter()
            .filter(|p| matches!(p, Part::Field(..)))
            .count();
        let (mut plain, mut first, mut again) = (Vec::new(), Vec::new(), Vec::new());
        let (mut table, mut nth) = (0, 0);
        for p in &self.parts {
            match p {
                Part::Raw(b) => {
                    plain.push(*b);
                    first.push(*b);
                    again.push(*b);
                }
                Part::Field(index, name, value) => {
                    let given: &[u8] = if *index == 0 { name } else { b"" };
                    literal(&mut plain, false, *index, given, value);
                    literal(&mut first, true, *index, given, value);
                    // The newest entry is 62; this one is `fields - 1 - nth`
                    // entries older once all are in.
                    put_int(&mut again, 7, 0x80, 62 + fields - 1 - nth);
                    table += name.len() + value.len() + 32;
                    nth += 1;
                }
            }
        }
        H2Blocks {
            plain,
            first,
            again,
            table,
        }
    }
}

pub fn build_h2(cfg: &Config, url: &Url, method: &str, body: Option<&[u8]>) -> H2Blocks {
    let mut b = Parts::default();
    match method {
        "GET" => b.raw(0x80 | 2),
        "POST" => b.raw(0x80 | 3),
        m => b.field(2, b":method", m.as_bytes()),
    }
    b.raw(0x80 | if url.tls { 7 } else { 6 });
    let host = cfg
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(url.authority.as_str(), |(_, v)| v.as_str());
    b.field(1, b":authority", host.as_bytes());
    if url.path == "/" {
        b.raw(0x80 | 4);
    } else {
        b.field(4, b":path", url.path.as_bytes());
    }
    let overridden = |name: &str| {
        cfg.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !overridden("user-agent") {
        b.field(58, b"user-agent", USER_AGENT.as_bytes());
    }
    if !overridden("accept") {
        b.field(19, b"accept", b"*/*");
    }
    for c in &cfg.cookies {
        b.field(32, b"cookie", c.as_bytes());
    }
    if let Some(a) = &cfg.auth {
        let v = format!("Basic {}", base64(a.as_bytes()));
        b.field(23, b"authorization", v.as_bytes());
    }
    for (n, v) in &cfg.headers {
        let name = n.to_ascii_lowercase();
        if matches!(
            name.as_str(),
            "host"
                | "connection"
                | "keep-alive"
                | "proxy-connection"
                | "transfer-encoding"
                | "upgrade"
        ) {
            continue;
        }
        b.field(0, name.as_bytes(), v.as_bytes());
    }
    if let Some(body) = body {
        b.field(28, b"content-length", body.len().to_string().as_bytes());
        if !overridden("content-type") {
            b.field(31, b"content-type", cfg.content_type.as_bytes());
        }
    }
    b.blocks()
}

/// A literal field, without indexing (RFC 7541 §6.2.2) or with incremental
/// indexing (§6.2.1): the name by its static index, or (index 0) spelled
/// out; strings raw, not Huffman-coded.
fn literal(b: &mut Vec<u8>, indexed: bool, index: usize, name: &[u8], value: &[u8]) {
    if indexed {
        put_int(b, 6, 0x40, index);
    } else {
        put_int(b, 4, 0x00, index);
    }
    if index == 0 {
        put_int(b, 7, 0x00, name.len());
        b.extend_from_slice(name);
    }
    put_int(b, 7, 0x00, value.len());
    b.extend_from_slice(value);
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 §5.1).
pub(crate) fn put_int(b: &mut Vec<u8>, n: u32, flags: u8, v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        b.push(flags | v as u8);
        return;
    }
    b.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 128 {
        b.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    b.push(rest as u8);
}

/// RFC 4648 base64 with padding, for Basic authentication (RFC 7617).
pub fn base64(input: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The cookies and credentials of `-C`, `-A` and `-P`, as ab writes them.
fn credentials(h: &mut String, cfg: &Config) {
    for c in &cfg.cookies {
        h.push_str(&format!("Cookie: {c}\r\n"));
    }
    if let Some(a) = &cfg.auth {
        h.push_str(&format!(
            "Authorization: Basic {}\r\n",
            base64(a.as_bytes())
        ));
    }
    if let Some(a) = &cfg.proxy_auth {
        h.push_str(&format!(
            "Proxy-Authorization: Basic {}\r\n",
            base64(a.as_bytes())
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args;
    use crate::url::parse_url;

    fn req(flags: &[&str]) -> String {
        let mut v = vec!["ringside-bench"];
        v.extend_from_slice(flags);
        v.push("http://h:81/p?q");
        let cfg = args::parse(v).unwrap();
        let url = parse_url(cfg.url.as_deref().unwrap()).unwrap();
        String::from_utf8(build(&cfg, &url, &cfg.method, cfg.body.as_deref())).unwrap()
    }

    #[test]
    fn base64_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
        assert_eq!(
            base64(b"Aladdin:open sesame"),
            "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }

    #[test]
    fn heads_are_abs() {
        let ua = format!("User-Agent: {USER_AGENT}\r\n");
        // Byte for byte what ab 2.3 sends, but for the User-Agent.
        assert_eq!(
            req(&[]),
            format!("GET /p?q HTTP/1.0\r\nHost: h:81\r\n{ua}Accept: */*\r\n\r\n")
        );
        assert_eq!(
            req(&["-k"]),
            format!("GET /p?q HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: h:81\r\n{ua}Accept: */*\r\n\r\n")
        );
        assert_eq!(
            req(&["--http1.1"]),
            format!(
                "GET /p?q HTTP/1.1\r\nConnection: close\r\nHost: h:81\r\n{ua}Accept: */*\r\n\r\n"
            )
        );
        assert_eq!(
            req(&["--http1.1", "-k"]),
            format!("GET /p?q HTTP/1.1\r\nHost: h:81\r\n{ua}Accept: */*\r\n\r\n")
        );
        let r = req(&[
            "-C",
            "b=2",
            "-H",
            "X-A: 1",
            "-H",
            "Accept: text/html",
            "-A",
            "u:p",
            "-P",
            "x:y",
        ]);
        assert_eq!(
            r,
            format!("GET /p?q HTTP/1.0\r\nCookie: b=2\r\nAuthorization: Basic dTpw\r\nProxy-Authorization: Basic eDp5\r\nX-A: 1\r\nAccept: text/html\r\nHost: h:81\r\n{ua}\r\n")
        );
        assert!(req(&["-X", "px:3128"]).starts_with("GET http://h:81/p?q HTTP/1.0\r\n"));
    }

    #[test]
    fn heads_are_sieges() {
        assert_eq!(
            req(&["--siege"]),
            format!("GET /p?q HTTP/1.1\r\nHost: h:81\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\nUser-Agent: {SIEGE_USER_AGENT}\r\nConnection: close\r\n\r\n")
        );
        assert!(req(&["--siege", "-k"]).contains("\r\nConnection: keep-alive\r\n"));
    }

    #[test]
    fn h2_blocks_decode_to_the_request() {
        let mut v = vec!["ringside-bench", "-H", "X-Long: ", "-C", "a=1"];
        let long = format!("X-Long: {}", "v".repeat(300));
        v[2] = &long;
        v.push("https://h:8443/p?q");
        let cfg = args::parse(v).unwrap();
        let url = parse_url(cfg.url.as_deref().unwrap()).unwrap();
        let blocks = build_h2(&cfg, &url, "GET", None);
        let decode = |dec: &mut crate::hpack::Decoder, block: &[u8]| {
            let mut fields = Vec::new();
            dec.decode(block, &mut |n, v| {
                fields.push((
                    String::from_utf8(n.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                ));
                true
            })
            .unwrap();
            fields
        };
        let fields = decode(&mut crate::hpack::Decoder::new(4096), &blocks.plain);
        // On one connection: the first block fills the table, and the
        // later ones, a byte a field, say the same.
        let mut dec = crate::hpack::Decoder::new(4096);
        assert_eq!(decode(&mut dec, &blocks.first), fields);
        assert_eq!(decode(&mut dec, &blocks.again), fields);
        assert_eq!(decode(&mut dec, &blocks.again), fields);
        assert!(blocks.again.len() < 12, "{} bytes", blocks.again.len());
        let sizes: usize = fields
            .iter()
            .filter(|(n, _)| n != ":method" && n != ":scheme")
            .map(|(n, v)| n.len() + v.len() + 32)
            .sum();
        assert_eq!(blocks.table, sizes);
        let want = [
            (":method", "GET".to_string()),
            (":scheme", "https".into()),
            (":authority", "h:8443".into()),
            (":path", "/p?q".into()),
            ("user-agent", USER_AGENT.into()),
            ("accept", "*/*".into()),
            ("cookie", "a=1".into()),
            ("x-long", "v".repeat(300)),
        ];
        let got: Vec<(&str, String)> = fields
            .iter()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn bodies() {
        let path = std::env::temp_dir().join(format!("rb-post-{}", std::process::id()));
        std::fs::write(&path, b"a=1").unwrap();
        let p = path.to_str().unwrap();
        let r = req(&[
            "-k",
            "-p",
            p,
            "-T",
            "application/x-www-form-urlencoded",
            "-H",
            "X-B: 2",
        ]);
        let r2 = req(&["-k", "-u", p]);
        std::fs::remove_file(&path).unwrap();
        let ua = format!("User-Agent: {USER_AGENT}\r\n");
        assert_eq!(
            r,
            format!("POST /p?q HTTP/1.0\r\nConnection: Keep-Alive\r\nContent-length: 3\r\nContent-type: application/x-www-form-urlencoded\r\nX-B: 2\r\nHost: h:81\r\n{ua}Accept: */*\r\n\r\na=1")
        );
        assert!(r2.starts_with("PUT "), "{r2}");
        assert!(r2.contains("Content-type: text/plain\r\n"), "{r2}");
        assert!(r2.ends_with("\r\n\r\na=1"), "{r2}");
    }
}

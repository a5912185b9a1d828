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

/// The HTTP/2 request's header block (RFC 9113 §8.3), HPACK-encoded once
/// per URL: every field a literal *without indexing* (RFC 7541 §6.2.2) or
/// an exact static-table entry, so the block never touches the dynamic
/// table and the same bytes serve every request on every connection. The
/// fields are ab's, as in [`build`], less the connection-specific ones
/// HTTP/2 forbids (Connection and its kin); Host becomes `:authority`.
pub fn build_h2(cfg: &Config, url: &Url, method: &str, body: Option<&[u8]>) -> Vec<u8> {
    let mut b = Vec::with_capacity(256);
    match method {
        "GET" => b.push(0x80 | 2),
        "POST" => b.push(0x80 | 3),
        m => literal(&mut b, 2, b"", m.as_bytes()),
    }
    b.push(0x80 | if url.tls { 7 } else { 6 });
    let host = cfg
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(url.authority.as_str(), |(_, v)| v.as_str());
    literal(&mut b, 1, b"", host.as_bytes());
    if url.path == "/" {
        b.push(0x80 | 4);
    } else {
        literal(&mut b, 4, b"", url.path.as_bytes());
    }
    let overridden = |name: &str| {
        cfg.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !overridden("user-agent") {
        literal(&mut b, 58, b"", USER_AGENT.as_bytes());
    }
    if !overridden("accept") {
        literal(&mut b, 19, b"", b"*/*");
    }
    for c in &cfg.cookies {
        literal(&mut b, 32, b"", c.as_bytes());
    }
    if let Some(a) = &cfg.auth {
        let v = format!("Basic {}", base64(a.as_bytes()));
        literal(&mut b, 23, b"", v.as_bytes());
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
        literal(&mut b, 0, name.as_bytes(), v.as_bytes());
    }
    if let Some(body) = body {
        literal(&mut b, 28, b"", body.len().to_string().as_bytes());
        if !overridden("content-type") {
            literal(&mut b, 31, b"", cfg.content_type.as_bytes());
        }
    }
    b
}

/// A literal field without indexing: the name by its static index, or
/// (index 0) spelled out; strings raw, not Huffman-coded.
fn literal(b: &mut Vec<u8>, index: usize, name: &[u8], value: &[u8]) {
    put_int(b, 4, 0x00, index);
    if index == 0 {
        put_int(b, 7, 0x00, name.len());
        b.extend_from_slice(name);
    }
    put_int(b, 7, 0x00, value.len());
    b.extend_from_slice(value);
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 §5.1).
fn put_int(b: &mut Vec<u8>, n: u32, flags: u8, v: usize) {
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
        let block = build_h2(&cfg, &url, "GET", None);
        let mut fields = Vec::new();
        crate::hpack::Decoder::new(4096)
            .decode(&block, &mut |n, v| {
                fields.push((
                    String::from_utf8(n.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                ));
                true
            })
            .unwrap();
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

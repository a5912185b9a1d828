//! A small blocking HTTPS/1.1 client for talking to one CA: a kept-alive
//! connection (made again once when it has gone stale), timeouts on every
//! step, and a cap on what a response may weigh.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::error::Error;

const TIMEOUT: Duration = Duration::from_secs(10);
/// ACME responses are small JSON documents and certificate chains.
const MAX_RESPONSE: usize = 1 << 20;
const MAX_HEADERS: usize = 64;

pub(crate) struct Response {
    pub status: u16,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn headers<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An `https://` URL split for a request.
struct Target {
    host: String,
    port: u16,
    /// Path and query, starting with `/`.
    path: String,
}

fn parse_url(url: &str) -> Result<Target, Error> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| Error::Protocol(format!("not an https URL: {url}")))?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    let path = match path.find('#') {
        Some(i) => path[..i].to_string(),
        None => path,
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let end = v6
            .find(']')
            .ok_or_else(|| Error::Protocol(format!("bad URL: {url}")))?;
        let port = v6[end + 1..].strip_prefix(':');
        (v6[..end].to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    let port = match port {
        Some(p) => p
            .parse()
            .map_err(|_| Error::Protocol(format!("bad port in URL: {url}")))?,
        None => 443,
    };
    if host.is_empty() || authority.contains('@') {
        return Err(Error::Protocol(format!("bad URL: {url}")));
    }
    Ok(Target { host, port, path })
}

type Stream = StreamOwned<ClientConnection, TcpStream>;

pub(crate) struct Client {
    tls: Arc<ClientConfig>,
    /// The kept connection and the `host:port` it goes to.
    conn: Option<(String, u16, Stream)>,
}

impl Client {
    pub fn new(tls: Arc<ClientConfig>) -> Client {
        let tls = if tls.alpn_protocols == [b"http/1.1".to_vec()] {
            tls
        } else {
            let mut c = (*tls).clone();
            c.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(c)
        };
        Client { tls, conn: None }
    }

    /// One request; on a reused connection that fails before an answer,
    /// made once more on a new one.
    pub fn request(
        &mut self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Response, Error> {
        let target = parse_url(url)?;
        let mut head = format!(
            "{method} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: ringside-acme/{}\r\n",
            target.path,
            host_header(&target),
            env!("CARGO_PKG_VERSION")
        );
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        if method == "POST" || !body.is_empty() {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend_from_slice(body);

        let reused =
            matches!(&self.conn, Some((h, p, _)) if *h == target.host && *p == target.port);
        if !reused {
            self.conn = None;
        }
        let mut stream = match self.conn.take() {
            Some((_, _, s)) => s,
            None => self.connect(&target)?,
        };
        let result = exchange(&mut stream, &request, method == "HEAD");
        let result = match result {
            Err(e) if reused => {
                tracing::debug!("acme: kept connection failed ({e}), connecting again");
                stream = self.connect(&target)?;
                exchange(&mut stream, &request, method == "HEAD")
            }
            r => r,
        };
        let (response, keep) = result.map_err(Error::Transport)?;
        if keep {
            self.conn = Some((target.host, target.port, stream));
        }
        Ok(response)
    }

    fn connect(&self, target: &Target) -> Result<Stream, Error> {
        let what = format!("{}:{}", target.host, target.port);
        let addrs = (target.host.as_str(), target.port)
            .to_socket_addrs()
            .map_err(|e| Error::Transport(format!("resolving {what}: {e}")))?;
        let mut last = format!("{what} has no address");
        let mut tcp = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, TIMEOUT) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = format!("connecting to {what} ({addr}): {e}"),
            }
        }
        let tcp = tcp.ok_or(Error::Transport(last))?;
        let setup = |t: &TcpStream| -> std::io::Result<()> {
            t.set_read_timeout(Some(TIMEOUT))?;
            t.set_write_timeout(Some(TIMEOUT))?;
            t.set_nodelay(true)
        };
        setup(&tcp).map_err(|e| Error::Transport(format!("{what}: {e}")))?;
        let name = ServerName::try_from(target.host.clone())
            .map_err(|e| Error::Protocol(format!("bad host {}: {e}", target.host)))?;
        let conn = ClientConnection::new(self.tls.clone(), name)
            .map_err(|e| Error::Transport(format!("TLS to {what}: {e}")))?;
        let mut stream = StreamOwned::new(conn, tcp);
        // The handshake now, so its errors read as such.
        while stream.conn.is_handshaking() {
            stream
                .conn
                .complete_io(&mut stream.sock)
                .map_err(|e| Error::Transport(format!("TLS handshake with {what}: {e}")))?;
        }
        Ok(stream)
    }
}

fn host_header(t: &Target) -> String {
    let host = if t.host.contains(':') {
        format!("[{}]", t.host)
    } else {
        t.host.clone()
    };
    if t.port == 443 {
        host
    } else {
        format!("{host}:{}", t.port)
    }
}

/// Writes the request and reads one response; also says whether the
/// connection may carry another.
fn exchange(
    stream: &mut Stream,
    request: &[u8],
    head_only: bool,
) -> Result<(Response, bool), String> {
    stream
        .write_all(request)
        .and_then(|()| stream.flush())
        .map_err(|e| format!("sending: {e}"))?;
    let mut buf = Vec::with_capacity(4096);
    let mut eof = false;
    let (status, headers, header_len) = loop {
        let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut hs);
        match resp.parse(&buf) {
            Ok(httparse::Status::Complete(n)) => {
                let status = resp.code.unwrap_or(0);
                let headers: Vec<(String, String)> = resp
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).trim().to_string(),
                        )
                    })
                    .collect();
                // 1xx answers are skipped (none is expected).
                if (100..200).contains(&status) {
                    buf.drain(..n);
                    continue;
                }
                break (status, headers, n);
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => return Err(format!("bad response: {e}")),
        }
        if eof {
            return Err(if buf.is_empty() {
                "connection closed before a response".into()
            } else {
                "response cut short".into()
            });
        }
        if buf.len() > MAX_RESPONSE {
            return Err("response header too large".into());
        }
        eof = fill(stream, &mut buf, false)?;
    };
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let mut keep = !response
        .headers("connection")
        .any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")));
    buf.drain(..header_len);
    let chunked = response
        .headers("transfer-encoding")
        .any(|v| v.to_ascii_lowercase().contains("chunked"));
    if head_only || status == 204 || status == 304 {
        return Ok((response, keep));
    }
    if chunked {
        loop {
            if let Some((body, used)) = decode_chunked(&buf)? {
                response.body = body;
                if used != buf.len() {
                    keep = false;
                }
                break;
            }
            if eof {
                return Err("chunked body cut short".into());
            }
            if buf.len() > MAX_RESPONSE * 2 {
                return Err("response too large".into());
            }
            eof = fill(stream, &mut buf, false)?;
        }
    } else if let Some(len) = response.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| format!("bad Content-Length: {len}"))?;
        if len > MAX_RESPONSE {
            return Err(format!("response too large ({len} bytes)"));
        }
        while buf.len() < len {
            if eof {
                return Err("body cut short".into());
            }
            eof = fill(stream, &mut buf, false)?;
        }
        if buf.len() > len {
            keep = false;
        }
        buf.truncate(len);
        response.body = buf;
    } else {
        // Delimited by the close.
        keep = false;
        while !eof {
            if buf.len() > MAX_RESPONSE {
                return Err("response too large".into());
            }
            eof = fill(stream, &mut buf, true)?;
        }
        response.body = buf;
    }
    Ok((response, keep))
}

/// Reads more into `buf`; true at the end of the stream. `by_close`: the
/// body ends with the connection, so only a TLS close_notify ends it
/// (without one, an attacker's reset could cut it short unseen).
fn fill(stream: &mut Stream, buf: &mut Vec<u8>, by_close: bool) -> Result<bool, String> {
    let mut chunk = [0u8; 16384];
    match stream.read(&mut chunk) {
        Ok(0) => Ok(true),
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(false)
        }
        // A peer that closes without close_notify: the end where the
        // framing says how long the body is (a cut one is caught there),
        // never for a body delimited by the close.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !by_close => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Err("the CA closed without close_notify: the body may be cut short".into())
        }
        Err(e) => Err(format!("receiving: {e}")),
    }
}

/// A whole chunked body (RFC 9112 §7.1) from `buf`, and how many bytes it
/// took; `None` while incomplete. Extensions and trailers are skipped.
pub(crate) fn decode_chunked(buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, String> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(eol) = find_crlf(&buf[at..]) else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&buf[at..at + eol]).map_err(|_| "bad chunk size")?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(size, 16).map_err(|_| format!("bad chunk size {size:?}"))?;
        at += eol + 2;
        if size == 0 {
            // Trailers, then an empty line.
            loop {
                let Some(eol) = find_crlf(&buf[at..]) else {
                    return Ok(None);
                };
                at += eol + 2;
                if eol == 0 {
                    return Ok(Some((body, at)));
                }
            }
        }
        if size > MAX_RESPONSE || body.len() + size > MAX_RESPONSE {
            return Err("response too large".into());
        }
        if buf.len() < at + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&buf[at..at + size]);
        at += size;
        if &buf[at..at + 2] != b"\r\n" {
            return Err("chunk not followed by CRLF".into());
        }
        at += 2;
    }
}

fn find_crlf(b: &[u8]) -> Option<usize> {
    b.windows(2).position(|w| w == b"\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace builds rustls with two providers, so none is the
    /// process default: each config names its own.
    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::aws_lc_rs::default_provider())
    }

    #[test]
    fn chunked_whole_partial_and_bad() {
        let wire = b"4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        let (body, used) = decode_chunked(wire).unwrap().unwrap();
        assert_eq!(body, b"Wikipedia");
        assert_eq!(&wire[used..], b"NEXT");
        for cut in 0..wire.len() - 4 {
            assert!(decode_chunked(&wire[..cut]).unwrap().is_none(), "{cut}");
        }
        assert!(decode_chunked(b"zz\r\n").is_err());
        assert!(decode_chunked(b"2\r\nabX\r\n").is_err());
        assert!(decode_chunked(b"fffffff\r\n").is_err());
    }

    /// A TLS server on loopback answering each connection's requests
    /// with the next scripted responses (one list per connection; a
    /// connection closes after its list).
    fn server(
        script: Vec<Vec<&'static [u8]>>,
    ) -> (u16, Arc<ClientConfig>, std::thread::JoinHandle<Vec<String>>) {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&key, &ca_cert, &ca_key)
            .unwrap();
        let server = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(
                    vec![cert.der().clone()],
                    rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
                )
                .unwrap(),
        );
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca_cert.der().clone()).unwrap();
        let client = Arc::new(
            ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for answers in script {
                let (tcp, _) = listener.accept().unwrap();
                let conn = rustls::ServerConnection::new(server.clone()).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                for answer in answers {
                    let mut req = Vec::new();
                    let mut byte = [0u8; 1];
                    while !req.ends_with(b"\r\n\r\n") {
                        if tls.read(&mut byte).unwrap() == 0 {
                            break;
                        }
                        req.push(byte[0]);
                    }
                    let text = String::from_utf8_lossy(&req).into_owned();
                    seen.push(text.lines().next().unwrap_or("").to_string());
                    tls.write_all(answer).unwrap();
                    tls.flush().unwrap();
                }
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
            seen
        });
        (port, client, handle)
    }

    #[test]
    fn keeps_the_connection_reconnects_and_frames_bodies() {
        let (port, tls, server) = server(vec![
            vec![
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nReplay-Nonce: n1\r\n\r\nhello",
                b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nLocation: /x\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            ],
            // The kept connection is gone by the third request: made anew.
            vec![b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end"],
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 9999999\r\n\r\n"],
        ]);
        let mut c = Client::new(tls);
        let base = format!("https://127.0.0.1:{port}");
        let r = c.request("GET", &format!("{base}/a"), &[], b"").unwrap();
        assert_eq!(
            (r.status, r.body.as_slice(), r.header("replay-nonce")),
            (200, &b"hello"[..], Some("n1"))
        );
        let r = c
            .request(
                "POST",
                &format!("{base}/b"),
                &[("Content-Type", "application/jose+json")],
                b"{}",
            )
            .unwrap();
        assert_eq!(
            (r.status, r.body.as_slice(), r.header("Location")),
            (201, &b"abc"[..], Some("/x"))
        );
        let r = c.request("GET", &format!("{base}/c"), &[], b"").unwrap();
        assert_eq!(r.body, b"until the end");
        assert!(
            c.conn.is_none(),
            "a close-delimited body ends the connection"
        );
        let Err(Error::Transport(e)) = c.request("GET", &format!("{base}/d"), &[], b"") else {
            panic!("a body over the cap was taken");
        };
        assert!(e.contains("too large"), "{e}");
        let seen = server.join().unwrap();
        assert_eq!(
            seen,
            [
                "GET /a HTTP/1.1",
                "POST /b HTTP/1.1",
                "GET /c HTTP/1.1",
                "GET /d HTTP/1.1"
            ]
        );
    }

    #[test]
    fn urls() {
        let t = parse_url("https://acme.example:14000/dir?x=1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("acme.example", 14000, "/dir?x=1")
        );
        let t = parse_url("https://[::1]/a").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("::1", 443, "/a")
        );
        assert_eq!(host_header(&t), "[::1]");
        let t = parse_url("https://h").unwrap();
        assert_eq!(t.path, "/");
        assert!(parse_url("http://h/").is_err());
        assert!(parse_url("https://u@h/").is_err());
        assert!(parse_url("https://h:x/").is_err());
    }
}

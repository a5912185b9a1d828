//! Compression on the fly: static files compressed once per coding and
//! cached, proxied and FastCGI bodies compressed as they stream, decoded by
//! curl and by Python's own decoders for gzip, brotli and zstd, over
//! HTTP/1.1 and HTTP/2; what is never compressed; conditional and range
//! requests; and REDbot's verdict on the responses. A missing curl,
//! python3-brotli, python3-zstandard, php-fpm or REDbot fails the test
//! (scripts/test.sh installs them).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::client::{Conn, Resp};
use common::h2::{fetched, header};
use common::phpfpm::PhpFpm;
use common::python::{decode, python};
use common::{Ringside, TempDir};

const CODINGS: [&str; 3] = ["gzip", "br", "zstd"];

/// 11 KiB of HTML that compresses as a real page does.
fn page() -> Vec<u8> {
    let words = [
        "edge", "server", "ringside", "static", "proxy", "core", "ring",
    ];
    let mut out = b"<!doctype html><html><body>\n".to_vec();
    let mut i = 0usize;
    while out.len() < 11 * 1024 - 20 {
        let line: Vec<&str> = (0..9)
            .map(|k| words[(i * 7 + k * 3) % words.len()])
            .collect();
        out.extend_from_slice(format!("<p id=\"{i}\">{}</p>\n", line.join(" ")).as_bytes());
        i += 1;
    }
    out.extend_from_slice(b"</body></html>\n");
    out
}

/// 200 KiB of text: larger than the cache holds in memory (64 KiB), so it
/// is compressed as it is sent.
fn big() -> Vec<u8> {
    (0..8000)
        .flat_map(|i| format!("line {i} of a text too large to cache\n").into_bytes())
        .collect()
}

/// curl asking for `coding` and decoding it (`--compressed`): the body,
/// once the response said it was that coding.
fn curl_decoded(proto: &str, coding: &str, url: &str) -> Vec<u8> {
    let ae = format!("Accept-Encoding: {coding}");
    let (head, body) = fetched(&[proto, "--compressed", "-H", &ae, url]);
    let got = header(&head, "content-encoding");
    assert_eq!(got.as_deref(), Some(coding), "{head}");
    body
}

/// One request on a connection of its own.
fn get(addr: SocketAddr, path: &str, extra: &str) -> Resp {
    let mut c = Conn::open(addr);
    let head = path.starts_with("HEAD ");
    let (method, path) = path.split_once(' ').unwrap_or(("GET", path));
    c.send(
        format!("{method} {path} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n")
            .as_bytes(),
    );
    c.read(head).expect("a response")
}

fn ae(coding: &str) -> String {
    format!("Accept-Encoding: {coding}\r\n")
}

/// An origin with one response per path (see `respond`), each on a
/// connection of its own. `/stream` sends its first piece, then waits for
/// a word on the channel before the rest.
struct Origin {
    port: u16,
    go_on: mpsc::Sender<()>,
}

fn json() -> Vec<u8> {
    let items: Vec<String> = (0..200)
        .map(|i| format!("{{\"id\":{i},\"name\":\"item {}\",\"ok\":true}}", i % 17))
        .collect();
    format!("[{}]", items.join(",")).into_bytes()
}

fn origin() -> Origin {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (go_on, wait) = mpsc::channel::<()>();
    let wait = std::sync::Arc::new(std::sync::Mutex::new(wait));
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let wait = wait.clone();
            std::thread::spawn(move || respond(s, &wait));
        }
    });
    Origin { port, go_on }
}

fn respond(mut s: TcpStream, wait: &std::sync::Mutex<mpsc::Receiver<()>>) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
            break;
        }
    }
    let sized = |ctype: &str, extra: &str, body: &[u8]| {
        let mut out = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n{extra}Content-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body);
        out
    };
    let text = page();
    let out = match path.as_str() {
        "/json" => sized("application/json", "ETag: \"v1\"\r\n", &json()),
        "/vary" => sized("text/html", "Vary: Origin\r\n", &text),
        "/gzipped" => sized(
            "text/html",
            "Content-Encoding: gzip\r\n",
            b"not really gzip",
        ),
        "/notransform" => sized("text/html", "Cache-Control: no-transform\r\n", &text),
        "/small" => sized("text/plain", "", b"short"),
        "/image" => sized("image/png", "", &text),
        "/partial" => {
            let mut out = format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Type: text/html\r\n\
                 Content-Range: bytes 0-999/{}\r\nContent-Length: 1000\r\n\
                 Connection: close\r\n\r\n",
                text.len()
            )
            .into_bytes();
            out.extend_from_slice(&text[..1000]);
            out
        }
        "/chunked" | "/stream" => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\
                        Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
            let (first, rest) = text.split_at(4000);
            let chunk = |b: &[u8]| {
                let mut c = format!("{:x}\r\n", b.len()).into_bytes();
                c.extend_from_slice(b);
                c.extend_from_slice(b"\r\n");
                c
            };
            let mut out = head.as_bytes().to_vec();
            out.extend_from_slice(&chunk(first));
            if path == "/stream" {
                let _ = s.write_all(&out);
                out.clear();
                // Until the test says, or ends: a client that waits for
                // the whole body times out reading (20 s) instead.
                let _ = wait.lock().unwrap().recv();
            }
            out.extend_from_slice(&chunk(rest));
            out.extend_from_slice(b"0\r\n\r\n");
            out
        }
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    };
    let _ = s.write_all(&out);
}

struct Site {
    dir: TempDir,
    rs: Ringside,
    origin: Origin,
}

fn site(tag: &str) -> Site {
    let dir = TempDir::new(tag);
    let text = page();
    dir.write("www/page.html", &text);
    dir.write("www/raw/page.html", &text);
    dir.write("www/small.txt", b"too short to be worth it\n");
    dir.write("www/logo.png", &text);
    dir.write("www/pre.html", &text);
    dir.write("www/pre.html.gz", b"the precompressed sibling, as it is");
    dir.write("www/big.txt", &big());
    let origin = origin();
    let cfg = format!(
        "[server]\nroot = {root:?}\n\n[static]\nrevalidate = \"10ms\"\n\n\
         [upstream.o]\nservers = [\"127.0.0.1:{port}\"]\n\n\
         [[route]]\nprefix = \"/raw/\"\ncompress = false\n\n\
         [[route]]\nprefix = \"/o/\"\nupstream = \"o\"\nstrip_prefix = true\n\n\
         [[route]]\nprefix = \"/fast/\"\nupstream = \"o\"\nstrip_prefix = true\n\
         compress_levels = {{ gzip = 1 }}\n",
        root = dir.path().join("www"),
        port = origin.port,
    );
    let file = dir.write("ringside.toml", cfg.as_bytes());
    let rs = Ringside::with_admin(1, &file);
    Site { dir, rs, origin }
}

fn compressions(rs: &mut Ringside, coding: &str) -> f64 {
    rs.metric(&format!(
        "ringside_compressions_total{{worker=\"0\",coding=\"{coding}\"}}"
    ))
}

#[test]
fn static_files_round_trip_every_coding_over_both_protocols() {
    let s = site("gz-static");
    let text = page();
    let identity = get(s.rs.addr, "/page.html", "");
    assert_eq!(identity.body, text);
    assert_eq!(identity.header("content-encoding"), None);
    assert_eq!(identity.header("vary").as_deref(), Some("Accept-Encoding"));
    let plain_tag = identity.header("etag").unwrap();
    for coding in CODINGS {
        let r = get(s.rs.addr, "/page.html", &ae(coding));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-encoding").as_deref(), Some(coding));
        assert_eq!(r.header("vary").as_deref(), Some("Accept-Encoding"));
        let tag = r.header("etag").unwrap();
        assert_eq!(
            tag,
            format!("W/{}-{coding}\"", &plain_tag[..plain_tag.len() - 1])
        );
        assert!(
            r.body.len() * 4 < text.len(),
            "{coding}: {} bytes",
            r.body.len()
        );
        assert_eq!(decode(coding, &r.body), text, "{coding}: Python's decoder");

        let url = format!("http://{}/page.html", s.rs.addr);
        for proto in ["--http1.1", "--http2-prior-knowledge"] {
            let body = curl_decoded(proto, coding, &url);
            assert_eq!(body, text, "curl {proto} {coding}");
        }
    }
}

#[test]
fn large_static_files_compress_as_they_are_sent() {
    let mut s = site("gz-big");
    let addr = s.rs.addr;
    let plain = get(addr, "/big.txt", "").header("etag").unwrap();
    for coding in CODINGS {
        let r = get(addr, "/big.txt", &ae(coding));
        assert_eq!(r.header("content-encoding").as_deref(), Some(coding));
        assert_eq!(r.header("accept-ranges"), None);
        let tag = r.header("etag").unwrap();
        assert_eq!(tag, format!("W/{}-{coding}\"", &plain[..plain.len() - 1]));
        assert!(
            r.body.len() * 4 < big().len(),
            "{coding}: {} bytes",
            r.body.len()
        );
        assert_eq!(decode(coding, &r.body), big(), "{coding}");
        // Its variant's tag revalidates it, as a cached file's does.
        let r = get(
            addr,
            "/big.txt",
            &format!("{}If-None-Match: {tag}\r\n", ae(coding)),
        );
        assert_eq!((r.status, r.header("etag")), (304, Some(tag)));
    }
    let r = get(
        addr,
        "/big.txt",
        &format!("{}Range: bytes=10-19\r\n", ae("gzip")),
    );
    assert_eq!((r.status, r.header("content-encoding")), (206, None));
    assert_eq!(r.body, &big()[10..20]);
    // Each request compresses it again: nothing this large is cached.
    get(addr, "/big.txt", &ae("gzip"));
    assert_eq!(compressions(&mut s.rs, "gzip"), 2.0);
}

#[test]
fn a_static_file_is_compressed_once_per_coding_until_it_changes() {
    let mut s = site("gz-once");
    let mut c = Conn::open(s.rs.addr);
    let mut first = None;
    for _ in 0..1000 {
        c.send(b"GET /page.html HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip, br;q=0.5\r\n\r\n");
        let r = c.read(false).expect("a response");
        assert_eq!(r.header("content-encoding").as_deref(), Some("gzip"));
        let body = first.get_or_insert_with(|| r.body.clone());
        assert_eq!(&r.body, body);
    }
    assert_eq!(
        compressions(&mut s.rs, "gzip"),
        1.0,
        "1000 requests, one compression"
    );
    assert_eq!(compressions(&mut s.rs, "br"), 0.0);
    let before = get(s.rs.addr, "/page.html", &ae("gzip"))
        .header("etag")
        .unwrap();

    // A new file: once the cache has looked again, its variant is new too.
    let mut changed = page();
    changed.extend_from_slice(b"<p>one more line</p>\n");
    std::fs::write(s.dir.path().join("www/page.html"), &changed).unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let r = get(s.rs.addr, "/page.html", &ae("gzip"));
        if r.header("etag").unwrap() != before {
            assert_eq!(decode("gzip", &r.body), changed);
            break;
        }
        assert!(Instant::now() < end, "the changed file was never served");
    }
    assert_eq!(compressions(&mut s.rs, "gzip"), 2.0);
}

#[test]
fn conditional_range_and_what_is_left_alone() {
    let mut s = site("gz-alone");
    let addr = s.rs.addr;
    let r = get(addr, "/page.html", &ae("br"));
    let tag = r.header("etag").unwrap();
    assert!(tag.starts_with("W/\""), "{tag}");

    let r = get(
        addr,
        "/page.html",
        &format!("{}If-None-Match: {tag}\r\n", ae("br")),
    );
    assert_eq!(r.status, 304);
    assert_eq!(r.header("etag"), Some(tag.clone()));
    assert_eq!(r.header("vary").as_deref(), Some("Accept-Encoding"));
    // The identity's tag does not stand for the compressed variant.
    let plain = get(addr, "/page.html", "").header("etag").unwrap();
    let r = get(
        addr,
        "/page.html",
        &format!("{}If-None-Match: {plain}\r\n", ae("br")),
    );
    assert_eq!(
        (r.status, r.header("content-encoding").as_deref()),
        (200, Some("br"))
    );

    let r = get(
        addr,
        "/page.html",
        &format!("{}Range: bytes=0-99\r\n", ae("gzip")),
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.body, &page()[..100]);

    for (path, vary) in [
        ("/small.txt", false),
        ("/logo.png", false),
        ("/raw/page.html", false),
    ] {
        let r = get(addr, path, &ae("gzip"));
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-encoding"), None, "{path}");
        assert_eq!(r.header("vary").is_some(), vary, "{path}");
    }
    // A precompressed sibling is served as it is, never compressed again.
    let r = get(addr, "/pre.html", &ae("gzip"));
    assert_eq!(r.header("content-encoding").as_deref(), Some("gzip"));
    assert_eq!(r.body, b"the precompressed sibling, as it is");
    let r = get(addr, "HEAD /page.html", &ae("zstd"));
    assert_eq!(r.header("content-encoding").as_deref(), Some("zstd"));
    assert_eq!(compressions(&mut s.rs, "gzip"), 0.0);
}

#[test]
fn proxied_bodies_compress_as_they_stream() {
    let s = site("gz-proxy");
    let addr = s.rs.addr;
    for coding in CODINGS {
        let r = get(addr, "/o/json", &ae(coding));
        assert_eq!(r.header("content-encoding").as_deref(), Some(coding));
        assert_eq!(r.header("content-length"), None);
        assert_eq!(r.header("etag"), Some(format!("W/\"v1-{coding}\"")));
        assert_eq!(r.header("vary").as_deref(), Some("Accept-Encoding"));
        assert_eq!(decode(coding, &r.body), json(), "{coding}");
        let r = get(addr, "/o/chunked", &ae(coding));
        assert_eq!(decode(coding, &r.body), page(), "{coding} from chunks");
    }
    let r = get(addr, "/o/json", "");
    assert_eq!(r.header("etag").as_deref(), Some("\"v1\""));
    assert_eq!(r.body, json());
    assert_eq!(r.header("vary").as_deref(), Some("Accept-Encoding"));
    let r = get(addr, "/o/vary", &ae("gzip"));
    assert_eq!(r.header("vary").as_deref(), Some("Origin, Accept-Encoding"));
    assert_eq!(decode("gzip", &r.body), page());
    for path in [
        "/o/gzipped",
        "/o/notransform",
        "/o/small",
        "/o/image",
        "/o/partial",
    ] {
        let r = get(addr, path, &ae("gzip"));
        let passed = path == "/o/gzipped";
        assert_eq!(r.header("content-encoding").is_some(), passed, "{path}");
        assert!(
            r.header("content-length").is_some(),
            "{path}: sized as it came"
        );
    }
    assert_eq!(
        get(addr, "/o/gzipped", &ae("gzip")).body,
        b"not really gzip"
    );
    let r = get(addr, "HEAD /o/json", &ae("gzip"));
    assert_eq!(r.header("content-encoding").as_deref(), Some("gzip"));

    // A route's own level: gzip 1 is another body, the same text.
    let fast = get(addr, "/fast/json", &ae("gzip")).body;
    let usual = get(addr, "/o/json", &ae("gzip")).body;
    assert_ne!(fast, usual);
    assert_eq!(decode("gzip", &fast), json());

    let url = format!("http://{addr}/o/json");
    for coding in CODINGS {
        let body = curl_decoded("--http2-prior-knowledge", coding, &url);
        assert_eq!(body, json(), "h2 {coding}");
    }
}

#[test]
fn a_streamed_body_reaches_the_client_as_it_comes() {
    let s = site("gz-stream");
    for coding in ["identity", "gzip", "br", "zstd"] {
        let mut c = Conn::open(s.rs.addr);
        c.send(format!("GET /o/stream HTTP/1.1\r\nHost: t\r\n{}\r\n", ae(coding)).as_bytes());
        let r = c.raw();
        let mut head = String::new();
        while !head.ends_with("\r\n\r\n") {
            assert!(r.read_line(&mut head).unwrap() > 0, "{head}");
        }
        let named = head.contains(&format!("Content-Encoding: {coding}"));
        assert_eq!(named, coding != "identity", "{head}");
        // The first piece arrives, and decodes, while the origin holds
        // the rest back: nothing waits for the whole body.
        let mut body = Vec::new();
        let chunk = |r: &mut BufReader<TcpStream>| {
            let mut size = String::new();
            r.read_line(&mut size).unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            let mut data = vec![0; n + 2];
            r.read_exact(&mut data).unwrap();
            data.truncate(n);
            data
        };
        let first = chunk(r);
        body.extend_from_slice(&first);
        let so_far = decode(coding, &body);
        assert_eq!(so_far, &page()[..4000], "{coding}: the first piece, whole");
        s.origin.go_on.send(()).unwrap();
        loop {
            let data = chunk(r);
            if data.is_empty() {
                break;
            }
            body.extend_from_slice(&data);
        }
        assert_eq!(decode(coding, &body), page(), "{coding}");
    }
}

#[test]
fn fastcgi_responses_compress_too() {
    let fpm = PhpFpm::start_tcp(2);
    let dir = TempDir::new("gz-fcgi");
    let cfg = fpm.ringside_config(&dir, "");
    let rs = Ringside::with_admin(1, &cfg);
    let want: String = (0..300)
        .map(|i| format!("<p>line {i} of a page served by php-fpm</p>\n"))
        .collect();
    for coding in CODINGS {
        let r = get(rs.addr, "/page.php", &ae(coding));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-encoding").as_deref(), Some(coding));
        assert_eq!(decode(coding, &r.body), want.as_bytes(), "{coding}");
    }
}

/// REDbot's notes on a URL, as (level, summary), from its HAR output.
fn redbot(url: &str) -> Vec<(String, String)> {
    let bin = "/opt/ringside-test/venv/bin/redbot";
    let out = Command::new(bin)
        .args(["-o", "har", url])
        .output()
        .unwrap_or_else(|e| panic!("{bin} must be installed (run scripts/test.sh): {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let script = "import json, sys\n\
                  for e in json.load(sys.stdin)['log']['entries']:\n\
                  \x20   for n in e.get('_red_messages', []):\n\
                  \x20       print(n['level'] + '\\t' + n['summary'])\n";
    let notes = python(script, &[], text.as_bytes());
    String::from_utf8_lossy(&notes.stdout)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
}

#[test]
fn redbot_finds_nothing_bad_in_compressed_responses() {
    let s = site("gz-redbot");
    for path in ["/page.html", "/o/json"] {
        let notes = redbot(&format!("http://{}{path}", s.rs.addr));
        assert!(
            notes
                .iter()
                .any(|(_, n)| n.contains("Content negotiation for gzip compression is supported")),
            "{path}: {notes:?}"
        );
        let bad: Vec<_> = notes.iter().filter(|(l, _)| l == "BAD").collect();
        assert!(bad.is_empty(), "{path}: {bad:?}\nall: {notes:?}");
    }
}

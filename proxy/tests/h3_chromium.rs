//! A browser over HTTP/3: headless Chromium (Debian's `chromium`) loads a
//! page from ringside's static root with QUIC forced for the TLS
//! listener's origin (`--origin-to-force-quic-on`, the test CA's leaf
//! trusted by its key's hash), and the page pulls a stylesheet, a script,
//! an SVG image and a 1 MiB script. The page's own script writes into the
//! title what it found (the big script's length and checksum, the image's
//! size, the stylesheet's colour), read back with `--dump-dom`; Chromium's
//! net log shows that every request was sent on a QUIC session to
//! ringside, that the session received ringside's HTTP/3 SETTINGS, and
//! how many body bytes each request handed the page; ringside's access
//! log names each request HTTP/3.0. Each load is made twice: straight to
//! ringside's port, and through a UDP relay that lets the first client
//! datagrams through a few milliseconds apart, as a network does. On
//! io-uring and epoll (glommio refuses TLS, and so QUIC).
//!
//! Why: aioquic and ngtcp2 (h3_interop.rs) send a ClientHello that fits
//! one Initial datagram; Chromium's, with its X25519MLKEM768 key share,
//! spans two. A connection is accepted at the first, before the client's
//! transport parameters are known: ringside once opened its control
//! stream there, found a stream limit of 0, and left every Chromium
//! connection whose second datagram came later unserved (no SETTINGS, no
//! answer). On loopback both datagrams are often read in one go, which
//! hid it; the relay never lets them. A missing chromium fails the test
//! (scripts/test.sh installs it).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::h2::{pattern, Site};
use serde_json::Value;

const QUIC_BACKENDS: [&str; 2] = ["io-uring", "epoll"];

/// How long Chromium may take to load the page before it is killed.
const LOAD_LIMIT: Duration = Duration::from_secs(30);

/// The big script's string: this many letters.
const BIG_LETTERS: usize = (1 << 20) - 64;

/// The assets the page loads, each with the bytes its body must have.
fn assets() -> Vec<(&'static str, Vec<u8>)> {
    let letters: Vec<u8> = pattern(BIG_LETTERS)
        .into_iter()
        .map(|b| b'a' + b % 26)
        .collect();
    let mut big_js = b"window.big = \"".to_vec();
    big_js.extend_from_slice(&letters);
    big_js.extend_from_slice(b"\";\n");
    vec![
        ("/style.css", b"body { color: rgb(255, 0, 0); }\n".to_vec()),
        (
            "/pic.svg",
            br#"<svg xmlns="http://www.w3.org/2000/svg" width="7" height="5"><rect width="7" height="5" fill="blue"/></svg>
"#
            .to_vec(),
        ),
        ("/big.js", big_js),
        (
            "/app.js",
            br#"window.addEventListener("load", () => {
  const s = window.big || "";
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) >>> 0;
  const img = document.getElementById("pic");
  const color = getComputedStyle(document.body).color;
  document.title = `loaded big=${s.length} sum=${h} img=${img.naturalWidth}x${img.naturalHeight} color=${color}`;
});
"#
            .to_vec(),
        ),
    ]
}

/// The title app.js writes once every asset came whole.
fn expected_title() -> String {
    let sum = pattern(BIG_LETTERS)
        .into_iter()
        .map(|b| u32::from(b'a' + b % 26))
        .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(c));
    format!("loaded big={BIG_LETTERS} sum={sum} img=7x5 color=rgb(255, 0, 0)")
}

const INDEX: &[u8] = br#"<!doctype html>
<html><head><meta charset="utf-8"><title>waiting</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/style.css">
<script src="/big.js"></script>
<script src="/app.js"></script>
</head><body><p>over HTTP/3</p><img id="pic" src="/pic.svg"></body></html>
"#;

/// base64 of the SHA-256 of the leaf's SubjectPublicKeyInfo: what
/// `--ignore-certificate-errors-spki-list` takes (QUIC in Chromium wants
/// a trusted certificate, and the test CA is in no trust store).
fn spki_hash(key_pem: &Path) -> String {
    let key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(key_pem).unwrap()).unwrap();
    let suite = rustls::crypto::aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256;
    let digest = suite
        .tls13()
        .expect("TLS 1.3")
        .common
        .hash_provider
        .hash(&key.public_key_der());
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// Chromium running, in a process group of its own: killed with that
/// group on drop (a panic included), so no renderer outlives the test.
struct Browser(Child);

impl Drop for Browser {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            // SAFETY: kill(2) on the group this child leads.
            unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
            let _ = self.0.wait();
        } else {
            // The main process is gone; its helpers may not be yet.
            // SAFETY: as above; the group is ours or empty.
            unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        }
    }
}

/// Loads `url` in headless Chromium with QUIC forced for `origin`
/// (host:port), `h2.test` mapped to `ip`: (the page's DOM, stderr, the
/// net log's JSON). Panics if Chromium runs past [`LOAD_LIMIT`].
fn chromium(
    dir: &Path,
    tag: &str,
    origin: &str,
    ip: &str,
    spki: &str,
    url: &str,
) -> (String, String, Value) {
    let log = dir.join(format!("netlog-{tag}.json"));
    let profile = dir.join(format!("chromium-{tag}"));
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless=new",
        // Tests run as root, where Chromium's sandbox cannot start.
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--enable-quic",
        "--dump-dom",
    ])
    .arg(format!("--origin-to-force-quic-on={origin}"))
    .arg(format!("--host-resolver-rules=MAP h2.test {ip}"))
    .arg(format!("--ignore-certificate-errors-spki-list={spki}"))
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--log-net-log={}", log.display()))
    .arg(url)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let child = cmd
        .spawn()
        .expect("chromium must be installed (run scripts/test.sh)");
    let mut browser = Browser(child);
    let mut out = browser.0.stdout.take().unwrap();
    let mut err = browser.0.stderr.take().unwrap();
    let dom = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let end = Instant::now() + LOAD_LIMIT;
    let status = loop {
        if let Some(s) = browser.0.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > end {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Kills whatever of the group is left; the pipes then close.
    drop(browser);
    let (dom, stderr) = (dom.join().unwrap(), stderr.join().unwrap());
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let net = parse_net_log(&text);
    let Some(status) = status else {
        panic!(
            "{tag}: chromium did not finish loading {url} in {LOAD_LIMIT:?}; QUIC in its net log: {}\n--- stderr\n{stderr}",
            quic_trouble(&net)
        );
    };
    assert!(
        status.success(),
        "{tag}: chromium {status}: {stderr}\nQUIC: {}",
        quic_trouble(&net)
    );
    (dom, stderr, net)
}

/// The net log, also when Chromium was killed before it closed the JSON.
fn parse_net_log(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str(text) {
        return v;
    }
    let cut = text.trim_end().trim_end_matches(',');
    serde_json::from_str(&format!("{cut}]}}")).unwrap_or(Value::Null)
}

/// Event type and phase names by number, from the log's constants.
struct Names {
    types: BTreeMap<u64, String>,
    sources: BTreeMap<u64, String>,
}

impl Names {
    fn of(net: &Value) -> Names {
        let table = |k: &str| -> BTreeMap<u64, String> {
            net["constants"][k]
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter_map(|(n, v)| Some((v.as_u64()?, n.clone())))
                        .collect()
                })
                .unwrap_or_default()
        };
        Names {
            types: table("logEventTypes"),
            sources: table("logSourceType"),
        }
    }

    fn ty<'a>(&'a self, e: &Value) -> &'a str {
        e["type"]
            .as_u64()
            .and_then(|t| self.types.get(&t))
            .map_or("?", String::as_str)
    }

    fn source<'a>(&'a self, e: &Value) -> &'a str {
        e["source"]["type"]
            .as_u64()
            .and_then(|t| self.sources.get(&t))
            .map_or("?", String::as_str)
    }
}

fn events(net: &Value) -> &[Value] {
    net["events"].as_array().map_or(&[], Vec::as_slice)
}

/// What went wrong on the QUIC sessions, for a failure's message: their
/// close events and errors.
fn quic_trouble(net: &Value) -> String {
    let n = Names::of(net);
    let lines: Vec<String> = events(net)
        .iter()
        .filter(|e| {
            let t = n.ty(e);
            t.contains("CLOSE")
                || t.contains("ERROR")
                || t == "QUIC_SESSION"
                || t == "HTTP3_SETTINGS_RECEIVED"
                || t == "QUIC_SESSION_TRANSPORT_PARAMETERS_RECEIVED"
        })
        .filter(|e| n.source(e).starts_with("QUIC"))
        .map(|e| format!("{} {}", n.ty(e), e["params"]))
        .collect();
    let settings = events(net)
        .iter()
        .any(|e| n.ty(e) == "HTTP3_SETTINGS_RECEIVED");
    if lines.is_empty() {
        "no QUIC session events".into()
    } else {
        format!(
            "{}\nringside's HTTP/3 SETTINGS received: {settings}",
            lines.join("\n")
        )
    }
}

/// One page request as the net log tells it.
#[derive(Debug, Default)]
struct Request {
    url: String,
    /// Bound to a QUIC session (HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION).
    quic: bool,
    /// Its request head went out on a QUIC stream.
    quic_headers: bool,
    /// The status line of its response.
    status: String,
    /// Body bytes handed to the page (URL_REQUEST_JOB_FILTERED_BYTES_READ).
    bytes: u64,
    net_error: Option<i64>,
}

/// The URL requests for `prefix` (an origin), by source id.
fn requests(net: &Value, prefix: &str) -> Vec<Request> {
    let n = Names::of(net);
    let mut by_id: BTreeMap<u64, Request> = BTreeMap::new();
    for e in events(net) {
        if n.source(e) != "URL_REQUEST" {
            continue;
        }
        let Some(id) = e["source"]["id"].as_u64() else {
            continue;
        };
        let p = &e["params"];
        match n.ty(e) {
            "REQUEST_ALIVE" => {
                if let Some(u) = p["url"].as_str() {
                    by_id.entry(id).or_default().url = u.to_owned();
                }
            }
            "HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION" => by_id.entry(id).or_default().quic = true,
            "HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS" => {
                by_id.entry(id).or_default().quic_headers = true
            }
            "HTTP_TRANSACTION_READ_RESPONSE_HEADERS" => {
                if let Some(first) = p["headers"][0].as_str() {
                    by_id.entry(id).or_default().status = first.to_owned();
                }
            }
            "URL_REQUEST_JOB_FILTERED_BYTES_READ" => {
                by_id.entry(id).or_default().bytes += p["byte_count"].as_u64().unwrap_or(0)
            }
            _ => {}
        }
        if let Some(err) = p["net_error"].as_i64() {
            by_id.entry(id).or_default().net_error = Some(err);
        }
    }
    by_id
        .into_values()
        .filter(|r| r.url.starts_with(prefix))
        .collect()
}

/// A UDP relay standing for a path with some distance: each datagram
/// from the client goes on alone, the first few a few milliseconds
/// apart, as they arrive over a network (on loopback, Chromium's two
/// Initial datagrams are often read by the server in one go). Stops on
/// drop.
struct Relay {
    at: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Relay {
    fn start(to: SocketAddr) -> Relay {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.connect(to).unwrap();
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        }
        let at = front.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let up = {
            let (front, back) = (front.try_clone().unwrap(), back.try_clone().unwrap());
            let (stop, client) = (stop.clone(), client.clone());
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                let mut sent = 0;
                while !stop.load(Ordering::Relaxed) {
                    let Ok((n, from)) = front.recv_from(&mut buf) else {
                        continue;
                    };
                    *client.lock().unwrap() = Some(from);
                    let _ = back.send(&buf[..n]);
                    sent += 1;
                    if sent <= 6 {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            })
        };
        let down = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                while !stop.load(Ordering::Relaxed) {
                    let Ok(n) = back.recv(&mut buf) else {
                        continue;
                    };
                    if let Some(c) = *client.lock().unwrap() {
                        let _ = front.send_to(&buf[..n], c);
                    }
                }
            })
        };
        Relay {
            at,
            stop,
            threads: vec![up, down],
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The access log's lines once it holds `n` (or after 10 s).
fn log_lines(path: &Path, n: usize) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= n || Instant::now() > end {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Loads the page in Chromium from `via` (ringside's TLS listener, or a
/// relay to it) and checks what the page, the net log and ringside's
/// access log show; `loads`: how many loads the access log holds now.
fn load_and_check(site: &Site, tag: &str, via: SocketAddr, loads: usize) {
    let origin = format!("h2.test:{}", via.port());
    let base = format!("https://{origin}");
    let spki = spki_hash(&site.dir.path().join("leaf.key"));
    let (dom, stderr, net) = chromium(
        site.dir.path(),
        tag,
        &origin,
        &via.ip().to_string(),
        &spki,
        &format!("{base}/index.html"),
    );

    // The page ran, with every asset whole.
    let title = format!("<title>{}</title>", expected_title());
    assert!(
        dom.contains(&title),
        "{tag}: want {title} in the DOM:\n{dom}\n--- stderr\n{stderr}\nQUIC: {}",
        quic_trouble(&net)
    );
    assert!(dom.contains("over HTTP/3"), "{tag}: {dom}");

    // Every request to the origin went over QUIC and came back whole.
    let reqs = requests(&net, &base);
    let mut want: BTreeMap<String, u64> = assets()
        .iter()
        .map(|(p, b)| (format!("{base}{p}"), b.len() as u64))
        .collect();
    want.insert(format!("{base}/index.html"), INDEX.len() as u64);
    let seen: BTreeSet<&str> = reqs.iter().map(|r| r.url.as_str()).collect();
    for url in want.keys() {
        assert!(
            seen.contains(url.as_str()),
            "{tag}: {url} not in the net log: {reqs:#?}"
        );
    }
    for r in &reqs {
        assert!(
            r.quic && r.quic_headers,
            "{tag}: {} not sent over QUIC: {r:?}",
            r.url
        );
        assert_eq!(r.net_error, None, "{tag}: {r:?}");
        if let Some(len) = want.get(&r.url) {
            // Chromium writes an HTTP/3 status as HTTP/1.1's line.
            assert!(r.status.ends_with(" 200"), "{tag}: {r:?}");
            assert_eq!(r.bytes, *len, "{tag}: body bytes of {}", r.url);
        }
    }

    // The QUIC session was to the address dialled, and had ringside's
    // HTTP/3 SETTINGS.
    let n = Names::of(&net);
    assert!(
        events(&net).iter().any(|e| n.ty(e) == "QUIC_SESSION"
            && e["params"]["host"] == "h2.test"
            && e["params"]["port"].as_u64() == Some(u64::from(via.port()))),
        "{tag}: no QUIC session to {origin}: {}",
        quic_trouble(&net)
    );
    assert!(
        events(&net)
            .iter()
            .any(|e| n.ty(e) == "HTTP3_SETTINGS_RECEIVED"),
        "{tag}: ringside's SETTINGS never came: {}",
        quic_trouble(&net)
    );
    // (Chromium logs the first packets of a session only.)
    let received = events(&net)
        .iter()
        .filter(|e| n.ty(e) == "QUIC_SESSION_PACKET_RECEIVED")
        .filter(|e| e["params"]["peer_address"] == via.to_string().as_str())
        .count();
    assert!(received > 0, "{tag}: no QUIC packet from {via}");

    // ringside logged each as HTTP/3.
    let lines = log_lines(&site.log, loads * want.len());
    for path in [
        "/index.html",
        "/style.css",
        "/app.js",
        "/big.js",
        "/pic.svg",
    ] {
        let line = format!("\"GET {path} HTTP/3.0\" 200 ");
        assert_eq!(
            lines.iter().filter(|l| l.contains(&line)).count(),
            loads,
            "{tag}: {line} in the access log: {lines:#?}"
        );
    }
    assert!(
        lines.iter().all(|l| l.contains("HTTP/3.0")),
        "{tag}: a request not over HTTP/3: {lines:#?}"
    );
    eprintln!(
        "{tag}: chromium loaded {} requests over HTTP/3: {:?}",
        reqs.len(),
        reqs.iter().map(|r| (&r.url, r.bytes)).collect::<Vec<_>>()
    );
}

#[test]
fn chromium_loads_a_page_and_its_assets_over_http3() {
    for backend in QUIC_BACKENDS {
        let site = Site::start(&format!("h3-chromium-{backend}"), backend, "");
        let at = site.tls.expect("a TLS listener");
        site.dir.write("root/index.html", INDEX);
        for (path, body) in &assets() {
            site.dir.write(&format!("root{path}"), body);
        }
        // Straight to ringside's port.
        load_and_check(&site, &format!("{backend}-direct"), at, 1);
        // Through the relay: the two datagrams of Chromium's ClientHello
        // reach ringside apart.
        let relay = Relay::start(at);
        load_and_check(&site, &format!("{backend}-relayed"), relay.at, 2);
    }
}

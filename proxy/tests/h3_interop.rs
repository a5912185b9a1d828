//! HTTP/3 with real clients: aioquic (GET, a 10 MiB download, a range, a
//! 1 MiB upload echoed through the proxy by an HTTP/1.1 upstream, on one
//! connection at once; gRPC calls to a grpcio server behind an h2
//! upstream, trailers and all) and ngtcp2's client (HEAD; a download across a NAT
//! rebinding, a changed local address and key updates); Alt-Svc on the
//! TLS listeners' HTTP/1.1 and HTTP/2 responses; malformed requests reset
//! with H3_MESSAGE_ERROR and never passed upstream; and with two workers,
//! every connection served whole on its own worker. On io-uring (its
//! multishot RECVMSG ring, and that ring run dry) and epoll (glommio
//! refuses TLS, and so QUIC). A missing client fails the test
//! (scripts/test.sh installs them).

mod common;

use std::net::SocketAddr;

use common::h2::{fetched, header, pattern, Site};
use common::h3::{aioquic, field, ngtcp2, sha256, sum};
use common::{Ringside, TempDir};
use serde_json::{json, Value};

const QUIC_BACKENDS: [&str; 2] = ["io-uring", "epoll"];

fn answers(report: &Value) -> &Vec<Value> {
    assert_eq!(report["alpn"], "h3", "{report}");
    report["answers"].as_array().expect("answers")
}

#[test]
fn aioquic_gets_static_and_proxied_on_one_connection() {
    // The last: io_uring's datagram ring made of 2 buffers, which runs dry
    // at once, so the reads go back and forth between it and recvmsg; and
    // path MTU discovery held to quinn's 1,452 bytes, where the others may
    // go up to loopback's 64 KiB (aioquic takes any size).
    let runs = [
        ("io-uring", "512", ""),
        ("epoll", "512", ""),
        ("io-uring", "2", "1452"),
    ];
    for (backend, ring, mtu) in runs {
        let env = [("RINGSIDE_QUIC_RING", ring), ("RINGSIDE_QUIC_MTU", mtu)];
        let mut site = Site::start_env("h3-aioquic", backend, "", &env);
        let at = site.tls.expect("a TLS listener");
        let upload = pattern(1 << 20);
        let file = site.dir.write("upload.bin", &upload);
        // Kept whole in the core's file cache, its bytes go to the stream
        // as they are, not copied beside the head (`send_shared`).
        let mid = pattern((11 << 10) + 7);
        site.dir.write("root/mid.bin", &mid);
        let report = aioquic(
            at,
            &site.ca_pem,
            "h2.test",
            &json!([
                {"path": "/small.txt"},
                {"path": "/big.bin"},
                {"path": "/big.bin", "headers": [["range", "bytes=1001-300000"]]},
                {"path": "/app/echo", "method": "POST", "body_file": file,
                 "headers": [["content-type", "application/octet-stream"]]},
                {"path": "/mid.bin"},
                {"path": "/mid.bin"},
                {"path": "/mid.bin", "headers": [["range", "bytes=2000-9999"]]},
            ]),
        );
        let a = answers(&report);
        assert_eq!(a[0]["status"], 200, "{backend}: {}", a[0]);
        assert_eq!(a[0]["body"], "aGVsbG8gb3ZlciBoMgo=", "hello over h2\\n");
        assert_eq!(field(&a[0], "content-length"), Some("14"));
        assert_eq!(a[1]["status"], 200, "{backend}: {}", a[1]);
        assert_eq!(a[1]["length"], 10 << 20);
        assert_eq!(a[1]["sha256"], sha256(&pattern(10 << 20)), "{backend}");
        assert_eq!(a[2]["status"], 206, "{}", a[2]);
        // From an odd offset and over two of the pieces a file is read in.
        assert_eq!(a[2]["sha256"], sha256(&pattern(10 << 20)[1001..300001]));
        assert_eq!(a[3]["status"], 200, "{backend}: {}", a[3]);
        assert_eq!(a[3]["sha256"], sha256(&upload), "1 MiB echoed, {backend}");
        // Read from the file, then from the cache: the same bytes.
        for got in &a[4..6] {
            assert_eq!(got["status"], 200, "{backend}: {got}");
            assert_eq!(got["length"], mid.len(), "{backend}");
            assert_eq!(got["sha256"], sha256(&mid), "{backend}");
        }
        assert_eq!(a[6]["status"], 206, "{}", a[6]);
        assert_eq!(a[6]["sha256"], sha256(&mid[2000..10000]), "{backend}");
        // io_uring reads the datagrams by multishot RECVMSG, with no
        // recvmsg(2) bar where its ring ran dry; epoll reads each by one.
        let (_, metrics) = site.srv.admin_get("/metrics");
        let (dgrams, calls) = (
            sum(&metrics, "ringside_http3_datagrams_received_total"),
            sum(&metrics, "ringside_http3_recv_calls_total"),
        );
        assert!(dgrams > 700.0, "{backend}: {metrics}");
        eprintln!("{backend}, ring {ring}: {dgrams} datagrams, {calls} recvmsg calls");
        // io_uring sends through its ring; epoll by sendmsg.
        let (sends, ring_sends) = (
            sum(&metrics, "ringside_http3_send_calls_total"),
            sum(&metrics, "ringside_http3_ring_sends_total"),
        );
        match backend {
            "io-uring" => assert!(ring_sends * 2.0 > sends, "{backend}: {metrics}"),
            _ => assert_eq!(ring_sends, 0.0, "{backend}: {metrics}"),
        }
        match (backend, ring) {
            ("io-uring", "512") => assert!(calls * 10.0 < dgrams, "{backend}: {metrics}"),
            _ => assert!(calls > 0.0, "{backend}, ring {ring}: {metrics}"),
        }
        // Over 11 MiB went out. In datagrams of at most 1,452 bytes that is
        // over 7,900; sized by loopback's route, far fewer. None of them,
        // probes of up to 64 KiB and GSO trains held under it included, was
        // refused by the kernel.
        let out = sum(&metrics, "ringside_http3_datagrams_sent_total");
        eprintln!("{backend}, path MTU bound {mtu:?}: {out} datagrams sent");
        let least = f64::from(11 << 20) / 1452.0;
        match mtu {
            "" => assert!(out * 4.0 < least, "{backend}: {metrics}"),
            _ => assert!(out > least, "{backend}: {metrics}"),
        }
        assert_eq!(
            sum(&metrics, "ringside_http3_send_errors_total"),
            0.0,
            "{backend}: {metrics}"
        );
        // The upstream saw an HTTP/1.1 request with the body's length.
        assert!(
            site.origin
                .heads()
                .iter()
                .any(|h| h.starts_with("POST /echo HTTP/1.1")),
            "{:?}",
            site.origin.heads()
        );
    }
}

#[test]
fn alt_svc_names_the_port_on_tls_listeners_only() {
    let site = Site::start("h3-altsvc", "io-uring", "");
    for at in [site.tls.unwrap(), site.tls_h1.unwrap()] {
        let (head, _) = fetched(&site.https_url(at, "/small.txt"));
        let want = format!("h3=\":{}\"; ma=86400", at.port());
        assert_eq!(header(&head, "alt-svc").as_deref(), Some(&*want), "{head}");
    }
    let (head, _) = fetched(&site.h2c_url("/small.txt"));
    assert_eq!(header(&head, "alt-svc"), None, "plain h2c: {head}");
}

#[test]
fn a_listener_with_http3_off_answers_no_quic_and_offers_none() {
    let dir = TempDir::new("h3-off");
    let ca = common::pki::Ca::new("ringside h3 CA");
    ca.leaf(&dir, "leaf", "h3.test", &["h3.test"]);
    dir.write("root/a.txt", b"a\n");
    let cfg = dir.write(
        "ringside.toml",
        br#"
[server]
listen = [{ addr = "127.0.0.1:0", http3 = false, tls = { cert = "leaf.pem", key = "leaf.key" } }]
root = "root"
"#,
    );
    let srv = Ringside::as_configured("io-uring", &cfg);
    let ca_pem = dir.write("ca.pem", ca.pem().as_bytes());
    let out = std::process::Command::new("curl")
        .args(["-sS", "-D", "-", "-o", "/dev/null", "--cacert"])
        .arg(&ca_pem)
        .arg("--resolve")
        .arg(format!("h3.test:{}:127.0.0.1", srv.addr.port()))
        .arg(format!("https://h3.test:{}/a.txt", srv.addr.port()))
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&out.stdout);
    assert!(head.starts_with("HTTP/2 200"), "{head}");
    assert_eq!(header(&head, "alt-svc"), None, "{head}");
    // Nothing listens on the UDP port: ngtcp2's handshake times out.
    let out = ngtcp2(
        srv.addr,
        &["--handshake-timeout=1s"],
        &[url(srv.addr, "/a.txt")],
    );
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        !text.contains("[:status:"),
        "an answer over QUIC with http3 = false: {text}"
    );
}

fn url(at: SocketAddr, path: &str) -> String {
    format!("https://h2.test:{}{path}", at.port())
}

#[test]
fn ngtcp2_heads_and_downloads_across_rebinding_and_key_updates() {
    for backend in QUIC_BACKENDS {
        let site = Site::start("h3-ngtcp2", backend, "");
        let at = site.tls.unwrap();
        let out = ngtcp2(at, &["-m", "HEAD"], &[url(at, "/small.txt")]);
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{backend}: {text}");
        assert!(text.contains("[:status: 200]"), "{text}");
        assert!(text.contains("[content-length: 14]"), "{text}");
        assert!(
            text.contains("closed with error code 256"),
            "H3_NO_ERROR: {text}"
        );

        let dl = site.dir.0.join(format!("dl-{backend}"));
        std::fs::create_dir_all(&dl).unwrap();
        let out = ngtcp2(
            at,
            &[
                "-q",
                &format!("--download={}", dl.display()),
                // The client updates its keys, then its port changes as
                // behind a NAT, then it asks: the download runs on the
                // new path under the new keys.
                "--key-update=50ms",
                "--change-local-addr=100ms",
                "--nat-rebinding",
                "--delay-stream=150ms",
            ],
            &[url(at, "/big.bin")],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = std::fs::read(dl.join("big.bin")).unwrap();
        assert!(
            got == pattern(10 << 20),
            "{backend}: {} bytes, differing",
            got.len()
        );
    }
}

#[test]
fn malformed_requests_are_reset_and_never_reach_the_upstream() {
    let site = Site::start("h3-malformed", "io-uring", "");
    let at = site.tls.unwrap();
    let base = |extra: &[(&str, &str)]| -> Value {
        let mut f = vec![
            [":method", "GET"],
            [":scheme", "https"],
            [":authority", "h2.test"],
            [":path", "/app/x"],
        ]
        .into_iter()
        .map(|[n, v]| json!([n, v]))
        .collect::<Vec<_>>();
        f.extend(extra.iter().map(|(n, v)| json!([n, v])));
        Value::Array(f)
    };
    let cases = json!([
        {"path": "/", "raw_fields": base(&[("X-Upper", "1")])},
        {"path": "/", "raw_fields": base(&[("connection", "keep-alive")])},
        {"path": "/", "raw_fields": base(&[("te", "gzip")])},
        {"path": "/", "raw_fields": base(&[(":protocol", "websocket")])},
        {"path": "/", "raw_fields": [[":method", "GET"], [":scheme", "https"], [":authority", "h2.test"]]},
        {"path": "/", "raw_fields": base(&[("content-length", "10")]), "body": "short"},
    ]);
    let report = aioquic(at, &site.ca_pem, "h2.test", &cases);
    for (i, a) in answers(&report).iter().enumerate() {
        // H3_MESSAGE_ERROR (RFC 9114 §4.1.2) on the stream.
        assert_eq!(a["reset"], 0x10e, "case {i}: {a}");
    }
    // A well-formed request on the same connection still goes through.
    let report = aioquic(at, &site.ca_pem, "h2.test", &json!([{"path": "/app/ok"}]));
    assert_eq!(answers(&report)[0]["status"], 200);
    let heads = site.origin.heads();
    assert_eq!(heads.len(), 1, "only the well-formed request: {heads:?}");
}

#[test]
fn two_workers_serve_each_connection_on_one_worker() {
    let metrics = two_workers(true, 8);
    // Every packet of each connection, across its rebinding, reached the
    // worker that accepted it.
    assert_eq!(
        sum(&metrics, "ringside_http3_misdelivered_total"),
        0.0,
        "{metrics}"
    );
}

#[test]
fn without_steering_a_packet_on_the_wrong_worker_is_handed_to_its_owner() {
    // As a kernel without SO_ATTACH_REUSEPORT_CBPF: the kernel's hash of
    // the addresses picks the socket, and a rebinding may change it.
    let metrics = two_workers(false, 16);
    let stray = sum(&metrics, "ringside_http3_misdelivered_total");
    // Each rebinding lands on either worker as the kernel's hash falls:
    // over 16 of them, all on the accepting one is a 1 in 65,536 chance.
    assert!(stray > 0.0, "no packet reached the other worker: {metrics}");
    assert_eq!(
        sum(&metrics, "ringside_http3_handed_over_total"),
        stray,
        "every stray packet handed over: {metrics}"
    );
}

/// `runs` downloads by ngtcp2's client, each across a NAT rebinding, from
/// ringside with two workers (the BPF steering on or off); the metrics
/// after, checked for what holds either way.
fn two_workers(steering: bool, runs: usize) -> String {
    let dir = TempDir::new("h3-workers");
    let ca = common::pki::Ca::new("ringside h3 CA");
    ca.leaf(&dir, "leaf", "h2.test", &["h2.test"]);
    dir.write("root/big.bin", &pattern(10 << 20));
    let cfg = dir.write(
        "ringside.toml",
        br#"
[server]
listen = [{ addr = "127.0.0.1:0", tls = { cert = "leaf.pem", key = "leaf.key" } }]
root = "root"
"#,
    );
    let mut cmd = std::process::Command::new(common::BIN);
    cmd.args([
        "--workers",
        "2",
        "--backend",
        "io-uring",
        "--admin",
        "127.0.0.1:0",
    ])
    .arg("--config")
    .arg(&cfg);
    if !steering {
        cmd.env("RINGSIDE_QUIC_STEERING", "off");
    }
    let mut srv = Ringside::start_with(&mut cmd);
    let at = srv.addr;
    let dl = dir.0.join("dl");
    std::fs::create_dir_all(&dl).unwrap();
    for i in 0..runs {
        let out = ngtcp2(
            at,
            &[
                "-q",
                &format!("--download={}", dl.display()),
                "--change-local-addr=100ms",
                "--nat-rebinding",
                "--delay-stream=150ms",
            ],
            &[url(at, "/big.bin")],
        );
        assert!(
            out.status.success(),
            "run {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = std::fs::read(dl.join("big.bin")).unwrap();
        assert!(got == pattern(10 << 20), "run {i}: {} bytes", got.len());
    }
    let (_, metrics) = srv.admin_get("/metrics");
    let conns: Vec<f64> = metrics
        .lines()
        .filter(|l| l.starts_with("ringside_http3_connections_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    assert_eq!(conns.len(), 2, "{metrics}");
    assert_eq!(conns.iter().sum::<f64>(), runs as f64, "{conns:?}");
    let failed = sum(&metrics, "ringside_http3_handshakes_failed_total");
    assert_eq!(failed, 0.0, "{metrics}");
    metrics
}

/// A gRPC message: uncompressed, its length, its bytes.
fn grpc_frame(msg: &[u8]) -> Vec<u8> {
    let mut f = vec![0];
    f.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    f.extend_from_slice(msg);
    f
}

#[test]
fn grpc_calls_over_http3_reach_an_h2_upstream() {
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let (_grpc, port) = common::script::start("/usr/bin/python3", "grpc_server.py", &[]);
    let dir = TempDir::new("h3-grpc");
    let ca = common::pki::Ca::new("ringside h3 CA");
    ca.leaf(&dir, "leaf", "h2.test", &["h2.test"]);
    let ca_pem = dir.write("ca.pem", ca.pem().as_bytes());
    let cfg = dir.write(
        "ringside.toml",
        format!(
            r#"
[server]
listen = [{{ addr = "127.0.0.1:0", tls = {{ cert = "leaf.pem", key = "leaf.key" }} }}]

[upstream.grpc]
protocol = "h2"
servers = ["127.0.0.1:{port}"]
retries = 0

[[route]]
prefix = "/"
upstream = "grpc"
grpc = true
"#
        )
        .as_bytes(),
    );
    let srv = Ringside::as_configured("io-uring", &cfg);
    let call = |method: &str, msg: &[u8]| {
        json!({"path": format!("/test.Echo/{method}"), "method": "POST",
               "headers": [["content-type", "application/grpc"], ["te", "trailers"]],
               "body_b64": b64(&grpc_frame(msg))})
    };
    let report = aioquic(
        srv.addr,
        &ca_pem,
        "h2.test",
        &json!([call("Unary", b"over h3"), call("Fail", b"x")]),
    );
    let a = answers(&report);
    assert_eq!(a[0]["status"], 200, "{}", a[0]);
    assert_eq!(a[0]["body"], b64(&grpc_frame(b"echo:over h3")), "{}", a[0]);
    let status = |a: &Value| -> Option<String> {
        let fields = a["trailers"].as_array().or(a["headers"].as_array())?;
        fields
            .iter()
            .find(|f| f[0] == "grpc-status")
            .and_then(|f| f[1].as_str().map(str::to_owned))
    };
    assert_eq!(status(&a[0]).as_deref(), Some("0"), "trailers: {}", a[0]);
    let failed = status(&a[1]).expect("a grpc-status");
    assert_ne!(failed, "0", "{}", a[1]);
}

//! HTTPS against nginx with a certificate from a test CA: kept-alive and
//! new connections (whose handshakes resume the core's sessions), and
//! certificate verification: --cacert, the system roots (which refuse the
//! test CA, clearly), --insecure.

mod common;

use common::nginx::{self, DOC};
use common::{bench, bench_json, bench_ok, field, num, u};

#[test]
fn keepalive_reuses_the_tls_connection() {
    let ng = nginx::start("https-k", "ssl");
    let url = format!("https://localhost:{}/", ng.port);
    let ca = ng.ca();
    let r = bench_ok(&["-q", "-k", "-n", "400", "-c", "4", "--cacert", &ca, &url]);
    assert_eq!(num(&r, "Complete requests:"), 400, "{r}");
    assert_eq!(num(&r, "Failed requests:"), 0, "{r}");
    assert_eq!(num(&r, "Keep-Alive requests:"), 400, "{r}");
    assert_eq!(num(&r, "HTML transferred:"), 400 * DOC.len() as u64, "{r}");
    assert!(field(&r, "SSL/TLS Protocol:").starts_with("TLSv1."), "{r}");
    assert!(field(&r, "Server Temp Key:").ends_with("bits"), "{r}");
    assert_eq!(field(&r, "TLS Server Name:"), "localhost", "{r}");
    assert_eq!(
        field(&r, "TLS sessions resumed:"),
        "0 of 4 handshakes",
        "{r}"
    );
    // ab's order: the TLS lines follow "Server Port".
    let port = r.find("Server Port:").unwrap();
    let proto = r.find("SSL/TLS Protocol:").unwrap();
    let path = r.find("Document Path:").unwrap();
    assert!(port < proto && proto < path, "{r}");
}

#[test]
fn new_connections_resume_sessions() {
    let ng = nginx::start("https-n", "ssl");
    let url = format!("https://127.0.0.1:{}/", ng.port);
    let ca = ng.ca();
    let v = bench_json(&["-n", "60", "-c", "2", "--cacert", &ca, &url]);
    assert_eq!(u(&v, &["complete_requests"]), 60, "{v}");
    assert_eq!(u(&v, &["failed_requests"]), 0, "{v}");
    assert_eq!(u(&v, &["counts", "tls_handshakes"]), 60, "{v}");
    assert_eq!(u(&v, &["counts", "body_bytes"]), 60 * DOC.len() as u64);
    // Each core's first handshakes are full; the later ones resume.
    assert!(u(&v, &["counts", "tls_resumed"]) >= 50, "{v}");
    // No SNI for an IP address, as ab.
    assert!(v["tls"]["server_name"].is_null(), "{v}");
}

#[test]
fn verification_fails_clearly_unless_insecure() {
    let ng = nginx::start("https-v", "ssl");
    let url = format!("https://localhost:{}/", ng.port);
    // The system roots do not know the test CA.
    let out = bench(&["-q", "-n", "3", &url]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("TLS handshake with localhost:") && err.contains("UnknownIssuer"),
        "{err}"
    );
    let r = String::from_utf8_lossy(&out.stdout);
    assert_eq!(num(&r, "Complete requests:"), 0, "{r}");
    assert!(field(&r, "Failed requests:").starts_with('3'), "{r}");
    assert!(r.contains("(Connect: 3,"), "{r}");
    // --insecure: no verification, the same run succeeds.
    let r = bench_ok(&["-q", "-n", "3", "--insecure", &url]);
    assert_eq!(num(&r, "Complete requests:"), 3, "{r}");
    // A --cacert that is not PEM stops the run before it starts.
    let out = bench(&["-q", "-n", "1", "--cacert", "/dev/null", &url]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cacert"));
}

#[test]
fn tls_group_is_asked_for_and_reported_and_no_resume_makes_full_handshakes() {
    // nginx on Debian 12's OpenSSL 3.0 has no ML-KEM: X25519 and P-256 it
    // has (P-256 must be offered: its certificate is ECDSA P-256, see
    // `crate::tls::GROUPS`), and a client offering X25519MLKEM768 alone
    // finds no group.
    let ng = nginx::start("https-g", "ssl");
    let url = format!("https://localhost:{}/", ng.port);
    let ca = ng.ca();
    for (ask, named) in [("x25519:p256", "X25519"), ("p256", "secp256r1")] {
        let r = bench_ok(&["-q", "-n", "4", "--tls-group", ask, "--cacert", &ca, &url]);
        assert_eq!(num(&r, "Complete requests:"), 4, "{r}");
        assert_eq!(field(&r, "TLS Key Exchange:"), named, "{r}");
        let v = bench_json(&[
            "-n",
            "20",
            "-c",
            "2",
            "--tls-group",
            ask,
            "--tls-no-resume",
            "--cacert",
            &ca,
            &url,
        ]);
        assert_eq!(v["tls"]["group"], named, "{v}");
        assert_eq!(u(&v, &["counts", "tls_handshakes"]), 20, "{v}");
        assert_eq!(u(&v, &["counts", "tls_resumed"]), 0, "{v}");
    }
    let out = bench(&[
        "-q",
        "-n",
        "2",
        "--tls-group",
        "x25519mlkem768",
        "--cacert",
        &ca,
        &url,
    ]);
    let r = String::from_utf8_lossy(&out.stdout);
    assert_eq!(num(&r, "Complete requests:"), 0, "{r}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TLS handshake with localhost:"), "{err}");
}

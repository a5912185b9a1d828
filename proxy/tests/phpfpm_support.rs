//! The php-fpm test peer (`common::phpfpm`) on its own, talked to by the
//! helper's FastCGI client: what the FastCGI tests stand on, and what
//! php-fpm does that a front end must allow for. Fails when php-fpm is not
//! installed (scripts/test.sh installs it).

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::phpfpm::{cgi_params, FcgiConn, Listen, PhpFpm};

fn hello(fpm: &PhpFpm) {
    let r = fpm.get("/hello.php", "");
    assert_eq!(r.protocol_status, 0, "{r:?}");
    assert_eq!(r.status(), 200, "{r:?}");
    assert_eq!(r.body(), b"Hello, World!");
    assert!(r.stderr.is_empty(), "{r:?}");
}

fn unique(tag: &str) -> String {
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{tag}-{}-{ns}", std::process::id())
}

fn params(script: &str, query: &str) -> Vec<(String, String)> {
    cgi_params("GET", script, query, 0)
}

fn refs(p: &[(String, String)]) -> Vec<(&str, &str)> {
    p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[test]
fn tcp_serves_hello_and_counts_in_status() {
    let fpm = PhpFpm::start_tcp(2);
    let Listen::Tcp(addr) = &fpm.listen else {
        panic!("not TCP");
    };
    assert!(addr.ip().is_loopback());
    assert_eq!(fpm.listen.to_string(), addr.to_string());
    assert_eq!(fpm.workers().len(), 2);

    let st = fpm.status();
    assert_eq!(st.listen_queue_len, 511, "{}", st.raw);
    // Nothing but this status request so far.
    assert_eq!(st.accepted_conn, 1, "{}", st.raw);
    let before = fpm.accepted_conn_excluding_probes();
    for _ in 0..3 {
        hello(&fpm);
    }
    assert_eq!(fpm.accepted_conn_excluding_probes(), before + 3);
}

#[test]
fn unix_serves_hello() {
    let fpm = PhpFpm::start_unix(2);
    let Listen::Unix(path) = &fpm.listen else {
        panic!("not unix");
    };
    assert!(path.exists());
    assert_eq!(fpm.listen.to_string(), format!("unix:{}", path.display()));
    hello(&fpm);
    assert_eq!(fpm.workers().len(), 2);
    let path = path.clone();
    drop(fpm);
    assert!(!path.exists(), "php-fpm removes its socket when it stops");
}

#[test]
fn restart_keeps_the_address_and_resets_counters() {
    for unix in [false, true] {
        let mut fpm = if unix {
            PhpFpm::start_unix(1)
        } else {
            PhpFpm::start_tcp(1)
        };
        let listen = fpm.listen.clone();
        let pid = fpm.pid();
        let workers = fpm.workers();
        hello(&fpm);
        fpm.restart();
        assert_eq!(fpm.listen, listen);
        assert_ne!(fpm.pid(), pid);
        // The old master and its child are gone.
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
        for w in workers {
            assert!(!std::path::Path::new(&format!("/proc/{w}")).exists());
        }
        hello(&fpm);
        assert_eq!(fpm.accepted_conn_excluding_probes(), 1);
    }
}

#[test]
fn script_stderr_lands_in_the_log() {
    let fpm = PhpFpm::start_tcp(1);
    let msg = unique("stderr");
    let r = fpm.get("/stderr.php", &format!("msg={msg}"));
    assert_eq!(r.text(), "logged");
    // php://stderr is the child's stderr, not FCGI_STDERR.
    assert!(r.stderr.is_empty(), "{r:?}");
    let log = fpm.wait_for_log(&msg, Duration::from_secs(10));
    // decorate_workers_output = no: the line as the script wrote it.
    assert!(log.lines().any(|l| l == msg), "{log}");

    // A PHP warning goes to the front end as FCGI_STDERR, beside the body,
    // and to the log as well.
    let msg = unique("warning");
    let r = fpm.get("/warn.php", &format!("msg={msg}"));
    assert_eq!(r.text(), "warned");
    let stderr = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(
        stderr.starts_with("PHP message: PHP Warning:") && stderr.contains(&msg),
        "{stderr}"
    );
    fpm.wait_for_log(&msg, Duration::from_secs(10));
}

#[test]
fn the_support_scripts_answer_as_documented() {
    let fpm = PhpFpm::start_unix(2);

    let r = fpm.get("/index.php", "");
    assert_eq!(r.text(), "index");
    let r = fpm.get("/sub/index.php", "");
    assert_eq!(r.text(), "sub index");

    let r = fpm.get("/status.php", "code=404");
    assert_eq!((r.status(), r.text().as_str()), (404, "not here"));
    let r = fpm.get("/status.php", "redirect=1");
    assert_eq!(r.status(), 302);
    assert_eq!(r.header("Location").as_deref(), Some("/elsewhere"));
    assert!(r.body().is_empty());

    let body: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let r = fpm.request("POST", "/echo.php", "", &body);
    assert_eq!(
        r.header("Content-Type").as_deref(),
        Some("application/octet-stream")
    );
    assert_eq!(r.body(), &body[..]);

    let r = fpm.get("/stream.php", "mb=2");
    let block = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-\n";
    assert_eq!(block.len(), 64);
    assert_eq!(r.body().len(), 2 << 20);
    assert!(r.body().chunks(64).all(|c| c == block));

    let r = fpm.get("/slow.php", "s=0.05");
    assert_eq!(r.text(), "slow");

    // What a front end sends arrives as documented by headers.php; a
    // Proxy: header must never become HTTP_PROXY (not sent here).
    let mut p = params("/headers.php", "a=1&b=2");
    p.push(("HTTP_X_TEST".into(), "yes".into()));
    p.push(("PATH_INFO".into(), "/extra".into()));
    let r = fpm.connect().request(&refs(&p), b"", false).unwrap();
    let text = String::from_utf8_lossy(r.body()).into_owned();
    let root = PhpFpm::docroot();
    let want = [
        "SCRIPT_NAME=/headers.php".to_owned(),
        format!("SCRIPT_FILENAME={}/headers.php", root.display()),
        "PATH_INFO=/extra".to_owned(),
        "QUERY_STRING=a=1&b=2".to_owned(),
        "REQUEST_METHOD=GET".to_owned(),
        "REQUEST_URI=/headers.php?a=1&b=2".to_owned(),
        format!("DOCUMENT_ROOT={}", root.display()),
        "SERVER_PROTOCOL=HTTP/1.1".to_owned(),
        "GATEWAY_INTERFACE=CGI/1.1".to_owned(),
        "REMOTE_ADDR=127.0.0.1".to_owned(),
        "HTTP_X_TEST=yes".to_owned(),
        "HTTP_PROXY=unset".to_owned(),
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), want);

    // A script that is not there: 404 and FCGI_STDERR from php-fpm.
    let r = fpm.get("/nothing-here.php", "");
    assert_eq!(r.status(), 404);
    assert_eq!(r.stderr, b"Primary script unknown");
}

/// FCGI_KEEP_CONN: php-fpm serves many requests on one connection, and the
/// child stays with it while it is idle, counting one more "accepted conn"
/// each time it goes back to wait.
#[test]
fn a_kept_connection_holds_its_child() {
    let fpm = PhpFpm::start_tcp(1);
    let before = fpm.accepted_conn_excluding_probes();
    let p = params("/hello.php", "");
    let mut kept = fpm.connect();
    for _ in 0..5 {
        let r = kept.request(&refs(&p), b"", true).unwrap();
        assert_eq!(r.body(), b"Hello, World!");
    }
    assert_eq!(fpm.open_connections(), 1);

    // The only child waits on `kept`: a second connection is accepted by
    // the kernel but waits in php-fpm's backlog, unserved.
    let mut other = fpm.connect();
    other.send_request(&refs(&p), b"", false).unwrap();
    assert_eq!(fpm.backlog(), 1);
    assert_eq!(fpm.open_connections(), 2);

    // Closing the kept connection frees the child for it.
    drop(kept);
    let r = other.read_response().unwrap();
    assert_eq!(r.body(), b"Hello, World!");
    assert_eq!(fpm.backlog(), 0);
    // Not kept: php-fpm shuts down its side (we read EOF), then its child
    // reads until we close ours, and serves no one else meanwhile.
    assert!(other.closed_by_peer());
    drop(other);

    // 5 requests on `kept` counted 6 (one more wait after the last), the
    // request on `other` 1.
    assert_eq!(fpm.accepted_conn_excluding_probes(), before + 7);
}

/// php-fpm kills a child whose kept connection stays idle longer than
/// request_terminate_timeout; the front end sees the connection close.
#[test]
fn an_idle_kept_connection_ends_at_request_terminate_timeout() {
    let fpm = PhpFpm::start_with(false, 1, "request_terminate_timeout = 1s");
    let p = params("/hello.php", "");
    let mut kept = fpm.connect();
    let r = kept.request(&refs(&p), b"", true).unwrap();
    assert_eq!(r.body(), b"Hello, World!");
    let worker = fpm.workers();
    kept.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    assert!(kept.closed_by_peer(), "php-fpm kept the idle connection");
    fpm.wait_for_log("execution timed out", Duration::from_secs(10));
    // The master started a new child in its place.
    fpm.wait_for_log("NOTICE: [pool www] child", Duration::from_secs(10));
    hello(&fpm);
    assert_ne!(fpm.workers(), worker);
}

/// FCGI_GET_VALUES: php-fpm 8.2 answers FCGI_MPXS_CONNS=0 (one request at a
/// time per connection) and nothing for FCGI_MAX_CONNS or FCGI_MAX_REQS, so
/// a front end cannot learn pm.max_children this way. The answer comes only
/// from a child (so it tells that a child took the connection), the
/// connection stays open and serves a request after it, and `accepted conn`
/// counts the question as one more read.
#[test]
fn get_values_says_no_multiplexing_only() {
    let fpm = PhpFpm::start_unix(3);
    let before = fpm.accepted_conn_excluding_probes();
    let mut c = FcgiConn::connect(&fpm.listen).unwrap();
    let got = c
        .get_values(&["FCGI_MAX_CONNS", "FCGI_MAX_REQS", "FCGI_MPXS_CONNS"])
        .unwrap();
    assert_eq!(got, vec![("FCGI_MPXS_CONNS".into(), "0".into())]);
    let p = params("/hello.php", "");
    let r = c.request(&refs(&p), b"", true).unwrap();
    assert_eq!(r.body(), b"Hello, World!");
    drop(c);
    // The question, the request, and the wait that ended at the close
    // (a kept connection without the question counts 2). The child counts
    // that last one when it reads the close, which php-fpm reports no
    // sooner than its status page shows it: ask until it does.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut counted = fpm.accepted_conn_excluding_probes() - before;
    while counted < 3 && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(10));
        counted = fpm.accepted_conn_excluding_probes() - before;
    }
    assert_eq!(counted, 3);
}

/// With every child held by a kept connection, a new connection's
/// FCGI_GET_VALUES goes unanswered (it waits in the backlog); closing one
/// kept connection frees its child, which answers it.
#[test]
fn get_values_waits_for_a_free_child() {
    let fpm = PhpFpm::start_tcp(1);
    let mut held = FcgiConn::connect(&fpm.listen).unwrap();
    let p = params("/hello.php", "");
    let r = held.request(&refs(&p), b"", true).unwrap();
    assert_eq!(r.body(), b"Hello, World!");
    let mut waiting = FcgiConn::connect(&fpm.listen).unwrap();
    waiting
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let e = waiting.get_values(&["FCGI_MPXS_CONNS"]).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
        "{e}"
    );
    drop(held);
    waiting
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let got = waiting.read_get_values().unwrap();
    assert_eq!(got, vec![("FCGI_MPXS_CONNS".into(), "0".into())]);
}

//! Persistent connections, pipelining and body framing over a raw socket.

mod common;

use ringside_runtime::config::BackendChoice;

fn keep_alive_serves_many_requests(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    for _ in 0..20 {
        c.send(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = c.response(false);
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"hello");
        assert_eq!(r.header("Connection"), None);
        assert!(r
            .header("Date")
            .is_some_and(|d| d.ends_with(" GMT") && d.len() == 29));
    }
    c.send(b"GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("Connection"), Some("close"));
    c.expect_closed();
}

fn http10_keeps_alive_only_when_asked(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    c.send(b"GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("Connection"), Some("keep-alive"));
    c.send(b"GET /hello HTTP/1.0\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Connection"), Some("close"));
    c.expect_closed();
}

fn pipelined_requests_answer_in_order(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    let mut batch = Vec::new();
    for i in 0..10 {
        batch
            .extend_from_slice(format!("GET /target?n={i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    batch.extend_from_slice(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde");
    batch.extend_from_slice(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    c.send(&batch);
    for i in 0..10 {
        let r = c.response(false);
        assert_eq!(r.body, format!("/target?n={i}").as_bytes());
    }
    assert_eq!(c.response(false).body, b"abcde");
    assert_eq!(c.response(false).body, b"hello");
}

fn pipelined_request_split_across_writes(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    // The second request's head arrives in pieces after the first's.
    c.send(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\nGET /tar");
    assert_eq!(c.response(false).body, b"hello");
    c.send(b"get HTTP/1.1\r\nHo");
    c.send(b"st: t\r\n\r\n");
    assert_eq!(c.response(false).body, b"/target");
}

fn chunked_request_body_streams(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    c.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n",
    );
    c.send(b"6\r\n world\r\n0\r\nX-Trailer: y\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"hello world");
    // The connection is still in step for the next request.
    c.send(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).body, b"hello");
}

fn large_body_echoes_back_chunked(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    let body: Vec<u8> = (0..500_000u32).map(|i| (i % 251) as u8).collect();
    let head = format!(
        "POST /echo-chunked HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut w = c.reader.get_ref().try_clone().unwrap();
    let body2 = body.clone();
    // Write from another thread: the server streams back while we upload.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        w.write_all(head.as_bytes()).unwrap();
        w.write_all(&body2).unwrap();
    });
    let r = c.response(false);
    writer.join().unwrap();
    assert_eq!(r.header("Transfer-Encoding"), Some("chunked"));
    assert_eq!(r.body.len(), body.len());
    assert!(r.body == body);
}

fn chunked_response_and_head(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    c.send(b"GET /chunked HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.body, b"one two three");
    c.send(b"HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(true);
    assert_eq!(r.header("Content-Length"), Some("5"));
    c.send(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).body, b"hello");
    // HTTP/1.0 has no chunked coding: the body ends with the connection.
    c.send(b"GET /chunked HTTP/1.0\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("Transfer-Encoding"), None);
    assert_eq!(r.body, b"one two three");
}

fn expect_100_continue(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    let interim = c.response(false);
    assert_eq!(interim.status, 100);
    c.send(b"ping");
    let r = c.response(false);
    assert_eq!((r.status, &r.body[..]), (200, &b"ping"[..]));
}

fn unread_small_body_is_skipped(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    // /hello ignores the body; the next request must still line up.
    c.send(b"POST /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nxyzGET /target HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).body, b"hello");
    assert_eq!(c.response(false).body, b"/target");
}

fn runtime_connects_out(b: BackendChoice) {
    use std::io::{Read, Write};
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = upstream.local_addr().unwrap().port();
    let echo = std::thread::spawn(move || {
        let (mut s, _) = upstream.accept().unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
        s.write_all(b"pong").unwrap();
    });
    let srv = common::start(b);
    let mut c = srv.connect();
    c.send(format!("GET /relay?{port} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    let r = c.response(false);
    assert_eq!((r.status, &r.body[..]), (200, &b"pong"[..]));
    echo.join().unwrap();
}

fn no_content_statuses_carry_no_body(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    c.send(b"GET /sized-304 HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(false);
    assert_eq!((r.status, r.header("Content-Length")), (304, None));
    // Nothing of the refused body leaked: the next response lines up.
    assert_eq!(c.response(false).body, b"hello");
}

per_backend!(
    no_content_statuses_carry_no_body,
    runtime_connects_out,
    keep_alive_serves_many_requests,
    http10_keeps_alive_only_when_asked,
    pipelined_requests_answer_in_order,
    pipelined_request_split_across_writes,
    chunked_request_body_streams,
    large_body_echoes_back_chunked,
    chunked_response_and_head,
    expect_100_continue,
    unread_small_body_is_skipped,
);

//! Shutdown drains: in-flight requests finish, then the workers end.

mod common;

use std::time::Duration;

use ringside_runtime::config::BackendChoice;

fn shutdown_lets_in_flight_request_finish(b: BackendChoice) {
    let mut srv = common::start(b);
    let mut c = srv.connect();
    c.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    // The handler tells us it runs; only then start the drain.
    srv.started
        .recv_timeout(Duration::from_secs(10))
        .expect("slow request started");
    srv.shutdown();
    let r = c.response(false);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"slow done");
    // Draining: the response says close, and the connection closes.
    assert_eq!(r.header("Connection"), Some("close"));
    c.expect_closed();
    srv.shutdown_and_join();
    // Nothing listens any more.
    assert!(std::net::TcpStream::connect(srv.addr).is_err());
}

fn shutdown_closes_idle_connections(b: BackendChoice) {
    let mut srv = common::start(b);
    let mut c = srv.connect();
    c.send(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).status, 200);
    srv.shutdown_and_join();
    c.expect_closed();
}

per_backend!(
    shutdown_lets_in_flight_request_finish,
    shutdown_closes_idle_connections
);

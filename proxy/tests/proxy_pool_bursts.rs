//! Upstream connections are kept through bursts: responses end in
//! batches and the next requests come a moment later, so for a moment
//! more connections sit idle than `max_idle`. Those the requests in
//! flight lately needed are kept, not closed and opened again for the
//! next batch (`upstream::local::Local::keep_idle`).

mod common;

use common::client::Conn;
use common::origin::Origin;
use common::{Ringside, TempDir};

const CLIENTS: usize = 16;
const REQUESTS: usize = 40;

#[test]
fn a_burst_above_max_idle_keeps_its_connections() {
    let origin = Origin::start("o");
    let dir = TempDir::new("pool-bursts");
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[upstream.o]\nservers = [\"{}\"]\nmax_idle = 2\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"o\"\n",
            origin.addr
        )
        .as_bytes(),
    );
    let srv = Ringside::workers("io-uring", 1, &cfg);
    let addr = srv.addr;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Conn::open(addr);
                for _ in 0..REQUESTS {
                    assert_eq!(c.get("/ok").status, 200);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    // Each client has at most one request in flight: 16 connections
    // serve them all. Closing those above max_idle as each batch ended
    // opened hundreds.
    let opened = origin.conns();
    assert!(
        opened <= 2 * CLIENTS,
        "{opened} upstream connections for {CLIENTS} clients"
    );
    srv.stop();
}

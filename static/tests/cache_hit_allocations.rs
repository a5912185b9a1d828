//! A cached small file is served with no heap allocation per request: the
//! worker thread's allocations are counted while a keep-alive client asks
//! for the same file again and again.

use std::io::{Read, Write};
use std::net::TcpStream;

use ringside_runtime::config::{Affinity, BackendChoice, RuntimeConfig, ServerConfig, Workers};

use ringside_static::{StaticConfig, StaticFiles};

#[path = "../../testsupport/counting_alloc.rs"]
mod counting;
use counting::{allocations, count_here, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_per_hit(backend: BackendChoice, file: &str, size: usize) {
    let root = std::env::temp_dir().join(format!(
        "ringside-alloc-{}-{backend:?}-{size}",
        std::process::id()
    ));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join(file), vec![b'x'; size]).unwrap();
    let rt = RuntimeConfig {
        workers: Workers::Count(1),
        affinity: Affinity::Off,
        backend,
        ring_entries: 256,
        ..RuntimeConfig::default()
    };
    let srv = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..ServerConfig::default()
    };
    let cfg = StaticConfig::new(root.clone());
    let server = ringside_http::start(&rt, &srv, move |_| {
        // Built on the worker thread: count everything this thread allocates.
        count_here(true);
        StaticFiles::from_config(&cfg).unwrap()
    })
    .unwrap();
    let mut s = TcpStream::connect(server.local_addrs[0]).unwrap();
    let req = format!(
        "GET /{file} HTTP/1.1\r\nHost: t\r\nIf-None-Match: \"x\"\r\nAccept-Encoding: gzip\r\n\r\n"
    );
    let mut buf = vec![0u8; size + 4096];
    let mut one = |s: &mut TcpStream| {
        s.write_all(req.as_bytes()).unwrap();
        let mut got = 0;
        loop {
            got += s.read(&mut buf[got..]).unwrap();
            if let Some(end) = buf[..got].windows(4).position(|w| w == b"\r\n\r\n") {
                if got >= end + 4 + size {
                    assert!(buf.starts_with(b"HTTP/1.1 200"));
                    break;
                }
            }
        }
    };
    // Warm up: the first request loads the cache and grows what grows once.
    for _ in 0..200 {
        one(&mut s);
    }
    let before = allocations();
    for _ in 0..2000 {
        one(&mut s);
    }
    let during = allocations() - before;
    drop(s);
    server.shutdown();
    server.join();
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        during, 0,
        "{backend:?}, {size} B: {during} allocations in 2000 cached hits"
    );
}

// One test, so that no other worker is counted meanwhile.
#[test]
fn cached_hits_do_not_allocate() {
    for backend in [BackendChoice::IoUring, BackendChoice::Epoll] {
        allocations_per_hit(backend, "hello.txt", 26);
        allocations_per_hit(backend, "page.bin", 11 * 1024);
    }
}

//! The disk tier through the binary: stored responses are written to
//! each core's files, a large one is then sent from its file, a restart
//! answers from the files with no origin request (once the index is read
//! in the background), and a purge by tag given before the restart holds
//! after it.

mod common;

use std::time::{Duration, Instant};

use common::cache_origin::{fetch, is_hit, pattern, Answer, CacheOrigin};
use common::{Ringside, TempDir, BACKENDS};

fn config(origin: std::net::SocketAddr, disk: &std::path::Path) -> String {
    format!(
        "[cache.c]\ndisk = \"{}\"\ndisk_size = \"64m\"\n\n\
         [upstream.o]\nservers = [\"{origin}\"]\nmax_fails = 0\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"o\"\ncache = \"c\"\n",
        disk.display()
    )
}

/// Waits (bounded) until this server's disk tier holds `n` objects, by
/// its own gauge.
fn wait_disk(srv: &mut Ringside, n: f64) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let got = srv.metric("ringside_cache_entries{worker=\"0\",cache=\"c\",tier=\"disk\"}");
        if got >= n {
            return;
        }
        assert!(
            Instant::now() < end,
            "the disk tier holds {got} objects, not {n}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_restart_answers_from_disk_without_the_origin() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-disk");
        let disk = dir.path().join("cache");
        let cfg = dir.write("r.toml", config(origin.addr, &disk).as_bytes());
        let small = pattern(300, 1);
        let large = pattern(1 << 20, 2);
        origin.set(
            "/small",
            Answer::ok(small.clone())
                .header("Cache-Control", "max-age=3600")
                .header("Surrogate-Key", "s"),
        );
        origin.set(
            "/large",
            Answer::ok(large.clone())
                .header("Cache-Control", "max-age=3600")
                .header("Surrogate-Key", "l"),
        );
        origin.set(
            "/tagged",
            Answer::ok("tagged")
                .header("Cache-Control", "max-age=3600")
                .header("Surrogate-Key", "gone"),
        );
        let mut srv = Ringside::with_admin_on(backend, 1, &cfg);
        for p in ["/small", "/large", "/tagged"] {
            assert_eq!(fetch(srv.addr, "GET", p, &[]).status, 200, "{backend}");
        }
        wait_disk(&mut srv, 3.0);
        // The large body is sent from its file now: still whole.
        let r = fetch(srv.addr, "GET", "/large", &[]);
        assert!(is_hit(&r), "{backend}: {}", r.head);
        assert_eq!(r.body, large, "{backend}");
        let r = fetch(srv.addr, "GET", "/large", &[("Range", "bytes=1000-1999")]);
        assert_eq!(r.status, 206, "{backend}: {}", r.head);
        assert_eq!(r.body, &large[1000..2000], "{backend}");
        // A purge by tag, then a restart.
        let p = fetch(srv.addr, "PURGE", "/", &[("Surrogate-Key", "gone")]);
        assert_eq!(p.status, 200, "{backend}");
        srv.stop();
        let mut srv = Ringside::with_admin_on(backend, 1, &cfg);
        wait_disk(&mut srv, 2.0);
        for (p, body) in [("/small", &small), ("/large", &large)] {
            let r = fetch(srv.addr, "GET", p, &[]);
            assert!(is_hit(&r), "{backend} {p} after the restart: {}", r.head);
            assert_eq!(&r.body, body, "{backend} {p}");
            assert_eq!(origin.count(p), 1, "{backend} {p} reached the origin again");
        }
        // The purge held across the restart.
        let r = fetch(srv.addr, "GET", "/tagged", &[]);
        assert!(
            !is_hit(&r),
            "{backend}: a purged object came back: {}",
            r.head
        );
        assert_eq!(origin.count("/tagged"), 2, "{backend}");
        srv.stop();
    }
}

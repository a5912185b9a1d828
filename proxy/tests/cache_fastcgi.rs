//! FastCGI responses are cached like HTTP ones: a PHP page behind the cache
//! (a real php-fpm) runs once, its later requests are answered from the
//! store, and a purge by the tag PHP set makes it run again.

mod common;

use common::cache_origin::{fetch, is_hit};
use common::phpfpm::PhpFpm;
use common::{Ringside, TempDir, BACKENDS};

#[test]
fn a_php_page_is_cached_and_purged_by_its_tag() {
    let fpm = PhpFpm::start_tcp(2);
    for backend in BACKENDS {
        let dir = TempDir::new("cache-fastcgi");
        let base = fpm.ringside_config(&dir, "");
        let text = std::fs::read_to_string(&base).unwrap();
        let text = format!("[cache.php]\n\n{text}cache = \"php\"\n");
        let cfg = dir.write("cached.toml", text.as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        let first = fetch(srv.addr, "GET", "/cached.php?p=7", &[]);
        assert_eq!(first.status, 200, "{backend}: {}", first.head);
        assert!(first.text().starts_with("ran at "), "{backend}");
        assert!(!is_hit(&first), "{backend}: {}", first.head);
        for _ in 0..3 {
            let r = fetch(srv.addr, "GET", "/cached.php?p=7", &[]);
            assert!(is_hit(&r), "{backend}: {}", r.head);
            assert_eq!(r.body, first.body, "{backend}: the script ran again");
        }
        // Another query is another key.
        let other = fetch(srv.addr, "GET", "/cached.php?p=8", &[]);
        assert!(!is_hit(&other), "{backend}");
        assert_ne!(other.body, first.body, "{backend}");
        let purged = fetch(srv.addr, "PURGE", "/", &[("Surrogate-Key", "page-7")]);
        assert_eq!(purged.status, 200, "{backend}: {}", purged.head);
        let again = fetch(srv.addr, "GET", "/cached.php?p=7", &[]);
        assert!(!is_hit(&again), "{backend}: {}", again.head);
        assert_ne!(
            again.body, first.body,
            "{backend}: not run again after the purge"
        );
        // The other page kept its stored response.
        let kept = fetch(srv.addr, "GET", "/cached.php?p=8", &[]);
        assert!(is_hit(&kept), "{backend}: {}", kept.head);
        srv.stop();
    }
}

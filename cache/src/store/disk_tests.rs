use std::future::Future;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use ringside_runtime::worker::run_local;
use ringside_runtime::Backend;

use super::*;

/// A directory under the system's temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "ringside-disk-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    fn core(&self) -> PathBuf {
        core_dir(&self.0, 0)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The backends to run each test on: io_uring where the kernel allows it,
/// and epoll (the blocking file path); glommio (blocking, like epoll) with
/// RINGSIDE_TEST_GLOMMIO set, as its executor wants locked memory that a
/// test host may not grant.
fn backends() -> Vec<Backend> {
    let mut b = Vec::new();
    if ringside_runtime::backend::probe_uring().is_ok() {
        b.push(Backend::IoUring);
    } else {
        eprintln!("io_uring refused here: testing the epoll backend only");
    }
    b.push(Backend::Epoll);
    if std::env::var_os("RINGSIDE_TEST_GLOMMIO").is_some() {
        b.push(Backend::Glommio);
    }
    b
}

/// Runs `test` once per backend, each on a fresh engine on its own thread,
/// in a fresh directory.
fn each_backend<F, Fut>(name: &str, test: F)
where
    F: Fn(Backend, TempDir) -> Fut + Send + Sync + Copy + 'static,
    Fut: Future<Output = ()>,
{
    for backend in backends() {
        let dir = TempDir::new(name);
        std::thread::spawn(move || run_local(backend, test(backend, dir)).unwrap())
            .join()
            .unwrap_or_else(|_| panic!("failed on {backend}"));
    }
}

/// Lets the tasks spawned on the core (unlinks) run.
async fn settle() {
    for _ in 0..8 {
        ringside_runtime::task::yield_now().await;
    }
    ringside_runtime::task::sleep(Duration::from_millis(20)).await;
}

/// Polls both futures to their ends.
async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(|cx| {
        if ra.is_none() {
            if let Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        if ra.is_some() && rb.is_some() {
            Poll::Ready((ra.take().unwrap(), rb.take().unwrap()))
        } else {
            Poll::Pending
        }
    })
    .await
}

fn body_of(n: usize, seed: u8) -> Bytes {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed)
        .collect::<Vec<u8>>()
        .into()
}

/// Every file under `dir` whose name ends with `suffix`.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p, suffix));
        } else if p.to_string_lossy().ends_with(suffix) {
            out.push(p);
        }
    }
    out
}

/// The body as the edge would send it: `body_len` bytes of the file at
/// `body_offset`.
fn body_in_file(f: &Found) -> Vec<u8> {
    let mut b = vec![0u8; f.body_len as usize];
    f.std_file().read_exact_at(&mut b, f.body_offset).unwrap();
    b
}

const MB: u64 = 1 << 20;

#[test]
fn put_get_round_trip() {
    each_backend("roundtrip", |_, dir| async move {
        let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
        d.rebuild().await.unwrap();
        let cases = [
            (1u64, 0usize),
            (2, 10),
            (3, 60_000),
            (4, 300_000),
            (5, 3 * MB as usize),
        ];
        for (h, n) in cases {
            let key = format!("GET example.com/{h}");
            let head = format!("status 200 head of {h}").repeat(h as usize);
            assert!(d
                .put(h, key.as_bytes(), head.as_bytes(), body_of(n, h as u8))
                .await
                .unwrap());
        }
        assert_eq!(d.len(), 5);
        for (h, n) in cases {
            let key = format!("GET example.com/{h}");
            let head = format!("status 200 head of {h}").repeat(h as usize);
            let f = d.get(h, key.as_bytes()).await.unwrap().expect("stored");
            assert_eq!(&f.head[..], head.as_bytes());
            assert_eq!(f.body_len, n as u64);
            let end = (64 + key.len() + head.len()) as u64;
            let want = if n as u64 > 64 * 1024 {
                end.next_multiple_of(4096)
            } else {
                end
            };
            assert_eq!(f.body_offset, want);
            assert_eq!(body_in_file(&f), &body_of(n, h as u8)[..], "object {h}");
            // Small files come whole with the first read.
            assert_eq!(f.body.is_some(), f.body_offset + f.body_len <= 64 * 1024);
            if let Some(b) = &f.body {
                assert_eq!(b, &body_of(n, h as u8));
            }
            let on_disk = std::fs::metadata(d.path_of(h)).unwrap().len();
            assert_eq!(on_disk, f.body_offset + f.body_len);
        }
        // The fan-out: a/bc/abc….obj.
        let p = d.path_of(0xabcd_0000_0000_0001);
        assert!(p.ends_with("a/bc/abcd000000000001.obj"), "{}", p.display());
        assert!(d.get(99, b"GET example.com/99").await.unwrap().is_none());
        // Replacing keeps one object and one charge.
        let before = d.bytes();
        assert!(d
            .put(2, b"GET example.com/2", b"new", body_of(10, 9))
            .await
            .unwrap());
        let f = d.get(2, b"GET example.com/2").await.unwrap().unwrap();
        assert_eq!(&f.head[..], b"new");
        assert_eq!(f.body.as_deref(), Some(&body_of(10, 9)[..]));
        assert_eq!(d.bytes(), before);
        assert_eq!(d.len(), 5);
        settle().await;
        assert!(files(d.dir(), ".tmp").is_empty());
    });
}

#[test]
fn another_key_under_the_same_hash_is_a_miss() {
    each_backend("wrongkey", |_, dir| async move {
        let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
        d.put(7, b"key-a", b"head", body_of(100, 1)).await.unwrap();
        assert!(d.get(7, b"key-b").await.unwrap().is_none());
        assert!(d.get(7, b"key-").await.unwrap().is_none());
        assert!(d.get(7, b"key-aa").await.unwrap().is_none());
        // Left stored for its own key.
        assert!(d.contains(7));
        assert!(d.get(7, b"key-a").await.unwrap().is_some());
    });
}

#[test]
fn a_restart_finds_every_object_once_rebuilt() {
    each_backend("restart", |_, dir| async move {
        let mut sizes = Vec::new();
        {
            let d = Disk::open(&dir.core(), 64 * MB, 3).unwrap();
            assert_eq!(d.rebuild().await.unwrap(), RebuildReport::default());
            for h in 0..200u64 {
                let n = (h as usize * 997) % 150_000;
                sizes.push(n);
                let hash = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                d.put(hash, &h.to_le_bytes(), b"head", body_of(n, h as u8))
                    .await
                    .unwrap();
            }
            assert_eq!(d.len(), 200);
            settle().await;
        }
        let d = Disk::open(&dir.core(), 64 * MB, 3).unwrap();
        // Before the rebuild: a miss.
        let first = 5u64.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        assert!(!d.contains(first));
        assert!(d.get(first, &5u64.to_le_bytes()).await.unwrap().is_none());
        let report = d.rebuild().await.unwrap();
        assert_eq!(report.objects, 200, "{report:?}");
        assert_eq!(
            report.corrupt + report.temp + report.errors + report.foreign,
            0
        );
        assert_eq!(report.bytes, d.bytes());
        assert!(d.is_rebuilt());
        for h in 0..200u64 {
            let hash = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let f = d.get(hash, &h.to_le_bytes()).await.unwrap().expect("found");
            assert_eq!(&f.head[..], b"head");
            assert_eq!(body_in_file(&f), &body_of(sizes[h as usize], h as u8)[..]);
        }
        // A second rebuild does nothing.
        assert_eq!(d.rebuild().await.unwrap(), RebuildReport::default());
        assert_eq!(d.len(), 200);
    });
}

#[test]
fn truncated_or_flipped_objects_are_never_served() {
    each_backend("torn", |_, dir| async move {
        let small = body_of(1000, 1);
        let big = body_of(500_000, 2);
        {
            let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
            d.rebuild().await.unwrap();
            for h in 1..=6 {
                let body = if h % 2 == 1 {
                    small.clone()
                } else {
                    big.clone()
                };
                d.put(h, &[h as u8], b"head", body).await.unwrap();
            }
            // In this run: a truncated file (small and big) and a flipped
            // small body are caught on the read, and removed.
            let cut = |h: u64, by: u64| {
                let p = d.path_of(h);
                let len = std::fs::metadata(&p).unwrap().len();
                let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
                f.set_len(len - by).unwrap();
            };
            cut(1, 1);
            cut(2, 4096);
            flip(&d.path_of(3), 64 + 1 + 4 + 500);
            for h in 1..=3 {
                assert!(d.get(h, &[h as u8]).await.unwrap().is_none(), "object {h}");
                assert!(!d.contains(h));
            }
            settle().await;
            for h in 1..=3 {
                assert!(!d.path_of(h).exists(), "object {h}");
            }
            assert!(d.get(4, &[4]).await.unwrap().is_some());
        }
        // Across a restart: a flipped big body (caught on its first read),
        // a flipped header and a flipped head block, a truncated file.
        flip(&d_path(&dir, 4), 64 + 1 + 4 + 400_000);
        flip(&d_path(&dir, 5), 30);
        flip(&d_path(&dir, 6), 64 + 1 + 2);
        let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
        {
            // And a header cut short.
            std::fs::create_dir_all(d.path_of(9).parent().unwrap()).unwrap();
            std::fs::write(d.path_of(9), b"RSCACHE\0\x01").unwrap();
        }
        let r = d.rebuild().await.unwrap();
        // 5 (header) and 9 (short) at the rebuild; 4 and 6 on their read.
        assert_eq!((r.objects, r.corrupt), (2, 2), "{r:?}");
        assert!(!d.path_of(5).exists() && !d.path_of(9).exists());
        assert!(d.get(4, &[4]).await.unwrap().is_none());
        assert!(d.get(6, &[6]).await.unwrap().is_none());
        assert_eq!(d.len(), 0);
        settle().await;
        assert!(files(d.dir(), ".obj").is_empty());
    });
}

fn d_path(dir: &TempDir, hash: u64) -> PathBuf {
    let name = format!("{hash:016x}");
    dir.core()
        .join(&name[..1])
        .join(&name[1..3])
        .join(format!("{name}.obj"))
}

/// Flips one bit of the byte at `at`.
fn flip(path: &Path, at: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8];
    f.read_exact_at(&mut b, at).unwrap();
    b[0] ^= 0x10;
    f.write_all_at(&b, at).unwrap();
}

#[test]
fn leftover_temp_files_are_removed_at_the_rebuild() {
    each_backend("temp", |_, dir| async move {
        {
            let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
            d.put(0x1234, b"k", b"h", body_of(10, 0)).await.unwrap();
        }
        let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
        let fan = d.path_of(0x1234);
        let fan = fan.parent().unwrap();
        // As a crash mid-write leaves them: an earlier run's, empty or half.
        std::fs::write(fan.join("0000000000001234.00000000000000aa-1.tmp"), b"").unwrap();
        std::fs::write(fan.join("0000000000001234.00000000000000bb-7.tmp"), b"RSCA").unwrap();
        // This run's (a write under way) stays.
        let mine = fan.join(format!("0000000000005678.{:016x}-1.tmp", d.run));
        std::fs::write(&mine, b"").unwrap();
        // Not ours: left alone.
        std::fs::write(fan.join("README"), b"hello").unwrap();
        let r = d.rebuild().await.unwrap();
        assert_eq!((r.objects, r.temp, r.foreign), (1, 2, 1), "{r:?}");
        assert_eq!(files(d.dir(), ".tmp"), vec![mine]);
        assert!(fan.join("README").exists());
    });
}

#[test]
fn bytes_stay_within_the_bound() {
    each_backend("bound", |_, dir| async move {
        let max = 400 * 1024;
        let d = Disk::open(&dir.core(), max, 1).unwrap();
        d.rebuild().await.unwrap();
        // 100 objects of 1..=12 blocks each.
        for h in 0..100u64 {
            let n = 100 + (h as usize * 4093) % 45_000;
            assert!(d
                .put(h, &h.to_le_bytes(), b"", body_of(n, 0))
                .await
                .unwrap());
            assert!(d.bytes() <= max, "{} > {max}", d.bytes());
            // Read the first ten often: their second chance keeps them.
            for k in 0..10u64 {
                if d.contains(k) {
                    d.get(k, &k.to_le_bytes()).await.unwrap().unwrap();
                }
            }
        }
        assert!(d.evictions() > 0);
        assert_eq!(d.evictions() as usize + d.len(), 100);
        assert!((0..10).all(|k| d.contains(k)), "the objects read stayed");
        // Larger than an eighth of the tier: refused, nothing evicted.
        let evictions = d.evictions();
        assert!(!d.put(1000, b"big", b"", body_of(60_000, 0)).await.unwrap());
        assert_eq!(d.evictions(), evictions);
        settle().await;
        let on_disk = files(d.dir(), ".obj");
        assert_eq!(on_disk.len(), d.len());
        let charged: u64 = on_disk
            .iter()
            .map(|p| index::charge_of(std::fs::metadata(p).unwrap().len()))
            .sum();
        assert_eq!(charged, d.bytes());
        // A smaller bound at the next start evicts down to it.
        drop(d);
        let d = Disk::open(&dir.core(), max / 2, 1).unwrap();
        let r = d.rebuild().await.unwrap();
        assert!(r.evicted > 0 && d.bytes() <= max / 2, "{r:?}");
        settle().await;
        assert_eq!(files(d.dir(), ".obj").len(), d.len());
    });
}

#[test]
fn another_generation_or_format_version_vanishes() {
    each_backend("generation", |_, dir| async move {
        {
            let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
            for h in 0..10u64 {
                d.put(h, b"k", b"h", body_of(10, 0)).await.unwrap();
            }
        }
        // One file rewritten as another format version, whole.
        let p = d_path(&dir, 3);
        let mut b = std::fs::read(&p).unwrap();
        b[8..12].copy_from_slice(&(format::FORMAT_VERSION + 1).to_le_bytes());
        let crc = crc32c(0, &b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&p, &b).unwrap();
        let d = Disk::open(&dir.core(), 64 * MB, 2).unwrap();
        let r = d.rebuild().await.unwrap();
        assert_eq!(
            (r.objects, r.other_generation, r.other_version),
            (0, 9, 1),
            "{r:?}"
        );
        assert!(files(d.dir(), ".obj").is_empty());
        assert!(d.get(1, b"k").await.unwrap().is_none());
        // A file of another generation that slips into the index (copied
        // in behind it) is refused on its read too.
        d.put(4, b"k", b"h", body_of(10, 0)).await.unwrap();
        let old = Disk::open(&dir.0.join("old"), 64 * MB, 1).unwrap();
        old.put(4, b"k", b"h", body_of(10, 0)).await.unwrap();
        std::fs::copy(old.path_of(4), d.path_of(4)).unwrap();
        assert!(d.get(4, b"k").await.unwrap().is_none());
        assert!(!d.contains(4));
    });
}

#[test]
fn concurrent_puts_of_a_key_leave_one_whole_object() {
    each_backend("concurrent", |_, dir| async move {
        let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
        d.rebuild().await.unwrap();
        let a = body_of(200_000, 1);
        let b = body_of(150_000, 2);
        let (ra, rb) = join(
            d.put(42, b"k", b"head-a", a.clone()),
            d.put(42, b"k", b"head-b", b.clone()),
        )
        .await;
        assert!(ra.unwrap() || rb.unwrap());
        let f = d.get(42, b"k").await.unwrap().unwrap();
        let body = body_in_file(&f);
        match &f.head[..] {
            b"head-a" => assert_eq!(body, &a[..]),
            b"head-b" => assert_eq!(body, &b[..]),
            other => panic!("head {other:?}"),
        }
        assert_eq!(d.len(), 1);
        assert_eq!(d.bytes(), index::charge_of(f.body_offset + f.body_len));
        settle().await;
        assert_eq!(files(d.dir(), ".obj").len(), 1);
        assert!(files(d.dir(), ".tmp").is_empty());
        // Whole across a restart as well (the body checked on the read).
        drop(f);
        drop(d);
        let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
        assert_eq!(d.rebuild().await.unwrap().objects, 1);
        assert!(d.get(42, b"k").await.unwrap().is_some());
    });
}

#[test]
fn a_removal_wins_over_a_write_under_way() {
    each_backend("remove", |backend, dir| async move {
        let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
        d.rebuild().await.unwrap();
        d.put(1, b"k", b"h", body_of(10, 0)).await.unwrap();
        d.remove(1);
        assert!(!d.contains(1));
        assert!(d.get(1, b"k").await.unwrap().is_none());
        // Removed while its write is under way (on io_uring the first poll
        // stops at the open; elsewhere the write ends in it).
        let mut put = pin!(d.put(2, b"k", b"h", body_of(100_000, 0)));
        let first = std::future::poll_fn(|cx| Poll::Ready(put.as_mut().poll(cx))).await;
        d.remove(2);
        let stored = match first {
            Poll::Ready(r) => r.unwrap(),
            Poll::Pending => put.await.unwrap(),
        };
        if backend == Backend::IoUring {
            assert!(!stored);
        }
        assert!(!d.contains(2));
        assert!(d.get(2, b"k").await.unwrap().is_none());
        settle().await;
        assert!(files(d.dir(), ".obj").is_empty());
        assert!(files(d.dir(), ".tmp").is_empty());
        assert_eq!((d.len(), d.bytes()), (0, 0));
    });
}

#[test]
fn writes_during_the_rebuild_are_kept_and_not_counted_twice() {
    each_backend("during", |_, dir| async move {
        {
            let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
            for h in 0..50u64 {
                d.put(h, b"k", b"old", body_of(100, 0)).await.unwrap();
            }
        }
        let d = Disk::open(&dir.core(), 64 * MB, 1).unwrap();
        // Written and removed before the rebuild reads them.
        d.put(7, b"k", b"new", body_of(100, 1)).await.unwrap();
        d.remove(8);
        let r = d.rebuild().await.unwrap();
        assert_eq!(r.objects, 48, "{r:?}");
        assert_eq!(d.len(), 49);
        assert_eq!(&d.get(7, b"k").await.unwrap().unwrap().head[..], b"new");
        assert!(d.get(8, b"k").await.unwrap().is_none());
        assert_eq!(&d.get(9, b"k").await.unwrap().unwrap().head[..], b"old");
    });
}

//! A kernel that refuses io_uring, as Docker's default seccomp profile does:
//! `auto` falls back to epoll and says so; asking for io_uring explicitly
//! fails at once with a message, never a hang or a panic.

mod common;

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Ringside, TempDir, BIN};

/// Makes io_uring_setup fail with EPERM in the child, like a seccomp profile.
fn refuse_io_uring(cmd: &mut Command) -> &mut Command {
    // SAFETY: only async-signal-safe calls (prctl) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            const BPF_LD_W_ABS: u16 = 0x20;
            const BPF_JEQ_K: u16 = 0x15;
            const BPF_RET_K: u16 = 0x06;
            const RET_ERRNO: u32 = 0x0005_0000;
            const RET_ALLOW: u32 = 0x7fff_0000;
            let filter = [
                libc::sock_filter {
                    code: BPF_LD_W_ABS,
                    jt: 0,
                    jf: 0,
                    k: 0,
                },
                libc::sock_filter {
                    code: BPF_JEQ_K,
                    jt: 0,
                    jf: 1,
                    k: libc::SYS_io_uring_setup as u32,
                },
                libc::sock_filter {
                    code: BPF_RET_K,
                    jt: 0,
                    jf: 0,
                    k: RET_ERRNO | libc::EPERM as u32,
                },
                libc::sock_filter {
                    code: BPF_RET_K,
                    jt: 0,
                    jf: 0,
                    k: RET_ALLOW,
                },
            ];
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut _,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const _ as usize,
                    0,
                    0,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

#[test]
fn auto_falls_back_to_epoll_and_says_why() {
    let root = TempDir::new("fallback");
    root.write("a.txt", b"served\n");
    let mut cmd = Command::new(BIN);
    cmd.args([
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--root",
        root.path().to_str().unwrap(),
    ]);
    let mut srv = Ringside::start_with(refuse_io_uring(&mut cmd));
    assert!(srv.banner.contains("backend: epoll"), "{}", srv.banner);
    assert_eq!(srv.get("/a.txt"), (200, b"served\n".to_vec()));
    srv.signal(libc::SIGTERM);
    assert!(srv.wait(Duration::from_secs(30)).success());
    let log = srv.stderr();
    assert!(
        log.contains("io_uring is refused") && log.contains("falling back to epoll"),
        "{log}"
    );
}

#[test]
fn explicit_uring_backends_fail_with_a_message() {
    for backend in ["io-uring", "glommio"] {
        let started = Instant::now();
        let out = refuse_io_uring(Command::new(BIN).args([
            "--listen",
            "127.0.0.1:0",
            "--backend",
            backend,
        ]))
        .output()
        .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{backend}: took {:?}",
            started.elapsed()
        );
        assert_eq!(out.status.code(), Some(1), "{backend}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("backend `{backend}` needs io_uring")),
            "{err}"
        );
        assert!(err.contains("Operation not permitted"), "{err}");
        assert!(err.contains("io_uring_disabled"), "{err}");
    }
}

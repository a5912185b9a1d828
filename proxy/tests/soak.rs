//! The soak's light profile (bench/scripts/soak.py) for two minutes on the
//! debug build, with real php-fpm behind it, so that a descriptor or memory
//! leak fails the suite; and the proof that its descriptor check catches a
//! real leak: the same build told to leak one fd every 1,000 requests
//! (proxy/src/failpoint.rs) must fail it, with the files over.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The two runs pin the same CPUs: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn soak(args: &[&str]) -> (i32, String) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bin_dir: PathBuf = Path::new(env!("CARGO_BIN_EXE_ringside"))
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    assert!(
        bin_dir.join("ringside-bench").exists(),
        "{} is missing: cargo build -p ringside-bench (cargo test --workspace builds it)",
        bin_dir.join("ringside-bench").display()
    );
    let out = Command::new("python3")
        .arg(repo.join("bench/scripts/soak.py"))
        .arg("--bin-dir")
        .arg(&bin_dir)
        .args(args)
        .output()
        .expect("python3 runs bench/scripts/soak.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn light_profile_passes_for_two_minutes() {
    let (rc, text) = soak(&["--duration", "120", "--warmup", "60"]);
    assert!(
        rc == 0 && text.contains("Verdict: **PASS**"),
        "exit {rc}:\n{text}"
    );
    // It did serve: every kind answered, none failed.
    assert!(
        text.contains("failures no fault explains | 0 | pass"),
        "{text}"
    );
}

#[test]
fn a_leaked_descriptor_fails_the_verdict() {
    let (rc, text) = soak(&[
        "--duration",
        "40",
        "--warmup",
        "10",
        "--leak-fd-every",
        "1000",
    ]);
    assert_eq!(rc, 1, "{text}");
    assert!(text.contains("fds FAIL"), "{text}");
    // The leak is /dev/null, a file: the check names the files as over.
    let line = text
        .lines()
        .find(|l| l.contains("MISMATCH"))
        .unwrap_or_else(|| panic!("no mismatch line:\n{text}"));
    assert!(line.contains("file "), "{line}");
}

//! `scripts/test.sh` runs every test binary whatever fails before it
//! (`cargo test --no-fail-fast`), runs its second suite even after the
//! first failed, and fails when either did. Run with a stand-in `cargo`
//! first on PATH that notes its arguments and fails its first run; the
//! rest of the script (its checks of the peers) runs as it is, so a
//! machine without the peers fails here as it does there (the stand-in
//! passes an install of httpwg without installing it).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::TempDir;

#[test]
fn every_binary_runs_and_a_failure_fails_the_script() {
    let dir = TempDir::new("test-script");
    let calls = dir.path().join("calls");
    let fake = dir.write(
        "bin/cargo",
        format!(
            "#!/bin/sh\n\
             # Only `cargo test` is noted (an install of a missing peer\n\
             # tool passes); its first run fails as a failing test binary\n\
             # does (101).\n\
             [ \"$1\" = test ] || exit 0\n\
             touch {calls:?}\n\
             n=$(wc -l < {calls:?})\n\
             echo \"$*\" >> {calls:?}\n\
             [ \"$n\" -eq 0 ] && exit 101\n\
             exit 0\n"
        )
        .as_bytes(),
    );
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/test.sh");
    let path = format!(
        "{}:{}",
        fake.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(&script).env("PATH", path).output().unwrap();
    let calls = std::fs::read_to_string(&calls).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let runs: Vec<&str> = calls.lines().collect();
    assert_eq!(runs.len(), 2, "cargo test runs: {calls}\n{stderr}");
    for run in &runs {
        assert!(run.contains("--no-fail-fast"), "{run}");
    }
    assert!(runs[0].contains("--workspace"), "{}", runs[0]);
    assert_eq!(out.status.code(), Some(101), "{stderr}");
}

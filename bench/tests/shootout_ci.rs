//! The tiny shootout CI runs: `ringside-bench shootout bench/shootouts/ci.toml`
//! (ringside against nginx, static 26 B over HTTP/1.1 and over HTTP/2 with
//! TLS, 2 s each), so the command keeps
//! working end to end: both servers start, are measured, and stop, and the
//! JSON, the report and the charts are written. nginx missing is a failure
//! here (scripts/test.sh installs it), never a skip.

use std::path::Path;
use std::process::Command;

#[test]
fn the_ci_shootout_runs_end_to_end() {
    let bin = env!("CARGO_BIN_EXE_ringside-bench");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let ringside = Path::new(bin).with_file_name("ringside");
    assert!(
        ringside.is_file(),
        "{} is not built; cargo test builds the workspace's binaries first",
        ringside.display()
    );
    let out_dir = std::env::temp_dir().join(format!("shootout-ci-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = Command::new(bin)
        .args(["shootout", "bench/shootouts/ci.toml", "--out"])
        .arg(&out_dir)
        .current_dir(&repo)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "shootout failed:\n{stderr}");
    assert!(
        !stderr.contains("skipped"),
        "a server was skipped:\n{stderr}"
    );

    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["servers"], serde_json::json!(["ringside", "nginx"]));
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "two scenarios, two servers: {json}");
    for c in cells {
        let s = &c["samples"][0];
        assert!(
            s["requests_per_second"].as_f64().unwrap() > 0.0 && s["failed"] == 0,
            "{c}"
        );
        assert_eq!(c["errors"], serde_json::json!([]), "{c}");
    }

    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        report.contains("static 26 B")
            && report.contains("static 26 B (h2, 4 streams)")
            && report.contains('×'),
        "{report}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout, report, "the report is also printed");
    let charts: Vec<_> = std::fs::read_dir(out_dir.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(charts.iter().any(|c| c.ends_with("-rps.svg")), "{charts:?}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

//! Static files with real curl: a range, -z (If-Modified-Since), HEAD, and
//! --compressed against a gzip sibling made by the real gzip.

mod common;

use std::process::Command;

use common::{Ringside, TempDir, BACKENDS};

fn curl(args: &[&str]) -> (String, Vec<u8>) {
    let out = Command::new("curl")
        .args(["-sS", "--fail-with-body", "-D", "-"])
        .args(args)
        .output()
        .expect("curl must be installed (run scripts/test.sh)");
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let at = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap()
        + 4;
    (
        String::from_utf8_lossy(&out.stdout[..at]).into_owned(),
        out.stdout[at..].to_vec(),
    )
}

#[test]
fn curl_range_conditional_head_compressed() {
    let root = TempDir::new("curl");
    let text: String = (0..2000)
        .map(|i| format!("line {i} of a compressible page\n"))
        .collect();
    root.write("page.html", text.as_bytes());
    let status = Command::new("gzip")
        .args(["-k", "-9"])
        .arg(root.path().join("page.html"))
        .status()
        .expect("gzip must be installed");
    assert!(status.success());
    for backend in BACKENDS {
        let srv = Ringside::serving(backend, root.path());
        let url = format!("http://{}/page.html", srv.addr);
        let (head, body) = curl(&["-r", "5-14", &url]);
        assert!(head.starts_with("HTTP/1.1 206"), "{head}");
        assert_eq!(body, &text.as_bytes()[5..15]);
        // -z with the file's own time: not modified since.
        let file = root.path().join("page.html");
        let (head, body) = curl(&["-z", file.to_str().unwrap(), &url]);
        assert!(head.starts_with("HTTP/1.1 304"), "{head}");
        assert!(body.is_empty());
        // -I prints the head as its output; with -D - it would print it twice.
        let out = Command::new("curl")
            .args(["-sS", "-I", &url])
            .output()
            .unwrap();
        let head = String::from_utf8_lossy(&out.stdout);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.contains(&format!("Content-Length: {}", text.len())),
            "{head}"
        );
        assert!(
            head.ends_with("\r\n\r\n"),
            "nothing after the head: {head:?}"
        );
        let (head, body) = curl(&["--compressed", &url]);
        assert!(head.contains("Content-Encoding: gzip"), "{head}");
        let gz_len = std::fs::metadata(root.path().join("page.html.gz"))
            .unwrap()
            .len();
        assert!(
            head.contains(&format!("Content-Length: {gz_len}")),
            "{head}"
        );
        assert_eq!(
            body,
            text.as_bytes(),
            "curl decompressed the sibling to the original"
        );
    }
}

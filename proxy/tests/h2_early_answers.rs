//! An HTTP/2 request answered before its body ended (a route's `deny`, a
//! body declared over `max_body`, a method the static files refuse): the
//! rest of the body is read and thrown away, up to a bound, so that the
//! client finishes sending and takes the answer. A RST_STREAM(NO_ERROR)
//! right after the answer, which RFC 9113 §8.1 allows, made curl 7.88
//! report each of these exchanges failed ("Stream error in the HTTP/2
//! framing layer", exit 92) with the answer in hand.

mod common;

use common::h2::curl;
use common::recorder::Recorder;
use common::{Ringside, TempDir, BACKENDS};

/// curl's exit code and the status it printed for an upload of `file` to
/// `url` over h2c; `streamed`: without a content-length (a stream of DATA).
fn upload(url: &str, file: &std::path::Path, streamed: bool) -> (Option<i32>, String) {
    let data = format!("@{}", file.display());
    let mut args = vec![
        "--http2-prior-knowledge",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
    ];
    if streamed {
        args.extend(["-H", "Transfer-Encoding: chunked"]);
    }
    args.extend(["--data-binary", &data, url]);
    let out = curl(&args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (
        out.status.code(),
        text.trim().rsplit('\n').next().unwrap_or("").to_owned(),
    )
}

#[test]
fn an_early_answer_to_an_upload_reaches_the_client_whole() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new(&format!("h2-early-{backend}"));
        dir.write("www/index.html", b"hello\n");
        // Past the stream's window (256 KiB), so the answer comes while
        // the client still sends.
        let body = dir.write("body.bin", &vec![b'x'; 300 * 1024]);
        let over = dir.write("over.bin", &vec![b'z'; 500 * 1024]);
        let big = dir.write("big.bin", &vec![b'y'; 3 * 1024 * 1024]);
        let cfg = dir.write(
            "ringside.toml",
            format!(
                "[server]\nroot = \"www\"\n\n[limits]\nmax_body = \"400k\"\n\n\
                 [upstream.rec]\nservers = [\"127.0.0.1:{}\"]\n\n\
                 [[route]]\nprefix = \"/api/\"\nupstream = \"rec\"\n\n\
                 [[route]]\nprefix = \"/closed/\"\nupstream = \"rec\"\ndeny = [\"all\"]\n",
                rec.port()
            )
            .as_bytes(),
        );
        let rs = Ringside::configured(backend, &cfg);
        let url = |p: &str| format!("http://{}{p}", rs.addr);
        let before = rec.count();
        // Refused by the route, with its length declared and without.
        for streamed in [false, true] {
            let (code, status) = upload(&url("/closed/x"), &body, streamed);
            assert_eq!(status, "403", "{backend} streamed={streamed}");
            assert_eq!(
                code,
                Some(0),
                "{backend} streamed={streamed}: curl took the 403 as a failure"
            );
        }
        // Declared over max_body: 413 before any routing.
        let (code, status) = upload(&url("/api/x"), &over, false);
        assert_eq!((code, status.as_str()), (Some(0), "413"), "{backend}");
        // A method the static files refuse.
        let (code, status) = upload(&url("/index.html"), &body, false);
        assert_eq!((code, status.as_str()), (Some(0), "405"), "{backend}");
        // Past the bound the rest is cut off, yet the answer came and the
        // server serves on.
        let (_, status) = upload(&url("/closed/x"), &big, true);
        assert_eq!(status, "403", "{backend}");
        assert_eq!(
            rec.count(),
            before,
            "{backend}: nothing refused reached the upstream"
        );
        let out = curl(&[
            "--http2-prior-knowledge",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &url("/index.html"),
        ]);
        assert!(
            String::from_utf8_lossy(&out.stdout).ends_with("200"),
            "{backend}"
        );
    }
}

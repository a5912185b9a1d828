//! ab's display and connection flags, side by side with ab itself on the
//! same in-process origin: `-S`, `-d`, `-w` (with `-x -y -z`), `-g`, the
//! request ab sends for each set of request flags (`-X`, `-P`, `-A`, `-C`,
//! `-H`, `-p`, `-T`, `-i`, `-k`), and `-B`/`-b`.

mod common;

use std::process::Command;

use common::{bench_ok, num, Behavior, Origin};

fn ab(args: &[&str]) -> String {
    let out = Command::new("ab")
        .args(args)
        .output()
        .expect("ab (apache2-utils) is needed by this test");
    assert!(out.status.success(), "ab {args:?}: {}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Both tools' stdout for `flags` and the origin's URL `path`.
fn both(flags: &[&str], path: &str) -> (String, String) {
    let run = |tool: &dyn Fn(&[&str]) -> String| {
        let o = Origin::start(Behavior::default());
        let url = o.url(path);
        let mut args = flags.to_vec();
        args.push(&url);
        let r = tool(&args);
        o.finish();
        r
    };
    (run(&|a: &[&str]| bench_ok(a)), run(&ab))
}

/// From `from` on, numbers as N and runs of spaces as one.
fn shape(report: &str, from: &str) -> Vec<String> {
    let start = report
        .find(from)
        .unwrap_or_else(|| panic!("no {from:?} in:\n{report}"));
    report[start..]
        .lines()
        .map(|l| {
            let mut out = String::new();
            let mut in_num = false;
            for c in l.chars() {
                if c.is_ascii_digit() || (in_num && c == '.') {
                    if !in_num {
                        out.push('N');
                    }
                    in_num = true;
                    continue;
                }
                in_num = false;
                if c == ' ' && out.ends_with(' ') {
                    continue;
                }
                out.push(c);
            }
            out
        })
        .collect()
}

#[test]
fn short_times_and_no_percentiles_as_ab() {
    let (ours, theirs) = both(&["-q", "-S", "-d", "-n", "20"], "/");
    assert!(ours.contains("              min   avg   max\n"), "{ours}");
    assert!(!ours.contains("Percentage of the requests"), "{ours}");
    assert!(
        !ours.contains("WARNING") && !ours.contains("ERROR"),
        "{ours}"
    );
    assert_eq!(
        shape(&ours, "Server Software:"),
        shape(&theirs, "Server Software:")
    );
    let (ours, theirs) = both(&["-q", "-d", "-n", "20"], "/");
    assert!(!ours.contains("Percentage of the requests"), "{ours}");
    let cut = |r: &str| -> Vec<String> {
        shape(r, "Server Software:")
            .into_iter()
            .take_while(|l| !l.starts_with("Connection Times"))
            .collect()
    };
    assert_eq!(cut(&ours), cut(&theirs));
}

#[test]
fn html_tables_as_ab() {
    let flags = ["-q", "-w", "-x", "border=1", "-y", "class=r", "-n", "20"];
    let (ours, theirs) = both(&flags, "/");
    assert!(ours.starts_with("<p>\n"), "{ours}");
    assert!(ours.contains("<table border=1>\n"), "{ours}");
    assert_eq!(shape(&ours, "<table"), shape(&theirs, "<table"));
    let (ours, theirs) = both(&["-q", "-w", "-k", "-z", "x=1", "-n", "20"], "/");
    assert_eq!(shape(&ours, "<table"), shape(&theirs, "<table"));
}

#[test]
fn gnuplot_file_as_abs() {
    let dir = std::env::temp_dir().join(format!("rb-gnuplot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ours_f, theirs_f) = (dir.join("ours.tsv"), dir.join("ab.tsv"));
    let o = Origin::start(Behavior::default());
    bench_ok(&[
        "-q",
        "-n",
        "20",
        "-c",
        "2",
        "-g",
        ours_f.to_str().unwrap(),
        &o.url("/"),
    ]);
    ab(&[
        "-q",
        "-n",
        "20",
        "-c",
        "2",
        "-g",
        theirs_f.to_str().unwrap(),
        &o.url("/"),
    ]);
    o.finish();
    let ours = std::fs::read_to_string(&ours_f).unwrap();
    let theirs = std::fs::read_to_string(&theirs_f).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(ours.lines().count(), 21);
    assert_eq!(ours.lines().next(), theirs.lines().next());
    // Same columns; the dates agree to the minute.
    let row = |t: &str| {
        t.lines()
            .nth(1)
            .unwrap()
            .split('\t')
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let (a, b) = (row(&ours), row(&theirs));
    assert_eq!(a.len(), b.len());
    assert_eq!(a[0][..16], b[0][..16], "{a:?} {b:?}");
    let secs = |r: &[String]| r[1].parse::<i64>().unwrap();
    assert!((secs(&a) - secs(&b)).abs() < 60);
}

/// What the origin got first, but for the User-Agent (only ours differs).
fn request(
    tool: &dyn Fn(&[&str]) -> String,
    flags: &[&str],
    url_of: &dyn Fn(&Origin) -> String,
) -> String {
    let o = Origin::start(Behavior::default());
    let url = url_of(&o);
    let mut args = flags.to_vec();
    args.push(&url);
    tool(&args);
    let port = o.addr.port().to_string();
    let head = o.finish().first_head.replace(&port, "PORT");
    head.lines()
        .filter(|l| !l.starts_with("User-Agent:"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn sends_what_ab_sends() {
    let dir = std::env::temp_dir().join(format!("rb-abreq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body");
    std::fs::write(&body, b"a=1&b=2").unwrap();
    let body = body.to_str().unwrap();
    let plain = |o: &Origin| o.url("/p?q=1");
    let sets: [&[&str]; 5] = [
        &["-q", "-n", "1"],
        &["-q", "-k", "-n", "1"],
        &[
            "-q",
            "-n",
            "1",
            "-i",
            "-C",
            "s=1",
            "-A",
            "u:p",
            "-H",
            "X-A: 1",
            "-H",
            "Accept: text/html",
        ],
        &[
            "-q",
            "-k",
            "-n",
            "1",
            "-p",
            body,
            "-T",
            "application/x-www-form-urlencoded",
        ],
        &["-q", "-n", "1", "-m", "PATCH", "-H", "Host: other"],
    ];
    for flags in sets {
        let ours = request(&|a: &[&str]| bench_ok(a), flags, &plain);
        let theirs = request(&ab, flags, &plain);
        assert_eq!(ours, theirs, "{flags:?}");
    }
    // Through a proxy: the origin is the proxy, the URL names another host.
    for tool in [
        &(|a: &[&str]| bench_ok(a)) as &dyn Fn(&[&str]) -> String,
        &ab,
    ] {
        let o = Origin::start(Behavior::default());
        let proxy = o.addr.to_string();
        tool(&[
            "-q",
            "-n",
            "1",
            "-X",
            &proxy,
            "-P",
            "pu:pp",
            "http://example.invalid:8080/x",
        ]);
        let head = o.finish().first_head;
        assert!(
            head.starts_with("GET http://example.invalid:8080/x HTTP/1.0\r\n"),
            "{head}"
        );
        assert!(
            head.contains("Proxy-Authorization: Basic cHU6cHA=\r\n"),
            "{head}"
        );
        assert!(head.contains("Host: example.invalid:8080\r\n"), "{head}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bind_address_and_buffer_sizes() {
    let o = Origin::start(Behavior::default());
    let r = bench_ok(&[
        "-q",
        "-B",
        "127.0.0.1",
        "-b",
        "65536",
        "-c",
        "2",
        "-n",
        "20",
        &o.url("/"),
    ]);
    let log = o.finish();
    assert_eq!(num(&r, "Complete requests:"), 20);
    assert_eq!((log.answered, log.accepted), (20, 20));
}

#[test]
fn tls_flags_change_nothing_for_http_as_in_ab() {
    let o = Origin::start(Behavior::default());
    let r = bench_ok(&[
        "-q",
        "-f",
        "TLS1.2",
        "-Z",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "-n",
        "5",
        &o.url("/"),
    ]);
    assert_eq!(num(&r, "Complete requests:"), 5);
    assert_eq!(o.finish().answered, 5);
    let bad = common::bench(&[
        "-q",
        "-E",
        "/nonexistent/cert.pem",
        "-n",
        "1",
        "http://127.0.0.1:1/",
    ]);
    assert_eq!(
        bad.status.code(),
        Some(1),
        "ab too refuses an unreadable -E"
    );
}

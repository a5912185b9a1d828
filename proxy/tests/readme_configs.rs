//! Every ```toml block of README.md through `ringside check`, as a user
//! would paste it: each passes (warnings allowed: the README's upstream
//! names do not resolve here), and each with a misspelt key fails at the
//! file, line and key of that key.
//!
//! The host paths the blocks name (/srv, /var/log/ringside, /run/...) are
//! moved into a temporary directory, and the certificates they name are
//! made by the test. Each check runs in a network namespace of its own.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::pki::Ca;
use common::{output_text as text, TempDir};

/// (README line of the block's first line, its text).
fn blocks() -> Vec<(usize, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_start() == "```toml" => current = Some((i + 2, String::new())),
            None => {}
            Some(_) if line.trim_start() == "```" => out.push(current.take().unwrap()),
            Some((_, block)) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    out
}

/// Host paths the README uses, each moved beneath `d`.
const HOST_DIRS: [&str; 6] = [
    "/srv/assets",
    "/srv/www",
    "/srv",
    "/var/log/ringside",
    "/run/ringside",
    "/run/php",
];

fn localize(block: &str, d: &Path) -> String {
    let mut text = block.to_owned();
    for dir in HOST_DIRS {
        text = text.replace(&format!("\"{dir}"), &format!("\"{}{dir}", d.display()));
        text = text.replace(
            &format!("\"unix:{dir}"),
            &format!("\"unix:{}{dir}", d.display()),
        );
    }
    text
}

/// The directory a block runs in: the host directories, and every
/// certificate the README's TLS block names.
fn fixture() -> TempDir {
    let dir = TempDir::new("readme");
    for d in HOST_DIRS {
        std::fs::create_dir_all(dir.path().join(&d[1..])).unwrap();
    }
    let certs = TempDir(dir.path().join("certs"));
    std::fs::create_dir_all(&certs.0).unwrap();
    let ca = Ca::new("readme CA");
    ca.leaf(&certs, "site", "site", &["localhost"]);
    ca.leaf(
        &certs,
        "example",
        "example",
        &["example.com", "*.example.com"],
    );
    certs.write("internal-ca.pem", ca.pem().as_bytes());
    certs.write("clients-ca.pem", ca.pem().as_bytes());
    certs.write("clients-ca.crl", ca.crl(&[]).as_bytes());
    // The basic auth example's users (`htpasswd -nbB -C 4 alice secret`).
    dir.write(
        "staff.htpasswd",
        b"alice:$2y$04$zATGeDHl0KNJruTS4s2hPOqVhYFLs64Iy1Yo5QXaY7b.1a.ELZxBe\n",
    );
    // The error pages example's pages, and where its try_files look.
    for page in ["errors/404.html", "errors/5xx.html", "errors/busy.html"] {
        dir.write(page, b"<p>error</p>\n");
    }
    for d in ["public", "dist/assets"] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
    }
    // The parent removes it.
    std::mem::forget(certs);
    dir
}

fn check(file: &Path) -> Output {
    common::isolated()
        .arg("check")
        .arg(file)
        .output()
        .expect("unshare (util-linux) and ip (iproute2)")
}

fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    dir.write(name, text.as_bytes())
}

#[test]
fn every_readme_config_block_passes_check() {
    let all = blocks();
    assert!(all.len() >= 6, "found {} toml blocks", all.len());
    for (line, block) in all {
        let dir = fixture();
        let file = write(&dir, "ringside.toml", &localize(&block, dir.path()));
        let out = check(&file);
        assert!(
            out.status.success(),
            "README.md line {line}: the block fails check:\n{block}\n{}",
            text(&out)
        );
        // Nothing it names is missing here; what it may warn about is
        // names that do not resolve without a network, and sockets.
        for l in String::from_utf8_lossy(&out.stderr).lines() {
            let ok = !l.contains("warning")
                || l.contains("cannot resolve")
                || l.contains("no socket at");
            assert!(ok, "README.md line {line}: unexpected warning {l}");
        }
    }
}

#[test]
fn every_readme_config_block_with_a_misspelt_key_fails_at_its_line() {
    for (line, block) in blocks() {
        let dir = fixture();
        // After the block's first table header, a key no table has.
        let lines: Vec<&str> = block.lines().collect();
        let header = lines
            .iter()
            .position(|l| l.trim_start().starts_with('['))
            .unwrap_or_else(|| panic!("README.md line {line}: no table in the block"));
        let table = lines[header]
            .trim()
            .split('#')
            .next()
            .unwrap()
            .trim()
            .to_owned();
        let mut broken: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        broken.insert(header + 1, "bogus_key = 1".into());
        let file = write(
            &dir,
            "broken.toml",
            &localize(&(broken.join("\n") + "\n"), dir.path()),
        );
        let out = check(&file);
        assert!(
            !out.status.success(),
            "README.md line {line}: {}",
            text(&out)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        let want = format!(
            "broken.toml:{}:1: {table} bogus_key: unknown key",
            header + 2
        );
        assert!(
            err.contains(&want),
            "README.md line {line}: want {want:?} in\n{err}"
        );
    }
}

/// The lines of the README's toml blocks that set `key`, as written.
fn key_lines(key: &str) -> Vec<String> {
    blocks()
        .iter()
        .flat_map(|(_, b)| b.lines().map(str::to_owned).collect::<Vec<_>>())
        .filter(|l| l.trim_start().starts_with(&format!("{key} =")))
        .collect()
}

/// Whether `ringside check` takes `text` as a whole config file.
fn passes(text: &str) -> bool {
    let dir = TempDir::new("readme-value");
    check(&write(&dir, "ringside.toml", text)).status.success()
}

/// The bound the README gives `max_head` is the binary's: that size
/// passes check and one byte more fails.
#[test]
fn the_max_head_bound_the_readme_gives_is_the_one_check_takes() {
    let lines = key_lines("max_head");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let comment = lines[0].split_once('#').expect("a comment").1;
    let most: u64 = comment
        .split_once("at most ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no \"at most N bytes\" in {comment:?}"));
    assert!(passes(&format!("[limits]\nmax_head = {most}\n")), "{most}");
    assert!(!passes(&format!("[limits]\nmax_head = {}\n", most + 1)));
}

/// Every comment on an upstream's `protocol` lists the same values, and
/// they are exactly the ones check takes.
#[test]
fn every_protocol_comment_lists_the_values_check_takes() {
    let lines = key_lines("protocol");
    assert!(lines.len() >= 2, "{lines:?}");
    let listed: Vec<Vec<String>> = lines
        .iter()
        .map(|l| {
            let comment = l.split_once('#').expect("a comment").1;
            let mut values: Vec<String> = comment
                .split('"')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect();
            values.sort();
            values
        })
        .collect();
    for (line, values) in lines.iter().zip(&listed) {
        assert_eq!(
            values, &listed[0],
            "{line}\nlists other values than\n{}",
            lines[0]
        );
    }
    let upstream =
        |p: &str| format!("[upstream.u]\nprotocol = \"{p}\"\nservers = [\"127.0.0.1:9000\"]\n");
    for p in &listed[0] {
        assert!(passes(&upstream(p)), "protocol = {p:?} is refused");
    }
    assert!(!passes(&upstream("h3")), "check takes any protocol");
}

//! Basic auth per route: users written by the real tools (`htpasswd -B`
//! for bcrypt, `argon2` for argon2id), 401 with the realm's challenge
//! without the right password (on every spelling of the path), the user
//! file read again at a reload, and a broken one refused while the server
//! keeps its users. A missing htpasswd or argon2 fails the test
//! (scripts/test.sh installs them).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use base64::Engine;
use common::client::{Conn, Resp};
use common::h2::curl;
use common::recorder::Recorder;
use common::{Ringside, TempDir};

/// `user:hash` for bcrypt, as `htpasswd -nbB` prints it.
fn bcrypt_line(user: &str, password: &str) -> String {
    let out = Command::new("htpasswd")
        .args(["-nbB", "-C", "5", user, password])
        .output()
        .expect("htpasswd must be installed (apache2-utils; run scripts/test.sh)");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// `user:hash` for argon2id, as the `argon2` tool encodes it.
fn argon2_line(user: &str, password: &str) -> String {
    let mut child = Command::new("argon2")
        .args([
            "saltysaltysalt",
            "-id",
            "-t",
            "2",
            "-m",
            "12",
            "-p",
            "1",
            "-e",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("argon2 must be installed (run scripts/test.sh)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(password.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    format!("{user}:{}", String::from_utf8(out.stdout).unwrap().trim())
}

fn basic(user_password: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(user_password);
    format!("Authorization: Basic {b64}\r\n")
}

fn get(rs: &Ringside, path: &str, extra: &str) -> Resp {
    let mut c = Conn::open(rs.addr);
    c.send(
        format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n").as_bytes(),
    );
    c.read(false).expect("a response")
}

fn site(dir: &TempDir, origin: &Recorder) -> Ringside {
    dir.write("www/staff/x", b"staff only\n");
    dir.write("www/open/x", b"anyone\n");
    let users = format!(
        "# staff\n{}\n{}\n",
        bcrypt_line("alice", "secret"),
        argon2_line("bob", "hunter2")
    );
    dir.write("staff.htpasswd", users.as_bytes());
    let cfg = format!(
        "[server]\nroot = {root:?}\n\n\
         [upstream.app]\nservers = [\"127.0.0.1:{port}\"]\n\n\
         [[route]]\nprefix = \"/staff/\"\nbasic_auth = {{ realm = \"Staff only\", users = \"staff.htpasswd\" }}\n\n\
         [[route]]\nprefix = \"/api/\"\nupstream = \"app\"\nbasic_auth = {{ realm = \"API\", users = \"staff.htpasswd\" }}\n",
        root = dir.path().join("www"),
        port = origin.port(),
    );
    let file = dir.write("ringside.toml", cfg.as_bytes());
    Ringside::with_admin(1, &file)
}

#[test]
fn users_their_passwords_and_nobody_else() {
    let dir = TempDir::new("auth");
    let origin = Recorder::start();
    let rs = site(&dir, &origin);

    let r = get(&rs, "/staff/x", "");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate").as_deref(),
        Some("Basic realm=\"Staff only\", charset=\"UTF-8\"")
    );
    for path in ["/staff/x", "/%73taff/x", "/open/../staff/x", "//staff/x"] {
        assert_eq!(get(&rs, path, &basic("alice:wrong")).status, 401, "{path}");
        assert_eq!(
            get(&rs, path, &basic("mallory:secret")).status,
            401,
            "{path}"
        );
        let r = get(&rs, path, &basic("alice:secret"));
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "staff only\n"),
            "{path}"
        );
    }
    assert_eq!(
        get(&rs, "/staff/x", &basic("bob:hunter2")).status,
        200,
        "argon2id"
    );
    assert_eq!(get(&rs, "/staff/x", &basic("bob:secret")).status, 401);
    assert_eq!(get(&rs, "/open/x", "").status, 200, "other routes are open");

    // A proxied route: refused before the upstream, and passed on with
    // the credentials when they are right.
    assert_eq!(get(&rs, "/api/v", "").status, 401);
    assert_eq!(origin.count(), 0);
    let r = get(&rs, "/api/v", &basic("bob:hunter2"));
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(origin.count(), 1);

    // curl -u, over HTTP/1.1 and HTTP/2.
    let url = format!("http://{}/staff/x", rs.addr);
    for proto in ["--http1.1", "--http2-prior-knowledge"] {
        let out = curl(&[proto, "-u", "alice:secret", &url]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.ends_with("staff only\n"), "{proto}: {text}");
        let out = curl(&[proto, "-u", "alice:nope", &url]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(" 401"), "{proto}: {text}");
    }
}

#[test]
fn a_reload_reads_the_users_again_and_a_broken_file_changes_nothing() {
    let dir = TempDir::new("auth-reload");
    let origin = Recorder::start();
    let mut rs = site(&dir, &origin);
    assert_eq!(get(&rs, "/staff/x", &basic("alice:secret")).status, 200);

    dir.write(
        "staff.htpasswd",
        format!("{}\n", bcrypt_line("alice", "changed")).as_bytes(),
    );
    rs.signal(libc::SIGHUP);
    rs.wait_reloads("ok", 1);
    assert_eq!(get(&rs, "/staff/x", &basic("alice:secret")).status, 401);
    assert_eq!(get(&rs, "/staff/x", &basic("alice:changed")).status, 200);
    assert_eq!(get(&rs, "/staff/x", &basic("bob:hunter2")).status, 401);

    // An MD5 (apr1) line is refused at the reload; the users stay.
    dir.write(
        "staff.htpasswd",
        b"carol:$apr1$abc$0123456789abcdefghijkl\n",
    );
    rs.signal(libc::SIGHUP);
    rs.wait_reloads("failed", 1);
    assert_eq!(get(&rs, "/staff/x", &basic("alice:changed")).status, 200);
    let err = rs.stop();
    assert!(
        err.contains("staff.htpasswd:1: user \"carol\": expected a bcrypt"),
        "{err}"
    );
}

//! An upstream named by DNS is resolved again every `resolve_every`: an
//! address the name gains joins the pool, one it loses leaves it, while
//! ringside runs. The name is resolved through the system resolver
//! (getaddrinfo, so /etc/hosts); the test runs ringside in a mount
//! namespace of its own whose /etc/hosts is a file the test rewrites.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::origin::Origin;
use common::{Ringside, TempDir, BIN};

const NAME: &str = "backend.ringside.test";

fn hosts(path: &Path, ips: &[&str]) {
    let mut text = String::from("127.0.0.1 localhost\n");
    for ip in ips {
        text.push_str(&format!("{ip} {NAME}\n"));
    }
    // Written in place: the bind mount holds this inode.
    std::fs::write(path, text).unwrap();
}

/// Waits until the scrape lists exactly the servers `want` for `app`.
fn wait_servers(r: &mut Ringside, want: &[String]) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, text) = r.admin_get("/metrics");
        let mut have: Vec<String> = text
            .lines()
            .filter_map(|l| {
                l.strip_prefix("ringside_upstream_server_up{upstream=\"app\",server=\"")
            })
            .filter_map(|l| l.split('"').next())
            .map(str::to_owned)
            .collect();
        have.sort();
        if have == want {
            return;
        }
        assert!(
            Instant::now() < end,
            "servers {have:?}, waiting for {want:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Which origin answered each of `n` requests.
fn answers(r: &Ringside, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let (status, body) = r.get("/ok");
            assert_eq!(status, 200);
            String::from_utf8(body).unwrap()
        })
        .collect()
}

#[test]
fn resolved_again_servers_join_and_leave_the_pool() {
    let dir = TempDir::new("dns");
    // Two origins on one port, at two loopback addresses.
    let a = Origin::start_at("a", "127.0.0.2:0");
    let port = a.port();
    let b = Origin::start_at("b", &format!("127.0.0.3:{port}"));
    let hosts_file = dir.path().join("hosts");
    hosts(&hosts_file, &["127.0.0.2"]);
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[upstream.app]\nservers = [\"{NAME}:{port}\"]\nresolve_every = \"100ms\"\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"app\"\n"
        )
        .as_bytes(),
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount --bind \"$0\" /etc/hosts && exec \"$@\"")
        .arg(&hosts_file)
        .args([
            BIN,
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
            "--admin",
            "127.0.0.1:0",
            "--config",
            cfg.to_str().unwrap(),
        ]);
    let mut r = Ringside::start_with(&mut cmd);
    let sa = format!("127.0.0.2:{port}");
    let sb = format!("127.0.0.3:{port}");
    wait_servers(&mut r, std::slice::from_ref(&sa));
    assert!(answers(&r, 4).iter().all(|x| x == "ok from a"));

    hosts(&hosts_file, &["127.0.0.2", "127.0.0.3"]);
    wait_servers(&mut r, &[sa.clone(), sb.clone()]);
    let both = answers(&r, 6);
    assert!(
        both.iter().any(|x| x == "ok from a") && both.iter().any(|x| x == "ok from b"),
        "round robin over both: {both:?}"
    );

    hosts(&hosts_file, &["127.0.0.3"]);
    wait_servers(&mut r, std::slice::from_ref(&sb));
    let before_a = a.requests();
    assert!(answers(&r, 6).iter().all(|x| x == "ok from b"));
    assert_eq!(a.requests(), before_a, "the dropped address gets nothing");
    let log = r.stop();
    assert!(log.contains("upstream addresses changed"), "{log}");
    drop(b);
}

/// A name that does not resolve at start does not stop the start (as a
/// headless Service with no ready pod answers NXDOMAIN): the server starts
/// with it down, says so, answers 502 for it, and takes the address as soon
/// as the name resolves. Runs in network and mount namespaces of its own:
/// the lookup that fails must not reach this machine's resolver.
#[test]
fn a_name_that_does_not_resolve_at_start_is_down_until_it_does() {
    const IN_NS: &str = "RINGSIDE_TEST_DNS_NS";
    if std::env::var_os(IN_NS).is_none() {
        let dir = TempDir::new("dns-start-ns");
        let hosts_file = dir.path().join("hosts");
        hosts(&hosts_file, &[]);
        let resolv = dir.write("resolv.conf", b"nameserver 127.0.0.1\n");
        let status = Command::new("unshare")
            .args(["--net", "--mount", "--propagation", "private", "sh", "-c"])
            .arg(
                "ip link set lo up && mount --bind \"$1\" /etc/hosts && \
                 mount --bind \"$2\" /etc/resolv.conf && exec \"$0\" --exact \
                 a_name_that_does_not_resolve_at_start_is_down_until_it_does \
                 --nocapture --test-threads=1",
            )
            .arg(std::env::current_exe().unwrap())
            .arg(&hosts_file)
            .arg(&resolv)
            .env(IN_NS, &hosts_file)
            .status()
            .expect("unshare (util-linux) and ip (iproute2)");
        assert!(status.success(), "the test in its own namespaces failed");
        return;
    }
    let hosts_file = std::path::PathBuf::from(std::env::var_os(IN_NS).unwrap());
    let dir = TempDir::new("dns-start");
    let a = Origin::start_at("a", "127.0.0.2:0");
    let port = a.port();
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[upstream.app]\nservers = [\"{NAME}:{port}\"]\nresolve_every = \"100ms\"\nmax_fails = 0\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"app\"\n"
        )
        .as_bytes(),
    );
    let mut r = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--admin",
        "127.0.0.1:0",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    wait_servers(&mut r, &[]);
    assert_eq!(r.get("/ok").0, 502);
    hosts(&hosts_file, &["127.0.0.2"]);
    wait_servers(&mut r, &[format!("127.0.0.2:{port}")]);
    assert!(answers(&r, 3).iter().all(|x| x == "ok from a"));
    let log = r.stop();
    assert!(
        log.contains("upstream server name does not resolve; it is down until it does"),
        "{log}"
    );
    assert!(log.contains(NAME), "{log}");
}

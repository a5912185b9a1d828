//! deploy/k8s/seccomp/ringside.json enforced on the real binary: its rules
//! for x86_64 compiled to a seccomp filter, as a container runtime would,
//! and installed before ringside starts. Under it ringside must start its
//! workers on io_uring and serve; with the io_uring rule taken out, the same
//! filter must leave it on epoll (the filter bites, and those three calls
//! are what io_uring needs).
//!
//! System call numbers come from the kernel headers
//! (/usr/include/x86_64-linux-gnu/asm/unistd_64.h, Debian's linux-libc-dev,
//! which the C toolchain Rust links with depends on). Argument rules
//! compare the low 32 bits, which is all that socket's family, clone's
//! flags and personality's persona use.
#![cfg(target_arch = "x86_64")]

mod common;

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use common::{Ringside, TempDir, BIN};

const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const LD_ABS: u16 = 0x20;
const JEQ: u16 = 0x15;
const JGT: u16 = 0x25;
const JGE: u16 = 0x35;
const AND: u16 = 0x54;
const RET: u16 = 0x06;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

fn numbers() -> HashMap<String, u32> {
    let header = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h";
    let text = std::fs::read_to_string(header)
        .unwrap_or_else(|e| panic!("{header}: {e} (Debian's linux-libc-dev)"));
    text.lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("#define __NR_")?.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.parse().ok()?))
        })
        .collect()
}

fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The profile's rules that apply on x86_64 to a container without
/// capabilities, as a filter; `skip` names calls left out.
fn compile(profile: &serde_json::Value, skip: &[&str]) -> Vec<libc::sock_filter> {
    let nr = numbers();
    let action = |g: &serde_json::Value| match g["action"].as_str().unwrap() {
        "SCMP_ACT_ALLOW" => RET_ALLOW,
        "SCMP_ACT_ERRNO" => RET_ERRNO | g["errnoRet"].as_u64().unwrap() as u32,
        other => panic!("unexpected action {other}"),
    };
    let default_errno = profile["defaultErrnoRet"].as_u64().unwrap() as u32;
    assert_eq!(profile["defaultAction"], "SCMP_ACT_ERRNO");
    let mut prog = vec![
        op(LD_ABS, 0, 0, 4),
        op(JEQ, 1, 0, AUDIT_ARCH_X86_64),
        op(RET, 0, 0, RET_ERRNO | default_errno),
        op(LD_ABS, 0, 0, 0),
    ];
    let mut compiled = 0;
    for g in profile["syscalls"].as_array().unwrap() {
        let has = |key: &str, what: &str| {
            g[key][what]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == "amd64"))
        };
        if g["includes"].get("caps").is_some()
            || (g["includes"].get("arches").is_some() && !has("includes", "arches"))
            || has("excludes", "arches")
        {
            continue;
        }
        let ret = op(RET, 0, 0, action(g));
        let args = g["args"].as_array().cloned().unwrap_or_default();
        for name in g["names"].as_array().unwrap() {
            let name = name.as_str().unwrap();
            let Some(&n) = nr.get(name) else { continue };
            if skip.contains(&name) {
                continue;
            }
            compiled += 1;
            if args.is_empty() {
                prog.extend([op(JEQ, 0, 1, n), ret]);
                continue;
            }
            assert_eq!(args.len(), 1, "{name}");
            let a = &args[0];
            let k = a["value"].as_u64().unwrap() as u32;
            let mut block = vec![op(
                LD_ABS,
                0,
                0,
                16 + 8 * a["index"].as_u64().unwrap() as u32,
            )];
            match a["op"].as_str().unwrap() {
                "SCMP_CMP_EQ" => block.push(op(JEQ, 0, 1, k)),
                "SCMP_CMP_NE" => block.push(op(JEQ, 1, 0, k)),
                "SCMP_CMP_GT" => block.push(op(JGT, 0, 1, k)),
                "SCMP_CMP_LT" => block.push(op(JGE, 1, 0, k)),
                "SCMP_CMP_MASKED_EQ" => block.extend([
                    op(AND, 0, 0, k),
                    op(JEQ, 0, 1, a["valueTwo"].as_u64().unwrap_or(0) as u32),
                ]),
                other => panic!("{name}: unexpected op {other}"),
            }
            block.extend([ret, op(LD_ABS, 0, 0, 0)]);
            // Not this call: on to the reload of the number.
            prog.push(op(JEQ, 0, (block.len() - 1) as u8, n));
            prog.extend(block);
        }
    }
    assert!(compiled > 300, "only {compiled} rules compiled");
    prog.push(op(RET, 0, 0, RET_ERRNO | default_errno));
    assert!(prog.len() < 4096);
    prog
}

fn profile() -> serde_json::Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/k8s/seccomp/ringside.json");
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// ringside, workers = "auto" (several threads, so thread creation goes
/// through the filter too), started under `filter`.
fn start_under(filter: Vec<libc::sock_filter>, root: &Path) -> Ringside {
    let mut cmd = Command::new(BIN);
    cmd.args(["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        .args(["--workers", "auto", "--root"])
        .arg(root);
    // SAFETY: only prctl between fork and exec; the filter was built before.
    unsafe {
        cmd.pre_exec(move || {
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
    Ringside::start_with(&mut cmd)
}

fn serve_under(skip: &[&str]) -> (String, String) {
    let root = TempDir::new("seccomp");
    root.write("a.txt", b"served\n");
    let server = start_under(compile(&profile(), skip), root.path());
    assert_eq!(server.get("/a.txt"), (200, b"served\n".to_vec()));
    let banner = server.banner.clone();
    (banner, server.stop())
}

#[test]
fn under_the_profile_ringside_runs_on_io_uring() {
    let (banner, log) = serve_under(&[]);
    assert!(banner.contains("backend: io-uring)"), "{banner}\n{log}");
}

#[test]
fn without_its_io_uring_rule_the_same_filter_leaves_epoll() {
    let (banner, log) = serve_under(&["io_uring_setup", "io_uring_enter", "io_uring_register"]);
    assert!(banner.contains("backend: epoll)"), "{banner}\n{log}");
}

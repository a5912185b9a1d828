//! Python for what a test checks with a real decoder or parser: the
//! compressed bodies (python3-brotli and python3-zstandard come from
//! scripts/test.sh).
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

/// Decodes `body` with Python's decoder for `coding`; a partial body
/// decodes to what it holds so far.
pub fn decode(coding: &str, body: &[u8]) -> Vec<u8> {
    if coding == "identity" {
        return body.to_vec();
    }
    let script = "import sys, zlib, brotli, zstandard\n\
                  c, data = sys.argv[1], sys.stdin.buffer.read()\n\
                  if c == 'gzip': out = zlib.decompressobj(31).decompress(data)\n\
                  elif c == 'br': out = brotli.Decompressor().process(data)\n\
                  else: out = zstandard.ZstdDecompressor().decompressobj().decompress(data)\n\
                  sys.stdout.buffer.write(out)\n";
    let out = python(script, &[coding], body);
    assert!(
        out.status.success(),
        "python3 could not decode {coding} (python3-brotli and python3-zstandard come \
         from scripts/test.sh): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs a Python script with `args`, `input` on its stdin.
pub fn python(script: &str, args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 must be installed");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

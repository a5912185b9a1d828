//! Peers the tests run from `tests/support/`: a script started with its
//! arguments, which prints `PORT n` once listening and serves until its
//! stdin closes; it is killed by pid when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A child process killed by pid when dropped.
pub struct Peer(pub Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The path of a support script.
pub fn support(name: &str) -> String {
    format!("{}/tests/support/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs the support script `script` (a client) to its end under
/// /usr/bin/python3 (its h2 and grpcio are Debian's); its stdout, after
/// checking it succeeded (`what` names the run in the failure).
pub fn python(script: &str, args: &[String], what: &str) -> String {
    let out = Command::new("/usr/bin/python3")
        .arg(support(script))
        .args(args)
        .output()
        .expect("/usr/bin/python3 must be installed (run scripts/test.sh)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: {script} failed ({}):\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Starts `script` (with `args`) under `interp`, and the port it reports.
pub fn start(interp: &str, script: &str, args: &[String]) -> (Peer, u16) {
    let mut child = Command::new(interp)
        .arg(support(script))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{interp} is needed for this test (scripts/test.sh installs it): {e}")
        });
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("PORT ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            panic!("{script} did not report a port (is its library installed?): {line:?}")
        });
    (Peer(child), port)
}

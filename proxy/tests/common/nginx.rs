//! nginx as a real peer in tests: started on a free port (nginx cannot
//! report a port-0 bind), stopped by pid on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::TempDir;

pub struct Nginx(Child);

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn bin() -> &'static str {
    if Path::new("/usr/sbin/nginx").exists() {
        "/usr/sbin/nginx"
    } else {
        "nginx"
    }
}

/// Starts nginx in the foreground with the config `conf(port)` written into
/// `dir` (its prefix), on a port free a moment before; another port is
/// tried when that one was taken meanwhile. The config must name its
/// `pid` file: nginx is ready once it wrote it.
/// The `pid` file a config names (each config here names one).
fn pid_file(conf: &str) -> PathBuf {
    let line = conf
        .lines()
        .find_map(|l| l.trim().strip_prefix("pid "))
        .expect("the nginx config names its pid file (`pid PATH;`)");
    PathBuf::from(line.trim_end_matches(';').trim())
}

pub fn start(dir: &TempDir, conf: impl Fn(u16) -> String) -> (Nginx, u16) {
    let prefix = dir.path().to_str().unwrap();
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let text = conf(port);
        let pid_file = pid_file(&text);
        let _ = std::fs::remove_file(&pid_file);
        let path = dir.write("nginx.conf", text.as_bytes());
        let mut child = Command::new(bin())
            .args(["-p", prefix, "-c", path.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx is needed for this test (scripts/test.sh installs it)");
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if let Ok(Some(_)) = child.try_wait() {
                break; // port taken meanwhile: try another
            }
            // Ready once nginx wrote its pid file, which it does only after
            // opening its listeners: a connect would reach whatever took
            // the port meanwhile (another suite's server), and the test
            // would run against that.
            let me = child.id().to_string();
            if std::fs::read_to_string(&pid_file).is_ok_and(|p| p.trim() == me) {
                return (Nginx(child), port);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("nginx did not start");
}

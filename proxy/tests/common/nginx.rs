//! nginx as a real peer in tests: started on a free port (nginx cannot
//! report a port-0 bind), stopped by pid on drop.

use std::net::TcpStream;
use std::path::Path;
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
/// tried when that one was taken meanwhile.
pub fn start(dir: &TempDir, conf: impl Fn(u16) -> String) -> (Nginx, u16) {
    let prefix = dir.path().to_str().unwrap();
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let path = dir.write("nginx.conf", conf(port).as_bytes());
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
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return (Nginx(child), port);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("nginx did not start");
}

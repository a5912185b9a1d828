//! A FastCGI server's capacity: `max_conns` from the config, or asked of
//! the server once at start with FCGI_GET_VALUES (FCGI_MAX_CONNS; php-fpm
//! answers with its `pm.max_children`), else a default of 8. What was
//! learned is logged.

use std::io::{Read, Write};
use std::time::Duration;

use bytes::BytesMut;

use super::record;
use crate::upstream::addr::PeerAddr;
use crate::upstream::settings::FastCgiSettings;

/// Used when the config gives none and the server does not say.
pub const DEFAULT_CAPACITY: u32 = 8;

const ASK_TIMEOUT: Duration = Duration::from_secs(2);

pub fn capacity(upstream: &str, cfg: &FastCgiSettings, addr: &PeerAddr) -> u32 {
    if let Some(n) = cfg.max_conns {
        return n;
    }
    match ask(addr) {
        Ok(Some(n)) if n > 0 => {
            tracing::info!(upstream, server = %addr, max_conns = n, "FastCGI capacity learned from the server (FCGI_MAX_CONNS)");
            n
        }
        Ok(_) => {
            tracing::warn!(upstream, server = %addr, max_conns = DEFAULT_CAPACITY, "FastCGI server did not give FCGI_MAX_CONNS; set max_conns");
            DEFAULT_CAPACITY
        }
        Err(e) => {
            tracing::warn!(upstream, server = %addr, error = %e, max_conns = DEFAULT_CAPACITY, "cannot ask the FastCGI server its capacity; set max_conns");
            DEFAULT_CAPACITY
        }
    }
}

/// One blocking FCGI_GET_VALUES exchange on a fresh connection.
fn ask(addr: &PeerAddr) -> std::io::Result<Option<u32>> {
    let mut out = BytesMut::new();
    record::write_get_values(&mut out, &["FCGI_MAX_CONNS"]);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    macro_rules! exchange {
        ($s:expr) => {{
            let mut s = $s;
            s.set_read_timeout(Some(ASK_TIMEOUT))?;
            s.set_write_timeout(Some(ASK_TIMEOUT))?;
            s.write_all(&out)?;
            loop {
                if let Ok(Some((record::Parsed::GetValuesResult(content), _))) =
                    record::parse_record(&buf, 0)
                {
                    return Ok(max_conns(content));
                }
                let n = s.read(&mut chunk)?;
                if n == 0 {
                    return Ok(None);
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }};
    }
    match addr {
        PeerAddr::Inet(a) => exchange!(std::net::TcpStream::connect_timeout(a, ASK_TIMEOUT)?),
        PeerAddr::Unix(p) => exchange!(std::os::unix::net::UnixStream::connect(p)?),
    }
}

fn max_conns(content: &[u8]) -> Option<u32> {
    record::name_values(content)
        .filter_map(Result::ok)
        .find(|(n, _)| *n == b"FCGI_MAX_CONNS")
        .and_then(|(_, v)| std::str::from_utf8(v).ok()?.trim().parse().ok())
}

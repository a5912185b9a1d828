//! The operations keys: `[admin]`, `[access_log]`, a route's `access_log`,
//! and `[server]`'s `user`, `group` and `pid_file`.
//!
//! ```toml
//! [server]
//! user = "www-data"         # after binding: drop to this user
//! group = "www-data"        # default: the user's own group
//! pid_file = "/run/ringside/ringside.pid"   # for `ringside reload`
//!
//! [admin]
//! listen = "127.0.0.1:9180" # /metrics and /healthz; "off" for none
//!
//! [access_log]
//! path = "/var/log/ringside/access.log"     # given: access log on
//! format = "combined"       # "combined" | "json"
//! buffer = "64k"            # per core, written out when this full
//! flush_every = "1s"        # ... or this long after its first line
//!
//! [[route]]
//! prefix = "/healthz"
//! access_log = false        # this route's requests are not logged
//! ```

use std::fmt::{self, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::addr::resolve_listen;
use super::cx::{duration, join, size_in, Cx};
use super::error::ConfigError;
use super::file::FileConfig;
use super::size::format_duration;

/// Where the admin listener is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminListen {
    Off,
    /// Not written in the config: a port already taken is a warning, so
    /// that a second server on the same host still starts.
    Default(SocketAddr),
    /// Written in the config (or given by flag): a failure to bind is fatal.
    At(SocketAddr),
}

impl AdminListen {
    pub fn addr(&self) -> Option<SocketAddr> {
        match self {
            AdminListen::Off => None,
            AdminListen::Default(a) | AdminListen::At(a) => Some(*a),
        }
    }
}

pub const DEFAULT_ADMIN: &str = "127.0.0.1:9180";

impl Default for AdminListen {
    fn default() -> Self {
        AdminListen::Default(DEFAULT_ADMIN.parse().expect("a socket address"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Apache/nginx "combined", with the request time in seconds appended.
    Combined,
    /// One JSON object per line.
    Json,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessLogConfig {
    pub path: PathBuf,
    pub format: LogFormat,
    pub buffer: usize,
    pub flush_every: Duration,
}

/// The operations settings, validated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpsConfig {
    pub admin: AdminListen,
    pub access_log: Option<AccessLogConfig>,
    /// Indices into `ProxyConfig::routes` whose requests are not logged.
    pub unlogged_proxy_routes: Vec<usize>,
    /// Static route prefixes whose requests are not logged.
    pub unlogged_static_prefixes: Vec<String>,
    pub user: Option<String>,
    pub group: Option<String>,
    pub pid_file: Option<PathBuf>,
}

const MAX_BUFFER: u64 = 64 << 20;

fn log_format(s: &str) -> Result<LogFormat, String> {
    match s {
        "combined" => Ok(LogFormat::Combined),
        "json" => Ok(LogFormat::Json),
        _ => Err(format!("expected \"combined\" or \"json\", got {s:?}")),
    }
}

pub fn admin_listen(s: &str) -> Result<AdminListen, String> {
    if s == "off" {
        return Ok(AdminListen::Off);
    }
    let addrs = resolve_listen(s)?;
    Ok(AdminListen::At(addrs[0]))
}

fn name(s: &str) -> Result<String, String> {
    if s.is_empty() || s.contains(['\0', ':', '\n']) {
        return Err(format!("expected a user or group name, got {s:?}"));
    }
    Ok(s.to_owned())
}

impl Cx<'_> {
    pub(super) fn ops(&self, f: &FileConfig, base: &Path) -> Result<OpsConfig, ConfigError> {
        let admin = self.or(
            &f.admin.listen,
            "[admin] listen",
            AdminListen::default(),
            |s| admin_listen(s),
        )?;
        let a = &f.access_log;
        let access_log = match &a.path {
            None => None,
            Some(p) => Some(AccessLogConfig {
                path: self.check(p, "[access_log] path", |s| {
                    if s.is_empty() {
                        Err("expected a file path".to_owned())
                    } else {
                        Ok(join(base, s))
                    }
                })?,
                format: self.or(&a.format, "[access_log] format", LogFormat::Combined, |s| {
                    log_format(s)
                })?,
                buffer: self.or(&a.buffer, "[access_log] buffer", 64 << 10, |v| {
                    size_in(v, 1024, MAX_BUFFER).map(|n| n as usize)
                })?,
                flush_every: self.or(
                    &a.flush_every,
                    "[access_log] flush_every",
                    Duration::from_secs(1),
                    |v| {
                        let d = duration(v)?;
                        if d < Duration::from_millis(10) || d > Duration::from_secs(60) {
                            return Err("expected between 10ms and 60s".to_owned());
                        }
                        Ok(d)
                    },
                )?,
            }),
        };
        if a.path.is_none() {
            for (v, key) in [
                (a.format.as_ref().map(|v| v.span()), "[access_log] format"),
                (a.buffer.as_ref().map(|v| v.span()), "[access_log] buffer"),
                (
                    a.flush_every.as_ref().map(|v| v.span()),
                    "[access_log] flush_every",
                ),
            ] {
                if let Some(span) = v {
                    return Err(self.err(span, key, "needs [access_log] path".into()));
                }
            }
        }
        let mut unlogged_proxy_routes = Vec::new();
        let mut unlogged_static_prefixes = Vec::new();
        let mut proxy_index = 0;
        for r in &f.routes {
            let r = r.get_ref();
            let logged = r.access_log.as_ref().is_none_or(|v| *v.get_ref());
            match &r.upstream {
                Some(_) => {
                    if !logged {
                        unlogged_proxy_routes.push(proxy_index);
                    }
                    proxy_index += 1;
                }
                None if !logged => unlogged_static_prefixes.push(r.prefix.get_ref().clone()),
                None => {}
            }
        }
        let s = &f.server;
        let user = s
            .user
            .as_ref()
            .map(|v| self.check(v, "[server] user", |s| name(s)))
            .transpose()?;
        let group = s
            .group
            .as_ref()
            .map(|v| self.check(v, "[server] group", |s| name(s)))
            .transpose()?;
        if let (Some(g), None) = (&s.group, &s.user) {
            return Err(self.err(g.span(), "[server] group", "needs [server] user".into()));
        }
        let pid_file = s
            .pid_file
            .as_ref()
            .map(|v| {
                self.check(v, "[server] pid_file", |s| {
                    if s.is_empty() {
                        Err("expected a file path".to_owned())
                    } else {
                        Ok(join(base, s))
                    }
                })
            })
            .transpose()?;
        Ok(OpsConfig {
            admin,
            access_log,
            unlogged_proxy_routes,
            unlogged_static_prefixes,
            user,
            group,
            pid_file,
        })
    }
}

/// A TOML string literal.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// Writes `[admin]` and `[access_log]` (the `[server]` keys are written with
/// that section by [`write_server_keys`]).
pub(super) fn write_sections(ops: &OpsConfig, out: &mut String) -> fmt::Result {
    writeln!(out, "\n[admin]")?;
    match &ops.admin {
        AdminListen::Off => writeln!(out, "listen = \"off\"")?,
        AdminListen::At(a) => writeln!(out, "listen = {}", quote(&a.to_string()))?,
        // Left unwritten: written, a port in use would stop the start.
        AdminListen::Default(a) => {
            writeln!(out, "# listen = {} (the default)", quote(&a.to_string()))?
        }
    }
    if let Some(a) = &ops.access_log {
        writeln!(out, "\n[access_log]")?;
        writeln!(out, "path = {}", quote(&a.path.to_string_lossy()))?;
        let format = match a.format {
            LogFormat::Combined => "combined",
            LogFormat::Json => "json",
        };
        writeln!(out, "format = {}", quote(format))?;
        writeln!(out, "buffer = {}", a.buffer)?;
        writeln!(
            out,
            "flush_every = {}",
            quote(&format_duration(a.flush_every))
        )?;
    }
    Ok(())
}

/// Writes `[server]`'s `user`, `group` and `pid_file`, where set.
pub(super) fn write_server_keys(ops: &OpsConfig, out: &mut String) -> fmt::Result {
    if let Some(u) = &ops.user {
        writeln!(out, "user = {}", quote(u))?;
    }
    if let Some(g) = &ops.group {
        writeln!(out, "group = {}", quote(g))?;
    }
    if let Some(p) = &ops.pid_file {
        writeln!(out, "pid_file = {}", quote(&p.to_string_lossy()))?;
    }
    Ok(())
}

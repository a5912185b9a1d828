//! Where a setting of the validated config was written, so that a problem
//! found later (a log that cannot be opened, an address that cannot be
//! bound) is reported as the config's own errors are: file, line, column
//! and key, or the flag that set it.
//!
//! The validated [`Config`] keeps no spans (it is compared whole on reload,
//! and a moved line is not a change), so the file is parsed again here.

use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

use crate::cli::Cli;
use crate::config::addr::resolve_listen;
use crate::config::file::{FileConfig, ListenValue, ServerValue};
use crate::config::{Config, ConfigError};

/// A setting a check can be about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting<'a> {
    Root,
    AccessLog,
    PidFile,
    Admin,
    /// The `listen` entry that gave this address.
    Listen(SocketAddr),
    /// The `listen` entry of this unix socket.
    UnixListen(&'a Path),
    /// `[upstream.NAME] servers` entry number `i` (from 0).
    UpstreamServer(&'a str, usize),
    /// `[cache.NAME] disk`.
    CacheDisk(&'a str),
}

/// Finds settings in the file a config came from.
pub struct Locator {
    file: Option<(PathBuf, String, FileConfig)>,
    /// Flags that replaced a setting: `--listen`, `--root`, ...
    flags: Vec<&'static str>,
}

impl Locator {
    /// For `cfg` as `cli` made it: its file (if any) read again, and the
    /// flags that override it.
    pub fn new(cfg: &Config, cli: Option<&Cli>) -> Locator {
        let file = cfg.source.as_ref().and_then(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            let parsed: FileConfig = toml::from_str(&text).ok()?;
            Some((path.clone(), text, parsed))
        });
        let mut flags = Vec::new();
        if let Some(c) = cli {
            for (given, flag) in [
                (!c.listen.is_empty(), "--listen"),
                (c.root.is_some(), "--root"),
                (c.access_log.is_some(), "--access-log"),
                (c.pid_file.is_some(), "--pid-file"),
                (c.admin.is_some(), "--admin"),
            ] {
                if given {
                    flags.push(flag);
                }
            }
        }
        Locator { file, flags }
    }

    /// An error about `what`, placed where it was set.
    pub fn error(&self, what: Setting<'_>, message: impl Into<String>) -> ConfigError {
        let message = message.into();
        if let Some(flag) = self.flag_for(what) {
            return ConfigError::flag(flag, message);
        }
        match &self.file {
            Some((path, text, f)) => {
                let (span, key) = match find(path, f, what) {
                    Some((span, key)) => (Some(span), Some(key)),
                    None => (None, Some(default_key(what))),
                };
                ConfigError::at(path, text, span, key, message)
            }
            None => ConfigError::flag(&default_key(what), message),
        }
    }

    fn flag_for(&self, what: Setting<'_>) -> Option<&'static str> {
        let flag = match what {
            Setting::Root => "--root",
            Setting::AccessLog => "--access-log",
            Setting::PidFile => "--pid-file",
            Setting::Admin => "--admin",
            Setting::Listen(_) | Setting::UnixListen(_) => "--listen",
            _ => return None,
        };
        self.flags.contains(&flag).then_some(flag)
    }
}

/// The key a setting is known by, for a config without a file.
fn default_key(what: Setting<'_>) -> String {
    match what {
        Setting::Root => "[server] root".into(),
        Setting::AccessLog => "[access_log] path".into(),
        Setting::PidFile => "[server] pid_file".into(),
        Setting::Admin => "[admin] listen".into(),
        Setting::Listen(_) | Setting::UnixListen(_) => "[server] listen".into(),
        Setting::UpstreamServer(name, _) => format!("[upstream.{name}] servers"),
        Setting::CacheDisk(name) => format!("[cache.{name}] disk"),
    }
}

fn at<T>(v: &Spanned<T>, key: impl Into<String>) -> (Range<usize>, String) {
    (v.span(), key.into())
}

fn find(file: &Path, f: &FileConfig, what: Setting<'_>) -> Option<(Range<usize>, String)> {
    match what {
        Setting::Root => f.server.root.as_ref().map(|v| at(v, "[server] root")),
        Setting::AccessLog => f
            .access_log
            .path
            .as_ref()
            .map(|v| at(v, "[access_log] path")),
        Setting::PidFile => f
            .server
            .pid_file
            .as_ref()
            .map(|v| at(v, "[server] pid_file")),
        Setting::Admin => f.admin.listen.as_ref().map(|v| at(v, "[admin] listen")),
        Setting::Listen(addr) => {
            let entry = listen_entry(f, addr)?;
            Some(match entry.get_ref() {
                ListenValue::Table(t) => at(&t.addr, "[server] listen"),
                ListenValue::Addr(_) => at(entry, "[server] listen"),
            })
        }
        Setting::UnixListen(path) => {
            let entry = f.server.listen.as_ref()?.get_ref().iter().find(|e| {
                let text = match e.get_ref() {
                    ListenValue::Addr(a) => a.as_str(),
                    ListenValue::Table(t) => t.addr.get_ref().as_str(),
                };
                let base = file.parent().unwrap_or(Path::new(""));
                crate::config::addr::unix_socket(text, base)
                    .is_some_and(|p| p.ok().as_deref() == Some(path))
            })?;
            Some(match entry.get_ref() {
                ListenValue::Table(t) => at(&t.addr, "[server] listen"),
                ListenValue::Addr(_) => at(entry, "[server] listen"),
            })
        }
        Setting::UpstreamServer(name, i) => {
            let (_, up) = f.upstream.iter().find(|(k, _)| k.get_ref() == name)?;
            let entry = up.get_ref().servers.as_ref()?.get_ref().get(i)?;
            let key = format!("[upstream.{name}] servers");
            Some(match entry.get_ref() {
                ServerValue::Table(t) => at(&t.addr, key),
                ServerValue::Addr(_) => at(entry, key),
            })
        }
        Setting::CacheDisk(name) => {
            let (_, c) = f.cache.iter().find(|(k, _)| k.get_ref() == name)?;
            let disk = c.get_ref().disk.as_ref()?;
            Some(at(disk, format!("[cache.{name}] disk")))
        }
    }
}

/// The `listen` entry that resolves to `addr` (one entry may give several
/// addresses: `localhost:80`).
fn listen_entry(f: &FileConfig, addr: SocketAddr) -> Option<&Spanned<ListenValue>> {
    f.server.listen.as_ref()?.get_ref().iter().find(|e| {
        let text = match e.get_ref() {
            ListenValue::Addr(a) => a.as_str(),
            ListenValue::Table(t) => t.addr.get_ref().as_str(),
        };
        resolve_listen(text).is_ok_and(|list| list.contains(&addr))
    })
}

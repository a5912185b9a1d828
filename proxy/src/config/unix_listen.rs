//! `[server] listen` entries on unix sockets (nginx's `listen unix:PATH`):
//! `"unix:/run/ringside.sock"`, or the table form with the socket file's
//! permissions and owner:
//!
//! ```toml
//! [server]
//! listen = ["127.0.0.1:8080", { addr = "unix:/run/ringside.sock", mode = "0660", owner = "www-data", group = "www-data" }]
//! ```
//!
//! A relative path is taken from the config file's directory. Such a
//! listener speaks HTTP/1.1 and h2c (prior knowledge); `tls`, `http2` and
//! `proxy_protocol` are for TCP listeners. How it is bound, checked and
//! removed is `crate::unix_listen`'s.

use std::path::{Path, PathBuf};

use super::addr::{unix_socket, UNIX_PREFIX};
use super::cx::Cx;
use super::error::ConfigError;
use super::file::{FileConfig, ListenValue};

/// One unix-socket listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnixListen {
    /// Absolute.
    pub path: PathBuf,
    /// The socket file's permission bits; the umask's when `None`.
    pub mode: Option<u32>,
    /// The socket file's owner and group, by name.
    pub owner: Option<String>,
    pub group: Option<String>,
}

impl UnixListen {
    /// The entry as the file writes it.
    pub fn text(&self) -> String {
        let addr = format!("\"{UNIX_PREFIX}{}\"", self.path.display());
        let mut more = String::new();
        if let Some(m) = self.mode {
            more.push_str(&format!(", mode = \"{m:04o}\""));
        }
        for (key, v) in [("owner", &self.owner), ("group", &self.group)] {
            if let Some(v) = v {
                more.push_str(&format!(", {key} = {}", super::emit::quote(v)));
            }
        }
        if more.is_empty() {
            addr
        } else {
            format!("{{ addr = {addr}{more} }}")
        }
    }
}

/// Whether a `listen` entry names a unix socket (the TCP listeners'
/// validation leaves it to [`Cx::unix_listen`]).
pub fn is_unix(v: &ListenValue) -> bool {
    let addr = match v {
        ListenValue::Addr(a) => a,
        ListenValue::Table(t) => t.addr.get_ref(),
    };
    addr.starts_with(UNIX_PREFIX)
}

/// `"0660"`: octal permission bits, at most 0777.
fn mode(s: &str) -> Result<u32, String> {
    let expected = || format!("expected octal permission bits like \"0660\", got {s:?}");
    if s.is_empty() || s.len() > 4 || !s.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return Err(expected());
    }
    let m = u32::from_str_radix(s, 8).map_err(|_| expected())?;
    if m > 0o777 {
        return Err(format!(
            "{s:?}: only the permission bits (at most 0777) may be set"
        ));
    }
    Ok(m)
}

fn name(s: &str) -> Result<String, String> {
    if s.is_empty() || s.contains('\0') {
        return Err(format!("expected a user or group name, got {s:?}"));
    }
    Ok(s.to_owned())
}

impl Cx<'_> {
    /// The unix-socket entries of `[server] listen`, in their order.
    pub(super) fn unix_listen(
        &self,
        f: &FileConfig,
        base: &Path,
    ) -> Result<Vec<UnixListen>, ConfigError> {
        const KEY: &str = "[server] listen";
        let mut out: Vec<UnixListen> = Vec::new();
        let Some(list) = &f.server.listen else {
            return Ok(out);
        };
        for item in list.get_ref() {
            if !is_unix(item.get_ref()) {
                if let ListenValue::Table(t) = item.get_ref() {
                    for (key, v) in [("mode", &t.mode), ("owner", &t.owner), ("group", &t.group)] {
                        if let Some(v) = v {
                            return Err(self.err(
                                v.span(),
                                KEY,
                                format!("{key}: only for a unix socket (\"unix:/PATH\")"),
                            ));
                        }
                    }
                }
                continue;
            }
            let check_path = |a: &String| {
                let path = unix_socket(a, base).expect("is_unix said so")?;
                if out.iter().any(|u| u.path == path) {
                    return Err(format!("{UNIX_PREFIX}{} is listed twice", path.display()));
                }
                Ok(path)
            };
            let u = match item.get_ref() {
                ListenValue::Addr(a) => UnixListen {
                    path: self.check(item, KEY, |_| check_path(a))?,
                    mode: None,
                    owner: None,
                    group: None,
                },
                ListenValue::Table(t) => {
                    let path = self.check(&t.addr, KEY, check_path)?;
                    let tcp_only = [
                        ("tls", t.tls.as_ref().map(|v| v.span())),
                        ("http2", t.http2.as_ref().map(|v| v.span())),
                        (
                            "proxy_protocol",
                            t.proxy_protocol.as_ref().map(|v| v.span()),
                        ),
                        ("trusted", t.trusted.as_ref().map(|v| v.span())),
                    ];
                    if let Some((key, span)) = super::cx::first_given(&tcp_only) {
                        return Err(self.err(
                            span,
                            KEY,
                            format!(
                                "{key}: not on a unix socket listener (it speaks HTTP/1.1 and h2c)"
                            ),
                        ));
                    }
                    let named = |v: &Option<toml::Spanned<String>>| {
                        v.as_ref()
                            .map(|v| self.check(v, KEY, |s| name(s)))
                            .transpose()
                    };
                    UnixListen {
                        path,
                        mode: t
                            .mode
                            .as_ref()
                            .map(|v| self.check(v, KEY, |s| mode(s)))
                            .transpose()?,
                        owner: named(&t.owner)?,
                        group: named(&t.group)?,
                    }
                }
            };
            out.push(u);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn parse(t: &str, path: &str) -> Result<Config, String> {
        Config::parse(t, Path::new(path)).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_entries_and_writes_them_back() {
        let text = "[server]\nlisten = [\"127.0.0.1:0\", \"unix:run/a.sock\", { addr = \"unix:/tmp/b.sock\", mode = \"0660\", owner = \"root\", group = \"root\" }]\n";
        let c = parse(text, "/tmp/ringside.toml").unwrap();
        assert_eq!(c.server.listen.len(), 1);
        assert_eq!(
            c.unix_listen,
            [
                UnixListen {
                    path: "/tmp/run/a.sock".into(),
                    mode: None,
                    owner: None,
                    group: None,
                },
                UnixListen {
                    path: "/tmp/b.sock".into(),
                    mode: Some(0o660),
                    owner: Some("root".into()),
                    group: Some("root".into()),
                },
            ]
        );
        let out = c.to_toml();
        assert!(
            out.contains("listen = [\"127.0.0.1:0\", \"unix:/tmp/run/a.sock\", { addr = \"unix:/tmp/b.sock\", mode = \"0660\", owner = \"root\", group = \"root\" }]"),
            "{out}"
        );
        let again = parse(&out, "/usr/x.toml").unwrap();
        assert_eq!(again.unix_listen, c.unix_listen);
        assert_eq!(again.server.listen, c.server.listen);

        // Unix sockets alone: no TCP listener.
        let c = parse("[server]\nlisten = [\"unix:/tmp/c.sock\"]\n", "r.toml").unwrap();
        assert!(c.server.listen.is_empty());
        assert_eq!(c.unix_listen.len(), 1);
        let again = parse(&c.to_toml(), "r.toml").unwrap();
        assert_eq!(again.unix_listen, c.unix_listen);
        assert!(again.server.listen.is_empty());
    }

    #[test]
    fn errors_name_the_line_and_key() {
        let at = "ringside.toml";
        for (text, want) in [
            (
                "[server]\nlisten = [\"unix:\"]\n",
                "ringside.toml:2:11: [server] listen: expected a socket path after \"unix:\"",
            ),
            (
                "[server]\nlisten = [\"unix:/a.sock\", { addr = \"unix:/a.sock\" }]\n",
                "ringside.toml:2:36: [server] listen: unix:/a.sock is listed twice",
            ),
            (
                "[server]\nlisten = [{ addr = \"unix:/a.sock\", mode = \"0999\" }]\n",
                "ringside.toml:2:43: [server] listen: expected octal permission bits like \"0660\", got \"0999\"",
            ),
            (
                "[server]\nlisten = [{ addr = \"unix:/a.sock\", mode = \"1777\" }]\n",
                "ringside.toml:2:43: [server] listen: \"1777\": only the permission bits",
            ),
            (
                "[server]\nlisten = [{ addr = \"127.0.0.1:1\", mode = \"0660\" }]\n",
                "ringside.toml:2:42: [server] listen: mode: only for a unix socket",
            ),
            (
                "[server]\nlisten = [{ addr = \"unix:/a.sock\", http2 = false }]\n",
                "ringside.toml:2:44: [server] listen: http2: not on a unix socket listener",
            ),
            (
                "[server]\nlisten = [{ addr = \"unix:/a.sock\", owner = \"\" }]\n",
                "ringside.toml:2:44: [server] listen: expected a user or group name",
            ),
        ] {
            let got = parse(text, at).unwrap_err();
            assert!(got.starts_with(want), "{got}\nwanted {want}");
        }
    }
}

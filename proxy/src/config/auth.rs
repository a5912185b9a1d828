//! Basic auth per route: `basic_auth = { realm = "...", users = "FILE" }`,
//! where FILE (relative to the config file's directory) holds `user:hash`
//! lines as `htpasswd -B` writes them (bcrypt, `$2y$`/`$2b$`/`$2a$`) or with
//! an argon2 PHC string (`$argon2id$...`, as the `argon2` tool prints with
//! `-e`). Blank lines and `#` comments are skipped. The file is read when
//! the config is, so a reload (SIGHUP) reads it again; an unreadable file
//! or a line of another kind is an error naming the file and line, at the
//! `users` key.

use std::fmt::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cx::{join, Cx};
use super::error::ConfigError;
use super::file::FileConfig;

/// How a stored password is hashed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hash {
    Bcrypt(String),
    /// A PHC string, checked when read.
    Argon2(String),
}

/// One route's realm and users.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Users {
    pub realm: String,
    /// As written in the config, for the effective config.
    pub file_as_written: String,
    pub path: PathBuf,
    pub entries: Vec<(String, Hash)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthConfig {
    /// By index in `ProxyConfig::routes`.
    pub proxy_routes: Vec<Option<Arc<Users>>>,
    /// Static routes that have it, by prefix.
    pub static_routes: Vec<(String, Arc<Users>)>,
}

impl AuthConfig {
    pub fn static_route(&self, prefix: &str) -> Option<&Arc<Users>> {
        self.static_routes
            .iter()
            .find(|(p, _)| p == prefix)
            .map(|(_, u)| u)
    }
}

/// The user lines of a file's text; errors name the line.
pub fn parse_users(text: &str, shown: &str) -> Result<Vec<(String, Hash)>, String> {
    let mut out: Vec<(String, Hash)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{shown}:{}", i + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((user, hash)) = line.split_once(':') else {
            return Err(format!("{at}: expected user:hash"));
        };
        if user.is_empty() {
            return Err(format!("{at}: expected a user name before the colon"));
        }
        if out.iter().any(|(u, _)| u == user) {
            return Err(format!("{at}: user {user:?} is already in the file"));
        }
        let hash = if ["$2y$", "$2b$", "$2a$"].iter().any(|p| hash.starts_with(p)) {
            hash.parse::<bcrypt::HashParts>()
                .map_err(|e| format!("{at}: user {user:?}: a bad bcrypt hash ({e})"))?;
            Hash::Bcrypt(hash.to_owned())
        } else if hash.starts_with("$argon2") {
            argon2::PasswordHash::new(hash)
                .map_err(|e| format!("{at}: user {user:?}: a bad argon2 hash ({e})"))?;
            Hash::Argon2(hash.to_owned())
        } else {
            return Err(format!(
                "{at}: user {user:?}: expected a bcrypt ($2y$, htpasswd -B) or argon2 ($argon2id$) hash"
            ));
        };
        out.push((user.to_owned(), hash));
    }
    if out.is_empty() {
        return Err(format!("{shown}: no users"));
    }
    Ok(out)
}

impl Cx<'_> {
    pub(super) fn auth(&self, f: &FileConfig, base: &Path) -> Result<AuthConfig, ConfigError> {
        let (mut proxy_routes, mut static_routes) = (Vec::new(), Vec::new());
        for r in &f.routes {
            let r = r.get_ref();
            let users = match &r.basic_auth {
                None => None,
                Some(a) => {
                    let a = a.get_ref();
                    let realm = self.check(&a.realm, "[[route]] basic_auth realm", |r| {
                        if r.is_empty() || r.contains(['"', '\\']) || r.chars().any(char::is_control) {
                            Err(format!("expected a realm without quotes, backslashes or control characters, got {r:?}"))
                        } else {
                            Ok(r.clone())
                        }
                    })?;
                    let users = self.check(&a.users, "[[route]] basic_auth users", |file| {
                        let path = join(base, file);
                        let text = std::fs::read_to_string(&path)
                            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                        let entries = parse_users(&text, &path.display().to_string())?;
                        Ok(Users {
                            realm: realm.clone(),
                            file_as_written: file.clone(),
                            path,
                            entries,
                        })
                    })?;
                    Some(Arc::new(users))
                }
            };
            match (&r.upstream, users) {
                (Some(_), u) => proxy_routes.push(u),
                (None, Some(u)) => static_routes.push((r.prefix.get_ref().clone(), u)),
                (None, None) => {}
            }
        }
        Ok(AuthConfig {
            proxy_routes,
            static_routes,
        })
    }
}

/// A route's `basic_auth` line.
pub fn write_route(out: &mut String, u: Option<&Arc<Users>>) -> fmt::Result {
    let Some(u) = u else { return Ok(()) };
    writeln!(
        out,
        "basic_auth = {{ realm = {}, users = {} }}",
        toml::Value::String(u.realm.clone()),
        toml::Value::String(u.file_as_written.clone())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // `htpasswd -nbB -C 4 alice secret`
    const ALICE: &str = "alice:$2y$04$zATGeDHl0KNJruTS4s2hPOqVhYFLs64Iy1Yo5QXaY7b.1a.ELZxBe";

    #[test]
    fn user_files_are_checked_line_by_line() {
        let ok = format!("# staff\n\n{ALICE}\n");
        let users = parse_users(&ok, "u").unwrap();
        assert_eq!(users.len(), 1);
        for (text, want) in [
            ("alice\n".to_owned(), "u:1: expected user:hash"),
            (":$2y$04$x\n".to_owned(), "u:1: expected a user name"),
            (
                "bob:$apr1$abc$def\n".to_owned(),
                "u:1: user \"bob\": expected a bcrypt",
            ),
            (
                "bob:{SHA}abc=\n".to_owned(),
                "u:1: user \"bob\": expected a bcrypt",
            ),
            (
                format!("{ALICE}\n{ALICE}\n"),
                "u:2: user \"alice\" is already in the file",
            ),
            (
                "bob:$2y$04$short\n".to_owned(),
                "u:1: user \"bob\": a bad bcrypt hash",
            ),
            (
                "bob:$argon2id$nonsense\n".to_owned(),
                "u:1: user \"bob\": a bad argon2 hash",
            ),
            ("# nobody\n".to_owned(), "u: no users"),
        ] {
            let got = parse_users(&text, "u").unwrap_err();
            assert!(got.starts_with(want), "{text:?}: {got}");
        }
    }
}

//! Basic auth on the routes that have it (`config::auth`), checked after
//! routing, `allow`/`deny` and the rate limits, on the route the
//! normalized path chose.
//!
//! A password is checked against its bcrypt or argon2 hash, which costs
//! what the hash was made to cost (bcrypt's cost 10: tens of
//! milliseconds), on the core serving the request. So that a client does
//! not pay it on every request, each core remembers the Authorization
//! values it accepted (a keyed hash of each, at most `REMEMBERED`, until
//! the next reload). A value for an unknown user is checked against the
//! first user's hash all the same, so a failure takes as long whether or
//! not the user exists.

use std::cell::RefCell;
use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use base64::Engine;

use crate::config::auth::{Hash, Users};

/// Accepted Authorization values each core remembers, per route.
const REMEMBERED: usize = 4096;

pub struct BasicAuth {
    users: Arc<Users>,
    /// `Basic realm="...", charset="UTF-8"`.
    pub challenge: Box<[u8]>,
    accepted: RefCell<HashSet<u64>>,
    keys: RandomState,
}

impl BasicAuth {
    pub fn new(users: Arc<Users>) -> BasicAuth {
        let challenge = format!("Basic realm=\"{}\", charset=\"UTF-8\"", users.realm);
        BasicAuth {
            users,
            challenge: challenge.into_bytes().into(),
            accepted: RefCell::new(HashSet::new()),
            keys: RandomState::new(),
        }
    }

    /// Whether an Authorization value names a user of this route with its
    /// password.
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else {
            return false;
        };
        let key = self.keys.hash_one(value);
        if self.accepted.borrow().contains(&key) {
            return true;
        }
        let Some((user, password)) = credentials(value) else {
            return false;
        };
        let ok = match self
            .users
            .entries
            .iter()
            .find(|(u, _)| u.as_bytes() == user)
        {
            Some((_, hash)) => verify(hash, &password),
            None => {
                // As long as a known user's failure takes.
                let _ = verify(&self.users.entries[0].1, &password);
                false
            }
        };
        if ok {
            let mut accepted = self.accepted.borrow_mut();
            if accepted.len() >= REMEMBERED {
                accepted.clear();
            }
            accepted.insert(key);
        }
        ok
    }
}

/// The user an Authorization value names, for the access log (nginx's
/// `$remote_user`); only asked once [`BasicAuth::admits`] took the value.
pub fn user(authorization: &[u8]) -> Option<Vec<u8>> {
    credentials(authorization).map(|(user, _)| user)
}

/// `Basic <base64 of user:password>` (RFC 7617): the user and password.
fn credentials(value: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let value = ringside_http::grammar::trim_ows(value);
    let (scheme, rest) = value.split_at(value.iter().position(|&b| b == b' ')?);
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(ringside_http::grammar::trim_ows(rest))
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    Some((decoded[..colon].to_vec(), decoded[colon + 1..].to_vec()))
}

fn verify(hash: &Hash, password: &[u8]) -> bool {
    match hash {
        Hash::Bcrypt(h) => bcrypt::verify(password, h).unwrap_or(false),
        Hash::Argon2(h) => {
            use argon2::PasswordVerifier;
            argon2::PasswordHash::new(h).is_ok_and(|parsed| {
                argon2::Argon2::default()
                    .verify_password(password, &parsed)
                    .is_ok()
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::auth::parse_users;

    fn auth(lines: &str) -> BasicAuth {
        BasicAuth::new(Arc::new(Users {
            realm: "staff".into(),
            file_as_written: "u".into(),
            path: "u".into(),
            entries: parse_users(lines, "u").unwrap(),
        }))
    }

    fn basic(s: &str) -> Vec<u8> {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(s)
        )
        .into_bytes()
    }

    #[test]
    fn bcrypt_users_their_passwords_and_nothing_else() {
        // htpasswd -nbB -C 4 alice secret
        let a = auth("alice:$2y$04$zATGeDHl0KNJruTS4s2hPOqVhYFLs64Iy1Yo5QXaY7b.1a.ELZxBe\n");
        assert!(a.admits(Some(&basic("alice:secret"))));
        assert!(a.admits(Some(&basic("alice:secret"))), "remembered");
        assert!(
            a.admits(Some(b"basic   YWxpY2U6c2VjcmV0")),
            "scheme case, spaces"
        );
        for bad in [
            basic("alice:Secret"),
            basic("bob:secret"),
            basic("alice"),
            b"Bearer YWxpY2U6c2VjcmV0".to_vec(),
            b"Basic !!!".to_vec(),
            b"Basic".to_vec(),
        ] {
            assert!(!a.admits(Some(&bad)), "{}", String::from_utf8_lossy(&bad));
        }
        assert!(!a.admits(None));
        assert_eq!(&*a.challenge, b"Basic realm=\"staff\", charset=\"UTF-8\"");
    }
}

//! Header fields a site's configuration sets, adds or removes: on every
//! response head, whichever handler wrote it (static files, a proxied or
//! FastCGI response, a cached one, the server's own 404 or 502), and on
//! the request fields that go to an upstream (nginx's `add_header`,
//! `proxy_set_header`, `proxy_hide_header`). And the `Server` field's
//! value (nginx's `server_tokens`), per core.
//!
//! The rules are made once, when the config is loaded; a request carries a
//! pointer to its route's ([`crate::Exchange::set_fields`]) and they are
//! written straight into the head as it is laid out. A request without
//! rules pays one `None` check per head.

use std::cell::Cell;

/// What a rule does to its field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Replaces the fields of that name the handler or upstream sent.
    Set,
    /// Sent besides them.
    Add,
    /// Drops them (on every status).
    Remove,
}

/// One field's rule. The name is a token and the value visible ASCII
/// (checked when the config is read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub action: Action,
    pub name: Box<[u8]>,
    /// Empty for [`Action::Remove`].
    pub value: Box<[u8]>,
    /// On every status; else only on those [`applies`] names.
    pub always: bool,
}

/// Whether a rule without `always` applies to a response of `status`: the
/// statuses nginx's `add_header` writes on without `always` (success and
/// redirects, where a page is what the client is meant to see).
pub fn applies(always: bool, status: u16) -> bool {
    always
        || matches!(
            status,
            200 | 201 | 204 | 206 | 301 | 302 | 303 | 304 | 307 | 308
        )
}

/// One direction's rules, in the order written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldRules {
    rules: Box<[Rule]>,
}

impl FieldRules {
    pub fn new(rules: Vec<Rule>) -> Self {
        FieldRules {
            rules: rules.into(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether a field `name` that the handler or upstream gave goes out
    /// on a message of `status` (0: a request, where every rule holds):
    /// not removed, and not replaced by a `set` that applies.
    pub fn keeps(&self, status: u16, name: &[u8]) -> bool {
        !self.rules.iter().any(|r| {
            r.name.eq_ignore_ascii_case(name)
                && match r.action {
                    Action::Remove => true,
                    Action::Set => status == 0 || applies(r.always, status),
                    Action::Add => false,
                }
        })
    }

    /// The fields the rules write on a message of `status` (0: a request).
    pub fn lines(&self, status: u16) -> impl Iterator<Item = (&[u8], &[u8])> + Clone {
        self.rules
            .iter()
            .filter(move |r| {
                r.action != Action::Remove && (status == 0 || applies(r.always, status))
            })
            .map(|r| (&r.name[..], &r.value[..]))
    }
}

/// A route's rules, both ways, behind the one pointer an exchange holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteFields {
    /// On the response heads of the route's requests.
    pub response: FieldRules,
    /// On the requests it sends upstream (HTTP/1, HTTP/2, and FastCGI's
    /// `HTTP_*` params).
    pub request: FieldRules,
}

thread_local! {
    /// `Server: ...\r\n` as HTTP/1 writes it; empty for none. A const
    /// `Cell` of a `'static` line, so a response reads it with one load
    /// (a lazily made `RefCell<Rc>` cost 86 instructions a response).
    static SERVER: Cell<&'static [u8]> = const { Cell::new(b"Server: ringside\r\n") };
}

const PREFIX: usize = b"Server: ".len();

/// The `Server` field this core writes from now on: `Some(value)`, or
/// none at all. Called where a core's handler is built (at start and at
/// each reload), so it costs nothing per response. A value not written
/// before is kept for the process's life (a few bytes per distinct value
/// a reload ever sets).
pub fn set_server(value: Option<&str>) {
    let line = match value {
        Some(v) => format!("Server: {v}\r\n"),
        None => String::new(),
    };
    if SERVER.with(Cell::get) != line.as_bytes() {
        let kept: &'static [u8] = Box::leak(line.into_bytes().into_boxed_slice());
        SERVER.with(|s| s.set(kept));
    }
}

/// Calls `f` with the `Server: ...\r\n` line (empty for none).
#[inline]
pub(crate) fn with_server_line<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    f(server_line())
}

/// The fields an HTTP/2 or HTTP/3 head carries after the response's own,
/// as one slice for `f`: a line the exchange added, Date (this second's,
/// or the one given), Server (as `server_tokens` says) and Content-Length
/// for a sized body. (HTTP/1's writer spells them as text instead.)
/// Inlined: called as a function it cost h2c 1.7% more instructions per
/// request (callgrind, h2load -c10 -m10).
#[inline(always)]
pub(crate) fn with_framed_head_fields<R>(
    added: Option<&crate::message::HeaderLine>,
    given: Option<&[u8]>,
    framing: crate::message::Framing,
    f: impl FnOnce(&[(&[u8], &[u8])]) -> R,
) -> R {
    let mut len = [0u8; 20];
    let len = match framing {
        crate::message::Framing::Length(n) => crate::grammar::decimal(n, &mut len),
        _ => &[][..],
    };
    let server = server_line();
    crate::date::with_date(|date| {
        let mut extra: [(&[u8], &[u8]); 4] = [(b"", b""); 4];
        let mut n = 0;
        if let Some(l) = added {
            extra[n] = (&l.name, &l.value);
            n += 1;
        }
        extra[n] = (b"date", given.unwrap_or(date));
        n += 1;
        if let Some(s) = server_value(server) {
            extra[n] = (b"server", s);
            n += 1;
        }
        if !len.is_empty() {
            extra[n] = (b"content-length", len);
            n += 1;
        }
        f(&extra[..n])
    })
}

/// The `Server: ...\r\n` line.
#[inline]
pub(crate) fn server_line() -> &'static [u8] {
    SERVER.with(Cell::get)
}

/// The value in a [`server_line`], `None` for none.
pub(crate) fn server_value(line: &[u8]) -> Option<&[u8]> {
    (!line.is_empty()).then(|| &line[PREFIX..line.len() - 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(action: Action, name: &str, value: &str, always: bool) -> Rule {
        Rule {
            action,
            name: name.as_bytes().into(),
            value: value.as_bytes().into(),
            always,
        }
    }

    #[test]
    fn set_replaces_add_appends_remove_drops() {
        let r = FieldRules::new(vec![
            rule(Action::Set, "X-Frame-Options", "DENY", false),
            rule(Action::Add, "Link", "</a>", false),
            rule(Action::Remove, "X-Powered-By", "", false),
        ]);
        assert!(!r.keeps(200, b"x-frame-options"));
        assert!(r.keeps(200, b"link"));
        assert!(!r.keeps(200, b"X-POWERED-BY"));
        assert!(r.keeps(200, b"content-type"));
        let lines: Vec<_> = r.lines(200).collect();
        assert_eq!(
            lines,
            [
                (&b"X-Frame-Options"[..], &b"DENY"[..]),
                (&b"Link"[..], &b"</a>"[..])
            ]
        );
    }

    #[test]
    fn without_always_only_success_and_redirects() {
        let r = FieldRules::new(vec![
            rule(Action::Set, "A", "1", false),
            rule(Action::Add, "B", "2", true),
            rule(Action::Remove, "C", "", false),
        ]);
        for s in [200, 201, 204, 206, 301, 302, 303, 304, 307, 308] {
            assert_eq!(r.lines(s).count(), 2, "{s}");
            assert!(!r.keeps(s, b"a"), "{s}");
        }
        for s in [100, 202, 300, 400, 404, 500, 502] {
            let names: Vec<_> = r.lines(s).map(|(n, _)| n).collect();
            assert_eq!(names, [&b"B"[..]], "{s}");
            // The upstream's own A goes on where the set does not apply;
            // a removal holds on every status.
            assert!(r.keeps(s, b"a"), "{s}");
            assert!(!r.keeps(s, b"c"), "{s}");
        }
        // A request: every rule holds.
        assert_eq!(r.lines(0).count(), 2);
        assert!(!r.keeps(0, b"a"));
    }

    #[test]
    fn server_field_per_core() {
        let line = || with_server_line(|l| l.to_vec());
        let value = || server_value(server_line()).map(<[u8]>::to_vec);
        assert_eq!(line(), b"Server: ringside\r\n");
        assert_eq!(value(), Some(b"ringside".to_vec()));
        set_server(Some("edge/1"));
        assert_eq!(line(), b"Server: edge/1\r\n");
        assert_eq!(value(), Some(b"edge/1".to_vec()));
        set_server(None);
        assert_eq!(line(), b"");
        assert_eq!(value(), None);
        set_server(Some("ringside"));
        assert_eq!(line(), b"Server: ringside\r\n");
    }
}

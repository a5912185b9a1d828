//! `try_files` at the edge (`config::try_files`): a route's entries are
//! made from the request's normalized path and looked up, in order, beneath
//! the route's directory by the static files' own lookup
//! (`StaticFiles::probe`: opened beneath the root, hidden names refused);
//! the first that names something is served, else the fallback answers
//! or the request goes on to the route's upstream as without `try_files`.

use ringside_http::{Error, Exchange};
use ringside_static::{Docroot, Found};

use super::router::Target;
use super::Edge;
use crate::config::try_files::{Fallback, TryFiles};
use crate::fastcgi::codec::FastCgi;
use crate::fastcgi::script::Resolved;
use crate::upstream::forward::forward;
use crate::upstream::settings::ForwardPath;

/// An entry: the text before `$uri` (the whole path for an entry
/// without one), and the text after it.
type Entry = (Box<[u8]>, Option<Box<[u8]>>);

/// One route's entries, split at `$uri`.
pub struct Tries {
    entries: Vec<Entry>,
    fallback: Fallback,
    /// A route to an HTTP upstream: its root among the static files.
    docroot: Option<Docroot>,
}

impl Tries {
    pub fn new(t: &TryFiles, docroot: Option<Docroot>) -> Tries {
        let entries = t
            .entries
            .iter()
            .map(|e| {
                let (before, after) = TryFiles::split(e);
                (before.as_bytes().into(), after.map(|a| a.as_bytes().into()))
            })
            .collect();
        Tries {
            entries,
            fallback: t.fallback,
            docroot,
        }
    }
}

/// Entry `(before, after)` made from `uri` into `out`.
fn make(out: &mut Vec<u8>, before: &[u8], after: Option<&[u8]>, uri: &[u8]) {
    out.clear();
    out.extend_from_slice(before);
    if let Some(after) = after {
        // `$uri/` of a path that ends in `/` is that path.
        let uri = match after.first() {
            Some(b'/') => uri.strip_suffix(b"/").unwrap_or(uri),
            _ => uri,
        };
        out.extend_from_slice(uri);
        out.extend_from_slice(after);
    }
}

impl Edge {
    /// The answer when an entry names something or the fallback is a
    /// status; `None`: the request goes on to the route's upstream.
    pub(super) async fn try_files(
        &self,
        ex: &mut Exchange<'_>,
        t: &Tries,
        target: Target,
    ) -> Option<Result<(), Error>> {
        let (docroot, scripts) = match target {
            Target::Proxy(i) => match &self.scripts[i] {
                Some((s, d)) => (Some(d), Some((i, s))),
                None => (t.docroot.as_ref(), None),
            },
            _ => (None, None),
        };
        let mut path = Vec::with_capacity(ex.path().len() + 16);
        for (before, after) in &t.entries {
            make(&mut path, before, after.as_deref(), ex.path());
            if self.statics.probe(ex.route_path(), docroot, &path) == Found::Nothing {
                continue;
            }
            if let Some((i, s)) = scripts {
                // A FastCGI route's entry may name a script: it runs.
                if let Resolved::Script {
                    script_name,
                    path_info,
                } = s.resolve(&path)
                {
                    let route = &self.router.routes()[i];
                    let codec = FastCgi {
                        route: s.route(),
                        script_name: &script_name,
                        path_info: &path_info,
                        raw_uri: route.forward_path == ForwardPath::Raw,
                    };
                    let up = &self.proxy.upstreams[route.upstream];
                    return Some(Box::pin(forward(ex, up, &codec)).await);
                }
            }
            return Some(self.statics.handle_path(ex, docroot, &path).await);
        }
        match t.fallback {
            Fallback::Status(s) => Some(ex.send_status(s)),
            Fallback::Upstream => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::make;

    #[test]
    fn entries_are_made_from_the_normalized_path() {
        let cases: &[(&str, Option<&str>, &str, &str)] = &[
            ("", Some(""), "/a/b", "/a/b"),
            ("", Some("/"), "/a/b", "/a/b/"),
            ("", Some("/"), "/a/b/", "/a/b/"),
            ("", Some("/"), "/", "/"),
            ("", Some(".html"), "/about", "/about.html"),
            ("", Some("/index.html"), "/docs/", "/docs/index.html"),
            ("/cache", Some(".html"), "/x", "/cache/x.html"),
            ("/index.html", None, "/app/users/7", "/index.html"),
        ];
        let mut out = Vec::new();
        for (before, after, uri, want) in cases {
            make(
                &mut out,
                before.as_bytes(),
                after.map(str::as_bytes),
                uri.as_bytes(),
            );
            assert_eq!(
                String::from_utf8_lossy(&out),
                *want,
                "{before}$uri{after:?} of {uri}"
            );
        }
    }
}

//! One `http[s]://host[:port]/path` URL, as ab takes it, parsed: what a
//! request is built for (`crate::request`) and what a URL file holds a
//! line of (`crate::urls`).

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// https: the connection speaks TLS.
    pub tls: bool,
    /// Host as written, without IPv6 brackets.
    pub host: String,
    pub port: u16,
    /// Path with query, starting with `/`.
    pub path: String,
    /// The Host header value: host, with the port when it is not the
    /// scheme's default (80, or 443 for https).
    pub authority: String,
}

pub fn parse_url(s: &str) -> Result<Url, String> {
    let s = s.trim();
    let (rest, tls) = if let Some(r) = s.strip_prefix("http://") {
        (r, false)
    } else if let Some(r) = s.strip_prefix("https://") {
        (r, true)
    } else if s.contains("://") {
        return Err(format!("{s}: only http:// and https:// URLs are supported"));
    } else {
        (s, false)
    };
    let default_port = if tls { 443 } else { 80 };
    let (hostport, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
        let (h, after) = h
            .split_once(']')
            .ok_or_else(|| format!("{s}: unclosed '[' in the host"))?;
        let port = match after.strip_prefix(':') {
            Some(p) => parse_port(s, p)?,
            None if after.is_empty() => default_port,
            None => return Err(format!("{s}: unexpected {after:?} after the host")),
        };
        (h.to_string(), port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), parse_port(s, p)?),
            None => (hostport.to_string(), default_port),
        }
    };
    if host.is_empty() {
        return Err(format!("{s}: invalid URL (no host)"));
    }
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!("{s}: the path has spaces or control characters"));
    }
    let bracketed = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.clone()
    };
    let authority = if port == default_port {
        bracketed
    } else {
        format!("{bracketed}:{port}")
    };
    Ok(Url {
        tls,
        host,
        port,
        path,
        authority,
    })
}

fn parse_port(url: &str, p: &str) -> Result<u16, String> {
    match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{url}: invalid port {p:?}")),
    }
}

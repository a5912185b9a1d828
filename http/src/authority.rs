//! The authority's grammar, `uri-host [ ":" port ]` (RFC 9110 §7.2,
//! RFC 3986 §3.2.2), written once for what names a host: HTTP/1's `Host`
//! field and request-targets, and the `:authority` of HTTP/2 and HTTP/3.
//! A userinfo (`user@`) is not part of it, so it is refused wherever a
//! host is read.

/// `uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2). Empty is valid:
/// it is what a client sends when the target URI has no authority.
#[inline]
pub(crate) fn valid_host_port(v: &[u8]) -> bool {
    v.is_empty() || split_host_port(v).is_some()
}

/// Splits and validates `uri-host [ ":" port ]`; `None` if invalid.
pub(crate) fn split_host_port(v: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let (host, rest) = if let Some(inner) = v.strip_prefix(b"[") {
        // IP-literal: IPv6address or IPvFuture, loosely.
        let close = inner.iter().position(|&b| b == b']')?;
        let ip = &inner[..close];
        if ip.is_empty() || !ip.iter().all(|&b| REG_NAME[b as usize] == 1 || b == b':') {
            return None;
        }
        (&v[..close + 2], &inner[close + 1..])
    } else {
        let end = v.iter().position(|&b| b == b':').unwrap_or(v.len());
        let host = &v[..end];
        if !valid_reg_name(host) {
            return None;
        }
        (host, &v[end..])
    };
    match rest {
        [] => Some((host, None)),
        [b':', port @ ..] if port.iter().all(u8::is_ascii_digit) => Some((host, Some(port))),
        _ => None,
    }
}

/// reg-name = *( unreserved / pct-encoded / sub-delims ); IPv4 addresses fit too.
fn valid_reg_name(h: &[u8]) -> bool {
    // Fast path without `%`: branch-free, no dependency between bytes.
    if h.iter()
        .fold(true, |ok, &b| ok & (REG_NAME[b as usize] == 1))
    {
        return true;
    }
    let mut i = 0;
    while i < h.len() {
        match REG_NAME[h[i] as usize] {
            1 => i += 1,
            2 if h.len() > i + 2
                && h[i + 1].is_ascii_hexdigit()
                && h[i + 2].is_ascii_hexdigit() =>
            {
                i += 3
            }
            _ => return false,
        }
    }
    true
}

/// 1: unreserved or sub-delims; 2: `%` (starts pct-encoded); 0: not allowed.
static REG_NAME: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        if b.is_ascii_alphanumeric() {
            t[i] = 1;
        }
        i += 1;
    }
    let extra = b"-._~!$&'()*+,;=";
    let mut j = 0;
    while j < extra.len() {
        t[extra[j] as usize] = 1;
        j += 1;
    }
    t[b'%' as usize] = 2;
    t
};

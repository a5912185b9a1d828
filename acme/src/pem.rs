//! PEM (RFC 7468) for the keys this crate writes and reads.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

pub(crate) fn encode(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The first block labelled `label`.
pub(crate) fn decode(pem: &str, label: &str) -> Option<Vec<u8>> {
    decode_all(pem, label).into_iter().next()
}

/// Every block labelled `label`, in order.
pub(crate) fn decode_all(pem: &str, label: &str) -> Vec<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let mut out = Vec::new();
    let mut rest = pem;
    while let Some(b) = rest.find(&begin) {
        let after = &rest[b + begin.len()..];
        let Some(e) = after.find(&end) else { break };
        let body: String = after[..e].chars().filter(|c| !c.is_whitespace()).collect();
        match STANDARD.decode(body) {
            Ok(der) => out.push(der),
            Err(_) => return out,
        }
        rest = &after[e + end.len()..];
    }
    out
}

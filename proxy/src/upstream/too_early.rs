//! An upstream's 425 Too Early to a request served from HTTP/3 early data
//! (RFC 8470 §5.2). The request goes again once the client's handshake
//! has ended, this time not early and without our `Early-Data`, so the
//! upstream can answer it and the client never sees the 425: §5.2 lets an
//! intermediary that received the request in early data do so. The 425
//! reaches the client as it is when the client sent `Early-Data` itself
//! (§5.2: an intermediary MUST then forward it), when the request cannot
//! be sent twice (it has a body), or on the second try.

use ringside_http::Exchange;

/// Whether `status`, the upstream's answer to `ex`, sends the request
/// round again after the handshake rather than to the client.
/// `replayable`: the codec's word that the request may reach a server
/// twice, asked only of a 425 to early data (every response passes here).
pub(crate) fn again_after_handshake(
    ex: &Exchange<'_>,
    status: u16,
    replayable: impl FnOnce() -> bool,
) -> bool {
    status == 425
        && ex.early_data()
        && replayable()
        && !ex.responded()
        && !ex
            .headers()
            .any(|(n, _)| n.eq_ignore_ascii_case(b"early-data"))
}

//! Pages that stand in for error responses (nginx's `error_page`): the
//! handler sets a table on the exchange after routing
//! ([`crate::Exchange::set_error_pages`]), and the exchange consults it
//! where a response's head is written, so every way of answering an
//! error (the server's own `send_status` and `send`, a proxied head, a
//! stored one) meets it once.
//!
//! The server's own answers (`send_status`, `send`, `send_with`) take the
//! page for their status whenever the table has one. A response relayed
//! from elsewhere (`start_from`, or a stored response through
//! `send_dated` and `send_file_dated`) takes it only where the table
//! [`ErrorPages::intercepts`] (nginx's `proxy_intercept_errors`): its
//! body is then read and dropped, and none of it reaches the client.

use bytes::Bytes;

/// What answers in place of an error response.
pub struct Page {
    /// The status sent: the error's own, unless the page says otherwise.
    pub status: u16,
    pub content_type: Bytes,
    pub body: Bytes,
}

/// A request's error pages, by status.
pub trait ErrorPages {
    /// The page for an error of `status` (400 to 599), if one is set and
    /// can be read now; `None` leaves the built-in answer.
    fn page(&self, status: u16) -> Option<Page>;
    /// Whether another server's error responses are replaced too.
    fn intercepts(&self) -> bool;
}

/// Fields of a relayed response kept on the page that replaces it: what
/// the client needs to act on the error (RFC 9110 §11.6.1, §10.2.3).
pub(crate) fn kept_from_relayed(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"www-authenticate")
        || name.eq_ignore_ascii_case(b"proxy-authenticate")
        || name.eq_ignore_ascii_case(b"retry-after")
        || name.eq_ignore_ascii_case(b"allow")
}

//! What a response is made of, as the neutral exchange hands it to a
//! protocol's wire: how its body is framed and the header lines it carries
//! besides the handler's. Apart from both, so that neither needs the other.

/// How the body of a response started with `Exchange::start_from` is
/// framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// Exactly this many bytes (for HEAD, the length a GET would have).
    Sized(u64),
    /// Length unknown until its end.
    Stream,
}

/// What the protocol is told about a response body when its head is
/// written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    Length(u64),
    Stream,
    /// Framed by its status alone (1xx, 204, 304).
    None,
}

/// A header every response head of a request carries, whichever handler
/// writes it (HSTS on every https response of a virtual host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderLine {
    pub name: Box<[u8]>,
    pub value: Box<[u8]>,
}

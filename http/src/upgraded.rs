//! The client's side of a connection after a protocol switch, as a handler
//! relays it: the same for every protocol that can switch (HTTP/1's 101;
//! HTTP/2's extended CONNECT will hand over a stream the same way).

use bytes::BytesMut;
use ringside_runtime::net::TcpStream;

/// The client's side of a connection after a protocol switch (HTTP/1's
/// `101 Switching Protocols`, or a 200 to HTTP/2's extended CONNECT): the
/// bytes it sent already, and its end to relay with.
pub struct Upgraded<'a> {
    end: End<'a>,
}

enum End<'a> {
    H1 {
        stream: &'a TcpStream,
        pending: &'a mut BytesMut,
    },
    H2(crate::h2::tunnel::Tunnel),
}

impl<'a> Upgraded<'a> {
    /// An HTTP/1 connection's socket and what its client sent past the head.
    pub(crate) fn h1(stream: &'a TcpStream, pending: &'a mut BytesMut) -> Self {
        Upgraded {
            end: End::H1 { stream, pending },
        }
    }

    /// An HTTP/2 stream that an extended CONNECT made a tunnel.
    pub(crate) fn h2(t: crate::h2::tunnel::Tunnel) -> Self {
        Upgraded { end: End::H2(t) }
    }

    /// What the client sent after its request head, to be relayed first.
    pub fn take_pending(&mut self) -> BytesMut {
        match &mut self.end {
            End::H1 { pending, .. } => std::mem::take(*pending),
            End::H2(_) => BytesMut::new(),
        }
    }

    pub async fn read(&self, buf: &mut BytesMut) -> std::io::Result<usize> {
        match &self.end {
            End::H1 { stream, .. } => stream.read(buf).await,
            End::H2(t) => t.read(buf).await,
        }
    }

    pub async fn send_some(&self, buf: &mut BytesMut) -> std::io::Result<()> {
        match &self.end {
            End::H1 { stream, .. } => stream.send_some(buf).await,
            End::H2(t) => t.send_some(buf).await,
        }
    }

    pub fn shutdown_write(&self) -> std::io::Result<()> {
        match &self.end {
            End::H1 { stream, .. } => stream.shutdown_write(),
            End::H2(t) => t.shutdown_write(),
        }
    }
}

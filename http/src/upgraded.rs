//! The client's side of a connection after a protocol switch, as a handler
//! relays it: the same for every protocol that can switch (HTTP/1's 101;
//! HTTP/2's extended CONNECT will hand over a stream the same way).

use bytes::BytesMut;
use ringside_runtime::net::TcpStream;

/// The client's side of a connection after `101 Switching Protocols`: the
/// bytes it sent already, and its stream to relay with.
pub struct Upgraded<'a> {
    stream: &'a TcpStream,
    pending: &'a mut BytesMut,
}

impl<'a> Upgraded<'a> {
    /// An HTTP/1 connection's socket and what its client sent past the head.
    pub(crate) fn h1(stream: &'a TcpStream, pending: &'a mut BytesMut) -> Self {
        Upgraded { stream, pending }
    }

    /// What the client sent after its request head, to be relayed first.
    pub fn take_pending(&mut self) -> BytesMut {
        std::mem::take(self.pending)
    }

    pub async fn read(&self, buf: &mut BytesMut) -> std::io::Result<usize> {
        self.stream.read(buf).await
    }

    pub async fn send_some(&self, buf: &mut BytesMut) -> std::io::Result<()> {
        self.stream.send_some(buf).await
    }

    pub fn shutdown_write(&self) -> std::io::Result<()> {
        self.stream.shutdown_write()
    }
}

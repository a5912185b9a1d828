//! A two-way byte relay between the client and the upstream after a
//! protocol switch (WebSocket and the like).
//!
//! One task drives both directions: each side is read by one direction and
//! written by the other, which the runtime's `&self` readiness API allows.
//! When one side ends its sending, the other side's write half is shut, and
//! the relay goes on the other way until that ends too (TCP half-close).
//! A direction reads only when its buffer is empty, so a slow reader holds
//! back its sender: backpressure without growing buffers.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::task::Poll;

use bytes::BytesMut;
use ringside_http::Upgraded;
use ringside_runtime::net::TcpStream;

/// One end of a tunnel: the client's side after a protocol switch, or the
/// upstream's socket.
trait End {
    async fn read(&self, buf: &mut BytesMut) -> io::Result<usize>;
    async fn send_some(&self, buf: &mut BytesMut) -> io::Result<()>;
    fn shutdown_write(&self) -> io::Result<()>;
}

impl End for TcpStream {
    async fn read(&self, buf: &mut BytesMut) -> io::Result<usize> {
        TcpStream::read(self, buf).await
    }
    async fn send_some(&self, buf: &mut BytesMut) -> io::Result<()> {
        TcpStream::send_some(self, buf).await
    }
    fn shutdown_write(&self) -> io::Result<()> {
        TcpStream::shutdown_write(self)
    }
}

impl End for Upgraded<'_> {
    async fn read(&self, buf: &mut BytesMut) -> io::Result<usize> {
        Upgraded::read(self, buf).await
    }
    async fn send_some(&self, buf: &mut BytesMut) -> io::Result<()> {
        Upgraded::send_some(self, buf).await
    }
    fn shutdown_write(&self) -> io::Result<()> {
        Upgraded::shutdown_write(self)
    }
}

/// Relays until both directions ended; `a_pending` and `b_pending` hold
/// bytes already read from `a` and `b`, to be written to the other first.
pub async fn tunnel(
    a: &Upgraded<'_>,
    a_pending: &mut BytesMut,
    b: &TcpStream,
    b_pending: &mut BytesMut,
) -> io::Result<()> {
    let mut ab = pin!(one_way(a, b, a_pending));
    let mut ba = pin!(one_way(b, a, b_pending));
    let mut ab_done: Option<io::Result<()>> = None;
    let mut ba_done: Option<io::Result<()>> = None;
    std::future::poll_fn(|cx| {
        if ab_done.is_none() {
            if let Poll::Ready(r) = ab.as_mut().poll(cx) {
                ab_done = Some(r);
            }
        }
        if ba_done.is_none() {
            if let Poll::Ready(r) = ba.as_mut().poll(cx) {
                ba_done = Some(r);
            }
        }
        // An error on either side ends both: the peer of a broken side
        // learns of it by the close.
        let failed = matches!(ab_done, Some(Err(_))) || matches!(ba_done, Some(Err(_)));
        if (ab_done.is_some() && ba_done.is_some()) || failed {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    match (ab_done, ba_done) {
        (Some(Err(e)), _) | (_, Some(Err(e))) => Err(e),
        _ => Ok(()),
    }
}

async fn one_way(from: &impl End, to: &impl End, buf: &mut BytesMut) -> io::Result<()> {
    loop {
        while !buf.is_empty() {
            to.send_some(buf).await?;
        }
        buf.clear();
        match from.read(buf).await {
            Ok(0) => {
                let _ = to.shutdown_write();
                return Ok(());
            }
            Ok(_) => {}
            Err(e) => return Err(e),
        }
    }
}

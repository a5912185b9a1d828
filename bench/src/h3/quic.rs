//! A QUIC connection's datagrams: its own UDP socket ([`super::udp`]) and
//! its own quinn-proto endpoint, fed what arrives and drained of what is
//! to go. One endpoint per connection, not per core: the endpoint's only
//! client-side work is routing by connection id, which a connected socket
//! already does, and a connection's state then all goes when it is
//! dropped, where a shared endpoint would keep each closed connection's
//! ids until it had drained.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig,
};

use super::udp::{Sent, Udp, GSO_SEGMENTS};

/// One receive: a GRO batch or one datagram, at most the largest a UDP
/// payload can be.
const RECV_BUF: usize = 65_536;

/// A core's buffers, shared by its connections, and whether the kernel
/// takes GSO sends.
pub struct Io {
    pub gso: bool,
    rbuf: Vec<u8>,
    tbuf: Vec<u8>,
}

impl Default for Io {
    fn default() -> Self {
        Io {
            gso: true,
            rbuf: vec![0; RECV_BUF],
            tbuf: Vec::with_capacity(GSO_SEGMENTS * 1500),
        }
    }
}

/// The socket and endpoint under one connection.
pub struct Wire {
    udp: Udp,
    endpoint: Endpoint,
    handle: ConnectionHandle,
    addr: SocketAddr,
    /// A send that found the socket full, retried when it is writable.
    blocked: Option<(Vec<u8>, Option<usize>)>,
}

impl Wire {
    /// A new connection to `addr` (`host` its TLS server name) over a
    /// socket of its own, bound to `bind` and with buffers of `window`
    /// bytes when given (ab's `-B` and `-b`).
    pub fn connect(
        now: Instant,
        endpoint: Arc<EndpointConfig>,
        client: ClientConfig,
        (addr, host): (SocketAddr, &str),
        bind: Option<std::net::IpAddr>,
        window: Option<u32>,
    ) -> io::Result<(Wire, Connection)> {
        let udp = Udp::connect(addr, bind, window)?;
        let mut endpoint = Endpoint::new(endpoint, None, true, None);
        let (handle, conn) = endpoint
            .connect(now, client, addr, host)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let wire = Wire {
            udp,
            endpoint,
            handle,
            addr,
            blocked: None,
        };
        Ok((wire, conn))
    }

    /// What to wait for: datagrams, and room when a send is waiting.
    pub fn pollfd(&self) -> libc::pollfd {
        let out = if self.blocked.is_some() {
            libc::POLLOUT
        } else {
            0
        };
        libc::pollfd {
            fd: self.udp.fd(),
            events: libc::POLLIN | out,
            revents: 0,
        }
    }

    /// Sends what waited for room, then hands `conn` every datagram
    /// waiting; their bytes are added to `received`.
    pub fn receive(
        &mut self,
        conn: &mut Connection,
        io: &mut Io,
        now: Instant,
        received: &mut u64,
    ) -> io::Result<()> {
        if let Some((buf, seg)) = self.blocked.take() {
            if self.udp.send(&buf, seg, &mut io.gso)? == Sent::WouldBlock {
                self.blocked = Some((buf, seg));
            }
        }
        while let Some((n, stride)) = self.udp.recv(&mut io.rbuf)? {
            *received += n as u64;
            let mut at = 0;
            while at < n {
                let end = (at + stride).min(n);
                self.datagram(conn, io, now, at..end);
                at = end;
            }
        }
        Ok(())
    }

    /// Hands `conn` one datagram of `io.rbuf`.
    fn datagram(
        &mut self,
        conn: &mut Connection,
        io: &mut Io,
        now: Instant,
        range: std::ops::Range<usize>,
    ) {
        let data = BytesMut::from(&io.rbuf[range]);
        io.tbuf.clear();
        match self
            .endpoint
            .handle(now, self.addr, None, None, data, &mut io.tbuf)
        {
            Some(DatagramEvent::ConnectionEvent(h, ev)) if h == self.handle => {
                conn.handle_event(ev)
            }
            Some(DatagramEvent::Response(t)) => {
                let _ = self
                    .udp
                    .send(&io.tbuf[..t.size], t.segment_size, &mut io.gso);
            }
            _ => {}
        }
    }

    /// Passes the connection's news to its endpoint (new connection ids,
    /// its end) and back.
    pub fn endpoint_events(&mut self, conn: &mut Connection) {
        while let Some(ev) = conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(self.handle, ev) {
                conn.handle_event(back);
            }
        }
    }

    /// Sends all `conn` has to send, until the socket is full.
    pub fn transmit(&mut self, conn: &mut Connection, io: &mut Io, now: Instant) -> io::Result<()> {
        while self.blocked.is_none() {
            io.tbuf.clear();
            let max = if io.gso { GSO_SEGMENTS } else { 1 };
            let Some(t) = conn.poll_transmit(now, max, &mut io.tbuf) else {
                break;
            };
            let buf = &io.tbuf[..t.size];
            if self.udp.send(buf, t.segment_size, &mut io.gso)? == Sent::WouldBlock {
                self.blocked = Some((buf.to_vec(), t.segment_size));
            }
        }
        Ok(())
    }
}

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

/// Datagrams read in one turn of a connection before it sends. Draining
/// the socket first acknowledged a download about once per 1.5 MiB (the
/// server, its send window full, then waited while this client caught
/// up); quinn's own endpoint reads for at most 50 µs before its
/// connections send, and browsers acknowledge every few packets.
const RECV_PER_TURN: usize = 64;

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

    /// Sends what waited for room, then hands `conn` the datagrams
    /// waiting, up to [`RECV_PER_TURN`]; their bytes are added to
    /// `received`. The rest wait for the next turn, after this one's
    /// acknowledgements have gone out.
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
        let mut taken = 0;
        while taken < RECV_PER_TURN {
            let Some((n, stride)) = self.udp.recv(&mut io.rbuf)? else {
                break;
            };
            *received += n as u64;
            let mut at = 0;
            while at < n {
                let end = (at + stride).min(n);
                self.datagram(conn, io, now, at..end);
                at = end;
                taken += 1;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::Duration;

    /// A turn reads at most `RECV_PER_TURN` datagrams (give or take one
    /// GRO batch) and leaves the rest in the socket for the next turn, so
    /// that a download's acknowledgements go out while it arrives.
    #[test]
    fn a_turn_reads_a_bounded_number_of_datagrams() {
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let opts = crate::tls::TlsOptions {
            insecure: true,
            alpn: vec![b"h3".to_vec()],
            ..Default::default()
        };
        let roots = crate::tls::roots(&opts).unwrap();
        let tls = crate::tls::client_config(&opts, &roots);
        let client = crate::h3::client_config(tls, Duration::from_secs(5)).unwrap();
        let now = Instant::now();
        let at = (peer.local_addr().unwrap(), "localhost");
        let endpoint = Arc::new(EndpointConfig::default());
        let (mut wire, mut conn) =
            Wire::connect(now, endpoint, client, at, None, Some(4 << 20)).unwrap();
        let mut io = Io::default();
        // The Initial tells the peer where the client is.
        wire.transmit(&mut conn, &mut io, now).unwrap();
        let mut initial = [0u8; 2048];
        let (_, client_addr) = peer.recv_from(&mut initial).unwrap();

        const SENT: usize = 4 * RECV_PER_TURN;
        const SIZE: usize = 100;
        for i in 0..SENT {
            peer.send_to(&[i as u8; SIZE], client_addr).unwrap();
        }
        let mut received = 0;
        wire.receive(&mut conn, &mut io, now, &mut received)
            .unwrap();
        let first = received as usize / SIZE;
        assert!(
            (RECV_PER_TURN..2 * RECV_PER_TURN).contains(&first),
            "one turn read {first} of {SENT} datagrams"
        );
        wire.receive(&mut conn, &mut io, now, &mut received)
            .unwrap();
        assert!(received as usize / SIZE > first, "the next turn reads on");
    }
}

//! An active health check over HTTP/2, for upstreams that speak it: the
//! preface, SETTINGS and one `GET` on stream 1 of a connection of its own,
//! then frames are read until that stream's response head, whose
//! `:status` decides. Blocking: it runs on the health checker's thread.

use std::io::{Read, Write};

use bytes::BytesMut;
use ringside_http::h2::frame::{self, Head, HEADER_LEN};
use ringside_http::h2::hpack::{Decoder, Encoder};
use ringside_http::h2::PREFACE;

/// The most read before the response head is given up on.
const MAX_READ: usize = 256 * 1024;

/// The status of `GET path` over HTTP/2 on `c`, `None` when no valid
/// response head came.
pub fn status(c: &mut dyn ReadWrite, scheme: &[u8], authority: &str, path: &str) -> Option<u16> {
    let mut out = BytesMut::with_capacity(256);
    out.extend_from_slice(PREFACE);
    frame::put_settings(&mut out, &[(frame::setting::ENABLE_PUSH, 0)]);
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    let mut enc = Encoder::new();
    enc.field(b":method", b"GET", &mut out);
    enc.field(b":scheme", scheme, &mut out);
    enc.field(b":path", path.as_bytes(), &mut out);
    enc.field(b":authority", authority.as_bytes(), &mut out);
    enc.field(b"user-agent", b"ringside-health", &mut out);
    frame::frame_block(&mut out, start, 1, true, frame::MIN_FRAME_SIZE as usize);
    c.write_all(&out).ok()?;

    let mut buf = Vec::with_capacity(4096);
    let mut block = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while buf.len() >= HEADER_LEN {
            let head = Head::parse(&buf);
            let end = HEADER_LEN + head.len as usize;
            if buf.len() < end {
                break;
            }
            let payload = &buf[HEADER_LEN..end];
            match head.kind {
                frame::SETTINGS if !head.has(frame::ACK) => {
                    let mut ack = BytesMut::new();
                    frame::put_settings_ack(&mut ack);
                    c.write_all(&ack).ok()?;
                }
                frame::GOAWAY | frame::RST_STREAM if head.stream <= 1 => return None,
                frame::HEADERS | frame::CONTINUATION if head.stream == 1 => {
                    let range = if head.kind == frame::HEADERS {
                        frame::unpad(&head, payload).ok()?
                    } else {
                        0..payload.len()
                    };
                    let mut part = &payload[range];
                    if head.kind == frame::HEADERS && head.has(frame::PRIORITY_FLAG) {
                        part = part.get(5..)?;
                    }
                    block.extend_from_slice(part);
                    if head.has(frame::END_HEADERS) {
                        return decode_status(&block);
                    }
                }
                _ => {}
            }
            buf.drain(..end);
        }
        let n = c.read(&mut chunk).ok()?;
        if n == 0 || buf.len() > MAX_READ {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn decode_status(block: &[u8]) -> Option<u16> {
    let mut status = None;
    Decoder::new(4096)
        .decode(block, &mut |n, v| {
            if n == b":status" {
                status = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
            }
            true
        })
        .ok()?;
    // An interim head (1xx) is not the answer; a check sees it as none.
    status.filter(|s| *s >= 200)
}

pub trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

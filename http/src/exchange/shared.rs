//! A whole body the connection may keep as it is, without a copy: over
//! HTTP/3 a cached file's bytes go to the stream after the head, where
//! they had been copied into the response's buffer (perf: memcpy was
//! 11.7% of the server's time on 11 KiB files, and this copy one of its
//! two).

use bytes::Bytes;

use super::{Exchange, Framing, Out, Wire};
use crate::error::Error;
use crate::status::no_content;

impl Exchange<'_> {
    /// [`Exchange::send_shared`]'s bound: a smaller body is copied in
    /// beside its head, one piece of the stream's (cheaper than two).
    pub const SHARED_ABOVE: usize = 1024;

    /// [`Exchange::send`] with a body the connection may keep as it is:
    /// over HTTP/3 a success's body larger than [`Exchange::SHARED_ABOVE`] goes to
    /// the stream without a copy (a cached file's bytes); otherwise as
    /// `send`.
    pub fn send_shared(
        &mut self,
        status: u16,
        headers: &[(&str, &[u8])],
        body: &Bytes,
    ) -> Result<(), Error> {
        // An error may be answered by a page, and no body goes with a
        // 1xx, 204 or 304, nor to a HEAD: all those as `send` does.
        let as_is = matches!(self.wire, Wire::H3(_))
            && status < 400
            && !no_content(status)
            && !self.drop_body
            && body.len() > Self::SHARED_ABOVE;
        if !as_is {
            return self.send(status, headers, body);
        }
        self.check_first()?;
        if let Wire::H3(w) = &mut self.wire {
            w.body_to_come();
        }
        let framing = Framing::Length(body.len() as u64);
        self.write_head_dated(status, Self::pairs(headers), framing, None);
        self.out = Out::Done;
        self.body_bytes += body.len() as u64;
        if let Wire::H3(w) = &mut self.wire {
            w.buffer_shared(body.clone());
        }
        Ok(())
    }
}

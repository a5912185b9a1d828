//! The flood watch of one HTTP/2 connection: frames that make the server
//! work but serve nothing, counted as they arrive, before the codec parses
//! them.
//!
//! The h2 codec bounds what it keeps (streams, resets awaiting accept,
//! header lists, CONTINUATION), but it answers every PING and SETTINGS and
//! takes every PRIORITY, RST_STREAM, empty DATA or WINDOW_UPDATE, which
//! costs a system call's share and a wake-up each. Here each such frame
//! costs one unit of the connection's budget and each response served
//! gives one back; past the budget the connection is closed with GOAWAY
//! ENHANCE_YOUR_CALM (nginx and h2o count the same kinds). Rapid Reset,
//! streams opened and reset at once, spends one unit per stream and
//! serves nothing, so it runs out too.
//!
//! The watch reads only the 9-byte frame headers of the bytes going past,
//! and skips payloads by length (SETTINGS payloads aside): no copy.
//!
//! It also words the frame errors the codec reports loosely, so a client
//! hears what RFC 9113 says (the codec would answer PROTOCOL_ERROR to
//! each): a PING, PRIORITY, RST_STREAM, WINDOW_UPDATE or SETTINGS frame of
//! the wrong length is FRAME_SIZE_ERROR (§6.3–§6.9), an initial window
//! over 2^31-1 is FLOW_CONTROL_ERROR (§6.5.2), HEADERS or DATA on a
//! stream the client ended or reset lately is STREAM_CLOSED (§5.1), and a
//! CONTINUATION outside a header block, or any other frame inside one, is
//! PROTOCOL_ERROR (§6.10), as is a PUSH_PROMISE from a client (§8.4). The bytes
//! from the offending frame on never reach the codec: the connection ends
//! with a GOAWAY naming the error.

use std::cell::Cell;
use std::time::Instant;

use h2::Reason;
use ringside_runtime::link::Link;

const PREFACE_LEN: u32 = 24;

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const PRIORITY: u8 = 0x2;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const WINDOW_UPDATE: u8 = 0x8;
const PUSH_PROMISE: u8 = 0x5;
const GOAWAY: u8 = 0x7;
const CONTINUATION: u8 = 0x9;
const END_HEADERS: u8 = 0x4;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const INITIAL_WINDOW_SIZE: u16 = 0x4;
/// Streams the client ended lately, remembered to refuse frames on them.
const ENDED: usize = 8;

#[derive(Default)]
pub(crate) struct Watch {
    /// Bytes of the current frame's payload (or the preface) still to skip.
    skip: Cell<u32>,
    /// A frame header seen in part: its bytes and how many there are.
    head: Cell<[u8; 9]>,
    have: Cell<u8>,
    budget: Cell<u32>,
    spent: Cell<u32>,
    /// Whether anything was sent since the last WINDOW_UPDATE: one that
    /// follows data sent is the client doing its part.
    sent_since: Cell<bool>,
    /// Why the connection must end, found in bytes not yet handed on.
    verdict: Cell<Option<Reason>>,
    /// The reader handed on every byte before the offending frame.
    reached: Cell<bool>,
    /// The SETTINGS frame being skipped: its entry so far, and how much.
    setting: Cell<[u8; 6]>,
    setting_have: Cell<u8>,
    in_settings: Cell<bool>,
    /// Streams the client ended (END_STREAM or RST_STREAM), newest last.
    ended: Cell<[u32; ENDED]>,
    /// The stream whose header block awaits CONTINUATION frames.
    in_block: Cell<Option<u32>>,
    /// Requests opened (HEADERS frames that start a stream or its trailers).
    heads: Cell<u64>,
    resets: Cell<u64>,
    /// When the connection, with no stream open, is closed.
    idle_until: Cell<Option<Instant>>,
    /// A send is waiting on the client: its deadline holds the slot.
    writing: Cell<bool>,
    /// The codec was told once that reading stopped.
    woke: Cell<bool>,
}

impl Watch {
    pub(crate) fn new(budget: u32) -> Watch {
        let w = Watch::default();
        w.budget.set(budget);
        w.skip.set(PREFACE_LEN);
        w
    }

    /// Why the connection ends, once the reader stopped where it must.
    pub(crate) fn stopped(&self) -> Option<Reason> {
        self.verdict.get().filter(|_| self.reached.get())
    }

    /// Whether bytes were withheld from the codec and it read the rest.
    pub(crate) fn reach(&self) -> bool {
        let stop = self.verdict.get().is_some();
        if stop {
            self.reached.set(true);
        }
        stop
    }

    #[cfg(test)]
    fn tripped(&self) -> bool {
        self.verdict.get() == Some(Reason::ENHANCE_YOUR_CALM)
    }

    /// Whether the reader should wake its task once to see the trip.
    pub(crate) fn first_stop(&self) -> bool {
        !self.woke.replace(true)
    }

    pub(crate) fn set_idle_until(&self, at: Option<Instant>) {
        self.idle_until.set(at);
    }

    pub(crate) fn set_writing(&self, on: bool) {
        self.writing.set(on);
    }

    /// Sets the connection's one deadline in the engine's table: a send
    /// waiting on the client first, else the idle timeout, else none (the
    /// streams' own waits bound themselves).
    pub(crate) fn rearm(&self, link: &Link) {
        if self.writing.get() {
            return;
        }
        match self.idle_until.get() {
            Some(at) => link.watch(at, false),
            None => link.disarm(),
        }
    }

    /// RST_STREAM frames the client sent.
    pub(crate) fn resets(&self) -> u64 {
        self.resets.get()
    }

    /// A response was served whole: one unit back.
    pub(crate) fn served(&self) {
        self.spent.set(self.spent.get().saturating_sub(1));
    }

    /// Bytes went to the client.
    pub(crate) fn sent(&self) {
        self.sent_since.set(true);
    }

    /// Bytes the client sent, in order. Returns where in `bytes` the
    /// codec must stop reading: the start of the frame that ends the
    /// connection (`verdict` says why), or `None` to read them all.
    pub(crate) fn inbound(&self, bytes: &[u8]) -> Option<usize> {
        if self.verdict.get().is_some() {
            return Some(0);
        }
        let mut at = 0;
        while at < bytes.len() {
            let skip = self.skip.get();
            if skip > 0 {
                let n = (skip as usize).min(bytes.len() - at);
                if self.in_settings.get() && self.settings(&bytes[at..at + n]).is_some() {
                    // The frame began in an earlier read at the latest,
                    // and the codec acts on none of it before it is whole.
                    return Some(0);
                }
                self.skip.set(skip - n as u32);
                at += n;
                continue;
            }
            let mut head = self.head.get();
            let have = self.have.get() as usize;
            let n = (9 - have).min(bytes.len() - at);
            head[have..have + n].copy_from_slice(&bytes[at..at + n]);
            at += n;
            if have + n < 9 {
                self.head.set(head);
                self.have.set((have + n) as u8);
                return None;
            }
            self.have.set(0);
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]);
            let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
            if let Some(reason) = self.frame(head[3], head[4], len, stream) {
                self.verdict.set(Some(reason));
                return Some(at.saturating_sub(9));
            }
            self.in_settings.set(head[3] == SETTINGS);
            self.setting_have.set(0);
            self.skip.set(len);
        }
        None
    }

    /// A piece of a SETTINGS payload: its entries checked as they complete.
    fn settings(&self, bytes: &[u8]) -> Option<Reason> {
        let mut entry = self.setting.get();
        let mut have = self.setting_have.get() as usize;
        for &b in bytes {
            entry[have] = b;
            have += 1;
            if have == 6 {
                have = 0;
                let id = u16::from_be_bytes([entry[0], entry[1]]);
                let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
                if id == INITIAL_WINDOW_SIZE && value > 0x7fff_ffff {
                    self.verdict.set(Some(Reason::FLOW_CONTROL_ERROR));
                    return Some(Reason::FLOW_CONTROL_ERROR);
                }
            }
        }
        self.setting.set(entry);
        self.setting_have.set(have as u8);
        None
    }

    fn frame(&self, kind: u8, flags: u8, len: u32, stream: u32) -> Option<Reason> {
        let sized = match kind {
            PING => len == 8,
            PRIORITY => len == 5,
            RST_STREAM | WINDOW_UPDATE => len == 4,
            SETTINGS if flags & ACK != 0 => len == 0,
            SETTINGS => len.is_multiple_of(6),
            _ => true,
        };
        if !sized {
            return Some(Reason::FRAME_SIZE_ERROR);
        }
        if kind == PUSH_PROMISE {
            // Only a server promises (§8.4).
            return Some(Reason::PROTOCOL_ERROR);
        }
        // A header block is one unit (§4.3, §6.10): nothing may come
        // between its frames, and a CONTINUATION comes only within one.
        match (self.in_block.get(), kind) {
            (Some(id), CONTINUATION) if id == stream => {
                if flags & END_HEADERS != 0 {
                    self.in_block.set(None);
                }
                return None;
            }
            (Some(_), _) | (None, CONTINUATION) => return Some(Reason::PROTOCOL_ERROR),
            (None, HEADERS) if flags & END_HEADERS == 0 => self.in_block.set(Some(stream)),
            _ => {}
        }
        if matches!(kind, HEADERS | DATA) && stream != 0 && self.ended.get().contains(&stream) {
            return Some(Reason::STREAM_CLOSED);
        }
        let ends = match kind {
            HEADERS | DATA => flags & END_STREAM != 0,
            RST_STREAM => true,
            _ => false,
        };
        if ends && stream != 0 {
            let mut ended = self.ended.get();
            ended.rotate_left(1);
            ended[ENDED - 1] = stream;
            self.ended.set(ended);
        }
        let idle = match kind {
            DATA => len == 0 && flags & END_STREAM == 0,
            HEADERS => {
                self.heads.set(self.heads.get() + 1);
                false
            }
            RST_STREAM => {
                self.resets.set(self.resets.get() + 1);
                super::stats::add(|s| &s.resets_received, 1);
                true
            }
            GOAWAY => {
                super::stats::add(|s| &s.goaways_received, 1);
                false
            }
            PRIORITY | SETTINGS | PING => true,
            WINDOW_UPDATE => !self.sent_since.replace(false),
            _ => false,
        };
        if idle && self.spend() {
            return Some(Reason::ENHANCE_YOUR_CALM);
        }
        None
    }

    /// One unit spent; whether that was past the budget.
    fn spend(&self) -> bool {
        let spent = self.spent.get() + 1;
        self.spent.set(spent);
        spent > self.budget.get()
    }

    /// A stream served nothing (a malformed request, reset): it costs a
    /// unit as a flood frame does, so a stream of them runs out too.
    pub(crate) fn wasted(&self) {
        if self.spend() && self.verdict.get().is_none() {
            self.verdict.set(Some(Reason::ENHANCE_YOUR_CALM));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        frame_on(kind, flags, 1, payload)
    }

    fn frame_on(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut f = len.to_be_bytes()[1..].to_vec();
        f.push(kind);
        f.push(flags);
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    #[test]
    fn pings_past_the_budget_trip_it() {
        let w = Watch::new(10);
        w.inbound(PREFACE);
        for _ in 0..10 {
            w.inbound(&frame(PING, 0, &[0; 8]));
        }
        assert!(!w.tripped());
        w.inbound(&frame(PING, 0, &[0; 8]));
        assert!(w.tripped());
    }

    #[test]
    fn responses_served_give_units_back() {
        let w = Watch::new(2);
        w.inbound(PREFACE);
        for _ in 0..100 {
            w.inbound(&frame(RST_STREAM, 0, &[0; 4]));
            w.served();
        }
        assert!(!w.tripped());
        assert_eq!(w.resets(), 100);
    }

    #[test]
    fn frames_split_anywhere_are_counted_once() {
        let w = Watch::new(1000);
        let mut all = PREFACE.to_vec();
        for i in 0..50 {
            all.extend(frame_on(HEADERS, END_HEADERS, 1 + 2 * i, &[0x82; 20]));
            all.extend(frame_on(DATA, 0, 1 + 2 * i, &[]));
        }
        for chunk in all.chunks(7) {
            w.inbound(chunk);
        }
        assert_eq!(w.heads.get(), 50);
        assert_eq!(w.spent.get(), 50);
    }

    #[test]
    fn window_updates_after_data_sent_are_free() {
        let w = Watch::new(1);
        w.inbound(PREFACE);
        for _ in 0..10 {
            w.sent();
            w.inbound(&frame(WINDOW_UPDATE, 0, &[0, 0, 1, 0]));
        }
        assert!(!w.tripped());
        w.inbound(&frame(WINDOW_UPDATE, 0, &[0, 0, 1, 0]));
        w.inbound(&frame(WINDOW_UPDATE, 0, &[0, 0, 1, 0]));
        assert!(w.tripped());
    }

    #[test]
    fn a_data_frame_that_ends_a_body_is_not_idle() {
        let w = Watch::new(0);
        w.inbound(PREFACE);
        w.inbound(&frame(DATA, END_STREAM, &[]));
        w.inbound(&frame(DATA, 0, b"x"));
        assert!(!w.tripped());
    }

    /// Feeds `bytes` after the preface; returns the verdict and the cut.
    fn verdict(bytes: &[u8]) -> (Option<Reason>, Option<usize>) {
        let w = Watch::new(1000);
        w.inbound(PREFACE);
        let cut = w.inbound(bytes);
        (w.verdict.get(), cut)
    }

    #[test]
    fn frames_of_the_wrong_size_are_frame_size_errors() {
        for (kind, flags, len) in [
            (PING, 0, 7),
            (PRIORITY, 0, 4),
            (RST_STREAM, 0, 5),
            (WINDOW_UPDATE, 0, 3),
            (SETTINGS, ACK, 6),
            (SETTINGS, 0, 5),
        ] {
            let mut bytes = frame(PING, 0, &[0; 8]);
            let at = bytes.len();
            bytes.extend(frame_on(kind, flags, 0, &vec![0; len]));
            assert_eq!(
                verdict(&bytes),
                (Some(Reason::FRAME_SIZE_ERROR), Some(at)),
                "kind {kind} len {len}"
            );
        }
        assert_eq!(verdict(&frame_on(SETTINGS, 0, 0, &[0; 12])), (None, None));
    }

    #[test]
    fn an_initial_window_past_the_maximum_is_split_anywhere_and_found() {
        let mut entry = INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
        entry.extend_from_slice(&0x8000_0000u32.to_be_bytes());
        let bytes = frame_on(SETTINGS, 0, 0, &entry);
        let w = Watch::new(1000);
        w.inbound(PREFACE);
        let cuts: Vec<_> = bytes.chunks(4).map(|c| w.inbound(c)).collect();
        assert_eq!(w.verdict.get(), Some(Reason::FLOW_CONTROL_ERROR));
        assert_eq!(cuts.last(), Some(&Some(0)));
    }

    #[test]
    fn frames_on_a_stream_the_client_ended_are_stream_closed() {
        let ended = frame_on(HEADERS, END_HEADERS | END_STREAM, 1, &[0x82]);
        let mut bytes = ended.clone();
        bytes.extend(frame_on(DATA, END_STREAM, 1, b"late"));
        assert_eq!(
            verdict(&bytes),
            (Some(Reason::STREAM_CLOSED), Some(ended.len()))
        );
        let mut reset = frame_on(HEADERS, END_HEADERS, 3, &[0x82]);
        reset.extend(frame_on(RST_STREAM, 0, 3, &[0, 0, 0, 8]));
        reset.extend(frame_on(HEADERS, END_HEADERS, 3, &[0x82]));
        assert_eq!(verdict(&reset).0, Some(Reason::STREAM_CLOSED));
        // Trailers end a stream that is open: no error.
        let mut trailers = frame_on(HEADERS, END_HEADERS, 5, &[0x82]);
        trailers.extend(frame_on(DATA, 0, 5, b"body"));
        trailers.extend(frame_on(HEADERS, END_HEADERS | END_STREAM, 5, &[0x82]));
        assert_eq!(verdict(&trailers), (None, None));
    }

    #[test]
    fn a_header_block_is_one_unit() {
        let open = frame_on(HEADERS, 0, 1, &[0x82]);
        let mut cont = open.clone();
        cont.extend(frame_on(CONTINUATION, END_HEADERS, 1, &[0x84]));
        assert_eq!(verdict(&cont), (None, None));
        let mut between = open.clone();
        between.extend(frame_on(DATA, 0, 1, b"x"));
        assert_eq!(verdict(&between).0, Some(Reason::PROTOCOL_ERROR));
        let stray = frame_on(CONTINUATION, END_HEADERS, 1, &[0x84]);
        assert_eq!(verdict(&stray).0, Some(Reason::PROTOCOL_ERROR));
        let promise = frame_on(PUSH_PROMISE, END_HEADERS, 1, &[0, 0, 0, 2, 0x88]);
        assert_eq!(verdict(&promise).0, Some(Reason::PROTOCOL_ERROR));
    }
}

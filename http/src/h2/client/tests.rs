//! The client's side acting on what a server sends, frame by frame, on
//! the connection state alone (no socket): responses, trailers, windows,
//! settings, GOAWAY, and the stream and connection errors RFC 9113 names.

use bytes::{BufMut, BytesMut};

use super::recv::frames;
use super::state::{CState, Lost};
use super::ClientSettings;
use crate::h2::frame::{self, Head, Reason, HEADER_LEN};
use crate::h2::hpack::Encoder;

fn state() -> CState {
    let mut st = CState::new(ClientSettings {
        stream_window: 65_535,
        conn_window: 1 << 20,
        max_head: 16 * 1024,
    });
    st.out.clear();
    st
}

/// A header block of `fields`, framed as HEADERS on `stream`.
fn headers(enc: &mut Encoder, stream: u32, fields: &[(&str, &str)], end: bool) -> BytesMut {
    let mut b = BytesMut::new();
    b.put_slice(&[0; HEADER_LEN]);
    for (n, v) in fields {
        enc.field(n.as_bytes(), v.as_bytes(), &mut b);
    }
    frame::frame_block(&mut b, 0, stream, end, 16_384);
    b
}

fn data(stream: u32, len: usize, end: bool) -> BytesMut {
    let mut b = BytesMut::new();
    frame::put_data(&mut b, stream, &vec![b'x'; len], end);
    b
}

/// Frames written to the server since the last look, by kind and stream.
fn written(st: &mut CState) -> Vec<(u8, u32, Vec<u8>)> {
    let out = st.out.split();
    let mut at = 0;
    let mut all = Vec::new();
    while at + HEADER_LEN <= out.len() {
        let h = Head::parse(&out[at..]);
        let end = at + HEADER_LEN + h.len as usize;
        all.push((h.kind, h.stream, out[at + HEADER_LEN..end].to_vec()));
        at = end;
    }
    all
}

#[test]
fn a_response_its_body_and_its_trailers_reach_the_stream() {
    let mut st = state();
    let id = st.open();
    let mut enc = Encoder::new();
    let mut wire = headers(&mut enc, id, &[(":status", "200"), ("x-a", "1")], false);
    wire.extend_from_slice(&data(id, 10, false));
    wire.extend_from_slice(&headers(&mut enc, id, &[("grpc-status", "0")], true));
    assert_eq!(frames(&mut st, &wire), wire.len());
    let s = &st.streams[&id];
    let (status, fields) = s.head.as_ref().unwrap();
    assert_eq!(*status, 200);
    assert_eq!(fields.get("x-a"), Some(&b"1"[..]));
    assert!(s.more_heads.is_empty());
    assert_eq!(&s.data[..], &[b'x'; 10]);
    assert_eq!(
        s.trailers.as_ref().unwrap().get("grpc-status"),
        Some(&b"0"[..])
    );
    assert!(s.remote_ended && s.reset.is_none());
}

#[test]
fn a_frame_cut_in_two_waits_for_its_rest() {
    let mut st = state();
    let id = st.open();
    let wire = data(id, 100, true);
    let mut enc = Encoder::new();
    let head = headers(&mut enc, id, &[(":status", "204")], false);
    assert_eq!(frames(&mut st, &head), head.len());
    assert_eq!(frames(&mut st, &wire[..50]), 0);
    assert_eq!(frames(&mut st, &wire), wire.len());
    assert_eq!(st.streams[&id].data.len(), 100);
}

#[test]
fn goaway_refuses_the_streams_past_its_last() {
    let mut st = state();
    let (a, b, c) = (st.open(), st.open(), st.open());
    let mut g = BytesMut::new();
    frame::put_goaway(&mut g, b, Reason::NO_ERROR, b"");
    frames(&mut st, &g);
    assert_eq!(st.streams[&a].reset, None);
    assert_eq!(st.streams[&b].reset, None);
    assert_eq!(st.streams[&c].reset, Some(Reason::REFUSED_STREAM));
    assert!(!st.usable(), "no stream opens after a GOAWAY");
    assert_eq!(
        st.failed, None,
        "a GOAWAY without error lets the others finish"
    );

    let mut st = state();
    st.open();
    let mut g = BytesMut::new();
    frame::put_goaway(&mut g, 0, Reason::ENHANCE_YOUR_CALM, b"");
    frames(&mut st, &g);
    assert_eq!(st.failed, Some(Lost::GoAway(Reason::ENHANCE_YOUR_CALM)));
}

#[test]
fn data_past_the_window_resets_the_stream() {
    let mut st = state();
    let id = st.open();
    let mut enc = Encoder::new();
    frames(
        &mut st,
        &headers(&mut enc, id, &[(":status", "200")], false),
    );
    let mut wire = BytesMut::new();
    for _ in 0..4 {
        wire.extend_from_slice(&data(id, 16_384, false));
    }
    wire.extend_from_slice(&data(id, 10, false));
    frames(&mut st, &wire);
    assert_eq!(st.streams[&id].reset, Some(Reason::FLOW_CONTROL_ERROR));
    let out = written(&mut st);
    assert!(out.iter().any(|(k, s, p)| *k == frame::RST_STREAM
        && *s == id
        && p[..] == Reason::FLOW_CONTROL_ERROR.0.to_be_bytes()));
    assert_eq!(st.failed, None);
}

#[test]
fn bytes_taken_are_credited_back_by_half_windows() {
    let mut st = state();
    let id = st.open();
    let mut enc = Encoder::new();
    frames(
        &mut st,
        &headers(&mut enc, id, &[(":status", "200")], false),
    );
    frames(&mut st, &data(id, 16_384, false));
    frames(&mut st, &data(id, 16_384, false));
    st.stream_taken(id, 16_384);
    assert!(
        written(&mut st).is_empty(),
        "under half the window: no update yet"
    );
    st.stream_taken(id, 16_384);
    let out = written(&mut st);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].0, out[0].1, &out[0].2[..]),
        (frame::WINDOW_UPDATE, id, &32_768u32.to_be_bytes()[..])
    );
}

#[test]
fn malformed_responses_reset_their_stream_only() {
    let cases: [(&[(&str, &str)], bool); 5] = [
        (&[(":status", "200"), ("X-Upper", "1")], false),
        (&[(":status", "200"), ("connection", "close")], false),
        (&[("x-a", "1")], false),
        (&[(":status", "20")], false),
        (&[(":status", "100")], true),
    ];
    for (fields, end) in cases {
        let mut st = state();
        let id = st.open();
        let mut enc = Encoder::new();
        frames(&mut st, &headers(&mut enc, id, fields, end));
        let s = &st.streams[&id];
        assert_eq!(s.reset, Some(Reason::PROTOCOL_ERROR), "{fields:?}");
        assert!(s.malformed.is_some(), "{fields:?}");
        assert_eq!(st.failed, None, "{fields:?}");
    }
    // Trailers that do not end the stream.
    let mut st = state();
    let id = st.open();
    let mut enc = Encoder::new();
    frames(
        &mut st,
        &headers(&mut enc, id, &[(":status", "200")], false),
    );
    frames(&mut st, &headers(&mut enc, id, &[("x-t", "1")], false));
    assert_eq!(st.streams[&id].reset, Some(Reason::PROTOCOL_ERROR));
}

#[test]
fn connection_errors_end_it_with_goaway() {
    // A CONTINUATION for another stream than its HEADERS.
    let mut st = state();
    let a = st.open();
    let b = st.open();
    let mut enc = Encoder::new();
    let mut h = headers(&mut enc, a, &[(":status", "200")], false);
    h[4] &= !frame::END_HEADERS;
    frame::put_head(&mut h, 0, frame::CONTINUATION, frame::END_HEADERS, b);
    frames(&mut st, &h);
    assert_eq!(st.failed, Some(Lost::Protocol(Reason::PROTOCOL_ERROR)));
    assert!(written(&mut st).iter().any(|(k, _, _)| *k == frame::GOAWAY));

    // DATA on a stream never opened, a PUSH_PROMISE, a frame over 16 KiB.
    for wire in [
        data(7, 1, false),
        {
            let mut b = BytesMut::new();
            frame::put_head(&mut b, 4, frame::PUSH_PROMISE, 0, 1);
            b.put_u32(2);
            b
        },
        data(1, 16_385, false),
    ] {
        let mut st = state();
        st.open();
        frames(&mut st, &wire);
        assert!(
            matches!(st.failed, Some(Lost::Protocol(_))),
            "{:?}",
            st.failed
        );
    }
}

#[test]
fn settings_change_windows_and_limits_and_are_acknowledged() {
    let mut st = state();
    let id = st.open();
    let mut s = BytesMut::new();
    frame::put_settings(
        &mut s,
        &[
            (frame::setting::INITIAL_WINDOW_SIZE, 100_000),
            (frame::setting::MAX_CONCURRENT_STREAMS, 1),
        ],
    );
    frames(&mut st, &s);
    assert_eq!(st.streams[&id].send_window, 100_000);
    assert_eq!(st.peer_max_streams, 1);
    assert!(!st.has_slot(), "one stream open, one allowed");
    let out = written(&mut st);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, out[0].1), (frame::SETTINGS, 0));

    let mut ping = BytesMut::new();
    frame::put_ping(&mut ping, false, b"12345678");
    frames(&mut st, &ping);
    let out = written(&mut st);
    assert_eq!((out[0].0, &out[0].2[..]), (frame::PING, &b"12345678"[..]));
}

#[test]
fn a_cancelled_stream_is_reset_and_its_bytes_credited() {
    let mut st = state();
    let id = st.open();
    let mut enc = Encoder::new();
    frames(
        &mut st,
        &headers(&mut enc, id, &[(":status", "200")], false),
    );
    frames(&mut st, &data(id, 1000, false));
    written(&mut st);
    st.close_stream(id);
    let out = written(&mut st);
    assert!(out.iter().any(|(k, s, p)| *k == frame::RST_STREAM
        && *s == id
        && p[..] == Reason::CANCEL.0.to_be_bytes()));
    assert_eq!(st.conn_taken, 1000);
    // What still comes for it is credited to the connection.
    frames(&mut st, &data(id, 500, true));
    assert_eq!(st.conn_taken, 1500);
    assert!(st.streams.is_empty());
}

#[test]
fn a_quiet_connection_is_pinged_and_dropped_when_the_ping_goes_unanswered() {
    use std::time::{Duration, Instant};
    let (interval, send) = (Duration::from_secs(30), Duration::from_secs(60));
    let mut st = state();
    let t0 = st.heard;
    assert!(st.check(t0 + Duration::from_secs(10), interval, send));
    assert!(written(&mut st).is_empty(), "heard from lately: no PING");
    assert!(st.check(t0 + interval, interval, send));
    let out = written(&mut st);
    assert_eq!((out[0].0, out[0].1), (frame::PING, 0));
    // The ACK clears it; a later silence PINGs again.
    let mut ack = BytesMut::new();
    frame::put_ping(&mut ack, true, b"ringside");
    frames(&mut st, &ack);
    assert_eq!(st.ping_sent, None);
    let later = Instant::now() + interval;
    assert!(st.check(later, interval, send));
    assert_eq!(written(&mut st).len(), 1);
    // Unanswered for the interval: dead.
    assert!(!st.check(later + interval, interval, send));
    assert_eq!(st.failed, Some(Lost::Unresponsive));
}

use super::*;

/// Feeds `input` to a parser in pieces of `chunk` bytes, as a stream
/// would arrive, and lists what came out, DATA as its bytes.
fn run(input: &[u8], chunk: usize, max: u64) -> Result<Vec<(String, Vec<u8>)>, ErrorCode> {
    let mut p = FrameParser::new(max);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut fed = 0;
    loop {
        let step = p.next(&buf)?;
        match step.item {
            Item::NeedMore => {
                if fed == input.len() {
                    p.finish(&buf)?;
                    return Ok(out);
                }
                let n = chunk.min(input.len() - fed);
                buf.extend_from_slice(&input[fed..fed + n]);
                fed += n;
                continue;
            }
            Item::DataHeader { len } => out.push((format!("data {len}"), vec![])),
            Item::Data(r) => out.push(("chunk".into(), buf[r].to_vec())),
            Item::Frame { kind, payload } => out.push((format!("{kind:?}"), buf[payload].to_vec())),
            Item::Skipped => {}
        }
        buf.drain(..step.consumed);
    }
}

/// The DATA chunks joined, the other frames as they came.
fn joined(items: Vec<(String, Vec<u8>)>) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    for (k, v) in items {
        if k == "chunk" {
            out.last_mut().unwrap().1.extend_from_slice(&v);
        } else {
            out.push((k, v));
        }
    }
    out
}

fn sample() -> BytesMut {
    let mut b = BytesMut::new();
    put_frame(&mut b, FrameKind::Headers, b"\x00\x00\xd1");
    // A reserved frame type with a payload, and an unknown one.
    put_header(&mut b, 0x21 + 0x1f * 7, 5);
    b.put_slice(b"junk!");
    put_header(&mut b, 0x2a, 0);
    put_header(&mut b, DATA, 300);
    b.put_slice(&[7u8; 300]);
    put_header(&mut b, DATA, 0);
    put_frame(&mut b, FrameKind::Headers, b"\x00\x00\x5f\x00");
    b
}

#[test]
fn frames_in_any_pieces() {
    let b = sample();
    let want = vec![
        ("Headers".to_string(), b"\x00\x00\xd1".to_vec()),
        ("data 300".to_string(), vec![7u8; 300]),
        ("data 0".to_string(), vec![]),
        ("Headers".to_string(), b"\x00\x00\x5f\x00".to_vec()),
    ];
    for chunk in [1, 2, 3, 7, 64, 1000] {
        assert_eq!(joined(run(&b, chunk, 16).unwrap()), want, "chunk {chunk}");
    }
}

#[test]
fn data_is_not_copied_and_comes_as_it_arrives() {
    let mut b = BytesMut::new();
    put_header(&mut b, DATA, 10);
    b.put_slice(b"hello");
    let mut p = FrameParser::new(16);
    let s = p.next(&b).unwrap();
    assert_eq!(
        s,
        Step {
            consumed: 2,
            item: Item::DataHeader { len: 10 }
        }
    );
    let s = p.next(&b[2..]).unwrap();
    assert_eq!(
        s,
        Step {
            consumed: 5,
            item: Item::Data(0..5)
        }
    );
    assert!(!p.at_boundary());
    assert_eq!(p.next(&[]).unwrap().item, Item::NeedMore);
    assert_eq!(p.finish(&[]), Err(ErrorCode::FrameError));
    let s = p.next(b"worldHEAD").unwrap();
    assert_eq!(
        s,
        Step {
            consumed: 5,
            item: Item::Data(0..5)
        }
    );
    assert!(p.at_boundary());
}

#[test]
fn http2_frame_types_are_unexpected() {
    for ty in [0x02u8, 0x06, 0x08, 0x09] {
        assert_eq!(
            FrameParser::new(16).next(&[ty, 0]),
            Err(ErrorCode::FrameUnexpected)
        );
        // Known from the type alone.
        assert_eq!(
            FrameParser::new(16).next(&[ty]),
            Err(ErrorCode::FrameUnexpected)
        );
    }
}

#[test]
fn over_the_bound_is_excessive_load() {
    let mut b = BytesMut::new();
    put_header(&mut b, HEADERS, 17);
    // Refused from the header alone, before the payload is kept.
    assert_eq!(FrameParser::new(16).next(&b), Err(ErrorCode::ExcessiveLoad));
    let mut b = BytesMut::new();
    put_header(&mut b, SETTINGS, 1 << 40);
    assert_eq!(FrameParser::new(16).next(&b), Err(ErrorCode::ExcessiveLoad));
    // DATA and unknown frames are not held, so not bounded.
    let mut b = BytesMut::new();
    put_header(&mut b, DATA, 1 << 40);
    assert!(FrameParser::new(16).next(&b).is_ok());
    let mut b = BytesMut::new();
    put_header(&mut b, 0x21, 1 << 40);
    assert!(FrameParser::new(16).next(&b).is_ok());
}

#[test]
fn one_varint_frames() {
    for kind in [
        FrameKind::CancelPush,
        FrameKind::Goaway,
        FrameKind::MaxPushId,
    ] {
        for v in [0, 63, 64, 1 << 20, varint::MAX] {
            let mut b = BytesMut::new();
            put_varint_frame(&mut b, kind, v);
            let s = FrameParser::new(16).next(&b).unwrap();
            let Item::Frame { kind: k, payload } = s.item else {
                panic!()
            };
            assert_eq!(k, kind);
            assert_eq!(varint_payload(&b[payload]), Ok(v));
        }
        // Lengths that cannot hold exactly one varint.
        for len in [0u64, 9, 100] {
            let mut b = BytesMut::new();
            put_header(&mut b, kind.ty(), len);
            assert_eq!(FrameParser::new(1000).next(&b), Err(ErrorCode::FrameError));
        }
    }
    // A varint short of or past its payload.
    assert_eq!(varint_payload(&[0x40]), Err(ErrorCode::FrameError));
    assert_eq!(varint_payload(&[0x05, 0x00]), Err(ErrorCode::FrameError));
    assert_eq!(varint_payload(&[]), Err(ErrorCode::FrameError));
}

#[test]
fn push_promise_payload() {
    assert_eq!(
        push_promise(&[0x41, 0x00, 0, 0, 0xd1]),
        Ok((256, &[0u8, 0, 0xd1][..]))
    );
    assert_eq!(push_promise(&[0x41]), Err(ErrorCode::FrameError));
}

#[test]
fn stream_end_inside_a_frame_is_frame_error() {
    let b = sample();
    for cut in 0..b.len() {
        let r = run(&b[..cut], 5, 16);
        // A cut at a frame boundary is a shorter, valid stream.
        let whole = run(&b, 5, 16).unwrap();
        match r {
            Ok(items) => assert!(joined(items).len() <= joined(whole).len()),
            Err(e) => assert_eq!(e, ErrorCode::FrameError, "cut {cut}"),
        }
    }
    let mut b = BytesMut::new();
    put_frame(&mut b, FrameKind::Headers, b"abc");
    assert_eq!(run(&b[..4], 1, 16), Err(ErrorCode::FrameError));
    assert_eq!(run(&b[..1], 1, 16), Err(ErrorCode::FrameError));
    assert!(run(&b, 1, 16).is_ok());
}

#[test]
fn kinds_and_streams() {
    use StreamRole::*;
    assert!(FrameKind::Data.allowed_on(Request));
    assert!(FrameKind::Data.allowed_on(Push));
    assert!(!FrameKind::Data.allowed_on(Control));
    assert!(!FrameKind::Headers.allowed_on(Control));
    assert!(FrameKind::Settings.allowed_on(Control));
    assert!(!FrameKind::Settings.allowed_on(Request));
    assert!(!FrameKind::Goaway.allowed_on(Push));
    assert!(FrameKind::PushPromise.allowed_on(Request));
    assert!(!FrameKind::PushPromise.allowed_on(Push));
    assert!(FrameKind::MaxPushId.allowed_on(Control));
    for ty in [0x00, 0x01, 0x03, 0x04, 0x05, 0x07, 0x0d] {
        assert_eq!(FrameKind::of(ty).unwrap().unwrap().ty(), ty);
    }
    for ty in [0x0a, 0x0b, 0x0c, 0x0e, 0x21, 0x40, 1 << 40] {
        assert_eq!(FrameKind::of(ty), Ok(None));
    }
}

#[test]
fn a_headers_frame_may_exceed_the_section_bound_it_decodes_within() {
    // A byte Huffman codes in 23 bits (0x01; the longest take 30): a
    // section of one 1,000-byte value takes 2,875 bytes on the wire,
    // within a 1,100-byte section bound as §4.2.2 counts it.
    let value = vec![b'\x01'; 1_000];
    let max_section = 1_100;
    let mut huffed = BytesMut::new();
    crate::h2::hpack::huffman::encode(&value, &mut huffed);
    assert!(huffed.len() as u64 > 2 * max_section, "{}", huffed.len());
    let mut b = BytesMut::new();
    put_header(&mut b, HEADERS, huffed.len() as u64 + 8);
    assert_eq!(
        FrameParser::new(max_section).next(&b),
        Err(ErrorCode::ExcessiveLoad)
    );
    let step = FrameParser::new(headers_frame_bound(max_section))
        .next(&b)
        .expect("within the frame bound");
    assert_eq!(step.item, Item::NeedMore, "the payload is awaited");
}

//! The record layer's unit tests: parsing, limits and the writers.

use super::*;
use RecordError::*;

/// A raw record: header fields, then content and padding as given.
fn raw(version: u8, kind: u8, id: u16, content: &[u8], padding: u8) -> Vec<u8> {
    let mut v = vec![version, kind];
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(&(content.len() as u16).to_be_bytes());
    v.extend_from_slice(&[padding, 0]);
    v.extend_from_slice(content);
    v.extend_from_slice(&vec![0xAA; padding as usize]);
    v
}

fn end_body(app_status: u32, protocol_status: u8) -> Vec<u8> {
    let mut v = app_status.to_be_bytes().to_vec();
    v.extend_from_slice(&[protocol_status, 0, 0, 0]);
    v
}

fn concat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// Every record of a stream of `kind` written by `write_stream`:
/// (content, padding) pairs, checked as it goes.
fn records(buf: &[u8], kind: u8, id: u16) -> Vec<(Vec<u8>, u8)> {
    let mut out = Vec::new();
    let mut rest = buf;
    while !rest.is_empty() {
        let h = RecordHeader::from_prefix(rest).expect("a header");
        assert_eq!((h.version, h.kind, h.request_id), (VERSION, kind, id));
        assert_eq!(h.record_len() % 8, 0, "padded to 8");
        assert!(h.padding_len < 8, "minimal padding");
        let content = &rest[HEADER_LEN..HEADER_LEN + h.content_len as usize];
        let pad = &rest[HEADER_LEN + content.len()..h.record_len()];
        assert!(pad.iter().all(|&b| b == 0), "zero padding");
        out.push((content.to_vec(), h.padding_len));
        rest = &rest[h.record_len()..];
    }
    out
}

#[test]
fn write_stream_table() {
    // (content size, records, bytes written)
    #[rustfmt::skip]
    let cases: &[(usize, usize, usize)] = &[
        (0, 1, 8),
        (1, 1, 16),
        (7, 1, 16),
        (8, 1, 16),
        (9, 1, 24),
        (65535, 1, 8 + 65535 + 1),
        (65536, 2, 8 + 65535 + 1 + 16),
        (200000, 4, 3 * 65544 + 8 + 3395 + 5),
    ];
    for &(size, n, total) in cases {
        let input = data(size);
        let mut out = BytesMut::new();
        write_stream(&mut out, RecordType::Stdin, 3, &input);
        assert_eq!(out.len(), total, "size {size}");
        let recs = records(&out, RecordType::Stdin as u8, 3);
        assert_eq!(recs.len(), n, "size {size}");
        assert!(recs.iter().all(|(c, _)| c.len() <= MAX_CONTENT));
        let joined: Vec<u8> = recs.into_iter().flat_map(|(c, _)| c).collect();
        assert_eq!(joined, input, "size {size}");
    }
}

/// A mock application's answer: `stdout` as STDOUT records then the
/// empty one, END_REQUEST.
fn answer(id: u16, stdout: &[u8], app_status: u32, status: ProtocolStatus) -> BytesMut {
    let mut out = BytesMut::new();
    write_stream(&mut out, RecordType::Stdout, id, stdout);
    if !stdout.is_empty() {
        write_stream(&mut out, RecordType::Stdout, id, b"");
    }
    write_end_request(&mut out, id, app_status, status);
    out
}

/// STDOUT and the end, read with `parse_record`.
fn read_whole(buf: &[u8], id: u16) -> (Vec<u8>, Option<(u32, u8)>, usize) {
    let (mut stdout, mut pos) = (Vec::new(), 0);
    loop {
        match parse_record(&buf[pos..], id).expect("valid") {
            None => return (stdout, None, pos),
            Some((Parsed::Stdout(c), n)) => {
                stdout.extend_from_slice(c);
                pos += n;
            }
            Some((
                Parsed::EndRequest {
                    app_status,
                    protocol_status,
                },
                n,
            )) => return (stdout, Some((app_status, protocol_status)), pos + n),
            Some((other, _)) => panic!("{other:?}"),
        }
    }
}

#[test]
fn round_trip_table() {
    #[rustfmt::skip]
    let cases: &[(usize, u32, ProtocolStatus)] = &[
        (0, 0, ProtocolStatus::RequestComplete),
        (1, 0, ProtocolStatus::RequestComplete),
        (8, 255, ProtocolStatus::RequestComplete),
        (65535, 0, ProtocolStatus::Overloaded),
        (65536, u32::MAX, ProtocolStatus::RequestComplete),
        (200000, 1, ProtocolStatus::UnknownRole),
    ];
    for &(size, app, status) in cases {
        let input = data(size);
        let buf = answer(1, &input, app, status);
        let (stdout, end, used) = read_whole(&buf, 1);
        assert_eq!(stdout, input, "parse_record, size {size}");
        assert_eq!(end, Some((app, status as u8)), "size {size}");
        assert_eq!(used, buf.len(), "size {size}");
        let got = drive(&buf, 1, &[buf.len()], false);
        let want = vec![Ev::Out(input.clone()), Ev::End(app, status as u8, 0)];
        let want = if size == 0 { want[1..].to_vec() } else { want };
        assert_eq!(got, want, "StreamReader, size {size}");
    }
}

#[test]
fn write_header_then_own_content() {
    for len in [0usize, 1, 5, 8, 13, 65535] {
        let body = data(len);
        let mut out = BytesMut::new();
        let padding = write_header(&mut out, RecordType::Stdout, 9, len as u16);
        out.extend_from_slice(&body);
        write_padding(&mut out, padding);
        assert_eq!(out.len() % 8, 0, "len {len}");
        let (p, n) = parse_record(&out, 9).unwrap().unwrap();
        assert_eq!((p, n), (Parsed::Stdout(&body), out.len()), "len {len}");
    }
}

#[test]
fn begin_request_bytes() {
    #[rustfmt::skip]
    let cases: &[(u16, u16, bool, [u8; 16])] = &[
        (1, ROLE_RESPONDER, false, [1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
        (1, ROLE_RESPONDER, true, [1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]),
        (0x1234, 0x0203, true, [1, 1, 0x12, 0x34, 0, 8, 0, 0, 2, 3, 1, 0, 0, 0, 0, 0]),
    ];
    for (id, role, keep, want) in cases {
        let mut out = BytesMut::new();
        write_begin_request(&mut out, *id, *role, *keep);
        assert_eq!(&out[..], &want[..], "id {id} role {role} keep {keep}");
    }
}

type Outcome<'a> = Result<Option<(Parsed<'a>, usize)>, RecordError>;

#[test]
fn parse_record_table() {
    let end = |app: u32, st: u8| Parsed::EndRequest {
        app_status: app,
        protocol_status: st,
    };
    let gv = concat(&[raw(1, 10, 0, b"\x0e\x01FCGI_MAX_CONNS1", 0)]);
    let unk = raw(1, 11, 0, &[9, 0, 0, 0, 0, 0, 0, 0], 0);
    #[rustfmt::skip]
    let cases: Vec<(Vec<u8>, u16, Outcome)> = vec![
        // STDOUT / STDERR, padding of any size skipped
        (raw(1, 6, 1, b"hello", 3), 1, Ok(Some((Parsed::Stdout(b"hello"), 16)))),
        (raw(1, 6, 1, b"hello", 0), 1, Ok(Some((Parsed::Stdout(b"hello"), 13)))),
        (raw(1, 6, 1, b"hello", 255), 1, Ok(Some((Parsed::Stdout(b"hello"), 268)))),
        (raw(1, 6, 1, b"", 0), 1, Ok(Some((Parsed::Stdout(b""), 8)))),
        (raw(1, 7, 1, b"oops", 4), 1, Ok(Some((Parsed::Stderr(b"oops"), 16)))),
        (raw(1, 6, 0xFFFF, b"x", 7), 0xFFFF, Ok(Some((Parsed::Stdout(b"x"), 16)))),
        // incomplete: header, content, padding
        (vec![], 1, Ok(None)),
        (raw(1, 6, 1, b"hello", 3)[..7].to_vec(), 1, Ok(None)),
        (raw(1, 6, 1, b"hello", 3)[..12].to_vec(), 1, Ok(None)),
        (raw(1, 6, 1, b"hello", 3)[..15].to_vec(), 1, Ok(None)),
        // END_REQUEST, every protocol status, and one unknown
        (raw(1, 3, 1, &end_body(0, 0), 0), 1, Ok(Some((end(0, 0), 16)))),
        (raw(1, 3, 1, &end_body(1, 1), 0), 1, Ok(Some((end(1, 1), 16)))),
        (raw(1, 3, 1, &end_body(2, 2), 0), 1, Ok(Some((end(2, 2), 16)))),
        (raw(1, 3, 1, &end_body(0x01020304, 3), 8), 1, Ok(Some((end(0x01020304, 3), 24)))),
        (raw(1, 3, 1, &end_body(0, 9), 0), 1, Ok(Some((end(0, 9), 16)))),
        (raw(1, 3, 1, &end_body(0, 0)[..7], 1), 1, Err(BadEndRequest)),
        (raw(1, 3, 1, &[0; 9], 7), 1, Err(BadEndRequest)),
        (raw(1, 3, 1, b"", 0), 1, Err(BadEndRequest)),
        // management records
        (gv.clone(), 1, Ok(Some((Parsed::GetValuesResult(b"\x0e\x01FCGI_MAX_CONNS1"), gv.len())))),
        (unk.clone(), 1, Ok(Some((Parsed::Other(9), 16)))),
        (raw(1, 11, 0, &[9], 7), 1, Err(BadUnknownType)),
        (raw(1, 10, 1, b"", 0), 1, Err(WrongRequestId(1))),
        // bad version, checked before the content arrives
        (raw(0, 6, 1, b"x", 7), 1, Err(BadVersion(0))),
        (raw(2, 6, 1, b"x", 7)[..8].to_vec(), 1, Err(BadVersion(2))),
        // wrong request id, also 0 for a stream record
        (raw(1, 6, 2, b"x", 7), 1, Err(WrongRequestId(2))),
        (raw(1, 6, 0, b"x", 7), 1, Err(WrongRequestId(0))),
        (raw(1, 3, 7, &end_body(0, 0), 0), 1, Err(WrongRequestId(7))),
        (raw(1, 6, 0, b"x", 7), 0, Err(WrongRequestId(0))),
        // what only a web server sends, and types beyond the spec
        (raw(1, 1, 1, &[0; 8], 0), 1, Err(UnexpectedType(1))),
        (raw(1, 2, 1, b"", 0), 1, Err(UnexpectedType(2))),
        (raw(1, 4, 1, b"", 0), 1, Err(UnexpectedType(4))),
        (raw(1, 5, 1, b"", 0), 1, Err(UnexpectedType(5))),
        (raw(1, 8, 1, b"", 0), 1, Err(UnexpectedType(8))),
        (raw(1, 9, 0, b"", 0), 1, Err(UnexpectedType(9))),
        (raw(1, 0, 1, b"", 0), 1, Err(UnexpectedType(0))),
        (raw(1, 12, 1, b"", 0), 1, Err(UnexpectedType(12))),
        (raw(1, 255, 0, b"", 0), 1, Err(UnexpectedType(255))),
    ];
    for (i, (input, id, want)) in cases.iter().enumerate() {
        assert_eq!(parse_record(input, *id), *want, "case {i}: {input:?}");
    }
}

#[test]
fn parse_record_leaves_following_bytes() {
    let buf = concat(&[raw(1, 6, 1, b"ab", 6), raw(1, 7, 1, b"c", 0)]);
    assert_eq!(parse_record(&buf, 1), Ok(Some((Parsed::Stdout(b"ab"), 16))));
    assert_eq!(
        parse_record(&buf[16..], 1),
        Ok(Some((Parsed::Stderr(b"c"), 9)))
    );
}

/// What a caller of `StreamReader` sees, with adjacent pieces of one
/// stream joined (how they are cut depends on how the bytes arrive).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    Out(Vec<u8>),
    Err(Vec<u8>),
    /// app_status, protocol_status, bytes left over after END_REQUEST
    End(u32, u8, usize),
    Error(RecordError),
}

fn push(evs: &mut Vec<Ev>, stderr: bool, bytes: &[u8]) {
    match (evs.last_mut(), stderr) {
        (Some(Ev::Out(v)), false) | (Some(Ev::Err(v)), true) => v.extend_from_slice(bytes),
        _ if stderr => evs.push(Ev::Err(bytes.to_vec())),
        _ => evs.push(Ev::Out(bytes.to_vec())),
    }
}

/// Feeds `input` to a reader in pieces ending at `cuts` (the last must
/// be `input.len()`), the way a connection would: appending each read
/// to its buffer and stepping until `NeedMore`. Consumed bytes are
/// dropped at `NeedMore`, or with `eager` after every step.
fn drive(input: &[u8], id: u16, cuts: &[usize], eager: bool) -> Vec<Ev> {
    let mut reader = StreamReader::new(id);
    let (mut evs, mut buf, mut from) = (Vec::new(), Vec::new(), 0);
    for &cut in cuts {
        buf.extend_from_slice(&input[from..cut]);
        from = cut;
        loop {
            let step = match reader.next(&buf) {
                Ok(s) => s,
                Err(e) => {
                    evs.push(Ev::Error(e));
                    return evs;
                }
            };
            match step {
                Step::Stdout(r) | Step::Stderr(r) if r.is_empty() => panic!("empty range"),
                Step::Stdout(r) => push(&mut evs, false, &buf[r]),
                Step::Stderr(r) => push(&mut evs, true, &buf[r]),
                Step::NeedMore => {
                    assert_eq!(reader.take_consumed(), buf.len(), "NeedMore consumes all");
                    buf.clear();
                    break;
                }
                Step::End {
                    app_status,
                    protocol_status,
                } => {
                    buf.drain(..reader.take_consumed());
                    // Later calls answer End again and consume nothing.
                    assert_eq!(reader.next(&buf), Ok(step));
                    assert_eq!(reader.take_consumed(), 0);
                    let left = buf.len() + input.len() - cut;
                    evs.push(Ev::End(app_status, protocol_status, left));
                    return evs;
                }
            }
            if eager {
                buf.drain(..reader.take_consumed());
            }
        }
    }
    evs
}

#[test]
fn stream_reader_table() {
    use Ev::*;
    let out = |s: &[u8]| Out(s.to_vec());
    let err = |s: &[u8]| Err(s.to_vec());
    let big = data(70000);
    #[rustfmt::skip]
    let cases: Vec<(Vec<u8>, Vec<Ev>)> = vec![
        (concat(&[raw(1, 6, 1, b"hello", 3), raw(1, 6, 1, b"", 0), raw(1, 3, 1, &end_body(0, 0), 0)]),
            vec![out(b"hello"), End(0, 0, 0)]),
        // padding of any length, STDERR between STDOUT, empty records skipped
        (concat(&[raw(1, 6, 1, b"ab", 255), raw(1, 7, 1, b"warn", 1), raw(1, 7, 1, b"", 5),
                  raw(1, 6, 1, b"cd", 0), raw(1, 6, 1, b"", 0), raw(1, 3, 1, &end_body(7, 0), 8)]),
            vec![out(b"ab"), err(b"warn"), out(b"cd"), End(7, 0, 0)]),
        // END_REQUEST alone, other statuses; bytes after it are left
        (raw(1, 3, 1, &end_body(0, 1), 0), vec![End(0, 1, 0)]),
        (raw(1, 3, 1, &end_body(0, 2), 0), vec![End(0, 2, 0)]),
        (concat(&[raw(1, 3, 1, &end_body(255, 3), 2), raw(1, 6, 1, b"late", 4)]), vec![End(255, 3, 16)]),
        // a full-size record
        (concat(&[raw(1, 6, 1, &big[..65535], 1), raw(1, 6, 1, &big[65535..], 3), raw(1, 3, 1, &end_body(0, 0), 0)]),
            vec![Out(big.clone()), End(0, 0, 0)]),
        // no end yet
        (raw(1, 6, 1, b"part", 4), vec![out(b"part")]),
        (raw(1, 3, 1, &end_body(0, 0), 4)[..18].to_vec(), vec![]),
        // errors, after what came before them
        (raw(0, 6, 1, b"x", 7), vec![Error(BadVersion(0))]),
        (concat(&[raw(1, 6, 1, b"ok", 6), raw(3, 6, 1, b"x", 7)]), vec![out(b"ok"), Error(BadVersion(3))]),
        (raw(1, 6, 2, b"x", 7), vec![Error(WrongRequestId(2))]),
        (raw(1, 7, 0, b"x", 7), vec![Error(WrongRequestId(0))]),
        (raw(1, 3, 9, &end_body(0, 0), 0), vec![Error(WrongRequestId(9))]),
        (raw(1, 3, 1, &end_body(0, 0)[..4], 4), vec![Error(BadEndRequest)]),
        (raw(1, 10, 0, b"", 0), vec![Error(UnexpectedType(10))]),
        (raw(1, 11, 0, &[0; 8], 0), vec![Error(UnexpectedType(11))]),
        (raw(1, 1, 1, &[0; 8], 0), vec![Error(UnexpectedType(1))]),
        (raw(1, 5, 1, b"", 0), vec![Error(UnexpectedType(5))]),
    ];
    for (i, (input, want)) in cases.iter().enumerate() {
        let n = input.len();
        let bytewise: Vec<usize> = (1..=n).collect();
        for eager in [false, true] {
            let at = format!("case {i}, eager {eager}");
            assert_eq!(drive(input, 1, &[n], eager), *want, "{at}: whole");
            assert_eq!(
                drive(input, 1, &bytewise, eager),
                *want,
                "{at}: one byte at a time"
            );
            // Two reads, split at every byte boundary (cheap cases only).
            if n < 2048 {
                for k in 0..=n {
                    assert_eq!(drive(input, 1, &[k, n], eager), *want, "{at}: split at {k}");
                }
            }
        }
    }
}

#[test]
fn stream_reader_hands_back_partial_content() {
    // A 64 KiB record is handed back as it arrives, not when complete.
    let body = data(65535);
    let rec = raw(1, 6, 1, &body, 1);
    let mut r = StreamReader::new(1);
    let mut buf = rec[..5].to_vec();
    assert_eq!(r.next(&buf), Ok(Step::NeedMore));
    assert_eq!(r.take_consumed(), 5);
    buf.clear();
    buf.extend_from_slice(&rec[5..8]);
    assert_eq!(r.next(&buf), Ok(Step::NeedMore));
    assert_eq!(r.take_consumed(), 3);
    buf.clear();
    buf.extend_from_slice(&rec[8..1008]);
    assert_eq!(r.next(&buf), Ok(Step::Stdout(0..1000)));
    // Appended without taking: ranges go on where the last one ended.
    buf.extend_from_slice(&rec[1008..1010]);
    assert_eq!(r.next(&buf), Ok(Step::Stdout(1000..1002)));
    assert_eq!(r.next(&buf), Ok(Step::NeedMore));
    assert_eq!(r.take_consumed(), 1002);
    buf.clear();
    // The rest, its padding and a whole record in one read.
    buf.extend_from_slice(&rec[1010..]);
    buf.extend_from_slice(&raw(1, 7, 1, b"e", 7));
    let rest = rec.len() - 1010 - 1;
    assert_eq!(r.next(&buf), Ok(Step::Stdout(0..rest)));
    assert_eq!(r.next(&buf), Ok(Step::Stderr(rest + 9..rest + 10)));
    assert_eq!(r.next(&buf), Ok(Step::NeedMore));
    assert_eq!(r.take_consumed(), buf.len());
}

#[test]
fn name_value_lengths_table() {
    // (name len, value len, encoded prefix)
    #[rustfmt::skip]
    let cases: &[(usize, usize, &[u8])] = &[
        (0, 0, &[0, 0]),
        (1, 127, &[1, 127]),
        (127, 128, &[127, 0x80, 0, 0, 128]),
        (128, 1, &[0x80, 0, 0, 128, 1]),
        (300, 70000, &[0x80, 0, 1, 44, 0x80, 1, 0x11, 0x70]),
    ];
    for &(nl, vl, prefix) in cases {
        let (name, value) = (vec![b'N'; nl], vec![b'v'; vl]);
        let mut out = BytesMut::new();
        write_name_value(&mut out, &name, &value);
        assert_eq!(&out[..prefix.len()], prefix, "{nl}/{vl}");
        assert_eq!(out.len(), prefix.len() + nl + vl, "{nl}/{vl}");
        let pairs: Vec<_> = name_values(&out).collect();
        assert_eq!(pairs, vec![Ok((&name[..], &value[..]))], "{nl}/{vl}");
    }
}

#[test]
fn name_values_table() {
    type Pairs<'a> = Vec<Result<(&'a [u8], &'a [u8]), RecordError>>;
    #[rustfmt::skip]
    let cases: &[(&[u8], Pairs)] = &[
        (b"", vec![]),
        (b"\x01\x02abc", vec![Ok((b"a", b"bc"))]),
        (b"\x01\x00a\x02\x01bcd", vec![Ok((b"a", b"")), Ok((b"bc", b"d"))]),
        // a 4-byte length for a short string is still a length
        (b"\x80\x00\x00\x01\x00a", vec![Ok((b"a", b""))]),
        // truncated: lengths, name, value; nothing after an error
        (b"\x01", vec![Err(BadNameValue)]),
        (b"\x80\x00\x00", vec![Err(BadNameValue)]),
        (b"\x01\x80\x00", vec![Err(BadNameValue)]),
        (b"\x05\x00abc", vec![Err(BadNameValue)]),
        (b"\x01\x05abc", vec![Err(BadNameValue)]),
        (b"\x01\x01ab\x01\x09x", vec![Ok((b"a", b"b")), Err(BadNameValue)]),
        (b"\xff\xff\xff\xff\x00", vec![Err(BadNameValue)]),
    ];
    for (input, want) in cases {
        let got: Pairs = name_values(input).collect();
        assert_eq!(got, *want, "{input:?}");
    }
}

#[test]
fn get_values_round_trip() {
    let names = ["FCGI_MAX_CONNS", "FCGI_MAX_REQS", "FCGI_MPXS_CONNS"];
    let mut out = BytesMut::new();
    write_get_values(&mut out, &names);
    let h = RecordHeader::from_prefix(&out).unwrap();
    assert_eq!((h.version, h.kind, h.request_id), (1, 9, 0));
    assert_eq!(out.len(), h.record_len());
    assert_eq!(out.len() % 8, 0);
    let content = &out[8..8 + h.content_len as usize];
    let got: Vec<_> = name_values(content).map(Result::unwrap).collect();
    let want: Vec<(&[u8], &[u8])> = names.iter().map(|n| (n.as_bytes(), &b""[..])).collect();
    assert_eq!(got, want);
}

#[test]
fn types_and_statuses_from_u8() {
    for b in 0..=255u8 {
        assert_eq!(
            RecordType::from_u8(b).map(|t| t as u8),
            (1..=11).contains(&b).then_some(b)
        );
        assert_eq!(
            ProtocolStatus::from_u8(b).map(|s| s as u8),
            (b <= 3).then_some(b)
        );
    }
    assert_eq!(
        ProtocolStatus::from_u8(PROTOCOL_REQUEST_COMPLETE),
        Some(ProtocolStatus::RequestComplete)
    );
}

#[test]
fn errors_say_what() {
    assert_eq!(
        WrongRequestId(2).to_string(),
        "FastCGI record for request id 2, not this request"
    );
    assert_eq!(
        BadVersion(9).to_string(),
        "FastCGI record of version 9, not 1"
    );
}

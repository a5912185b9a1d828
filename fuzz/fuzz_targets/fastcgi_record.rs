//! The FastCGI record readers (`ringside::fastcgi::record`): `parse_record`,
//! `StreamReader` and `name_values`.
//!
//! Input layout: byte 0 seeds the split points, byte 1 is the request id the
//! reader waits for (0 too: then only management records are valid), the
//! rest is what the application sent.
//!
//! Checked:
//! - `parse_record`: a record it returns is exactly header, content and
//!   padding, and lies within the input; no shorter prefix of it is a
//!   record; a header it refuses is refused as soon as its 8 bytes are there;
//! - `StreamReader`: ranges are non-empty and lie within the buffer; fed in
//!   arbitrary pieces, dropping consumed bytes at every step or only at
//!   `NeedMore`, it hands back the same STDOUT and STDERR bytes and ends
//!   the same way (END_REQUEST with the same statuses and the same bytes left
//!   over, the same error, or still waiting) as when fed everything at once;
//!   after the end it keeps answering `End` and consumes nothing;
//! - both readers agree: the records `parse_record` reads one by one give
//!   the stream reader's STDOUT, STDERR and end; a management record, which
//!   the stream reader does not expect, is an error there;
//! - `name_values`: the pairs are consecutive pieces of the input; written
//!   again with the shortest lengths and read back, they are the same pairs,
//!   in no more bytes.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use ringside::fastcgi::record::{
    name_values, parse_record, write_name_value, Parsed, RecordError, RecordHeader, Step,
    StreamReader, HEADER_LEN,
};

/// What a caller of `StreamReader` sees, adjacent pieces of one stream
/// joined (how they are cut depends on how the bytes arrive).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    Out(Vec<u8>),
    Err(Vec<u8>),
    /// app_status, protocol_status, bytes left over after END_REQUEST.
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

fuzz_target!(|data: &[u8]| {
    let [seed, id, input @ ..] = data else {
        return;
    };
    let id = u16::from(*id);
    let whole = drive(input, id, &[input.len()], false);
    let mut x = u64::from(*seed) | 1 << 40;
    let mut cuts = Vec::new();
    let mut at = 0;
    while at < input.len() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        at = (at + 1 + (x >> 8) as usize % if x & 3 == 0 { 300 } else { 9 }).min(input.len());
        cuts.push(at);
    }
    for eager in [false, true] {
        assert_eq!(
            drive(input, id, &cuts, eager),
            whole,
            "split, eager {eager}"
        );
    }
    if input.len() <= 512 {
        let bytewise: Vec<usize> = (1..=input.len()).collect();
        assert_eq!(drive(input, id, &bytewise, true), whole, "byte by byte");
    }
    check_records(input, id, &whole);
    check_name_values(input);
});

/// Feeds `input` to a reader in pieces ending at `cuts` (the last is
/// `input.len()`), as a connection would: each read appended to its buffer,
/// stepping until `NeedMore`. Consumed bytes are dropped at `NeedMore`, or
/// with `eager` after every step.
fn drive(input: &[u8], id: u16, cuts: &[usize], eager: bool) -> Vec<Ev> {
    let mut reader = StreamReader::new(id);
    let (mut evs, mut buf, mut from) = (Vec::new(), Vec::new(), 0);
    for &cut in cuts {
        buf.extend_from_slice(&input[from..cut]);
        from = cut;
        // Bytes of `buf` consumed and not yet taken.
        let mut taken = 0;
        loop {
            let step = match reader.next(&buf) {
                Ok(s) => s,
                Err(e) => {
                    evs.push(Ev::Error(e));
                    return evs;
                }
            };
            match step {
                Step::Stdout(ref r) | Step::Stderr(ref r) => {
                    assert!(!r.is_empty(), "empty range");
                    assert!(
                        r.start >= taken && r.end <= buf.len(),
                        "{r:?} in {}",
                        buf.len()
                    );
                    taken = r.end;
                    push(&mut evs, matches!(step, Step::Stderr(_)), &buf[r.clone()]);
                }
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
                    assert_eq!(reader.next(&buf), Ok(step), "End again");
                    assert_eq!(reader.take_consumed(), 0);
                    let left = buf.len() + input.len() - cut;
                    evs.push(Ev::End(app_status, protocol_status, left));
                    return evs;
                }
            }
            if eager {
                buf.drain(..reader.take_consumed());
                taken = 0;
            }
        }
    }
    evs
}

/// Reads `input` record by record with `parse_record` and compares with
/// what the stream reader made of it.
fn check_records(input: &[u8], id: u16, stream: &[Ev]) {
    let mut evs = Vec::new();
    let mut pos = 0;
    // Whether the stream reader's result must be an error (of any kind).
    let mut must_fail = false;
    loop {
        let rest = &input[pos..];
        match parse_record(rest, id) {
            Ok(Some((parsed, n))) => {
                let h = RecordHeader::from_prefix(rest).expect("a header");
                assert_eq!(n, h.record_len());
                assert!(n >= HEADER_LEN && n <= rest.len());
                assert_eq!(parse_record(&rest[..n - 1], id), Ok(None));
                assert_eq!(parse_record(&rest[..HEADER_LEN - 1], id), Ok(None));
                let content = &rest[HEADER_LEN..HEADER_LEN + h.content_len as usize];
                pos += n;
                match parsed {
                    Parsed::Stdout(c) => {
                        assert_eq!(c, content);
                        if !c.is_empty() {
                            push(&mut evs, false, c);
                        }
                    }
                    Parsed::Stderr(c) => {
                        assert_eq!(c, content);
                        if !c.is_empty() {
                            push(&mut evs, true, c);
                        }
                    }
                    Parsed::EndRequest {
                        app_status,
                        protocol_status,
                    } => {
                        assert_eq!(h.content_len, 8);
                        evs.push(Ev::End(app_status, protocol_status, input.len() - pos));
                        break;
                    }
                    Parsed::GetValuesResult(c) => {
                        assert_eq!(c, content);
                        check_name_values(c);
                        must_fail = true;
                        break;
                    }
                    Parsed::Other(t) => {
                        assert_eq!((h.content_len, t), (8, content[0]));
                        must_fail = true;
                        break;
                    }
                }
            }
            Ok(None) => {
                if rest.len() >= HEADER_LEN {
                    // The header was accepted: so it is by the stream reader,
                    // unless it is a management record's.
                    let h = RecordHeader::from_prefix(rest).unwrap();
                    must_fail = matches!(h.kind, 10 | 11);
                }
                break;
            }
            Err(e) => {
                assert!(
                    rest.len() >= HEADER_LEN,
                    "refused {e:?} before a whole header"
                );
                // Refused as soon as its header is there.
                assert_eq!(parse_record(&rest[..HEADER_LEN], id), Err(e));
                must_fail = true;
                if !matches!(rest[1], 10 | 11) {
                    // Not a management type: the same check in both.
                    evs.push(Ev::Error(e));
                }
                break;
            }
        }
    }
    if must_fail {
        let Some(Ev::Error(e)) = stream.last() else {
            panic!(
                "parse_record refused or saw a management record, stream reader gave {stream:?}"
            );
        };
        if let Some(Ev::Error(want)) = evs.last() {
            assert_eq!(e, want);
        }
        // Everything before the error agrees.
        let before = &stream[..stream.len() - 1];
        let mine = match evs.last() {
            Some(Ev::Error(_)) => &evs[..evs.len() - 1],
            _ => &evs[..],
        };
        assert_eq!(before, mine, "before the error");
    } else if matches!(evs.last(), Some(Ev::End(..))) {
        assert_eq!(stream, &evs[..], "complete answer");
    } else {
        // Incomplete: the stream reader hands back partial content too, so
        // what whole records hold is a prefix of what it gave.
        assert!(
            !matches!(stream.last(), Some(Ev::End(..)) | Some(Ev::Error(_))),
            "{stream:?}"
        );
        let joined = |evs: &[Ev], stderr: bool| -> Vec<u8> {
            evs.iter()
                .flat_map(|e| match (e, stderr) {
                    (Ev::Out(v), false) | (Ev::Err(v), true) => v.clone(),
                    _ => Vec::new(),
                })
                .collect()
        };
        for stderr in [false, true] {
            assert!(joined(stream, stderr).starts_with(&joined(&evs, stderr)));
        }
    }
}

fn check_name_values(content: &[u8]) {
    let mut pairs = Vec::new();
    let mut end = 0;
    let mut failed = false;
    for item in name_values(content) {
        assert!(!failed, "a pair after an error");
        match item {
            Ok((name, value)) => {
                let n = name.as_ptr() as usize - content.as_ptr() as usize;
                let v = value.as_ptr() as usize - content.as_ptr() as usize;
                // Each pair: two lengths of 1 or 4 bytes, the name, the value.
                assert!(
                    matches!(n.checked_sub(end), Some(2 | 5 | 8)),
                    "gap before a pair"
                );
                assert!(n + name.len() == v && v + value.len() <= content.len());
                end = v + value.len();
                pairs.push((name, value));
            }
            Err(e) => {
                assert_eq!(e, RecordError::BadNameValue);
                failed = true;
            }
        }
    }
    if !failed {
        assert_eq!(end, content.len(), "pairs end where the content does");
    }
    let mut out = BytesMut::new();
    for (name, value) in &pairs {
        write_name_value(&mut out, name, value);
    }
    assert!(out.len() <= end, "shortest lengths take more room");
    let back: Vec<_> = name_values(&out)
        .map(|p| p.expect("written pairs read back"))
        .collect();
    assert_eq!(back, pairs);
}

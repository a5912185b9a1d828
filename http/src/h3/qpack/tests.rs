use bytes::BytesMut;

use super::static_table::STATIC;
use super::*;
use crate::h3::error::ErrorCode;

type Fields = Vec<(Vec<u8>, Vec<u8>, bool)>;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn decode_with(max: u64, src: &[u8]) -> Result<Fields, DecodeError> {
    let mut out = Vec::new();
    Decoder::new(max).decode(src, &mut |n: &[u8], v: &[u8], ni: bool| {
        out.push((n.to_vec(), v.to_vec(), ni))
    })?;
    Ok(out)
}

fn decode(src: &[u8]) -> Result<Fields, DecodeError> {
    decode_with(1 << 20, src)
}

fn encode(fields: &[(&[u8], &[u8], bool)]) -> BytesMut {
    let e = Encoder::new();
    let mut b = BytesMut::new();
    e.begin_section(&mut b);
    for &(n, v, ni) in fields {
        e.field(n, v, ni, &mut b);
    }
    b
}

fn f(n: &str, v: &str) -> (Vec<u8>, Vec<u8>, bool) {
    (n.as_bytes().to_vec(), v.as_bytes().to_vec(), false)
}

#[test]
fn rfc_9204_b1_literal_with_name_reference() {
    let src = hex("0000510b2f696e6465782e68746d6c");
    assert_eq!(decode(&src).unwrap(), vec![f(":path", "/index.html")]);
    // Our encoder writes the same bytes, but for Huffman: shorter here.
    let ours = encode(&[(b":path", b"/index.html", false)]);
    assert_eq!(&ours[..3], &hex("000051")[..]);
    assert!(ours.len() < src.len());
    assert_eq!(decode(&ours).unwrap(), vec![f(":path", "/index.html")]);
}

#[test]
fn encodings_chosen() {
    // Whole static entry: one byte, 0xc0 | 17.
    assert_eq!(&encode(&[(b":method", b"GET", false)])[2..], &[0xd1]);
    // Index 63 and over take a second byte.
    assert_eq!(&encode(&[(b":status", b"100", false)])[2..], &[0xff, 0x00]);
    // Static name, literal value without Huffman (not shorter).
    assert_eq!(&encode(&[(b"age", b"1", false)])[2..], &[0x52, 0x01, b'1']);
    // Literal name, no Huffman: 0 0 1 N H len(3), len 3 fits.
    assert_eq!(
        &encode(&[(b"x-a", b"", false)])[2..],
        &[0x23, b'x', b'-', b'a', 0x00]
    );
    // N bit on a name reference and on a literal name.
    assert_eq!(encode(&[(b"cookie", b"a=1", false)])[2], 0x75);
    assert_eq!(encode(&[(b"x-a", b"", true)])[2], 0x33);
    // A credential with an empty value is the static entry anyway.
    assert_eq!(
        &encode(&[(b"authorization", b"", false)])[2..],
        &[0xff, 0x15]
    );
}

#[test]
fn status_codes() {
    for s in [
        100u16, 101, 103, 200, 201, 204, 206, 302, 304, 400, 403, 404, 418, 421, 425, 500, 503, 599,
    ] {
        let e = Encoder::new();
        let mut b = BytesMut::new();
        e.begin_section(&mut b);
        e.status(s, &mut b);
        let want = vec![f(":status", &s.to_string())];
        assert_eq!(decode(&b).unwrap(), want, "{s}");
        // The same as the general path where the table holds it.
        let general = encode(&[(b":status", s.to_string().as_bytes(), false)]);
        if static_table::find(b":status", s.to_string().as_bytes())
            .exact
            .is_some()
        {
            assert_eq!(b, general, "{s}");
        }
    }
}

#[test]
fn every_static_entry_decodes() {
    for (i, &(n, v)) in STATIC.iter().enumerate() {
        let mut b = BytesMut::from(&[0u8, 0][..]);
        put_int(&mut b, 0xc0, 6, i);
        assert_eq!(decode(&b).unwrap(), vec![(n.to_vec(), v.to_vec(), false)]);
    }
}

#[test]
fn never_indexed_bit_is_kept() {
    let b = encode(&[
        (b"x-secret", b"s3cr3t-value", true),
        (b"cache-control", b"private", true),
        (b"cookie", b"id=1", false),
        (b"x-plain", b"v", false),
        // Whole in the static table (index 45), yet forwarded as a literal
        // with the bit (RFC 9204 §7.1.3); found by the h3 fuzz target.
        (b"cache-control", b"no-cache", true),
    ]);
    let got = decode(&b).unwrap();
    let bits: Vec<bool> = got.iter().map(|x| x.2).collect();
    assert_eq!(bits, [true, true, true, false, true]);
}

const FAILED: fn(Failure) -> DecodeError = DecodeError::Failed;

#[test]
fn dynamic_table_needed_is_decompression_failed() {
    // Required Insert Count 1; a negative Base.
    assert_eq!(
        decode(&[0x01, 0x00, 0xd1]),
        Err(FAILED(Failure::DynamicTable))
    );
    assert_eq!(
        decode(&[0x00, 0x80, 0xd1]),
        Err(FAILED(Failure::DynamicTable))
    );
    // Any Base is allowed without dynamic references (§4.5.1.2).
    assert!(decode(&[0x00, 0x05, 0xd1]).is_ok());
    // Indexed dynamic, indexed post-base, literal with dynamic name
    // reference, literal with post-base name reference.
    for line in [&[0x80u8][..], &[0x10], &[0x40, 0x00], &[0x00, 0x00]] {
        let mut src = vec![0, 0];
        src.extend_from_slice(line);
        let e = decode(&src).unwrap_err();
        assert_eq!(e, FAILED(Failure::DynamicReference), "{line:x?}");
        assert_eq!(e.code(), ErrorCode::QpackDecompressionFailed);
    }
}

#[test]
fn bad_index_huffman_and_integers() {
    // Static index 99: 0xff then 99 - 63 = 36.
    assert_eq!(decode(&[0, 0, 0xff, 36]), Err(FAILED(Failure::BadIndex)));
    assert_eq!(decode(&[0, 0, 0x5f, 84, 0]), Err(FAILED(Failure::BadIndex)));
    // Huffman value of all ones: EOS or padding over 7 bits.
    assert_eq!(
        decode(&[0, 0, 0x5f, 0x1d, 0x84, 0xff, 0xff, 0xff, 0xff]),
        Err(FAILED(Failure::BadHuffman))
    );
    // A Huffman name likewise.
    assert_eq!(
        decode(&[0, 0, 0x2a, 0xff, 0xff, 0x00]),
        Err(FAILED(Failure::BadHuffman))
    );
    let mut over = vec![0, 0, 0xff];
    over.extend([0xff; 9]);
    over.push(0x7f);
    assert_eq!(decode(&over), Err(FAILED(Failure::IntegerOverflow)));
    // A length past the section's end.
    assert_eq!(
        decode(&[0, 0, 0x5f, 0x1d, 0x05, b'a']),
        Err(FAILED(Failure::Truncated))
    );
    assert_eq!(decode(&[0x00]), Err(FAILED(Failure::Truncated)));
    assert_eq!(decode(&[]), Err(FAILED(Failure::Truncated)));
    // A prefix alone is an empty section.
    assert_eq!(decode(&[0, 0]), Ok(vec![]));
}

#[test]
fn uppercase_and_late_pseudo_are_malformed() {
    let b = encode(&[(b":method", b"GET", false), (b"X-Upper", b"v", false)]);
    let e = decode(&b).unwrap_err();
    assert_eq!(e, DecodeError::Malformed(Malformed::UppercaseName));
    assert_eq!(e.code(), ErrorCode::MessageError);
    let b = encode(&[(b"accept", b"*/*", false), (b":path", b"/", false)]);
    assert_eq!(
        decode(&b),
        Err(DecodeError::Malformed(Malformed::PseudoAfterRegular))
    );
    // Values may have uppercase; pseudo-fields first are fine.
    let b = encode(&[(b":method", b"GET", false), (b"x", b"ABC", false)]);
    assert!(decode(&b).is_ok());
    // A failure after the fault still wins: it is the connection's.
    let mut b = encode(&[(b"X-Upper", b"v", false)]);
    b.extend_from_slice(&[0x80]);
    assert_eq!(decode(&b), Err(FAILED(Failure::DynamicReference)));
}

#[test]
fn sink_gets_nothing_after_a_fault() {
    let b = encode(&[
        (b"a", b"1", false),
        (b"B", b"2", false),
        (b"c", b"3", false),
    ]);
    let mut seen = Vec::new();
    let r = Decoder::new(1 << 20).decode(&b, &mut |n: &[u8], _: &[u8], _| seen.push(n.to_vec()));
    assert!(r.is_err());
    assert_eq!(seen, vec![b"a".to_vec()]);
}

#[test]
fn section_size_bound_counts_as_rfc_9114() {
    // ":path" "/" + 32 = 38; "x" "yz" + 32 = 35.
    let b = encode(&[(b":path", b"/", false), (b"x", b"yz", false)]);
    assert!(decode_with(73, &b).is_ok());
    let e = decode_with(72, &b).unwrap_err();
    assert_eq!(e, DecodeError::TooLarge);
    assert_eq!(decode_with(37, &b), Err(DecodeError::TooLarge));
}

/// A small generator so the round trips need no crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, len: usize, alphabet: &[u8]) -> Vec<u8> {
        (0..len)
            .map(|_| alphabet[self.below(alphabet.len() as u64) as usize])
            .collect()
    }
}

/// Field sets mixing static entries, static names with other values,
/// and new names, with values of every byte and lengths across the
/// prefix boundaries.
fn field_sets(count: usize) -> Vec<Fields> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let name_chars = b"abcdefghijklmnopqrstuvwxyz0123456789-_";
    let all: Vec<u8> = (0..=255).collect();
    (0..count)
        .map(|_| {
            let n = r.below(20) as usize;
            let mut fields: Fields = Vec::new();
            for _ in 0..n {
                let pick = r.below(4);
                let (name, value) = match pick {
                    0 => {
                        let (n, v) = STATIC[r.below(99) as usize];
                        (n.to_vec(), v.to_vec())
                    }
                    1 => {
                        let (n, _) = STATIC[r.below(99) as usize];
                        let len = r.below(300) as usize;
                        (n.to_vec(), r.bytes(len, &all))
                    }
                    _ => {
                        let nl = 1 + r.below(40) as usize;
                        let vl = r.below(200) as usize;
                        let value = if pick == 2 {
                            r.bytes(vl, name_chars)
                        } else {
                            r.bytes(vl, &all)
                        };
                        (r.bytes(nl, name_chars), value)
                    }
                };
                fields.push((name, value, r.below(5) == 0));
            }
            // Pseudo-fields first, as a valid message has them.
            fields.sort_by_key(|x| x.0.first() != Some(&b':'));
            fields
        })
        .collect()
}

fn encode_owned(fields: &Fields) -> BytesMut {
    let borrowed: Vec<(&[u8], &[u8], bool)> = fields
        .iter()
        .map(|(n, v, ni)| (&n[..], &v[..], *ni))
        .collect();
    encode(&borrowed)
}

#[test]
fn round_trip_many_field_sets() {
    for (k, fields) in field_sets(500).into_iter().enumerate() {
        let b = encode_owned(&fields);
        let got = decode(&b).unwrap_or_else(|e| panic!("set {k}: {e:?}"));
        // The N bit comes back set for credentials even if not asked.
        let want: Fields = fields
            .iter()
            .map(|(n, v, ni)| {
                let secret = matches!(
                    &n[..],
                    b"authorization" | b"proxy-authorization" | b"cookie" | b"set-cookie"
                );
                let indexed = static_table::find(n, v).exact.is_some();
                // A field asked for with the bit keeps it even where the
                // static table has it whole (§7.1.3).
                (n.clone(), v.clone(), *ni || (!indexed && secret))
            })
            .collect();
        assert_eq!(got, want, "set {k}");
    }
}

#[test]
fn truncated_at_every_offset_never_panics() {
    for fields in field_sets(60) {
        let b = encode_owned(&fields);
        for cut in 0..b.len() {
            // Either a shorter section that ends between field lines, or
            // a failure: never a panic, never a field past the cut.
            match decode(&b[..cut]) {
                Ok(got) => assert!(got.len() <= fields.len()),
                Err(e) => assert_eq!(e, FAILED(Failure::Truncated), "cut {cut}"),
            }
        }
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut r = Rng(42);
    let all: Vec<u8> = (0..=255).collect();
    for _ in 0..20_000 {
        let len = r.below(40) as usize;
        let mut src = r.bytes(len, &all);
        if r.below(2) == 0 && src.len() >= 2 {
            src[0] = 0;
            src[1] = 0;
        }
        let _ = decode_with(200, &src);
        let _ = read_encoder_stream(&src);
        let _ = read_decoder_stream(&src);
    }
}

#[test]
fn buffers_are_reused() {
    // Huffman-coded name and value in two sections through one decoder.
    let mut d = Decoder::new(1 << 20);
    for _ in 0..2 {
        let b = encode(&[(b"x-custom-header", b"some-long-value", false)]);
        let mut got = Vec::new();
        d.decode(&b, &mut |n: &[u8], v: &[u8], _| {
            got.push((n.to_vec(), v.to_vec()))
        })
        .unwrap();
        assert_eq!(
            got,
            vec![(b"x-custom-header".to_vec(), b"some-long-value".to_vec())]
        );
    }
}

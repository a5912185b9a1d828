use bytes::BytesMut;

use super::{huffman, Decoder, Encoder, HpackError};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;
type Block = (&'static str, &'static [(&'static str, &'static str)]);

/// Header blocks Python's hpack 4.0 wrote (the RFC 7541 C.3, C.4 and
/// C.6 field lists), one decoder per sequence.
const SEQUENCES: [&[Block]; 3] = [
    &[
        (
            "828684410f7777772e6578616d706c652e636f6d",
            &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
        ),
        (
            "828684be58086e6f2d6361636865",
            &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"), ("cache-control", "no-cache")],
        ),
        (
            "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
            &[(":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"), ("custom-key", "custom-value")],
        ),
    ],
    &[
        (
            "828684418cf1e3c2e5f23a6ba0ab90f4ff",
            &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
        ),
        (
            "828684be5886a8eb10649cbf",
            &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"), ("cache-control", "no-cache")],
        ),
        (
            "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
            &[(":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"), ("custom-key", "custom-value")],
        ),
    ],
    &[
        (
            "3fe101488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
            &[(":status", "302"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"), ("location", "https://www.example.com")],
        ),
        (
            "4883640effc1c0bf",
            &[(":status", "307"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"), ("location", "https://www.example.com")],
        ),
        (
            "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
            &[(":status", "200"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:22 GMT"), ("location", "https://www.example.com"), ("content-encoding", "gzip"), ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1")],
        ),
    ],
];

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn decode(d: &mut Decoder, block: &[u8]) -> Result<Fields, HpackError> {
    let mut got = Vec::new();
    d.decode(block, &mut |n, v| {
        got.push((n.to_vec(), v.to_vec()));
        true
    })?;
    Ok(got)
}

fn owned(fields: &[(&str, &str)]) -> Fields {
    fields
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

#[test]
fn blocks_another_encoder_wrote_decode_in_sequence() {
    for seq in SEQUENCES {
        let mut d = Decoder::new(4096);
        for (block, fields) in seq.iter() {
            assert_eq!(
                decode(&mut d, &hex(block)).unwrap(),
                owned(fields),
                "{block}"
            );
        }
    }
}

#[test]
fn the_rfc_examples_keep_the_rfc_table_sizes() {
    // RFC 7541 C.3: 57, 110 and 164 bytes after each request.
    let mut d = Decoder::new(4096);
    for (want, (block, _)) in [57, 110, 164].into_iter().zip(SEQUENCES[0].iter()) {
        decode(&mut d, &hex(block)).unwrap();
        assert_eq!(d.table_size(), want);
    }
}

/// A tiny xorshift: the tests need no rand crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, max: usize, pool: &[u8]) -> Vec<u8> {
        let n = (self.next() as usize) % max;
        (0..n)
            .map(|_| pool[(self.next() as usize) % pool.len()])
            .collect()
    }
}

#[test]
fn what_the_encoder_writes_the_decoder_reads_across_table_changes() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let names: &[&[u8]] = &[
        b":status",
        b"content-type",
        b"x-custom",
        b"set-cookie",
        b"date",
        b"etag",
        b"server",
    ];
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let all: Vec<u8> = (0..=255).collect();
    for round in 0..400 {
        if round % 50 == 49 {
            let size = [0, 100, 4096, 256, 10_000][(rng.next() % 5) as usize];
            e.set_max_table_size(size);
        }
        let mut fields = Vec::new();
        for _ in 0..(rng.next() % 8) {
            let name = if rng.next().is_multiple_of(3) {
                rng.bytes(20, b"abcdefghijklmnopqrstuvwxyz-")
            } else {
                names[(rng.next() as usize) % names.len()].to_vec()
            };
            let value = if rng.next().is_multiple_of(4) {
                rng.bytes(300, &all)
            } else {
                rng.bytes(12, b"0123456789abc")
            };
            fields.push((name, value));
        }
        let mut dst = BytesMut::new();
        e.begin_block(&mut dst);
        for (n, v) in &fields {
            e.field(n, v, &mut dst);
        }
        assert_eq!(decode(&mut d, &dst).unwrap(), fields, "round {round}");
    }
}

#[test]
fn a_repeated_response_is_a_byte_a_field() {
    let fields: &[(&[u8], &[u8])] = &[
        (b"server", b"ringside"),
        (b"content-type", b"text/plain"),
        (b"content-length", b"26"),
        (b"etag", b"\"abc-1a\""),
    ];
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let mut sizes = Vec::new();
    for _ in 0..2 {
        let mut dst = BytesMut::new();
        e.begin_block(&mut dst);
        e.status(200, &mut dst);
        for (n, v) in fields {
            e.field(n, v, &mut dst);
        }
        sizes.push(dst.len());
        let got = decode(&mut d, &dst).unwrap();
        assert_eq!(got[0], (b":status".to_vec(), b"200".to_vec()));
        assert_eq!(got.len(), 5);
    }
    assert_eq!(sizes[1], 5);
    assert_eq!(e.table_len(), 4);
}

#[test]
fn credentials_are_never_indexed() {
    let mut e = Encoder::new();
    let mut dst = BytesMut::new();
    e.field(b"set-cookie", b"a=1", &mut dst);
    assert_eq!(dst[0] & 0xf0, 0x10);
    assert_eq!(e.table_len(), 0);
}

#[test]
fn an_unusual_status_is_a_literal() {
    let mut e = Encoder::new();
    let mut dst = BytesMut::new();
    e.status(418, &mut dst);
    let got = decode(&mut Decoder::new(4096), &dst).unwrap();
    assert_eq!(got, owned(&[(":status", "418")]));
}

#[test]
fn huffman_round_trips_every_byte() {
    let all: Vec<u8> = (0..=255).collect();
    let mut dst = BytesMut::new();
    huffman::encode(&all, &mut dst);
    assert_eq!(dst.len(), huffman::encoded_len(&all));
    let mut back = Vec::new();
    huffman::decode(&dst, &mut back).unwrap();
    assert_eq!(back, all);
}

#[test]
fn each_error_is_named() {
    let err = |b: &[u8]| decode(&mut Decoder::new(4096), b).unwrap_err();
    assert_eq!(err(&[0x80]), HpackError::BadIndex);
    assert_eq!(err(&[0xbe]), HpackError::BadIndex);
    assert_eq!(err(&[0x40, 0x05, b'a']), HpackError::Truncated);
    assert_eq!(
        err(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        HpackError::IntegerOverflow
    );
    assert_eq!(err(&[0x3f, 0xe2, 0x1f]), HpackError::SizeUpdateTooLarge);
    assert_eq!(err(&[0x82, 0x20]), HpackError::SizeUpdateMisplaced);
    // A string of EOS: 30 ones and padding.
    assert_eq!(
        err(&[0x00, 0x01, b'a', 0x84, 0xff, 0xff, 0xff, 0xff]),
        HpackError::BadHuffman
    );
    // Padding of zeros: 'a' is 00011, then 000.
    assert_eq!(err(&[0x00, 0x01, b'a', 0x81, 0x18]), HpackError::BadHuffman);
    // Eight bits of padding.
    assert_eq!(
        err(&[0x00, 0x01, b'a', 0x82, 0x1f, 0xff]),
        HpackError::BadHuffman
    );
}

#[test]
fn a_bomb_is_decoded_without_being_handed_on() {
    let mut d = Decoder::new(4096);
    let mut block = vec![0x40, 0x06];
    block.extend_from_slice(b"x-bomb");
    block.extend_from_slice(&[0x7f, 0x9e, 0x1e]); // 127 + 30 + 30 * 128 = 3997
    block.extend(std::iter::repeat_n(b'b', 3997));
    block.extend(std::iter::repeat_n(0x80 | 62, 4000));
    let mut handed = 0;
    d.decode(&block, &mut |_, _| {
        handed += 1;
        false
    })
    .unwrap();
    assert_eq!(handed, 1);
    assert_eq!(d.table_size(), 6 + 3997 + 32);
}

#[test]
fn huffman_round_trips_strings_of_every_length_and_mix() {
    // Short codes (digits, lower case), 8-bit ones and long ones (control
    // bytes, up to 30 bits) at every offset within the 32-bit refills.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for len in 0..200 {
        let s: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                match seed % 4 {
                    0 => b"0123456789"[(seed >> 8) as usize % 10],
                    1 => b"abcdefghijklmnopqrstuvwxyz"[(seed >> 8) as usize % 26],
                    2 => b"ABCXYZ&*,;"[(seed >> 8) as usize % 10],
                    _ => (seed >> 8) as u8,
                }
            })
            .collect();
        let mut dst = BytesMut::new();
        huffman::encode(&s, &mut dst);
        let mut back = Vec::new();
        huffman::decode(&dst, &mut back).unwrap();
        assert_eq!(back, s, "length {len}");
    }
}

//! QPACK against ls-qpack, the implementation aioquic uses, through its
//! Python binding pylsqpack (PyPI, in the venv scripts/test.sh makes):
//! field sections ls-qpack encodes with no dynamic table decode here to
//! the same fields, and ours decode there to what we encoded. The
//! static table's 99 entries go both ways too, so a wrong entry of ours
//! shows as a different field. Fails, never skips, without pylsqpack.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use bytes::BytesMut;
use ringside_http::h3::qpack::static_table::STATIC;
use ringside_http::h3::qpack::{read_encoder_stream, Decoder, Encoder};

const PYTHON: &str = "/opt/ringside-test/venv/bin/python3";

/// Reads requests from stdin, one a line, and answers each on a line:
/// `L name:value,...` (hex) is encoded by an Encoder whose peer allows no
/// dynamic table, answered `encoder-stream section` (hex, `-` for
/// nothing); `B section` is decoded by Decoder(4096, 16) and answered
/// with its fields as `L` has them (`-` for none), or `FAILED`.
const SCRIPT: &str = r#"
import sys
import pylsqpack

def fields(text):
    if text == "-":
        return []
    return [tuple(bytes.fromhex(x) for x in f.split(":")) for f in text.split(",")]

def show(fs):
    return ",".join(n.hex() + ":" + v.hex() for n, v in fs) or "-"

enc = pylsqpack.Encoder()
assert enc.apply_settings(max_table_capacity=0, blocked_streams=0) == b""
dec = pylsqpack.Decoder(4096, 16)
stream = 0
for line in sys.stdin:
    kind, arg = line.split()
    stream += 4
    if kind == "L":
        es, section = enc.encode(stream, fields(arg))
        print((es.hex() or "-") + " " + section.hex())
    else:
        try:
            ds, got = dec.feed_header(stream, bytes.fromhex(arg))
            print(show(got))
        except pylsqpack.DecompressionFailed:
            print("FAILED")
    sys.stdout.flush()
"#;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn show(fields: &Fields) -> String {
    if fields.is_empty() {
        return "-".into();
    }
    let parts: Vec<String> = fields
        .iter()
        .map(|(n, v)| format!("{}:{}", hex(n), hex(v)))
        .collect();
    parts.join(",")
}

fn parse(text: &str) -> Fields {
    if text == "-" {
        return Vec::new();
    }
    text.split(',')
        .map(|f| {
            let (n, v) = f.split_once(':').unwrap();
            (unhex(n), unhex(v))
        })
        .collect()
}

/// Runs the script over `requests` and returns its answers.
fn pylsqpack(requests: &[String]) -> Vec<String> {
    assert!(
        Path::new(PYTHON).exists(),
        "{PYTHON} is missing: scripts/test.sh makes the venv and installs pylsqpack in it"
    );
    let mut child = Command::new(PYTHON)
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{PYTHON}: {e}"));
    let mut input = String::new();
    for r in requests {
        input.push_str(r);
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "pylsqpack script failed (is pylsqpack installed in the venv? scripts/test.sh \
         installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(answers.len(), requests.len());
    answers
}

fn owned(fields: &[(&str, &str)]) -> Fields {
    fields
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

/// Requests and responses as browsers and servers send them, the static
/// table whole, and the awkward: empty values, lengths across the
/// integer prefixes' boundaries, every byte a value may hold.
fn lists() -> Vec<Fields> {
    let mut lists = vec![
        owned(&[
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "example.com"),
            (":path", "/index.html"),
            (
                "user-agent",
                "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
            ),
            (
                "accept",
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            ),
            ("accept-language", "en-US,en;q=0.5"),
            ("accept-encoding", "gzip, deflate, br, zstd"),
            ("cookie", "session=abc123; theme=dark"),
            (
                "authorization",
                "Bearer eyJhbGciOiJIUzI1NiJ9.e30.ZRrHA1JJJW8opsbCGfG_HACGpVUMN_a9IV7pAx_Zmeo",
            ),
            ("priority", "u=0, i"),
        ]),
        owned(&[
            (":status", "200"),
            ("content-type", "text/html; charset=utf-8"),
            ("content-length", "1234"),
            ("cache-control", "public, max-age=31536000"),
            ("etag", "\"5f2b-1a2b3c\""),
            ("last-modified", "Sat, 05 Dec 2026 10:00:00 GMT"),
            ("vary", "accept-encoding"),
            ("server", "ringside"),
            (
                "set-cookie",
                "id=a3fWa; Expires=Thu, 21 Oct 2027 07:28:00 GMT; Secure; HttpOnly",
            ),
            ("alt-svc", "h3=\":443\"; ma=86400"),
        ]),
        owned(&[(":status", "418"), ("x-empty", ""), ("x", "")]),
        owned(&[]),
        owned(&[
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/upload?x=1&y=%20z"),
            (":authority", "[::1]:8443"),
            ("content-type", "multipart/form-data; boundary=----x"),
            ("x-forwarded-for", "192.0.2.1, 198.51.100.7"),
        ]),
    ];
    // Pseudo-fields first: our decoder refuses them after the others.
    let mut table: Fields = STATIC
        .iter()
        .map(|&(n, v)| (n.to_vec(), v.to_vec()))
        .collect();
    table.sort_by_key(|(n, _)| n.first() != Some(&b':'));
    lists.push(table);
    // Names and values of lengths around 7, 31, 127 and beyond (the
    // string length prefixes are 3 and 7 bits), Huffman-friendly or not.
    let mut lengths = Vec::new();
    for len in [1usize, 6, 7, 8, 30, 31, 32, 126, 127, 128, 129, 300, 5000] {
        let name: Vec<u8> = (0..len)
            .map(|i| b"abcdefghijklmnopqrstuvwxyz-"[i % 27])
            .collect();
        let plain: Vec<u8> = (0..len).map(|i| b"aeiost0123"[i % 10]).collect();
        let rare: Vec<u8> = (0..len).map(|i| 0x80 + (i % 0x7f) as u8).collect();
        lengths.push((name.clone(), plain));
        lengths.push((b"x-rare".to_vec(), rare));
    }
    lists.push(lengths);
    let every: Vec<u8> = (0x20..=0xff).chain([b'\t']).collect();
    lists.push(vec![
        (b"x-bytes".to_vec(), every),
        (b"content-type".to_vec(), b"\x01\x7f".to_vec()),
    ]);
    lists
}

#[test]
fn pylsqpack_encodes_we_decode_and_we_encode_it_decodes() {
    let lists = lists();
    let encoder = Encoder::new();
    let mut requests = Vec::new();
    let mut ours = Vec::new();
    for fields in &lists {
        requests.push(format!("L {}", show(fields)));
        let mut b = BytesMut::new();
        encoder.begin_section(&mut b);
        for (n, v) in fields {
            encoder.field(n, v, false, &mut b);
        }
        requests.push(format!("B {}", hex(&b)));
        ours.push(b);
    }
    // Our :status shortcut, for every code the table holds and others.
    let statuses = [
        100u16, 103, 200, 204, 206, 302, 304, 400, 403, 404, 421, 425, 500, 503, 101, 299, 418, 999,
    ];
    for s in statuses {
        let mut b = BytesMut::new();
        encoder.begin_section(&mut b);
        encoder.status(s, &mut b);
        requests.push(format!("B {}", hex(&b)));
    }
    let answers = pylsqpack(&requests);

    let mut decoder = Decoder::new(1 << 20);
    for (k, fields) in lists.iter().enumerate() {
        // (a) ls-qpack's section, decoded here.
        let (es, section) = answers[2 * k].split_once(' ').unwrap();
        let es = if es == "-" { Vec::new() } else { unhex(es) };
        assert_eq!(
            read_encoder_stream(&es),
            Ok(es.len()),
            "list {k}: its encoder stream"
        );
        let section = unhex(section);
        let mut got = Vec::new();
        decoder
            .decode(&section, &mut |n: &[u8], v: &[u8], _| {
                got.push((n.to_vec(), v.to_vec()))
            })
            .unwrap_or_else(|e| panic!("list {k}: ls-qpack's section {}: {e:?}", hex(&section)));
        assert_eq!(&got, fields, "list {k}: ls-qpack's section decoded here");
        // (b) ours, decoded by ls-qpack. It refuses a section with no
        // field lines (one its own encoder writes, and RFC 9204 allows).
        if fields.is_empty() {
            assert_eq!(answers[2 * k + 1], "FAILED");
            assert_eq!(
                &ours[k][..],
                &section[..],
                "the empty section as ls-qpack writes it"
            );
            continue;
        }
        assert_eq!(
            &parse(&answers[2 * k + 1]),
            fields,
            "list {k}: our section {}",
            hex(&ours[k])
        );
    }
    for (s, answer) in statuses.iter().zip(&answers[2 * lists.len()..]) {
        let want = vec![(b":status".to_vec(), s.to_string().into_bytes())];
        assert_eq!(parse(answer), want, "status {s}");
    }
}

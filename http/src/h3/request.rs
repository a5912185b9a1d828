//! An HTTP/3 request's HEADERS laid out as the protocol-neutral
//! [`RequestHead`], field by field as QPACK decodes them, by the builder
//! HTTP/2 uses: RFC 9114 §4.2 and §4.3 take RFC 9113's rules over (names
//! lowercase tokens, no connection-specific fields, `TE` only `trailers`,
//! the pseudo-fields and what they hold, `:authority` against `Host`,
//! cookies joined, content-length against the stream's end), so a handler
//! reads an HTTP/3 request exactly as an HTTP/2 one, and nothing is built
//! in between.
//!
//! What each failure is, for the driver (RFC 9114 §4.1.2, §10.8; RFC 9204
//! §2.2.3):
//! - a section QPACK cannot decode: the connection error
//!   QPACK_DECOMPRESSION_FAILED;
//! - a malformed request: the stream error H3_MESSAGE_ERROR, and no handler
//!   sees it;
//! - a request refused with a status (a head over `max_head` or
//!   MAX_FIELD_SECTION_SIZE: 431; a content-length over `max_body`: 413; no
//!   host: 400): answered on the stream.

use bytes::BytesMut;

use crate::error::{Error, Kind};
use crate::h2::request::{Builder, Refusal};
use crate::h3::qpack::{DecodeError, Decoder};
use crate::h3::ErrorCode;
use crate::head::{RequestHead, Version};

#[derive(Debug)]
pub enum RequestError {
    /// Ends the connection with this code.
    Connection(ErrorCode),
    /// Resets the stream with H3_MESSAGE_ERROR; why, for the logs.
    Malformed(&'static str),
    /// Answered with this error's status on the stream.
    Answer(Error),
}

/// Decodes the field section `section` (a HEADERS frame's payload) into
/// `head`, its bytes in `buf`. `end`: the stream ended with this frame (a
/// request without a body). Returns the declared content-length.
pub fn lay_out(
    decoder: &mut Decoder,
    section: &[u8],
    end: bool,
    head: &mut RequestHead,
    buf: &mut BytesMut,
    limits: &crate::Limits,
) -> Result<Option<u64>, RequestError> {
    let mut b = Builder::new(head, buf, limits, Version::Http3);
    // The builder's first refusal stands: a later field must not turn a
    // malformed request into an answered one.
    let mut taking = true;
    let decoded = decoder.decode(section, &mut |n: &[u8], v: &[u8], _never_indexed: bool| {
        if taking {
            taking = b.field(n, v);
        }
    });
    match decoded {
        Ok(()) => {}
        Err(DecodeError::Failed(_)) => {
            return Err(RequestError::Connection(
                ErrorCode::QpackDecompressionFailed,
            ))
        }
        Err(DecodeError::TooLarge) => {
            return Err(RequestError::Answer(Error::new(
                Kind::HeadersTooLarge,
                "field section over MAX_FIELD_SECTION_SIZE",
            )))
        }
        Err(DecodeError::Malformed(m)) => {
            return Err(RequestError::Malformed(match m {
                crate::h3::qpack::Malformed::UppercaseName => "a field name with uppercase",
                crate::h3::qpack::Malformed::PseudoAfterRegular => {
                    "a pseudo-field after a regular field"
                }
            }))
        }
    }
    b.finish(end).map_err(|r| match r {
        Refusal::Malformed(why) => RequestError::Malformed(why),
        Refusal::Answer(e) => RequestError::Answer(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::qpack::Encoder;
    use crate::head::{BodyKind, Method};

    fn section(fields: &[(&str, &str)]) -> BytesMut {
        let enc = Encoder::new();
        let mut out = BytesMut::new();
        enc.begin_section(&mut out);
        for (n, v) in fields {
            enc.field(n.as_bytes(), v.as_bytes(), false, &mut out);
        }
        out
    }

    fn lay(fields: &[(&str, &str)], end: bool) -> Result<(RequestHead, BytesMut), RequestError> {
        lay_section(&section(fields), end, 16 * 1024)
    }

    fn lay_section(
        s: &[u8],
        end: bool,
        max_section: u64,
    ) -> Result<(RequestHead, BytesMut), RequestError> {
        let mut head = RequestHead::empty();
        let mut buf = BytesMut::new();
        let limits = crate::Limits::default();
        let mut d = Decoder::new(max_section);
        lay_out(&mut d, s, end, &mut head, &mut buf, &limits)?;
        Ok((head, buf))
    }

    const GET: &[(&str, &str)] = &[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "example.com:8443"),
        (":path", "/a/b?q=1"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        GET.iter().chain(extra).copied().collect()
    }

    #[test]
    fn a_request_reads_as_an_http2_one_would() {
        let f = with(&[("cookie", "a=1"), ("accept", "*/*"), ("cookie", "b=2")]);
        let (head, buf) = lay(&f, true).unwrap();
        assert_eq!(head.version, Version::Http3);
        assert_eq!(head.method, Method::Get);
        assert_eq!(head.target(&buf), b"/a/b?q=1");
        assert_eq!(head.host.unwrap().get(&buf), b"example.com:8443");
        assert_eq!(head.body, BodyKind::Empty);
        assert_eq!(head.version.as_str(), "HTTP/3.0");
        let fields: Vec<(&[u8], &[u8])> = head.headers(&buf).collect();
        assert_eq!(
            fields,
            [
                (&b"host"[..], &b"example.com:8443"[..]),
                (b"accept", b"*/*"),
                (b"cookie", b"a=1; b=2"),
            ]
        );
    }

    #[test]
    fn a_body_is_framed_by_content_length_or_streamed() {
        let post = |cl: Option<&'static str>, end| {
            let mut f = vec![
                (":method", "POST"),
                (":scheme", "https"),
                (":authority", "h"),
                (":path", "/up"),
            ];
            if let Some(cl) = cl {
                f.push(("content-length", cl));
            }
            lay(&f, end).map(|(h, _)| h.body)
        };
        assert_eq!(post(Some("10"), false).unwrap(), BodyKind::Length(10));
        assert_eq!(post(None, false).unwrap(), BodyKind::Stream);
        assert_eq!(post(None, true).unwrap(), BodyKind::Empty);
        // RFC 9114 §4.1.2: a content-length the DATA frames cannot match.
        assert!(matches!(
            post(Some("10"), true),
            Err(RequestError::Malformed(_))
        ));
    }

    /// RFC 9114 §4.1.2, §4.2, §4.3: each a stream error H3_MESSAGE_ERROR.
    #[test]
    fn what_rfc_9114_calls_malformed_resets_the_stream() {
        let cases: &[&[(&str, &str)]] = &[
            &with(&[("connection", "close")]),
            &with(&[("transfer-encoding", "chunked")]),
            &with(&[("upgrade", "websocket")]),
            &with(&[("te", "gzip")]),
            &with(&[("x-bad", " padded")]),
            &with(&[("host", "other.example")]),
            &with(&[("content-length", "1"), ("content-length", "2")]),
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "h"),
            ],
            &[(":method", "GET"), (":path", "/"), (":authority", "h")],
            &[
                (":method", "G ET"),
                (":scheme", "https"),
                (":authority", "h"),
                (":path", "/"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "h"),
                (":path", "x"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                (":path", "/again"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                (":x", "1"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "u@h"),
                (":path", "/"),
            ],
        ];
        for f in cases {
            let r = lay(f, true);
            assert!(matches!(r, Err(RequestError::Malformed(_))), "{f:?}: {r:?}");
        }
    }

    /// Our encoder never writes what QPACK's decoder refuses; hand-made
    /// sections carry it.
    #[test]
    fn qpack_faults_end_the_stream_or_the_connection() {
        // A literal name with uppercase (001N H=0, length 1, "X", value "1").
        let mut s = section(GET);
        s.extend_from_slice(&[0x21, b'X', 0x01, b'1']);
        assert!(matches!(
            lay_section(&s, true, 1 << 16),
            Err(RequestError::Malformed(_))
        ));
        // A pseudo-field after a regular field (`:path` by static index 1).
        let mut s = section(&with(&[("accept", "*/*")]));
        s.extend_from_slice(&[0xc1]);
        assert!(matches!(
            lay_section(&s, true, 1 << 16),
            Err(RequestError::Malformed(_))
        ));
        // A reference to a dynamic table we never offered.
        let mut s = section(GET);
        s.extend_from_slice(&[0x80]);
        assert!(matches!(
            lay_section(&s, true, 1 << 16),
            Err(RequestError::Connection(
                ErrorCode::QpackDecompressionFailed
            ))
        ));
        // Cut inside a field line.
        let s = section(GET);
        assert!(matches!(
            lay_section(&s[..s.len() - 1], true, 1 << 16),
            Err(RequestError::Connection(
                ErrorCode::QpackDecompressionFailed
            ))
        ));
    }

    #[test]
    fn a_section_over_its_bound_is_answered_431() {
        let big = "v".repeat(2_000);
        let f: Vec<(&str, &str)> = GET
            .iter()
            .copied()
            .chain([("x-big", big.as_str())])
            .collect();
        match lay_section(&section(&f), true, 1_000) {
            Err(RequestError::Answer(e)) => assert_eq!(e.status(), 431),
            r => panic!("{r:?}"),
        }
        // Within the section bound but over max_head: 431 too.
        let huge = "v".repeat(crate::Limits::default().max_head + 1);
        let f: Vec<(&str, &str)> = GET
            .iter()
            .copied()
            .chain([("x-huge", huge.as_str())])
            .collect();
        match lay_section(&section(&f), true, 1 << 20) {
            Err(RequestError::Answer(e)) => assert_eq!(e.status(), 431),
            r => panic!("{r:?}"),
        }
    }

    /// The builder's first refusal stands: a malformed field, then one that
    /// alone would be answered with 431, is still a malformed request.
    #[test]
    fn the_first_refusal_stands() {
        let huge = "v".repeat(crate::Limits::default().max_head + 1);
        let f: Vec<(&str, &str)> = GET
            .iter()
            .copied()
            .chain([("connection", "close"), ("x-huge", huge.as_str())])
            .collect();
        let r = lay_section(&section(&f), true, 1 << 20);
        assert!(matches!(r, Err(RequestError::Malformed(_))), "{r:?}");
    }
}

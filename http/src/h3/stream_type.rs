//! The type a unidirectional stream opens with (RFC 9114 §6.2; RFC 9204
//! §4.2), a varint.

use crate::h3::error::is_reserved;
use crate::h3::varint;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamType {
    /// §6.2.1: one each way; its loss is H3_CLOSED_CRITICAL_STREAM.
    Control,
    /// §6.2.2: a push id follows.
    Push,
    /// RFC 9204 §4.2: the peer's encoder instructions.
    QpackEncoder,
    /// RFC 9204 §4.2: the peer's decoder instructions.
    QpackDecoder,
    /// Reserved (0x1f * N + 0x21, sent as grease) or of an extension we do
    /// not speak: the receiver reads no further and may stop the stream
    /// with H3_STREAM_CREATION_ERROR, never closing the connection for it
    /// (§6.2, §6.2.3).
    Unknown(u64),
}

pub const CONTROL: u64 = 0x00;
pub const PUSH: u64 = 0x01;
pub const QPACK_ENCODER: u64 = 0x02;
pub const QPACK_DECODER: u64 = 0x03;

impl StreamType {
    /// The type at the start of a stream and the bytes it took, or `None`
    /// until the whole varint is there.
    pub fn parse(src: &[u8]) -> Option<(StreamType, usize)> {
        let (v, n) = varint::decode(src)?;
        Some((StreamType::of(v), n))
    }

    pub fn of(v: u64) -> StreamType {
        match v {
            CONTROL => StreamType::Control,
            PUSH => StreamType::Push,
            QPACK_ENCODER => StreamType::QpackEncoder,
            QPACK_DECODER => StreamType::QpackDecoder,
            v => StreamType::Unknown(v),
        }
    }

    pub fn code(self) -> u64 {
        match self {
            StreamType::Control => CONTROL,
            StreamType::Push => PUSH,
            StreamType::QpackEncoder => QPACK_ENCODER,
            StreamType::QpackDecoder => QPACK_DECODER,
            StreamType::Unknown(v) => v,
        }
    }

    /// Whether this is a grease type (§6.2.3).
    pub fn is_reserved(self) -> bool {
        matches!(self, StreamType::Unknown(v) if is_reserved(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_and_reserved() {
        assert_eq!(StreamType::parse(&[0x00]), Some((StreamType::Control, 1)));
        assert_eq!(
            StreamType::parse(&[0x01, 0x05]),
            Some((StreamType::Push, 1))
        );
        assert_eq!(
            StreamType::parse(&[0x02]),
            Some((StreamType::QpackEncoder, 1))
        );
        assert_eq!(
            StreamType::parse(&[0x03]),
            Some((StreamType::QpackDecoder, 1))
        );
        let (t, n) = StreamType::parse(&[0x40, 0x21 + 0x1f]).unwrap();
        assert_eq!((t, n), (StreamType::Unknown(0x40), 2));
        assert!(t.is_reserved());
        assert!(!StreamType::Unknown(0x54).is_reserved());
        assert_eq!(StreamType::parse(&[0x40]), None);
        assert_eq!(StreamType::parse(&[]), None);
        for v in [0u64, 1, 2, 3, 0x21, 0x54] {
            assert_eq!(StreamType::of(v).code(), v);
        }
    }
}

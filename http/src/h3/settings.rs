//! The SETTINGS frame's payload (RFC 9114 §7.2.4): identifier and value
//! pairs, both varints. Only the settings this server acts on are kept;
//! others, the reserved 0x1f * N + 0x21 among them, are ignored (§7.2.4.1,
//! §9).

use bytes::BytesMut;

use crate::h3::error::ErrorCode;
use crate::h3::frame::{put_header, SETTINGS};
use crate::h3::varint;

pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;
/// RFC 9220 §3: extended CONNECT (WebSockets over HTTP/3).
pub const ENABLE_CONNECT_PROTOCOL: u64 = 0x08;
/// RFC 9297 §2.1.1: HTTP datagrams.
pub const H3_DATAGRAM: u64 = 0x33;

/// One side's settings; `Default` is what holds before a peer's SETTINGS
/// arrives and for anything it leaves out (§7.2.4.1).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Settings {
    pub qpack_max_table_capacity: u64,
    /// `None`: unlimited (§4.2.2).
    pub max_field_section_size: Option<u64>,
    pub qpack_blocked_streams: u64,
    pub enable_connect_protocol: bool,
    pub h3_datagram: bool,
}

impl Settings {
    /// Reads a SETTINGS payload. A duplicate identifier (§7.2.4), one of
    /// HTTP/2's that HTTP/3 reserves (0x00 and 0x02 to 0x05, §7.2.4.1,
    /// §11.2.2) or
    /// a boolean setting other than 0 or 1 (RFC 9220 §3, RFC 9297 §2.1.1)
    /// is H3_SETTINGS_ERROR; a payload cut inside a pair is H3_FRAME_ERROR
    /// (§7.1).
    pub fn decode(mut payload: &[u8]) -> Result<Settings, ErrorCode> {
        let mut s = Settings::default();
        // The known identifiers seen, a bit each. A repeated unknown one
        // is let pass: the RFC allows, not requires, refusing it, and
        // catching it would need a set without a bound.
        let mut seen = 0u8;
        while !payload.is_empty() {
            let (id, a) = varint::decode(payload).ok_or(ErrorCode::FrameError)?;
            let (v, b) = varint::decode(&payload[a..]).ok_or(ErrorCode::FrameError)?;
            payload = &payload[a + b..];
            let bit = match id {
                QPACK_MAX_TABLE_CAPACITY => {
                    s.qpack_max_table_capacity = v;
                    1
                }
                MAX_FIELD_SECTION_SIZE => {
                    s.max_field_section_size = Some(v);
                    2
                }
                QPACK_BLOCKED_STREAMS => {
                    s.qpack_blocked_streams = v;
                    4
                }
                ENABLE_CONNECT_PROTOCOL => {
                    s.enable_connect_protocol = boolean(v)?;
                    8
                }
                H3_DATAGRAM => {
                    s.h3_datagram = boolean(v)?;
                    16
                }
                0x00 | 0x02..=0x05 => return Err(ErrorCode::SettingsError),
                _ => 0,
            };
            if seen & bit != 0 {
                return Err(ErrorCode::SettingsError);
            }
            seen |= bit;
        }
        Ok(s)
    }

    /// Appends the whole SETTINGS frame. Settings at their default are
    /// left out (§7.2.4.1); one reserved setting always goes with them, so
    /// peers that would choke on unknown identifiers are found early
    /// (§7.2.4.1 asks for such greasing).
    pub fn put_frame(&self, dst: &mut BytesMut) {
        let mut pairs = [(0u64, 0u64); 6];
        let mut n = 0;
        let mut push = |id, v| {
            pairs[n] = (id, v);
            n += 1;
        };
        if self.qpack_max_table_capacity != 0 {
            push(QPACK_MAX_TABLE_CAPACITY, self.qpack_max_table_capacity);
        }
        if let Some(v) = self.max_field_section_size {
            push(MAX_FIELD_SECTION_SIZE, v);
        }
        if self.qpack_blocked_streams != 0 {
            push(QPACK_BLOCKED_STREAMS, self.qpack_blocked_streams);
        }
        if self.enable_connect_protocol {
            push(ENABLE_CONNECT_PROTOCOL, 1);
        }
        if self.h3_datagram {
            push(H3_DATAGRAM, 1);
        }
        // 0x1f * 1 + 0x21, value 0: a fixed reserved pair.
        push(0x40, 0);
        let pairs = &pairs[..n];
        let len: usize = pairs
            .iter()
            .map(|&(id, v)| varint::len(id) + varint::len(v))
            .sum();
        put_header(dst, SETTINGS, len as u64);
        for &(id, v) in pairs {
            varint::put(dst, id);
            varint::put(dst, v);
        }
    }
}

fn boolean(v: u64) -> Result<bool, ErrorCode> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(ErrorCode::SettingsError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::frame::{FrameKind, FrameParser, Item};

    fn payload(pairs: &[(u64, u64)]) -> Vec<u8> {
        let mut b = BytesMut::new();
        for &(id, v) in pairs {
            varint::put(&mut b, id);
            varint::put(&mut b, v);
        }
        b.to_vec()
    }

    #[test]
    fn round_trip() {
        let s = Settings {
            qpack_max_table_capacity: 0,
            max_field_section_size: Some(65536),
            qpack_blocked_streams: 0,
            enable_connect_protocol: true,
            h3_datagram: true,
        };
        let mut b = BytesMut::new();
        s.put_frame(&mut b);
        let step = FrameParser::new(1024).next(&b).unwrap();
        assert_eq!(step.consumed, b.len());
        let Item::Frame { kind, payload } = step.item else {
            panic!("{step:?}")
        };
        assert_eq!(kind, FrameKind::Settings);
        assert_eq!(Settings::decode(&b[payload]).unwrap(), s);

        // Defaults: only the reserved pair goes out.
        let mut b = BytesMut::new();
        Settings::default().put_frame(&mut b);
        assert_eq!(&b[..], &[0x04, 0x03, 0x40, 0x40, 0x00]);
        assert_eq!(Settings::decode(&b[2..]).unwrap(), Settings::default());
    }

    #[test]
    fn unknown_and_reserved_ignored() {
        let p = payload(&[(0x21, 7), (0x1f * 1000 + 0x21, 1), (0x1234, 5), (0x06, 100)]);
        let s = Settings::decode(&p).unwrap();
        assert_eq!(s.max_field_section_size, Some(100));
        // Unknown identifiers may repeat.
        assert!(Settings::decode(&payload(&[(0x21, 1), (0x21, 2)])).is_ok());
    }

    #[test]
    fn duplicates_are_settings_errors() {
        for id in [0x01, 0x06, 0x07, 0x08, 0x33] {
            let p = payload(&[(id, 0), (0x21, 0), (id, 1)]);
            assert_eq!(
                Settings::decode(&p),
                Err(ErrorCode::SettingsError),
                "{id:#x}"
            );
        }
    }

    #[test]
    fn http2_settings_are_errors() {
        for id in [0x00, 0x02, 0x03, 0x04, 0x05] {
            let p = payload(&[(id, 0)]);
            assert_eq!(
                Settings::decode(&p),
                Err(ErrorCode::SettingsError),
                "{id:#x}"
            );
        }
    }

    #[test]
    fn booleans_other_than_0_or_1_are_errors() {
        for id in [ENABLE_CONNECT_PROTOCOL, H3_DATAGRAM] {
            assert_eq!(
                Settings::decode(&payload(&[(id, 2)])),
                Err(ErrorCode::SettingsError)
            );
        }
    }

    #[test]
    fn truncated_pair_is_frame_error() {
        let p = payload(&[(0x06, 16_384), (0x01, 0)]);
        for cut in 1..p.len() {
            let r = Settings::decode(&p[..cut]);
            // A cut between pairs is a shorter valid payload.
            if cut != 5 {
                assert_eq!(r, Err(ErrorCode::FrameError), "cut {cut}");
            }
        }
    }
}

//! HTTP/3's error codes (RFC 9114 §8.1) and QPACK's (RFC 9204 §6): what a
//! connection is closed or a stream reset with.

/// An error code this crate reports, or reads in a GOAWAY's peer, a
/// RESET_STREAM or CONNECTION_CLOSE (the transport carries them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    NoError,
    GeneralProtocolError,
    InternalError,
    StreamCreationError,
    ClosedCriticalStream,
    FrameUnexpected,
    FrameError,
    ExcessiveLoad,
    IdError,
    SettingsError,
    MissingSettings,
    RequestRejected,
    RequestCancelled,
    RequestIncomplete,
    MessageError,
    ConnectError,
    VersionFallback,
    QpackDecompressionFailed,
    QpackEncoderStreamError,
    QpackDecoderStreamError,
}

const CODES: [(ErrorCode, u64); 20] = [
    (ErrorCode::NoError, 0x0100),
    (ErrorCode::GeneralProtocolError, 0x0101),
    (ErrorCode::InternalError, 0x0102),
    (ErrorCode::StreamCreationError, 0x0103),
    (ErrorCode::ClosedCriticalStream, 0x0104),
    (ErrorCode::FrameUnexpected, 0x0105),
    (ErrorCode::FrameError, 0x0106),
    (ErrorCode::ExcessiveLoad, 0x0107),
    (ErrorCode::IdError, 0x0108),
    (ErrorCode::SettingsError, 0x0109),
    (ErrorCode::MissingSettings, 0x010a),
    (ErrorCode::RequestRejected, 0x010b),
    (ErrorCode::RequestCancelled, 0x010c),
    (ErrorCode::RequestIncomplete, 0x010d),
    (ErrorCode::MessageError, 0x010e),
    (ErrorCode::ConnectError, 0x010f),
    (ErrorCode::VersionFallback, 0x0110),
    (ErrorCode::QpackDecompressionFailed, 0x0200),
    (ErrorCode::QpackEncoderStreamError, 0x0201),
    (ErrorCode::QpackDecoderStreamError, 0x0202),
];

impl ErrorCode {
    /// The code on the wire.
    pub fn code(self) -> u64 {
        CODES[self as usize].1
    }

    /// The code's name as the RFCs spell it, for logs.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::NoError => "H3_NO_ERROR",
            ErrorCode::GeneralProtocolError => "H3_GENERAL_PROTOCOL_ERROR",
            ErrorCode::InternalError => "H3_INTERNAL_ERROR",
            ErrorCode::StreamCreationError => "H3_STREAM_CREATION_ERROR",
            ErrorCode::ClosedCriticalStream => "H3_CLOSED_CRITICAL_STREAM",
            ErrorCode::FrameUnexpected => "H3_FRAME_UNEXPECTED",
            ErrorCode::FrameError => "H3_FRAME_ERROR",
            ErrorCode::ExcessiveLoad => "H3_EXCESSIVE_LOAD",
            ErrorCode::IdError => "H3_ID_ERROR",
            ErrorCode::SettingsError => "H3_SETTINGS_ERROR",
            ErrorCode::MissingSettings => "H3_MISSING_SETTINGS",
            ErrorCode::RequestRejected => "H3_REQUEST_REJECTED",
            ErrorCode::RequestCancelled => "H3_REQUEST_CANCELLED",
            ErrorCode::RequestIncomplete => "H3_REQUEST_INCOMPLETE",
            ErrorCode::MessageError => "H3_MESSAGE_ERROR",
            ErrorCode::ConnectError => "H3_CONNECT_ERROR",
            ErrorCode::VersionFallback => "H3_VERSION_FALLBACK",
            ErrorCode::QpackDecompressionFailed => "QPACK_DECOMPRESSION_FAILED",
            ErrorCode::QpackEncoderStreamError => "QPACK_ENCODER_STREAM_ERROR",
            ErrorCode::QpackDecoderStreamError => "QPACK_DECODER_STREAM_ERROR",
        }
    }

    /// The code a peer sent, if it is one of these. Anything else, the
    /// reserved codes 0x1f * N + 0x21 (§8.1) among them, is unknown, and
    /// an unknown code means no more than H3_NO_ERROR does (§9).
    pub fn from_code(code: u64) -> Option<ErrorCode> {
        CODES.iter().find(|&&(_, c)| c == code).map(|&(e, _)| e)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::error::Error for ErrorCode {}

/// Whether `v` is one of the reserved values 0x1f * N + 0x21 that frame
/// types, settings, stream types and error codes set aside for greasing
/// (RFC 9114 §7.2.8, §7.2.4.1, §6.2.3, §8.1): never acted on.
pub fn is_reserved(v: u64) -> bool {
    v >= 0x21 && (v - 0x21).is_multiple_of(0x1f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_in_order() {
        for (i, &(e, c)) in CODES.iter().enumerate() {
            assert_eq!(e as usize, i, "{e:?} out of place in CODES");
            assert_eq!(e.code(), c);
            assert_eq!(ErrorCode::from_code(c), Some(e));
        }
        assert_eq!(ErrorCode::QpackDecompressionFailed.code(), 0x200);
        assert_eq!(
            ErrorCode::FrameUnexpected.to_string(),
            "H3_FRAME_UNEXPECTED"
        );
    }

    #[test]
    fn reserved_codes_are_unknown() {
        for n in 0..100u64 {
            let v = 0x1f * n + 0x21;
            assert!(is_reserved(v));
            assert_eq!(ErrorCode::from_code(v), None);
        }
        assert!(!is_reserved(0x20));
        assert!(!is_reserved(0x22));
        assert!(!is_reserved(0));
    }
}

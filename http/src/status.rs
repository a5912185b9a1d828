//! Status codes: their reason phrases and which of them carry a body.

/// The reason phrase of every status code in IANA's registry (RFC 9110
/// §15 and the RFCs that added codes since); an empty phrase for others,
/// which RFC 9112 §4 allows.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        511 => "Network Authentication Required",
        _ => "",
    }
}

/// 1xx, 204 and 304 responses never carry a body or framing headers
/// (RFC 9110 §6.4.1, RFC 9112 §6.3).
#[inline]
pub fn no_content(status: u16) -> bool {
    (100..200).contains(&status) || status == 204 || status == 304
}

/// An interim response (1xx other than 101): a final one follows.
#[inline]
pub fn is_interim(status: u16) -> bool {
    (100..200).contains(&status) && status != 101
}

/// A status code's three digits.
#[inline]
pub fn digits(status: u16) -> [u8; 3] {
    let s = status.min(999);
    [
        b'0' + (s / 100) as u8,
        b'0' + (s / 10 % 10) as u8,
        b'0' + (s % 10) as u8,
    ]
}

/// The short page a refused HTTP/2 or HTTP/3 stream gets ("431 Request
/// Header Fields Too Large"), and its content type.
pub(crate) fn refusal_page(status: u16) -> (bytes::BytesMut, (&'static [u8], &'static [u8])) {
    let mut page = bytes::BytesMut::new();
    page.extend_from_slice(crate::grammar::decimal(u64::from(status), &mut [0; 20]));
    page.extend_from_slice(b" ");
    page.extend_from_slice(reason(status).as_bytes());
    page.extend_from_slice(b"\n");
    (page, (b"content-type", b"text/plain; charset=utf-8"))
}

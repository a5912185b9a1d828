//! The small pieces of HTTP's field grammar (RFC 9110 §5) that every parser
//! and writer of the server needs, written once.

/// Whether `v` holds NUL, CR or LF, which no field value may (RFC 9110
/// §5.5, RFC 9113 §8.2.1): eight bytes a step, and only a step holding a
/// byte below 14 is looked at byte by byte (a byte-wise scan cost about
/// 2 instructions a byte, 250 an HTTP/2 response head under callgrind).
#[inline]
pub fn has_nul_cr_lf(v: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let bad = |b: &u8| matches!(b, 0 | b'\r' | b'\n');
    let mut words = v.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        // Non-zero exactly when some byte is below 14 (the "has less"
        // test, exact for bounds up to 128).
        if x.wrapping_sub(ONES * 14) & !x & HIGH != 0 && w.iter().any(bad) {
            return true;
        }
    }
    words.remainder().iter().any(bad)
}

/// tchar (RFC 9110 §5.6.2): the characters of a token, such as a field name
/// or a transfer coding.
#[inline]
pub fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

static TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).is_ascii_alphanumeric();
        i += 1;
    }
    let extra = b"!#$%&'*+-.^_`|~";
    let mut j = 0;
    while j < extra.len() {
        t[extra[j] as usize] = true;
        j += 1;
    }
    t
};

/// Whether `s` is a token: one or more tchar.
#[inline]
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// `s` without the optional whitespace (SP, HTAB) around it (RFC 9110 §5.6.3).
#[inline]
pub fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// `1*DIGIT` as a number no larger than `max`: no sign, no space, no
/// overflow (RFC 9110 §8.6 for Content-Length).
#[inline]
pub fn parse_length(v: &[u8], max: u64) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in v {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        if n > max {
            return None;
        }
    }
    Some(n)
}

/// The non-empty elements of a comma-separated list (RFC 9110 §5.6.1),
/// trimmed of whitespace.
#[inline]
pub fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|t| !t.is_empty())
}

/// Whether the comma-separated list `value` has `token` among its elements
/// (ASCII case-insensitive).
#[inline]
pub fn list_has(value: &[u8], token: &[u8]) -> bool {
    list_elements(value).any(|t| t.eq_ignore_ascii_case(token))
}

/// Tokens a [`ConnectionTokens`] holds inline.
pub const MAX_CONNECTION_TOKENS: usize = 16;

/// The field names a message's `Connection` headers list (RFC 9110 §7.6.1),
/// borrowed from its buffer: no allocation. Compared ASCII
/// case-insensitively, as lower-cased names would be.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionTokens<'a> {
    tokens: [&'a [u8]; MAX_CONNECTION_TOKENS],
    len: u8,
    overflow: bool,
}

impl<'a> ConnectionTokens<'a> {
    /// No tokens.
    pub fn none() -> Self {
        ConnectionTokens {
            tokens: [&[]; MAX_CONNECTION_TOKENS],
            len: 0,
            overflow: false,
        }
    }

    /// The tokens of these `Connection` field values.
    pub fn from_values(values: impl Iterator<Item = &'a [u8]>) -> Self {
        let mut t = Self::none();
        for token in values.flat_map(list_elements) {
            if (t.len as usize) < MAX_CONNECTION_TOKENS {
                t.tokens[t.len as usize] = token;
                t.len += 1;
            } else {
                t.overflow = true;
            }
        }
        t
    }

    /// Whether `name` is listed (ASCII case-insensitive). After an
    /// [overflow](Self::overflowed), names beyond the first
    /// [`MAX_CONNECTION_TOKENS`] are not known.
    pub fn contains(&self, name: &[u8]) -> bool {
        self.tokens[..self.len as usize]
            .iter()
            .any(|t| t.eq_ignore_ascii_case(name))
    }

    /// More than [`MAX_CONNECTION_TOKENS`] tokens were listed.
    pub fn overflowed(&self) -> bool {
        self.overflow
    }
}

/// `v` in decimal, written into `tmp` without allocating.
pub fn decimal(mut v: u64, tmp: &mut [u8; 20]) -> &[u8] {
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &tmp[i..];
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nul_cr_lf_are_found_wherever_they_are() {
        use super::has_nul_cr_lf;
        for len in 0..40 {
            let clean: Vec<u8> = (0..len)
                .map(|i| [b'a', b'\t', 13 + 1, 0x80, 0xff, 9][i % 6])
                .collect();
            assert!(!has_nul_cr_lf(&clean), "{clean:?}");
            for at in 0..len {
                for bad in [0u8, b'\r', b'\n'] {
                    let mut v = clean.clone();
                    v[at] = bad;
                    assert!(has_nul_cr_lf(&v), "{v:?}");
                }
            }
        }
    }

    use super::*;

    #[test]
    fn tchar_is_rfc_9110() {
        let by_hand = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        for b in 0..=255u8 {
            assert_eq!(is_tchar(b), by_hand(b), "{b:#x}");
        }
    }

    #[test]
    fn lengths() {
        #[rustfmt::skip]
        let cases: &[(&str, u64, Option<u64>)] = &[
            ("0", 10, Some(0)), ("10", 10, Some(10)), ("11", 10, None), ("", 10, None),
            ("+1", 10, None), ("1 ", 10, None), ("0x1", 10, None),
            ("18446744073709551615", u64::MAX, Some(u64::MAX)), ("18446744073709551616", u64::MAX, None),
        ];
        for &(v, max, want) in cases {
            assert_eq!(parse_length(v.as_bytes(), max), want, "{v:?}");
        }
    }

    #[test]
    fn lists() {
        let v = b" a, ,b ,\tC\t,";
        assert_eq!(
            list_elements(v).collect::<Vec<_>>(),
            [&b"a"[..], b"b", b"C"]
        );
        assert!(list_has(v, b"c") && !list_has(v, b"d"));
        assert_eq!(trim_ows(b" \t x y \t"), b"x y");
    }

    /// `Connection` field values.
    type Values<'a> = &'a [&'a [u8]];

    #[test]
    fn connection_tokens() {
        #[rustfmt::skip]
        let cases: &[(Values<'_>, &[u8], bool, bool)] = &[
            // (values, name, contains, overflowed)
            (&[b"close"], b"close", true, false),
            (&[b"Close , X-A"], b"x-a", true, false),
            (&[b" ,, X-A ,"], b"X-A", true, false),
            (&[b"a", b"b"], b"b", true, false),
            (&[b"a"], b"", false, false),
            (&[b"ab"], b"a", false, false),
            (&[b"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p"], b"p", true, false),
            (&[b"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q"], b"q", false, true),
        ];
        for (values, name, contains, overflowed) in cases {
            let t = ConnectionTokens::from_values(values.iter().copied());
            assert_eq!(t.contains(name), *contains, "{values:?} {name:?}");
            assert_eq!(t.overflowed(), *overflowed, "{values:?}");
        }
    }
}

//! A decoded header section, in one buffer: no allocation per field.

/// Fields as HPACK decoded them, names lower case, pseudo-fields apart.
#[derive(Default, Debug, Clone)]
pub struct FieldList {
    buf: Vec<u8>,
    /// For each field, where its name ends and where its value ends.
    ends: Vec<(u32, u32)>,
}

impl FieldList {
    pub fn push(&mut self, name: &[u8], value: &[u8]) {
        if self.ends.capacity() == 0 {
            // Room for a typical response head at once, rather than the
            // five or six doublings that would reach it one field at a time.
            self.buf.reserve(256);
            self.ends.reserve(12);
        }
        self.buf.extend_from_slice(name);
        let n = self.buf.len() as u32;
        self.buf.extend_from_slice(value);
        self.ends.push((n, self.buf.len() as u32));
    }

    /// Bytes held, names and values, as HTTP/2 counts a head's size less
    /// its 32 per field.
    pub fn size(&self) -> usize {
        self.buf.len() + 32 * self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + Clone + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |&(n, v)| {
            let (n, v) = (n as usize, v as usize);
            let pair = (&self.buf[start..n], &self.buf[n..v]);
            start = v;
            pair
        })
    }

    /// The first value of `name` (lower case).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.iter()
            .find(|(n, _)| *n == name.as_bytes())
            .map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_in_order() {
        let mut f = FieldList::default();
        f.push(b"a", b"1");
        f.push(b"bb", b"");
        f.push(b"a", b"333");
        let all: Vec<_> = f.iter().collect();
        assert_eq!(
            all,
            vec![
                (&b"a"[..], &b"1"[..]),
                (&b"bb"[..], &b""[..]),
                (&b"a"[..], &b"333"[..])
            ]
        );
        assert_eq!(f.get("a"), Some(&b"1"[..]));
        assert_eq!(f.get("c"), None);
        assert_eq!(f.size(), 8 + 96);
    }
}

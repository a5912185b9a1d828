//! Directory listings as HTML, with every name escaped.
//!
//! # How
//!
//! [`render`] sorts the entries it is given (directories first, then by
//! name in byte order, so the order is stable and locale-free) and writes one
//! HTML5 page into the caller's buffer: a table of name, modification time
//! and size. It does no I/O and filters nothing: hiding dotfiles or the
//! index file is the caller's business.
//!
//! A file name may hold any UTF-8, `<>&"'` included, so it is written twice,
//! differently:
//! - as text, through [`html_escape`], which turns all five of `& < > " '`
//!   into entities, so the same routine is safe in text and in quoted
//!   attributes;
//! - as a link, through [`percent_encode_segment`], which leaves only RFC 3986
//!   §2.3 unreserved bytes (`A-Z a-z 0-9 - . _ ~`) and `/` as they are and
//!   writes every other byte as `%XX`. The result needs no HTML escaping,
//!   and a name like `a:b` cannot be read as a URL scheme, `#` and `?` do not
//!   start a fragment or query, and `%` does not start an escape. `/` is left
//!   alone so the function can encode a whole path too; a file name never
//!   contains one.
//!
//! Links are relative (`name`, `dir/`, `../`), so the page works behind a
//! route prefix that the proxy strips; that needs the page to be served at a
//! URL ending in `/`, which the directory redirect already ensures. A `../`
//! row is shown everywhere but at `/`.
//!
//! Times are UTC `YYYY-MM-DD HH:MM`, from Howard Hinnant's `civil_from_days`
//! (<https://howardhinnant.github.io/date_algorithms.html>), done in
//! unsigned arithmetic since times before 1970 are not representable in the
//! input. Sizes are exact byte counts for files and `-` for directories.

use std::io::Write;

/// One directory entry, as read by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The file name, any UTF-8 except `/`.
    pub name: &'a str,
    pub is_dir: bool,
    /// Bytes; not shown for directories.
    pub size: u64,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: u64,
}

/// Writes the listing page for `url_path` (decoded, e.g. `"/docs/"`) to
/// `out`, after sorting `entries` directories first, then by name.
pub fn render(url_path: &str, entries: &mut [Entry<'_>], out: &mut Vec<u8>) {
    entries.sort_unstable_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(b.name)));

    out.extend_from_slice(
        b"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Index of ",
    );
    html_escape(url_path, out);
    out.extend_from_slice(
        b"</title>\n<style>td,th{padding:0 1em 0 0;text-align:left}\
td:nth-child(3){text-align:right}</style>\n</head>\n<body>\n<h1>Index of ",
    );
    html_escape(url_path, out);
    out.extend_from_slice(
        b"</h1>\n<table>\n<thead><tr><th>Name</th><th>Last modified</th><th>Size</th></tr></thead>\n<tbody>\n",
    );
    if url_path != "/" {
        out.extend_from_slice(b"<tr><td><a href=\"../\">../</a></td><td></td><td>-</td></tr>\n");
    }
    for e in entries.iter() {
        out.extend_from_slice(b"<tr><td><a href=\"");
        percent_encode_segment(e.name, out);
        if e.is_dir {
            out.push(b'/');
        }
        out.extend_from_slice(b"\">");
        html_escape(e.name, out);
        if e.is_dir {
            out.push(b'/');
        }
        out.extend_from_slice(b"</a></td><td>");
        write_time(e.mtime, out);
        out.extend_from_slice(b"</td><td>");
        if e.is_dir {
            out.push(b'-');
        } else {
            let _ = write!(out, "{}", e.size);
        }
        out.extend_from_slice(b"</td></tr>\n");
    }
    out.extend_from_slice(b"</tbody>\n</table>\n</body>\n</html>\n");
}

/// Appends `s` with `& < > " '` replaced by entities.
pub fn html_escape(s: &str, out: &mut Vec<u8>) {
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let entity: &[u8] = match b {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' => b"&quot;",
            b'\'' => b"&#39;",
            _ => continue,
        };
        out.extend_from_slice(&s.as_bytes()[start..i]);
        out.extend_from_slice(entity);
        start = i + 1;
    }
    out.extend_from_slice(&s.as_bytes()[start..]);
}

/// Appends `s` with every byte other than RFC 3986 unreserved characters
/// and `/` written as `%XX` (uppercase hex).
pub fn percent_encode_segment(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// Appends `secs` since the epoch as UTC `YYYY-MM-DD HH:MM`.
fn write_time(secs: u64, out: &mut Vec<u8>) {
    let (y, m, d) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    );
}

/// (year, month 1..=12, day 1..=31) of a day count since 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url_path: &str, entries: &mut [Entry<'_>]) -> String {
        let mut out = Vec::new();
        render(url_path, entries, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn file(name: &str) -> Entry<'_> {
        Entry {
            name,
            is_dir: false,
            size: 0,
            mtime: 0,
        }
    }

    fn dir(name: &str) -> Entry<'_> {
        Entry {
            name,
            is_dir: true,
            size: 0,
            mtime: 0,
        }
    }

    #[test]
    fn escape_cases() {
        let cases: &[(&str, &str)] = &[
            ("", ""),
            ("plain.txt", "plain.txt"),
            ("a&b", "a&amp;b"),
            ("<script>", "&lt;script&gt;"),
            ("\"'", "&quot;&#39;"),
            ("&amp;", "&amp;amp;"),
            ("é<ü>", "é&lt;ü&gt;"),
        ];
        for &(s, want) in cases {
            let mut out = Vec::new();
            html_escape(s, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{s:?}");
        }
    }

    #[test]
    fn percent_cases() {
        let cases: &[(&str, &str)] = &[
            ("", ""),
            ("AZaz09-._~", "AZaz09-._~"),
            ("a b", "a%20b"),
            ("a#b?c%d", "a%23b%3Fc%25d"),
            ("a:b", "a%3Ab"),
            ("<\"'&>", "%3C%22%27%26%3E"),
            ("a+b=c;d,e", "a%2Bb%3Dc%3Bd%2Ce"),
            ("dir/sub", "dir/sub"),
            ("é", "%C3%A9"),
            ("\u{7f}\t", "%7F%09"),
        ];
        for &(s, want) in cases {
            let mut out = Vec::new();
            percent_encode_segment(s, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{s:?}");
        }
    }

    #[test]
    fn times() {
        let cases: &[(u64, &str)] = &[
            (0, "1970-01-01 00:00"),
            (59, "1970-01-01 00:00"),
            (86_399, "1970-01-01 23:59"),
            (951_782_400, "2000-02-29 00:00"),
            (951_868_800, "2000-03-01 00:00"),
            (1_709_164_800, "2024-02-29 00:00"),
            (1_700_000_000, "2023-11-14 22:13"),
            (4_102_444_799, "2099-12-31 23:59"),
            (4_107_542_400, "2100-03-01 00:00"),
            (253_402_300_799, "9999-12-31 23:59"),
            (253_402_300_800, "10000-01-01 00:00"),
        ];
        for &(secs, want) in cases {
            let mut out = Vec::new();
            write_time(secs, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{secs}");
        }
        let mut out = Vec::new();
        write_time(u64::MAX, &mut out); // must not overflow or panic
    }

    #[test]
    fn hostile_name_only_escaped() {
        let name = "<script>alert(1)</script>&\"'.txt";
        let html = page("/<b>&\"'/", &mut [file(name)]);
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(
            html.contains(">&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;.txt</a>"),
            "{html}"
        );
        assert!(
            html.contains("href=\"%3Cscript%3Ealert%281%29%3C/script%3E%26%22%27.txt\""),
            "{html}"
        );
        assert!(
            html.contains("<title>Index of /&lt;b&gt;&amp;&quot;&#39;/</title>"),
            "{html}"
        );
        assert!(
            html.contains("<h1>Index of /&lt;b&gt;&amp;&quot;&#39;/</h1>"),
            "{html}"
        );
    }

    #[test]
    fn hrefs() {
        let cases: &[(Entry<'_>, &str)] = &[
            (file("a b.txt"), "<a href=\"a%20b.txt\">a b.txt</a>"),
            (file("#1?x%20"), "<a href=\"%231%3Fx%2520\">#1?x%20</a>"),
            (file("c:d"), "<a href=\"c%3Ad\">c:d</a>"),
            (dir("my dir"), "<a href=\"my%20dir/\">my dir/</a>"),
            (file("naïve"), "<a href=\"na%C3%AFve\">naïve</a>"),
        ];
        for &(e, want) in cases {
            let html = page("/x/", &mut [e]);
            assert!(html.contains(want), "{e:?}\n{html}");
        }
    }

    #[test]
    fn parent_link() {
        let cases: &[(&str, bool)] = &[("/", false), ("/docs/", true), ("/a/b/", true)];
        for &(url_path, want) in cases {
            let html = page(url_path, &mut []);
            assert_eq!(html.contains("href=\"../\""), want, "{url_path}");
        }
    }

    #[test]
    fn rows_and_order() {
        let mut entries = [
            Entry {
                name: "b.txt",
                is_dir: false,
                size: 1234,
                mtime: 1_700_000_000,
            },
            Entry {
                name: "zdir",
                is_dir: true,
                size: 4096,
                mtime: 0,
            },
            Entry {
                name: "A.txt",
                is_dir: false,
                size: 0,
                mtime: 86_400,
            },
            Entry {
                name: "adir",
                is_dir: true,
                size: 4096,
                mtime: 951_782_400,
            },
            Entry {
                name: "a.txt",
                is_dir: false,
                size: u64::MAX,
                mtime: 0,
            },
        ];
        let html = page("/docs/", &mut entries);
        let names: Vec<&str> = entries.iter().map(|e| e.name).collect();
        assert_eq!(names, ["adir", "zdir", "A.txt", "a.txt", "b.txt"]);
        let rows: Vec<&str> = html.lines().filter(|l| l.starts_with("<tr><td>")).collect();
        let want = [
            "<tr><td><a href=\"../\">../</a></td><td></td><td>-</td></tr>",
            "<tr><td><a href=\"adir/\">adir/</a></td><td>2000-02-29 00:00</td><td>-</td></tr>",
            "<tr><td><a href=\"zdir/\">zdir/</a></td><td>1970-01-01 00:00</td><td>-</td></tr>",
            "<tr><td><a href=\"A.txt\">A.txt</a></td><td>1970-01-02 00:00</td><td>0</td></tr>",
            "<tr><td><a href=\"a.txt\">a.txt</a></td><td>1970-01-01 00:00</td><td>18446744073709551615</td></tr>",
            "<tr><td><a href=\"b.txt\">b.txt</a></td><td>2023-11-14 22:13</td><td>1234</td></tr>",
        ];
        assert_eq!(rows, want);
        assert!(html.starts_with("<!DOCTYPE html>\n"));
        assert!(html.ends_with("</html>\n"));
    }

    #[test]
    fn appends_to_existing_buffer() {
        let mut out = b"HEAD".to_vec();
        render("/", &mut [], &mut out);
        assert!(out.starts_with(b"HEAD<!DOCTYPE html>"));
    }
}

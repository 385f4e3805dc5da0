//! The `Range` header (RFC 9110 §14): byte ranges only.

/// Most ranges served in one multipart response; a request for more gets the
/// whole file, which is never larger than the parts would add up to anyway.
pub const MAX_RANGES: usize = 16;

/// What a `Range` header asks of a representation of `len` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeRequest {
    /// Not a byte range we understand, or too many: serve the whole file.
    Ignore,
    /// No range overlaps the file: 416.
    Unsatisfiable,
    /// Inclusive `(first, last)` byte positions, each inside the file.
    Ranges(Vec<(u64, u64)>),
}

/// Ranges closer than this are sent as one: a part's own head (boundary,
/// Content-Type, Content-Range) takes about 80 bytes, so sending the gap
/// costs less (RFC 9110 14.2 allows coalescing; lighttpd uses 80 too).
const COALESCE_GAP: u64 = 80;

/// Parses `bytes=a-b, c-, -n` against a file of `len` bytes, as lighttpd
/// 1.4.69 does: a unit other than `bytes` is ignored (RFC 9110 14.2: the
/// whole file), a range that is malformed or starts past the end is left
/// out, and when none is left the answer is 416 (`bytes=0--`, `bytes=-2-3`
/// and `bytes=25-` on a shorter file alike). Overlapping ranges, and ranges
/// less than [`COALESCE_GAP`] apart, are merged into the first of them.
pub fn parse_range(header: &[u8], len: u64) -> RangeRequest {
    let Ok(s) = std::str::from_utf8(header) else {
        return RangeRequest::Ignore;
    };
    let s = s.trim();
    let Some(spec) = s
        .get(..6)
        .filter(|p| p.eq_ignore_ascii_case("bytes="))
        .map(|_| &s[6..])
    else {
        return RangeRequest::Ignore;
    };
    let mut out: Vec<(u64, u64)> = Vec::new();
    for part in spec.split(',') {
        let Some(r) = one_range(crate::syntax::trim_ows_str(part), len) else {
            continue;
        };
        if out.len() == MAX_RANGES {
            return RangeRequest::Ignore;
        }
        out.push(r);
    }
    if out.is_empty() {
        return RangeRequest::Unsatisfiable;
    }
    coalesce(&mut out);
    RangeRequest::Ranges(out)
}

/// One `first-last`, `first-` or `-suffix` inside a file of `len` bytes;
/// `None` when it is malformed or not satisfiable.
fn one_range(part: &str, len: u64) -> Option<(u64, u64)> {
    let (a, b) = part.split_once('-')?;
    let (a, b) = (
        crate::syntax::trim_ows_str(a),
        crate::syntax::trim_ows_str(b),
    );
    if len == 0 {
        return None;
    }
    if a.is_empty() {
        // Suffix: the last `n` bytes.
        let n = digits(b)?;
        return (n > 0).then(|| (len.saturating_sub(n), len - 1));
    }
    let first = digits(a)?;
    if first >= len {
        return None;
    }
    let last = if b.is_empty() {
        len - 1
    } else {
        let l = digits(b)?;
        if l < first {
            return None;
        }
        l.min(len - 1)
    };
    Some((first, last))
}

/// Merges overlapping and nearly touching ranges into the first of them,
/// keeping the order the client asked in (RFC 9110 14.6).
fn coalesce(ranges: &mut Vec<(u64, u64)>) {
    let mut i = 0;
    while i < ranges.len() {
        let mut merged = false;
        let mut j = i + 1;
        while j < ranges.len() {
            let (a, b) = ranges[i];
            let (c, d) = ranges[j];
            let apart = if a <= c {
                c.saturating_sub(b) > COALESCE_GAP
            } else {
                a.saturating_sub(d) > COALESCE_GAP
            };
            if apart {
                j += 1;
                continue;
            }
            ranges[i] = (a.min(c), b.max(d));
            ranges.remove(j);
            merged = true;
        }
        if merged {
            // A wider range may now reach one it skipped: look again.
            continue;
        }
        i += 1;
    }
}

fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use RangeRequest::*;

    #[test]
    fn table() {
        let five_g = 5u64 << 30;
        let cases: &[(&str, &str, u64, RangeRequest)] = &[
            ("first ten", "bytes=0-9", 100, Ranges(vec![(0, 9)])),
            ("open end", "bytes=95-", 100, Ranges(vec![(95, 99)])),
            ("suffix", "bytes=-5", 100, Ranges(vec![(95, 99)])),
            (
                "suffix longer than file",
                "bytes=-500",
                100,
                Ranges(vec![(0, 99)]),
            ),
            ("end clamped", "bytes=90-200", 100, Ranges(vec![(90, 99)])),
            (
                "case and spaces",
                "Bytes= 0-0 , 200-300",
                1000,
                Ranges(vec![(0, 0), (200, 300)]),
            ),
            ("start past end", "bytes=100-", 100, Unsatisfiable),
            ("zero suffix", "bytes=-0", 100, Unsatisfiable),
            (
                "one bad one good",
                "bytes=200-300,0-1",
                100,
                Ranges(vec![(0, 1)]),
            ),
            ("empty file", "bytes=0-", 0, Unsatisfiable),
            ("inverted", "bytes=9-0", 100, Unsatisfiable),
            ("not bytes", "items=0-9", 100, Ignore),
            ("no unit at all", "0", 100, Ignore),
            ("no dash", "bytes=5", 100, Unsatisfiable),
            ("letters", "bytes=a-b", 100, Unsatisfiable),
            ("only commas", "bytes=,,", 100, Unsatisfiable),
            (
                "huge number",
                "bytes=99999999999999999999-",
                100,
                Unsatisfiable,
            ),
            ("two dashes", "bytes=0--", 6, Unsatisfiable),
            ("suffix then more", "bytes=-2-3", 6, Unsatisfiable),
            (
                "a bad one is left out",
                "bytes=x-y,0-0",
                6,
                Ranges(vec![(0, 0)]),
            ),
            (
                "close ranges merge",
                "bytes=0-1,3-4",
                6,
                Ranges(vec![(0, 4)]),
            ),
            (
                "far ranges stay apart",
                "bytes=0-1,97-98",
                100,
                Ranges(vec![(0, 1), (97, 98)]),
            ),
            (
                "overlap merges into the first, order kept",
                "bytes=500-600,0-10,550-700",
                1000,
                Ranges(vec![(500, 700), (0, 10)]),
            ),
            (
                "a merge that reaches an earlier range",
                "bytes=0-10,300-400,200-299",
                1000,
                Ranges(vec![(0, 10), (200, 400)]),
            ),
            (
                "past 4 GiB",
                "bytes=4831838208-4831838217",
                five_g,
                Ranges(vec![(4_831_838_208, 4_831_838_217)]),
            ),
        ];
        for (what, h, len, want) in cases {
            assert_eq!(&parse_range(h.as_bytes(), *len), want, "{what}");
        }
    }

    #[test]
    fn too_many_ranges_serve_the_whole_file() {
        let h: Vec<String> = (0..=MAX_RANGES).map(|i| format!("{i}-{i}")).collect();
        let h = format!("bytes={}", h.join(","));
        assert_eq!(parse_range(h.as_bytes(), 1000), Ignore);
    }
}

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

/// Parses `bytes=a-b, c-, -n` against a file of `len` bytes.
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
    let mut out = Vec::new();
    let mut any = false;
    for part in spec.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        any = true;
        let Some((a, b)) = part.split_once('-') else {
            return RangeRequest::Ignore;
        };
        let (a, b) = (a.trim(), b.trim());
        let range = if a.is_empty() {
            // Suffix: the last `n` bytes.
            let Some(n) = digits(b) else {
                return RangeRequest::Ignore;
            };
            if n == 0 || len == 0 {
                None
            } else {
                Some((len.saturating_sub(n), len - 1))
            }
        } else {
            let Some(first) = digits(a) else {
                return RangeRequest::Ignore;
            };
            let last = if b.is_empty() {
                u64::MAX
            } else {
                match digits(b) {
                    Some(l) if l >= first => l,
                    _ => return RangeRequest::Ignore,
                }
            };
            if first >= len {
                None
            } else {
                Some((first, last.min(len - 1)))
            }
        };
        if let Some(r) = range {
            if out.len() == MAX_RANGES {
                return RangeRequest::Ignore;
            }
            out.push(r);
        }
    }
    if !any {
        RangeRequest::Ignore
    } else if out.is_empty() {
        RangeRequest::Unsatisfiable
    } else {
        RangeRequest::Ranges(out)
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
                "Bytes= 0-0 , 2-3",
                100,
                Ranges(vec![(0, 0), (2, 3)]),
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
            ("inverted", "bytes=9-0", 100, Ignore),
            ("not bytes", "items=0-9", 100, Ignore),
            ("no dash", "bytes=5", 100, Ignore),
            ("letters", "bytes=a-b", 100, Ignore),
            ("only commas", "bytes=,,", 100, Ignore),
            ("huge number", "bytes=99999999999999999999-", 100, Ignore),
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

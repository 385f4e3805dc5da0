//! Decoding `Transfer-Encoding: chunked` request bodies (RFC 9112 §7.1),
//! incrementally, as bytes arrive.

/// Longest chunk-size line (hex digits, extensions) accepted.
const MAX_LINE: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a chunk-size line.
    Size,
    /// Reading `n` more data bytes of a chunk.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// Reading trailer lines after the last chunk.
    Trailer,
    Done,
}

/// An incremental decoder.
#[derive(Debug)]
pub struct Decoder {
    state: State,
    line: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            state: State::Size,
            line: Vec::new(),
        }
    }
}

impl Decoder {
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes from `input`, appending data to `out`; returns the bytes consumed.
    /// Stops at the end of the body (later bytes are the next request).
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, &'static str> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                State::Done => break,
                State::Data(n) => {
                    let take = (n as usize).min(input.len() - i);
                    out.extend_from_slice(&input[i..i + take]);
                    i += take;
                    let left = n - take as u64;
                    self.state = if left == 0 {
                        State::DataEnd
                    } else {
                        State::Data(left)
                    };
                }
                State::Size | State::DataEnd | State::Trailer => {
                    let b = input[i];
                    i += 1;
                    if b != b'\n' {
                        if self.line.len() >= MAX_LINE {
                            return Err("chunk line too long");
                        }
                        self.line.push(b);
                        continue;
                    }
                    let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
                    match self.state {
                        State::DataEnd => {
                            if !line.is_empty() {
                                return Err("chunk data longer than its size");
                            }
                            self.state = State::Size;
                        }
                        State::Trailer => {
                            if line.is_empty() {
                                self.state = State::Done;
                            }
                        }
                        _ => {
                            let digits = line.split(|&c| c == b';').next().unwrap_or(b"");
                            let digits = crate::msg::request::trim_ows(digits);
                            if digits.len() > 15 || !crate::syntax::is_hex(digits) {
                                return Err("invalid chunk size");
                            }
                            let n = digits.iter().fold(0u64, |acc, &d| {
                                acc * 16 + u64::from(crate::syntax::hex_value(d).unwrap_or(0))
                            });
                            self.state = if n == 0 {
                                State::Trailer
                            } else {
                                State::Data(n)
                            };
                        }
                    }
                    self.line.clear();
                }
            }
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        /// decoded body, bytes consumed, complete
        type Want<'a> = Result<(&'a [u8], usize, bool), ()>;
        let cases: &[(&str, &[u8], Want)] = &[
            (
                "one chunk",
                b"5\r\nhello\r\n0\r\n\r\n",
                Ok((b"hello", 15, true)),
            ),
            (
                "two chunks and extension",
                b"2;x=y\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n",
                Ok((b"hello", 24, true)),
            ),
            (
                "trailer",
                b"1\r\na\r\n0\r\nX-T: 1\r\n\r\n",
                Ok((b"a", 19, true)),
            ),
            (
                "stops at the next request",
                b"1\r\na\r\n0\r\n\r\nGET /",
                Ok((b"a", 11, true)),
            ),
            ("partial", b"5\r\nhel", Ok((b"hel", 6, false))),
            ("bad size", b"zz\r\n", Err(())),
            ("data too long", b"1\r\nab\r\n", Err(())),
            ("huge size", b"ffffffffffffffff\r\n", Err(())),
        ];
        for (what, input, want) in cases {
            let mut d = Decoder::default();
            let mut out = Vec::new();
            let got = d.decode(input, &mut out).map(|n| (n, d.is_done()));
            match want {
                Ok((body, n, done)) => {
                    assert_eq!(got, Ok((*n, *done)), "{what}");
                    assert_eq!(&out[..], *body, "{what}");
                }
                Err(()) => assert!(got.is_err(), "{what}"),
            }
        }
    }

    #[test]
    fn byte_at_a_time() {
        let input = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let mut d = Decoder::default();
        let mut out = Vec::new();
        for b in input.chunks(1) {
            assert_eq!(d.decode(b, &mut out), Ok(1));
        }
        assert!(d.is_done());
        assert_eq!(out, b"abcde");
    }
}

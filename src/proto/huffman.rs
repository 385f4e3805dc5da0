//! The Huffman code of HPACK (RFC 7541 §5.2 and Appendix B), which QPACK
//! uses as it is (RFC 9204 §4.1.2): one implementation for HTTP/2 and HTTP/3.
//!
//! Decoding is a state machine over 4-bit steps (the states are the
//! internal nodes of the code's tree), built at compile time from
//! [`CODES`]; a test checks it against a decoder that searches the codes
//! by length.

/// Why a Huffman string was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HuffmanError {
    /// The EOS symbol appeared in the data (§5.2: a decoding error).
    Eos,
    /// The string ended with more than 7 bits of padding, or padding that
    /// is not the most significant bits of EOS (all ones) (§5.2).
    BadPadding,
    /// Decoding would pass the caller's output bound.
    TooLong,
}

/// (code, length in bits) for each symbol 0..=255 and EOS (256), from Appendix B.
#[rustfmt::skip]
pub const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), // 0
    (0x7fffd8, 23), // 1
    (0xfffffe2, 28), // 2
    (0xfffffe3, 28), // 3
    (0xfffffe4, 28), // 4
    (0xfffffe5, 28), // 5
    (0xfffffe6, 28), // 6
    (0xfffffe7, 28), // 7
    (0xfffffe8, 28), // 8
    (0xffffea, 24), // 9
    (0x3ffffffc, 30), // 10
    (0xfffffe9, 28), // 11
    (0xfffffea, 28), // 12
    (0x3ffffffd, 30), // 13
    (0xfffffeb, 28), // 14
    (0xfffffec, 28), // 15
    (0xfffffed, 28), // 16
    (0xfffffee, 28), // 17
    (0xfffffef, 28), // 18
    (0xffffff0, 28), // 19
    (0xffffff1, 28), // 20
    (0xffffff2, 28), // 21
    (0x3ffffffe, 30), // 22
    (0xffffff3, 28), // 23
    (0xffffff4, 28), // 24
    (0xffffff5, 28), // 25
    (0xffffff6, 28), // 26
    (0xffffff7, 28), // 27
    (0xffffff8, 28), // 28
    (0xffffff9, 28), // 29
    (0xffffffa, 28), // 30
    (0xffffffb, 28), // 31
    (0x14, 6), // 32
    (0x3f8, 10), // 33
    (0x3f9, 10), // 34
    (0xffa, 12), // 35
    (0x1ff9, 13), // 36
    (0x15, 6), // 37
    (0xf8, 8), // 38
    (0x7fa, 11), // 39
    (0x3fa, 10), // 40
    (0x3fb, 10), // 41
    (0xf9, 8), // 42
    (0x7fb, 11), // 43
    (0xfa, 8), // 44
    (0x16, 6), // 45
    (0x17, 6), // 46
    (0x18, 6), // 47
    (0x0, 5), // 48
    (0x1, 5), // 49
    (0x2, 5), // 50
    (0x19, 6), // 51
    (0x1a, 6), // 52
    (0x1b, 6), // 53
    (0x1c, 6), // 54
    (0x1d, 6), // 55
    (0x1e, 6), // 56
    (0x1f, 6), // 57
    (0x5c, 7), // 58
    (0xfb, 8), // 59
    (0x7ffc, 15), // 60
    (0x20, 6), // 61
    (0xffb, 12), // 62
    (0x3fc, 10), // 63
    (0x1ffa, 13), // 64
    (0x21, 6), // 65
    (0x5d, 7), // 66
    (0x5e, 7), // 67
    (0x5f, 7), // 68
    (0x60, 7), // 69
    (0x61, 7), // 70
    (0x62, 7), // 71
    (0x63, 7), // 72
    (0x64, 7), // 73
    (0x65, 7), // 74
    (0x66, 7), // 75
    (0x67, 7), // 76
    (0x68, 7), // 77
    (0x69, 7), // 78
    (0x6a, 7), // 79
    (0x6b, 7), // 80
    (0x6c, 7), // 81
    (0x6d, 7), // 82
    (0x6e, 7), // 83
    (0x6f, 7), // 84
    (0x70, 7), // 85
    (0x71, 7), // 86
    (0x72, 7), // 87
    (0xfc, 8), // 88
    (0x73, 7), // 89
    (0xfd, 8), // 90
    (0x1ffb, 13), // 91
    (0x7fff0, 19), // 92
    (0x1ffc, 13), // 93
    (0x3ffc, 14), // 94
    (0x22, 6), // 95
    (0x7ffd, 15), // 96
    (0x3, 5), // 97
    (0x23, 6), // 98
    (0x4, 5), // 99
    (0x24, 6), // 100
    (0x5, 5), // 101
    (0x25, 6), // 102
    (0x26, 6), // 103
    (0x27, 6), // 104
    (0x6, 5), // 105
    (0x74, 7), // 106
    (0x75, 7), // 107
    (0x28, 6), // 108
    (0x29, 6), // 109
    (0x2a, 6), // 110
    (0x7, 5), // 111
    (0x2b, 6), // 112
    (0x76, 7), // 113
    (0x2c, 6), // 114
    (0x8, 5), // 115
    (0x9, 5), // 116
    (0x2d, 6), // 117
    (0x77, 7), // 118
    (0x78, 7), // 119
    (0x79, 7), // 120
    (0x7a, 7), // 121
    (0x7b, 7), // 122
    (0x7ffe, 15), // 123
    (0x7fc, 11), // 124
    (0x3ffd, 14), // 125
    (0x1ffd, 13), // 126
    (0xffffffc, 28), // 127
    (0xfffe6, 20), // 128
    (0x3fffd2, 22), // 129
    (0xfffe7, 20), // 130
    (0xfffe8, 20), // 131
    (0x3fffd3, 22), // 132
    (0x3fffd4, 22), // 133
    (0x3fffd5, 22), // 134
    (0x7fffd9, 23), // 135
    (0x3fffd6, 22), // 136
    (0x7fffda, 23), // 137
    (0x7fffdb, 23), // 138
    (0x7fffdc, 23), // 139
    (0x7fffdd, 23), // 140
    (0x7fffde, 23), // 141
    (0xffffeb, 24), // 142
    (0x7fffdf, 23), // 143
    (0xffffec, 24), // 144
    (0xffffed, 24), // 145
    (0x3fffd7, 22), // 146
    (0x7fffe0, 23), // 147
    (0xffffee, 24), // 148
    (0x7fffe1, 23), // 149
    (0x7fffe2, 23), // 150
    (0x7fffe3, 23), // 151
    (0x7fffe4, 23), // 152
    (0x1fffdc, 21), // 153
    (0x3fffd8, 22), // 154
    (0x7fffe5, 23), // 155
    (0x3fffd9, 22), // 156
    (0x7fffe6, 23), // 157
    (0x7fffe7, 23), // 158
    (0xffffef, 24), // 159
    (0x3fffda, 22), // 160
    (0x1fffdd, 21), // 161
    (0xfffe9, 20), // 162
    (0x3fffdb, 22), // 163
    (0x3fffdc, 22), // 164
    (0x7fffe8, 23), // 165
    (0x7fffe9, 23), // 166
    (0x1fffde, 21), // 167
    (0x7fffea, 23), // 168
    (0x3fffdd, 22), // 169
    (0x3fffde, 22), // 170
    (0xfffff0, 24), // 171
    (0x1fffdf, 21), // 172
    (0x3fffdf, 22), // 173
    (0x7fffeb, 23), // 174
    (0x7fffec, 23), // 175
    (0x1fffe0, 21), // 176
    (0x1fffe1, 21), // 177
    (0x3fffe0, 22), // 178
    (0x1fffe2, 21), // 179
    (0x7fffed, 23), // 180
    (0x3fffe1, 22), // 181
    (0x7fffee, 23), // 182
    (0x7fffef, 23), // 183
    (0xfffea, 20), // 184
    (0x3fffe2, 22), // 185
    (0x3fffe3, 22), // 186
    (0x3fffe4, 22), // 187
    (0x7ffff0, 23), // 188
    (0x3fffe5, 22), // 189
    (0x3fffe6, 22), // 190
    (0x7ffff1, 23), // 191
    (0x3ffffe0, 26), // 192
    (0x3ffffe1, 26), // 193
    (0xfffeb, 20), // 194
    (0x7fff1, 19), // 195
    (0x3fffe7, 22), // 196
    (0x7ffff2, 23), // 197
    (0x3fffe8, 22), // 198
    (0x1ffffec, 25), // 199
    (0x3ffffe2, 26), // 200
    (0x3ffffe3, 26), // 201
    (0x3ffffe4, 26), // 202
    (0x7ffffde, 27), // 203
    (0x7ffffdf, 27), // 204
    (0x3ffffe5, 26), // 205
    (0xfffff1, 24), // 206
    (0x1ffffed, 25), // 207
    (0x7fff2, 19), // 208
    (0x1fffe3, 21), // 209
    (0x3ffffe6, 26), // 210
    (0x7ffffe0, 27), // 211
    (0x7ffffe1, 27), // 212
    (0x3ffffe7, 26), // 213
    (0x7ffffe2, 27), // 214
    (0xfffff2, 24), // 215
    (0x1fffe4, 21), // 216
    (0x1fffe5, 21), // 217
    (0x3ffffe8, 26), // 218
    (0x3ffffe9, 26), // 219
    (0xffffffd, 28), // 220
    (0x7ffffe3, 27), // 221
    (0x7ffffe4, 27), // 222
    (0x7ffffe5, 27), // 223
    (0xfffec, 20), // 224
    (0xfffff3, 24), // 225
    (0xfffed, 20), // 226
    (0x1fffe6, 21), // 227
    (0x3fffe9, 22), // 228
    (0x1fffe7, 21), // 229
    (0x1fffe8, 21), // 230
    (0x7ffff3, 23), // 231
    (0x3fffea, 22), // 232
    (0x3fffeb, 22), // 233
    (0x1ffffee, 25), // 234
    (0x1ffffef, 25), // 235
    (0xfffff4, 24), // 236
    (0xfffff5, 24), // 237
    (0x3ffffea, 26), // 238
    (0x7ffff4, 23), // 239
    (0x3ffffeb, 26), // 240
    (0x7ffffe6, 27), // 241
    (0x3ffffec, 26), // 242
    (0x3ffffed, 26), // 243
    (0x7ffffe7, 27), // 244
    (0x7ffffe8, 27), // 245
    (0x7ffffe9, 27), // 246
    (0x7ffffea, 27), // 247
    (0x7ffffeb, 27), // 248
    (0xffffffe, 28), // 249
    (0x7ffffec, 27), // 250
    (0x7ffffed, 27), // 251
    (0x7ffffee, 27), // 252
    (0x7ffffef, 27), // 253
    (0x7fffff0, 27), // 254
    (0x3ffffee, 26), // 255
    (0x3fffffff, 30), // 256
];

const EOS: usize = 256;

/// A child in [`tree`]: a leaf holds `LEAF | symbol`, else the index of an
/// internal node (never 0, the root).
const LEAF: u16 = 0x8000;

/// The code's tree: the 256 internal nodes of its 257 leaves, each with
/// its two children, and per node how many bits lead to it from the root
/// and whether they are all ones (a prefix of EOS: valid padding while
/// at most 7 bits long, §5.2).
struct Tree {
    child: [[u16; 2]; 256],
    depth: [u8; 256],
    ones: [bool; 256],
}

const fn tree() -> Tree {
    let mut t = Tree {
        child: [[0; 2]; 256],
        depth: [0; 256],
        ones: [false; 256],
    };
    t.ones[0] = true;
    let mut next = 1;
    let mut s = 0;
    while s < 257 {
        let (code, len) = CODES[s];
        let mut node = 0;
        let mut i = len as i32 - 1;
        while i > 0 {
            let bit = ((code >> i) & 1) as usize;
            if t.child[node][bit] == 0 {
                t.child[node][bit] = next as u16;
                t.depth[next] = t.depth[node] + 1;
                t.ones[next] = t.ones[node] && bit == 1;
                next += 1;
            }
            node = t.child[node][bit] as usize;
            i -= 1;
        }
        t.child[node][(code & 1) as usize] = LEAF | s as u16;
        s += 1;
    }
    t
}

/// Flags of a [`STEPS`] entry (its bits 8 to 15).
const EMIT: u32 = 1 << 8;
const FAIL: u32 = 1 << 9;
const ACCEPT: u32 = 1 << 10;

/// The decoder as a state machine over 4-bit steps: for each internal
/// node of the tree (the bits of an unfinished code read so far) and each
/// next 4 bits, the node reached (bits 0 to 7), the symbol completed on
/// the way if any (`EMIT`, the symbol in bits 16 to 23; every code is at
/// least 5 bits long, so one at most), `FAIL` when that was EOS, and
/// `ACCEPT` when the string may end there (at the root, or within 7 bits
/// of padding ones). Two look-ups per input byte, where walking the code
/// lengths took a step per bit of a long code and the table of short
/// codes a shift, mask and look-up per symbol (~57 instructions per
/// character of a Huffman-coded `:path`).
const fn steps() -> [[u32; 16]; 256] {
    let t = tree();
    let mut f = [[0u32; 16]; 256];
    let mut st = 0;
    while st < 256 {
        let mut nib = 0;
        while nib < 16 {
            let mut node = st;
            let mut e = 0u32;
            let mut i = 3i32;
            while i >= 0 {
                let c = t.child[node][(nib >> i) & 1];
                if c & LEAF != 0 {
                    let sym = (c & !LEAF) as usize;
                    if sym == EOS {
                        e |= FAIL;
                    } else {
                        e |= EMIT | (sym as u32) << 16;
                    }
                    node = 0;
                } else {
                    node = c as usize;
                }
                i -= 1;
            }
            if t.ones[node] && t.depth[node] <= 7 {
                e |= ACCEPT;
            }
            f[st][nib] = e | node as u32;
            nib += 1;
        }
        st += 1;
    }
    f
}

static STEPS: [[u32; 16]; 256] = steps();

/// Decodes `src` and appends it to `out`, refusing to let `out` grow by more
/// than `max_out` bytes: a bound the caller derives from its header list
/// budget, so a bomb is stopped before it is stored.
pub fn decode(src: &[u8], out: &mut Vec<u8>, max_out: usize) -> Result<(), HuffmanError> {
    let start = out.len();
    // At most one symbol per 5 bits.
    out.reserve((src.len() * 8 / 5).min(max_out));
    let mut state = 0;
    let mut accept = true;
    for &b in src {
        for nib in [b >> 4, b & 0xf] {
            let e = STEPS[state][nib as usize];
            if e & FAIL != 0 {
                return Err(HuffmanError::Eos);
            }
            if e & EMIT != 0 {
                if out.len() - start >= max_out {
                    return Err(HuffmanError::TooLong);
                }
                out.push((e >> 16) as u8);
            }
            state = (e & 0xff) as usize;
            accept = e & ACCEPT != 0;
        }
    }
    // What is left must be padding: at most 7 bits, all ones (EOS's prefix).
    if !accept {
        return Err(HuffmanError::BadPadding);
    }
    Ok(())
}

/// The length `src` would have Huffman-encoded, in bytes.
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| CODES[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

/// Appends the Huffman encoding of `src` to `out`, padded with ones (§5.2).
pub fn encode(src: &[u8], out: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut nbits = 0;
    for &b in src {
        let (code, len) = CODES[b as usize];
        acc = (acc << len) | code as u64;
        nbits += len as usize;
        while nbits >= 8 {
            nbits -= 8;
            out.push((acc >> nbits) as u8);
        }
        acc &= (1u64 << nbits) - 1;
    }
    if nbits > 0 {
        let pad = 8 - nbits;
        out.push(((acc << pad) as u8) | ((1u8 << pad) - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The decoder before the state machine, by code lengths over the
    // canonical code: the reference the state machine is checked against.
    const MIN_LEN: usize = 5;
    const MAX_LEN: usize = 30;

    fn decode_by_lengths(
        src: &[u8],
        out: &mut Vec<u8>,
        max_out: usize,
    ) -> Result<(), HuffmanError> {
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (CODES[s].1, s));
        let start = out.len();
        let (mut acc, mut nbits) = (0u64, 0usize);
        for &b in src {
            acc = (acc << 8) | b as u64;
            nbits += 8;
            'sym: while nbits >= MIN_LEN {
                for len in MIN_LEN..=MAX_LEN.min(nbits) {
                    let code = ((acc >> (nbits - len)) & ((1u64 << len) - 1)) as u32;
                    if let Some(&sym) = order.iter().find(|&&s| CODES[s] == (code, len as u8)) {
                        if sym == EOS {
                            return Err(HuffmanError::Eos);
                        }
                        if out.len() - start >= max_out {
                            return Err(HuffmanError::TooLong);
                        }
                        out.push(sym as u8);
                        nbits -= len;
                        acc &= (1u64 << nbits) - 1;
                        continue 'sym;
                    }
                }
                break;
            }
        }
        if nbits > 7 || acc != (1u64 << nbits) - 1 {
            return Err(HuffmanError::BadPadding);
        }
        Ok(())
    }

    #[test]
    fn state_machine_agrees_with_code_lengths() {
        // Random byte strings (mostly invalid: EOS, bad padding) and the
        // encodings of random text, with tight and loose output bounds.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..10_000 {
            let n = (rnd() % 12) as usize;
            let mut src: Vec<u8> = (0..n).map(|_| rnd() as u8).collect();
            if round % 2 == 0 {
                let text: Vec<u8> = (0..n)
                    .map(|_| b"/abcxyz.-_0123%?=&AZ~"[(rnd() % 21) as usize])
                    .collect();
                src.clear();
                encode(&text, &mut src);
            }
            if round % 7 == 1 {
                // EOS (30 ones) somewhere in it.
                let at = (rnd() as usize) % (src.len() + 1);
                src.splice(at..at, [0xff; 4]);
            }
            let bound = if round % 3 == 0 {
                (rnd() % 8) as usize
            } else {
                usize::MAX
            };
            let (mut a, mut b) = (vec![7u8], vec![7u8]);
            let got = decode(&src, &mut a, bound);
            let want = decode_by_lengths(&src, &mut b, bound);
            assert_eq!((got, &a), (want, &b), "{src:02x?} bound {bound}");
        }
    }

    #[test]
    fn table_is_canonical() {
        // Rebuild every code from the lengths alone; the decoder relies on it.
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (CODES[s].1, s));
        let mut code = 0u32;
        for w in 0..order.len() {
            if w > 0 {
                code = (code + 1) << (CODES[order[w]].1 - CODES[order[w - 1]].1);
            }
            assert_eq!(code, CODES[order[w]].0, "symbol {}", order[w]);
        }
        assert_eq!(CODES[EOS], (0x3fff_ffff, 30));
    }

    #[test]
    #[rustfmt::skip]
    fn rfc7541_strings() {
        // The Huffman strings of Appendix C.4 and C.6.
        let cases: &[(&str, &[u8], &[u8])] = &[
            ("C.4.1 www.example.com", b"www.example.com", b"\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90\xf4\xff"),
            ("C.4.2 no-cache", b"no-cache", b"\xa8\xeb\x10\x64\x9c\xbf"),
            ("C.4.3 custom-key", b"custom-key", b"\x25\xa8\x49\xe9\x5b\xa9\x7d\x7f"),
            ("C.4.3 custom-value", b"custom-value", b"\x25\xa8\x49\xe9\x5b\xb8\xe8\xb4\xbf"),
            ("C.6.1 302", b"302", b"\x64\x02"),
            ("C.6.1 private", b"private", b"\xae\xc3\x77\x1a\x4b"),
            ("C.6.1 date", b"Mon, 21 Oct 2013 20:13:21 GMT", b"\xd0\x7a\xbe\x94\x10\x54\xd4\x44\xa8\x20\x05\x95\x04\x0b\x81\x66\xe0\x82\xa6\x2d\x1b\xff"),
            ("C.6.1 location", b"https://www.example.com", b"\x9d\x29\xad\x17\x18\x63\xc7\x8f\x0b\x97\xc8\xe9\xae\x82\xae\x43\xd3"),
            ("C.6.2 307", b"307", b"\x64\x0e\xff"),
            ("C.6.3 gzip", b"gzip", b"\x9b\xd9\xab"),
            ("C.6.3 set-cookie", b"foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1", b"\x94\xe7\x82\x1d\xd7\xf2\xe6\xc7\xb3\x35\xdf\xdf\xcd\x5b\x39\x60\xd5\xaf\x27\x08\x7f\x36\x72\xc1\xab\x27\x0f\xb5\x29\x1f\x95\x87\x31\x60\x65\xc0\x03\xed\x4e\xe5\xb1\x06\x3d\x50\x07"),
            ("empty", b"", b""),
        ];
        for (why, plain, coded) in cases {
            let mut out = Vec::new();
            encode(plain, &mut out);
            assert_eq!(out, *coded, "{why}: encode");
            assert_eq!(encoded_len(plain), coded.len(), "{why}: encoded_len");
            out.clear();
            assert_eq!(decode(coded, &mut out, usize::MAX), Ok(()), "{why}: decode");
            assert_eq!(out, *plain, "{why}: decoded");
        }
    }

    #[test]
    #[rustfmt::skip]
    fn bad_strings() {
        let cases: &[(&str, &[u8], HuffmanError)] = &[
            // EOS is 30 ones; four 0xff bytes hold EOS then 2 padding bits.
            ("EOS in the data", b"\xff\xff\xff\xff", HuffmanError::Eos),
            // 'a' is 00011 (5 bits) + 3 padding bits that are not all ones.
            ("padding with a zero bit", b"\x18", HuffmanError::BadPadding),
            // 'a' then 0xff: 3 + 8 = 11 bits of ones, a prefix of EOS but > 7 bits.
            ("padding of 11 bits", b"\x1f\xff", HuffmanError::BadPadding),
            ("a whole byte of padding", b"\xff", HuffmanError::BadPadding),
        ];
        for (why, coded, want) in cases {
            let mut out = Vec::new();
            assert_eq!(decode(coded, &mut out, usize::MAX), Err(*want), "{why}");
        }
        // 'a' with 3 one bits of padding is fine.
        let mut out = Vec::new();
        assert_eq!(decode(b"\x1f", &mut out, 8), Ok(()));
        assert_eq!(out, b"a");
    }

    #[test]
    fn output_bound_stops_decoding() {
        // "0" is 00000: eight of them in 5 bytes decode to 8 bytes.
        let coded = [0u8; 5];
        let mut out = Vec::new();
        assert_eq!(decode(&coded, &mut out, 7), Err(HuffmanError::TooLong));
        assert_eq!(out.len(), 7, "stopped at the bound, nothing past it stored");
        out.clear();
        assert_eq!(decode(&coded, &mut out, 8), Ok(()));
        assert_eq!(out, b"00000000");
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for n in [0, 1, 2, 7, 100, all.len()] {
            let mut coded = Vec::new();
            encode(&all[..n], &mut coded);
            assert_eq!(coded.len(), encoded_len(&all[..n]));
            let mut back = Vec::new();
            assert_eq!(decode(&coded, &mut back, n), Ok(()), "n {n}");
            assert_eq!(back, &all[..n]);
        }
    }
}

//! Traditional DES crypt(3), for htpasswd lines of 13 characters.

use super::ITOA64;
use tables::*;

/// DES's tables (FIPS 46-3), as 1-based bit positions.
mod tables {
    pub const IP: [u8; 64] = [
        58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4, 62, 54, 46, 38, 30, 22, 14,
        6, 64, 56, 48, 40, 32, 24, 16, 8, 57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11,
        3, 61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7,
    ];
    pub const FP: [u8; 64] = [
        40, 8, 48, 16, 56, 24, 64, 32, 39, 7, 47, 15, 55, 23, 63, 31, 38, 6, 46, 14, 54, 22, 62,
        30, 37, 5, 45, 13, 53, 21, 61, 29, 36, 4, 44, 12, 52, 20, 60, 28, 35, 3, 43, 11, 51, 19,
        59, 27, 34, 2, 42, 10, 50, 18, 58, 26, 33, 1, 41, 9, 49, 17, 57, 25,
    ];
    pub const PC1: [u8; 56] = [
        57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18, 10, 2, 59, 51, 43, 35, 27, 19, 11, 3,
        60, 52, 44, 36, 63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22, 14, 6, 61, 53, 45,
        37, 29, 21, 13, 5, 28, 20, 12, 4,
    ];
    pub const PC2: [u8; 48] = [
        14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2, 41,
        52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32,
    ];
    pub const SHIFTS: [u8; 16] = [1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1];
    pub const E: [u8; 48] = [
        32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17, 16, 17,
        18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31, 32, 1,
    ];
    pub const P: [u8; 32] = [
        16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10, 2, 8, 24, 14, 32, 27, 3, 9,
        19, 13, 30, 6, 22, 11, 4, 25,
    ];
    pub const S: [[u8; 64]; 8] = [
        [
            14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7, 0, 15, 7, 4, 14, 2, 13, 1, 10, 6,
            12, 11, 9, 5, 3, 8, 4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0, 15, 12, 8, 2,
            4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13,
        ],
        [
            15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10, 3, 13, 4, 7, 15, 2, 8, 14, 12, 0,
            1, 10, 6, 9, 11, 5, 0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15, 13, 8, 10, 1,
            3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9,
        ],
        [
            10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8, 13, 7, 0, 9, 3, 4, 6, 10, 2, 8,
            5, 14, 12, 11, 15, 1, 13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7, 1, 10, 13,
            0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12,
        ],
        [
            7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15, 13, 8, 11, 5, 6, 15, 0, 3, 4, 7,
            2, 12, 1, 10, 14, 9, 10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4, 3, 15, 0, 6,
            10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14,
        ],
        [
            2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9, 14, 11, 2, 12, 4, 7, 13, 1, 5, 0,
            15, 10, 3, 9, 8, 6, 4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14, 11, 8, 12, 7,
            1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3,
        ],
        [
            12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11, 10, 15, 4, 2, 7, 12, 9, 5, 6, 1,
            13, 14, 0, 11, 3, 8, 9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6, 4, 3, 2, 12,
            9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13,
        ],
        [
            4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1, 13, 0, 11, 7, 4, 9, 1, 10, 14, 3,
            5, 12, 2, 15, 8, 6, 1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2, 6, 11, 13, 8,
            1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12,
        ],
        [
            13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7, 1, 15, 13, 8, 10, 3, 7, 4, 12, 5,
            6, 11, 0, 14, 9, 2, 7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8, 2, 1, 14, 7,
            4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11,
        ],
    ];
}

/// Traditional DES crypt(3) (Seventh Edition Unix, as glibc's and
/// libxcrypt's `descrypt`): 25 DES encryptions of a zero block under the
/// password's first 8 bytes (7 bits each), with the 12-bit salt swapping
/// pairs of the expansion's outputs. Returns the 13 characters crypt(3)
/// prints, or `None` when the salt holds a character outside its alphabet.
/// A bit per byte keeps it plain to check against the standard; at 400
/// DES blocks a check it costs well under a millisecond.
pub fn des_crypt(pw: &[u8], salt: &[u8]) -> Option<String> {
    let s0 = ITOA64.iter().position(|&c| Some(&c) == salt.first())?;
    let s1 = ITOA64.iter().position(|&c| Some(&c) == salt.get(1))?;
    let e = salted_expansion(s0, s1);
    let subkeys = subkeys(pw);
    let mut block = [0u8; 64];
    for _ in 0..25 {
        block = encrypt(&block, &subkeys, &e);
    }
    // 64 bits as 11 characters of 6 bits (the last padded with two zeros).
    let mut out = String::with_capacity(13);
    out.push(ITOA64[s0] as char);
    out.push(ITOA64[s1] as char);
    for i in 0..11 {
        let mut c = 0usize;
        for j in 0..6 {
            c = (c << 1) | usize::from(block.get(6 * i + j).copied().unwrap_or(0));
        }
        out.push(ITOA64[c] as char);
    }
    Some(out)
}

/// The expansion E with the salt applied: its bit j of character i swaps
/// outputs 6i+j and 6i+j+24.
fn salted_expansion(s0: usize, s1: usize) -> [u8; 48] {
    let mut e = E;
    for (i, v) in [s0, s1].into_iter().enumerate() {
        for j in 0..6 {
            if (v >> j) & 1 == 1 {
                e.swap(6 * i + j, 6 * i + j + 24);
            }
        }
    }
    e
}

/// The 16 round keys of the password's first 8 bytes.
fn subkeys(pw: &[u8]) -> [[u8; 48]; 16] {
    // The key: 7 bits of each of the first 8 bytes, most significant first;
    // every 8th bit (parity) stays 0.
    let mut key = [0u8; 64];
    for (i, &c) in pw.iter().take(8).enumerate() {
        for j in 0..7 {
            key[8 * i + j] = (c >> (6 - j)) & 1;
        }
    }
    let mut cd = [0u8; 56];
    for (o, &p) in cd.iter_mut().zip(PC1.iter()) {
        *o = key[usize::from(p) - 1];
    }
    let mut subkeys = [[0u8; 48]; 16];
    for (round, sk) in subkeys.iter_mut().enumerate() {
        for _ in 0..SHIFTS[round] {
            cd[..28].rotate_left(1);
            cd[28..].rotate_left(1);
        }
        for (o, &p) in sk.iter_mut().zip(PC2.iter()) {
            *o = cd[usize::from(p) - 1];
        }
    }
    subkeys
}

/// One DES encryption of `block` under `subkeys`, with expansion `e`.
fn encrypt(block: &[u8; 64], subkeys: &[[u8; 48]; 16], e: &[u8; 48]) -> [u8; 64] {
    let mut lr = [0u8; 64];
    for (o, &p) in lr.iter_mut().zip(IP.iter()) {
        *o = block[usize::from(p) - 1];
    }
    let (mut l, mut r) = ([0u8; 32], [0u8; 32]);
    l.copy_from_slice(&lr[..32]);
    r.copy_from_slice(&lr[32..]);
    for sk in subkeys {
        let f = feistel(&r, sk, e);
        let mut nr = [0u8; 32];
        for ((o, &a), &b) in nr.iter_mut().zip(l.iter()).zip(f.iter()) {
            *o = a ^ b;
        }
        l = r;
        r = nr;
    }
    // The last round's halves go out swapped.
    let mut pre = [0u8; 64];
    pre[..32].copy_from_slice(&r);
    pre[32..].copy_from_slice(&l);
    let mut out = [0u8; 64];
    for (o, &p) in out.iter_mut().zip(FP.iter()) {
        *o = pre[usize::from(p) - 1];
    }
    out
}

/// DES's round function: expand `r`, mix in the round key, S-boxes, P.
fn feistel(r: &[u8; 32], sk: &[u8; 48], e: &[u8; 48]) -> [u8; 32] {
    let mut x = [0u8; 48];
    for ((o, &p), &k) in x.iter_mut().zip(e.iter()).zip(sk.iter()) {
        *o = r[usize::from(p) - 1] ^ k;
    }
    let mut sout = [0u8; 32];
    for (b, chunk) in x.chunks_exact(6).enumerate() {
        let row = (chunk[0] << 1) | chunk[5];
        let col = (chunk[1] << 3) | (chunk[2] << 2) | (chunk[3] << 1) | chunk[4];
        let v = S[b][usize::from(row * 16 + col)];
        for k in 0..4 {
            sout[4 * b + k] = (v >> (3 - k)) & 1;
        }
    }
    let mut f = [0u8; 32];
    for (o, &p) in f.iter_mut().zip(P.iter()) {
        *o = sout[usize::from(p) - 1];
    }
    f
}

//! The uwsgi protocol (uWSGI's own, for `scgi.protocol = "uwsgi"`): a
//! 4-byte header — modifier1, the size of the variable block as a
//! little-endian u16, modifier2 — then each CGI variable as a u16-LE length
//! and its name, a u16-LE length and its value; the body follows unframed.
//! The answer is an HTTP status line and headers, then the body, and ends
//! when the backend closes (see [`crate::upstream::cgi::parse_head`]).

use crate::msg::status::itoa_u64;
use crate::upstream::cgi::Env;

/// The largest variable block the 16-bit size can describe.
pub const MAX_VARS: usize = u16::MAX as usize;

/// modifier1 0: a WSGI application, uWSGI's default request handler.
const MODIFIER1_WSGI: u8 = 0;

/// The variables do not fit in the 16-bit size: the request cannot be sent.
#[derive(Debug, PartialEq, Eq)]
pub struct TooLarge(pub usize);

/// The size of the variable block for `env` with `CONTENT_LENGTH` set to
/// `content_length` (checked before the body arrives, with the largest
/// length the body may reach, so [`encode_head`] cannot fail later).
pub fn vars_len(content_length: u64, env: &Env) -> usize {
    let cl = 2 + b"CONTENT_LENGTH".len() + 2 + itoa_u64(content_length).as_bytes().len();
    env.pairs()
        .fold(cl, |n, (k, v)| n.saturating_add(4 + k.len() + v.len()))
}

/// Appends a uwsgi request head to `out`: the header, `CONTENT_LENGTH` (which
/// uWSGI reads the body by), then `env`. Nothing is appended when the
/// variables exceed [`MAX_VARS`].
pub fn encode_head(content_length: u64, env: &Env, out: &mut Vec<u8>) -> Result<(), TooLarge> {
    let size = vars_len(content_length, env);
    let Ok(size16) = u16::try_from(size) else {
        return Err(TooLarge(size));
    };
    out.reserve(4 + size);
    out.push(MODIFIER1_WSGI);
    out.extend_from_slice(&size16.to_le_bytes());
    out.push(0);
    let cl = itoa_u64(content_length);
    put(out, b"CONTENT_LENGTH", cl.as_bytes());
    for (k, v) in env.pairs() {
        put(out, k, v);
    }
    Ok(())
}

/// One variable; each part is shorter than the whole block, so its length fits in a u16.
fn put(out: &mut Vec<u8>, k: &[u8], v: &[u8]) {
    out.extend_from_slice(&(k.len() as u16).to_le_bytes());
    out.extend_from_slice(k);
    out.extend_from_slice(&(v.len() as u16).to_le_bytes());
    out.extend_from_slice(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_layout() {
        let env = Env::from_pairs(&[("REQUEST_METHOD", "POST"), ("QUERY_STRING", "")]);
        let mut out = b"x".to_vec();
        encode_head(27, &env, &mut out).unwrap();
        let mut want = b"x".to_vec();
        // 2+14+2+2 + 2+14+2+4 + 2+12+2+0 = 58 bytes of variables.
        want.extend_from_slice(&[0, 58, 0, 0]);
        want.extend_from_slice(b"\x0e\x00CONTENT_LENGTH\x02\x0027");
        want.extend_from_slice(b"\x0e\x00REQUEST_METHOD\x04\x00POST");
        want.extend_from_slice(b"\x0c\x00QUERY_STRING\x00\x00");
        assert_eq!(out, want);
        assert_eq!(vars_len(27, &env), 58);
    }

    #[test]
    fn sizes_are_little_endian() {
        let value = "v".repeat(300);
        let env = Env::from_pairs(&[("HTTP_X", &value)]);
        let mut out = Vec::new();
        encode_head(0, &env, &mut out).unwrap();
        let size = 19 + 2 + 6 + 2 + 300;
        assert_eq!(out[..4], [0, (size & 0xff) as u8, (size >> 8) as u8, 0]);
        assert_eq!(out.len(), 4 + size);
        // The value's length: 300 = 0x012c.
        let at = 4 + 19 + 2 + 6;
        assert_eq!(out[at..at + 2], [0x2c, 0x01]);
    }

    #[test]
    fn the_16_bit_limit() {
        // Exactly 65535 bytes of variables fit; one more does not.
        let fixed = 19 + 2 + 6 + 2;
        let fits = "a".repeat(MAX_VARS - fixed);
        let env = Env::from_pairs(&[("HTTP_X", &fits)]);
        let mut out = Vec::new();
        assert_eq!(encode_head(0, &env, &mut out), Ok(()));
        assert_eq!(out[1..3], [0xff, 0xff]);
        assert_eq!(out.len(), 4 + MAX_VARS);

        let over = "a".repeat(MAX_VARS - fixed + 1);
        let env = Env::from_pairs(&[("HTTP_X", &over)]);
        let mut out = Vec::new();
        assert_eq!(encode_head(0, &env, &mut out), Err(TooLarge(MAX_VARS + 1)));
        assert!(out.is_empty(), "nothing half-written");
        // A longer CONTENT_LENGTH counts too.
        let env = Env::from_pairs(&[("HTTP_X", &fits)]);
        assert_eq!(vars_len(10, &env), MAX_VARS + 1);
    }
}

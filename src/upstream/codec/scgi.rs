//! SCGI (python.ca/scgi/protocol.txt): the environment as a netstring of
//! NUL-separated names and values, then the body; the answer is a CGI
//! response that ends when the backend closes.

use crate::msg::status::itoa_u64;
use crate::upstream::cgi::Env;

/// Appends an SCGI request head to `out`: `CONTENT_LENGTH` first, as the
/// protocol requires, then `env`; the body follows it unframed.
pub fn encode_head(content_length: u64, env: &Env, out: &mut Vec<u8>) {
    let cl = itoa_u64(content_length);
    let len = b"CONTENT_LENGTH".len() + cl.as_bytes().len() + 2 + env.as_bytes().len();
    out.extend_from_slice(itoa_u64(len as u64).as_bytes());
    out.extend_from_slice(b":CONTENT_LENGTH\0");
    out.extend_from_slice(cl.as_bytes());
    out.push(0);
    out.extend_from_slice(env.as_bytes());
    out.push(b',');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netstring() {
        let env = Env::from_pairs(&[("SCGI", "1"), ("REQUEST_METHOD", "POST")]);
        let mut out = Vec::new();
        encode_head(27, &env, &mut out);
        assert_eq!(
            out,
            b"45:CONTENT_LENGTH\x0027\x00SCGI\x001\x00REQUEST_METHOD\x00POST\x00,".to_vec()
        );
    }
}

//! SCGI (python.ca/scgi/protocol.txt): the environment as a netstring of
//! NUL-separated names and values, then the body; the answer is a CGI
//! response that ends when the backend closes.

/// Appends an SCGI request head for `env` (whose first entry must be
/// `CONTENT_LENGTH`) to `out`; the body follows it unframed.
pub fn encode_head(env: &[(String, Vec<u8>)], out: &mut Vec<u8>) {
    let len: usize = env.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    out.extend_from_slice(len.to_string().as_bytes());
    out.push(b':');
    for (k, v) in env {
        out.extend_from_slice(k.as_bytes());
        out.push(0);
        out.extend_from_slice(v);
        out.push(0);
    }
    out.push(b',');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netstring() {
        let env = vec![
            ("CONTENT_LENGTH".to_string(), b"27".to_vec()),
            ("SCGI".to_string(), b"1".to_vec()),
            ("REQUEST_METHOD".to_string(), b"POST".to_vec()),
        ];
        let mut out = Vec::new();
        encode_head(&env, &mut out);
        assert_eq!(
            out,
            b"45:CONTENT_LENGTH\x0027\x00SCGI\x001\x00REQUEST_METHOD\x00POST\x00,".to_vec()
        );
    }
}

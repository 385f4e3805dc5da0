//! Response heads for HTTP/2: glint's own [`Reply`] and a backend's answer
//! become a field list (names lowercase, as RFC 9113 §8.2.1 requires) with
//! what HTTP/1's head serializer adds: `date`, `server`, `content-length`
//! and the configured `setenv.*-response-header`s. `connection` and the
//! other connection-specific fields are dropped by the protocol core.

use std::ops::Range;

use crate::config::Settings;
use crate::msg::status::itoa_u64;

/// A field list built in one buffer, reused from head to head.
#[derive(Debug, Default)]
pub struct FieldBuf {
    bytes: Vec<u8>,
    spans: Vec<(Range<usize>, Range<usize>)>,
}

impl FieldBuf {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    /// One field; the name is lowercased.
    pub fn push(&mut self, name: &[u8], value: &[u8]) {
        let n0 = self.bytes.len();
        self.bytes.extend(name.iter().map(u8::to_ascii_lowercase));
        let v0 = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.spans.push((n0..v0, v0..self.bytes.len()));
    }

    /// The fields, for `send_headers`.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.spans
            .iter()
            .map(|(n, v)| (&self.bytes[n.clone()], &self.bytes[v.clone()]))
    }

    /// `date` and `server`, the head's first fields.
    pub fn start(&mut self, settings: &Settings, date: &[u8]) {
        self.clear();
        self.push(b"date", date);
        if !settings.tag.is_empty() {
            self.push(b"server", settings.tag.as_bytes());
        }
    }

    /// A [`crate::msg::Reply`]'s `Name: value\r\n` lines.
    pub fn lines(&mut self, lines: &[u8]) {
        for line in lines.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let value = crate::msg::request::trim_ows(&line[colon + 1..]);
            self.push(&line[..colon], value);
        }
    }

    /// `content-length` (when known) and the `setenv` response headers:
    /// the head's last fields, as HTTP/1's serializer orders them.
    pub fn finish(&mut self, settings: &Settings, content_length: Option<u64>) {
        if let Some(n) = content_length {
            self.push(b"content-length", itoa_u64(n).as_bytes());
        }
        for (k, v) in settings
            .setenv_add_response_header
            .iter()
            .chain(&settings.setenv_set_response_header)
        {
            let crlf = |s: &str| s.bytes().any(|b| b == b'\r' || b == b'\n');
            if !crlf(k) && !crlf(v) {
                self.push(k.as_bytes(), v.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_lines_become_lowercase_fields() {
        let s = Settings {
            tag: "glint/test".into(),
            setenv_add_response_header: vec![("X-Added".into(), "1".into())],
            ..Settings::default()
        };
        let mut f = FieldBuf::default();
        f.start(&s, b"Thu, 02 Jan 2020 03:04:05 GMT");
        f.lines(b"Content-Type: text/html\r\nETag: \"abc\"\r\nX-Empty:\r\n");
        f.finish(&s, Some(469));
        let got: Vec<(String, String)> = f
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
        let want = [
            ("date", "Thu, 02 Jan 2020 03:04:05 GMT"),
            ("server", "glint/test"),
            ("content-type", "text/html"),
            ("etag", "\"abc\""),
            ("x-empty", ""),
            ("content-length", "469"),
            ("x-added", "1"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
    }
}

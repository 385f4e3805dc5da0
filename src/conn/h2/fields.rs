//! Response heads for HTTP/2: glint's own [`Reply`] and a backend's answer
//! become a field list (names lowercase, as RFC 9113 §8.2.1 requires) with
//! what HTTP/1's head serializer adds: `date`, `server`, `content-length`
//! and the configured `setenv.*-response-header`s. `connection` and the
//! other connection-specific fields are dropped by the protocol core.

use std::ops::Range;
use std::rc::Rc;

use crate::config::Settings;
use crate::msg::status::itoa_u64;
use crate::proto::h1::encode::has_field;

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
        self.bytes.extend_from_slice(name);
        self.bytes[n0..].make_ascii_lowercase();
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
        if !settings.identity.tag.is_empty() {
            self.push(b"server", settings.identity.tag.as_bytes());
        }
    }

    /// `date` and `server` for a backend's answer: the backend's own, when
    /// it sent them, instead of glint's (one value each).
    pub fn start_answer(
        &mut self,
        settings: &Settings,
        date: &[u8],
        headers: &[(String, Vec<u8>)],
    ) {
        self.clear();
        if !has_field(headers, "date") {
            self.push(b"date", date);
        }
        if !settings.identity.tag.is_empty() && !has_field(headers, "server") {
            self.push(b"server", settings.identity.tag.as_bytes());
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
            .setenv
            .add_response_header
            .iter()
            .chain(&settings.setenv.set_response_header)
        {
            let crlf = |s: &str| s.bytes().any(|b| b == b'\r' || b == b'\n');
            if !crlf(k) && !crlf(v) {
                self.push(k.as_bytes(), v.as_bytes());
            }
        }
    }
}

/// glint's own replies whose head was encoded lately, with the encoded
/// block: the answers for one static file differ only in `date`, which
/// changes once a second, so a repeat costs a comparison of the reply's
/// header lines instead of building the field list and encoding it (which
/// took a fifth of the CPU of a small file over HTTP/2). A block is reused
/// only at the encoder generation it was made at (see
/// `proto::h2::conn::Connection::send_head_block`).
#[derive(Debug, Default)]
pub struct HeadCache {
    entries: Vec<Head>,
    next: usize,
}

#[derive(Debug)]
struct Head {
    status: u16,
    content_length: Option<u64>,
    /// The settings the reply was made under (its `server` tag and `setenv`
    /// headers): the same `Rc` for the same scope (held, so that its address
    /// cannot be another's after a reload).
    settings: Rc<Settings>,
    date: Vec<u8>,
    lines: Vec<u8>,
    generation: u64,
    block: Vec<u8>,
}

/// Heads remembered per connection: the assets of one page.
const HEADS: usize = 4;

impl HeadCache {
    /// The block for a reply with these parts, if one is remembered.
    pub fn find(
        &self,
        status: u16,
        content_length: Option<u64>,
        settings: &Rc<Settings>,
        date: &[u8],
        lines: &[u8],
    ) -> Option<(&[u8], u64)> {
        self.entries
            .iter()
            .find(|h| {
                h.status == status
                    && h.content_length == content_length
                    && Rc::ptr_eq(&h.settings, settings)
                    && h.date == date
                    && h.lines == lines
            })
            .map(|h| (h.block.as_slice(), h.generation))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn put(
        &mut self,
        status: u16,
        content_length: Option<u64>,
        settings: &Rc<Settings>,
        date: &[u8],
        lines: &[u8],
        generation: u64,
        block: &[u8],
    ) {
        let fill = |h: &mut Head| {
            h.status = status;
            h.content_length = content_length;
            h.settings = Rc::clone(settings);
            h.date.clear();
            h.date.extend_from_slice(date);
            h.lines.clear();
            h.lines.extend_from_slice(lines);
            h.generation = generation;
            h.block.clear();
            h.block.extend_from_slice(block);
        };
        if self.entries.len() < HEADS {
            let mut h = Head {
                status,
                content_length,
                settings: Rc::clone(settings),
                date: Vec::new(),
                lines: Vec::new(),
                generation,
                block: Vec::new(),
            };
            fill(&mut h);
            self.entries.push(h);
        } else {
            fill(&mut self.entries[self.next]);
            self.next = (self.next + 1) % HEADS;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_lines_become_lowercase_fields() {
        let s = Settings {
            identity: crate::config::Identity {
                tag: "glint/test".into(),
                ..Default::default()
            },
            setenv: crate::config::SetEnv {
                add_response_header: vec![("X-Added".into(), "1".into())],
                ..Settings::default().setenv
            },
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

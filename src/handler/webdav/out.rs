//! Answers as lighttpd's mod_webdav writes them: statuses, the headers it
//! sets, XML bodies (multistatus, error, lock discovery), hrefs encoded
//! as its `ENCODING_REL_URI` encodes them.

use std::rc::Rc;

use crate::config::Settings;
use crate::msg::status::reason;
use crate::msg::Reply;

/// `Content-Type` of every XML answer.
pub const XML_TYPE: &str = "application/xml;charset=utf-8";
/// The start of every XML answer.
pub const XML_DECL: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";

/// A whole answer: status, header lines, and a body (none: an error
/// answers with glint's error page, a success with an empty body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Option<Vec<u8>>,
}

impl Answer {
    /// A status with no body of its own (an error page for 4xx/5xx).
    pub fn error(status: u16) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: None,
        }
    }

    /// A success with an empty body.
    pub fn status(status: u16) -> Answer {
        Answer::error(status)
    }

    /// An XML body.
    pub fn xml(status: u16, body: String) -> Answer {
        Answer {
            status,
            headers: vec![("Content-Type".into(), XML_TYPE.as_bytes().to_vec())],
            body: Some(body.into_bytes()),
        }
    }

    pub fn with(mut self, name: &str, value: &[u8]) -> Answer {
        self.headers.push((name.into(), value.to_vec()));
        self
    }

    /// Writes the answer into `r` (glint's own reply).
    pub fn write_reply(&self, r: &mut Reply) {
        let extra: Vec<(&str, &[u8])> = self
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        match &self.body {
            None if self.status >= 400 => r.error_with(self.status, &extra),
            None => {
                r.start(self.status);
                for (k, v) in &extra {
                    r.header(k, v);
                }
                r.end_head(Some(0));
            }
            Some(b) => {
                r.start(self.status);
                for (k, v) in &extra {
                    r.header(k, v);
                }
                r.end_head(Some(b.len() as u64));
                r.push_mem(b);
            }
        }
    }

    /// The answer as a CGI program's output (a job's answer): `Status`,
    /// the header lines, a `Content-Length`, the body. An error's page is
    /// glint's own, as [`Answer::write_reply`] gives it.
    pub fn to_cgi(&self, settings: &Rc<Settings>) -> Vec<u8> {
        let mut headers = self.headers.clone();
        let body = match &self.body {
            Some(b) => b.clone(),
            None if self.status >= 400 => {
                let mut r = crate::msg::ReplyData::boxed(Rc::clone(settings), false);
                r.error(self.status);
                headers.push(("Content-Type".into(), b"text/html; charset=utf-8".to_vec()));
                r.body_bytes_in_memory().unwrap_or_default()
            }
            None => Vec::new(),
        };
        let mut out = cgi_head(self.status, &headers);
        if !matches!(self.status, 204 | 304) {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(body.len().to_string().as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&body);
        out
    }
}

/// `Status:` and header lines of a CGI head, not yet ended.
pub fn cgi_head(status: u16, headers: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = format!("Status: {status}\r\n").into_bytes();
    for (k, v) in headers {
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Appends `s` as lighttpd's `ENCODING_REL_URI` writes a path: bytes
/// outside `A-Za-z0-9 - . _ ~ ! ( ) * /` as `%XX`.
pub fn push_rel_uri(s: &str, out: &mut String) {
    crate::syntax::percent_encode(s.as_bytes(), &crate::syntax::REL_URI_NAME, out);
}

/// `<D:href>…</D:href>\n`.
pub fn href(rel: &str, out: &mut String) {
    out.push_str("<D:href>");
    push_rel_uri(rel, out);
    out.push_str("</D:href>\n");
}

/// `<D:status>HTTP/1.1 NNN Reason</D:status>\n`.
pub fn status_line(status: u16, out: &mut String) {
    out.push_str("<D:status>HTTP/1.1 ");
    out.push_str(&status.to_string());
    out.push(' ');
    out.push_str(reason(status));
    out.push_str("</D:status>\n");
}

/// One `<D:response>` with an href and a status.
pub fn response_status(rel: &str, status: u16, out: &mut String) {
    out.push_str("<D:response>\n");
    href(rel, out);
    status_line(status, out);
    out.push_str("</D:response>\n");
}

/// A 207 whose body is the `<D:response>`s in `responses`.
pub fn multistatus(responses: &str) -> Answer {
    let mut b = String::with_capacity(responses.len() + 128);
    b.push_str(XML_DECL);
    b.push_str("<D:multistatus xmlns:D=\"DAV:\">\n");
    b.push_str(responses);
    b.push_str("</D:multistatus>\n");
    Answer::xml(207, b)
}

/// An `<D:error>` answer with one precondition element (no namespace
/// declaration, byte for byte as lighttpd writes it).
pub fn error_doc(status: u16, element: &str) -> Answer {
    Answer::xml(
        status,
        format!("{XML_DECL}<D:error><DAV:{element}/></D:error>\n"),
    )
}

/// 423 Locked with the lock roots in the way (`hrefs`: `<D:href>`s).
pub fn locked(element: &str, hrefs: &str) -> Answer {
    Answer::xml(
        423,
        format!("{XML_DECL}<D:error xmlns:D=\"DAV:\">\n<D:{element}>\n{hrefs}</D:{element}>\n</D:error>\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_are_encoded_as_lighttpd_encodes_them() {
        let mut s = String::new();
        push_rel_uri("/a b/&c'+,@é~(x).txt", &mut s);
        assert_eq!(s, "/a%20b/%26c%27%2B%2C%40%C3%A9~(x).txt");
    }

    #[test]
    fn a_cgi_answer_has_status_length_and_body() {
        let s = Rc::new(Settings::default());
        let a = Answer::xml(207, "<x/>".into()).to_cgi(&s);
        assert_eq!(
            a,
            b"Status: 207\r\nContent-Type: application/xml;charset=utf-8\r\nContent-Length: 4\r\n\r\n<x/>"
        );
        let e = String::from_utf8(Answer::error(409).to_cgi(&s)).unwrap();
        assert!(e.starts_with("Status: 409\r\nContent-Type: text/html"));
        assert!(e.contains("409 Conflict"));
    }
}

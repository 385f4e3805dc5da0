//! Response heads, written straight into the connection's output buffer.

use std::fs::File;
use std::rc::Rc;

use crate::config::Settings;
use crate::http::status::{itoa_u64, reason, write_error_page};
use crate::output::Output;

/// Writes one response into an [`Output`] and remembers what the access log needs.
pub struct Responder<'a> {
    pub out: &'a mut Output,
    /// The current `Date` value, formatted once a second.
    pub date: &'a [u8],
    pub settings: &'a Settings,
    /// A HEAD request: heads only, with the GET's Content-Length.
    pub head_only: bool,
    /// The connection stays open after this response.
    pub keep_alive: bool,
    /// The request's minor version (0 or 1).
    pub minor: u8,
    /// The status written, for the access log.
    pub status: u16,
    /// Body bytes of the response (as a GET would have them), for the access log.
    pub body_len: u64,
    /// The response could not be completed as announced: close after sending it.
    pub force_close: bool,
    /// Sent instead of 200 (`server.error-handler` keeps the error's status).
    pub status_override: Option<u16>,
}

impl<'a> Responder<'a> {
    pub fn new(
        out: &'a mut Output,
        date: &'a [u8],
        settings: &'a Settings,
        head_only: bool,
        keep_alive: bool,
        minor: u8,
    ) -> Self {
        Responder {
            out,
            date,
            settings,
            head_only,
            keep_alive,
            minor,
            status: 0,
            body_len: 0,
            force_close: false,
            status_override: None,
        }
    }

    /// Status line, `Date` and `Server`.
    pub fn start(&mut self, status: u16) {
        let status = match self.status_override {
            Some(o) if status == 200 => o,
            _ => status,
        };
        self.status = status;
        let m = &mut self.out.mem;
        m.extend_from_slice(b"HTTP/1.1 ");
        m.extend_from_slice(itoa_u64(status as u64).as_bytes());
        m.push(b' ');
        m.extend_from_slice(reason(status).as_bytes());
        m.extend_from_slice(b"\r\nDate: ");
        m.extend_from_slice(self.date);
        if !self.settings.tag.is_empty() {
            m.extend_from_slice(b"\r\nServer: ");
            m.extend_from_slice(self.settings.tag.as_bytes());
        }
        m.extend_from_slice(b"\r\n");
    }

    /// One header line. The value must not contain CR or LF; callers pass
    /// values they built or validated.
    pub fn header(&mut self, name: &str, value: &[u8]) {
        let m = &mut self.out.mem;
        m.extend_from_slice(name.as_bytes());
        m.extend_from_slice(b": ");
        m.extend_from_slice(value);
        m.extend_from_slice(b"\r\n");
    }

    /// A header whose value is a number.
    pub fn header_num(&mut self, name: &str, value: u64) {
        self.header(name, itoa_u64(value).as_bytes());
    }

    /// Ends the head: Content-Length (when given), Connection, configured headers, blank line.
    pub fn end_head(&mut self, content_length: Option<u64>) {
        if let Some(n) = content_length {
            self.header_num("Content-Length", n);
            self.body_len = n;
        }
        if self.keep_alive && self.minor == 0 {
            self.header("Connection", b"keep-alive");
        } else if !self.keep_alive && self.minor >= 1 {
            self.header("Connection", b"close");
        }
        let s = self.settings;
        for (k, v) in s
            .setenv_add_response_header
            .iter()
            .chain(&s.setenv_set_response_header)
        {
            if !has_crlf(k) && !has_crlf(v) {
                self.header(k, v.as_bytes());
            }
        }
        self.out.mem.extend_from_slice(b"\r\n");
    }

    /// A complete response with a body from memory.
    pub fn body_bytes(&mut self, content_type: &[u8], body: &[u8]) {
        self.header("Content-Type", content_type);
        self.end_head(Some(body.len() as u64));
        if !self.head_only {
            self.out.mem.extend_from_slice(body);
        }
    }

    /// Ends the head and queues `len` bytes of `file` from `offset` as the body.
    pub fn body_file(&mut self, file: Rc<File>, offset: u64, len: u64) {
        self.end_head(Some(len));
        if !self.head_only {
            self.out.push_file(file, offset, len);
        }
    }

    /// A complete error response: the status and a small HTML page, or the
    /// configured `server.errorfile-prefix` page.
    pub fn error(&mut self, status: u16) {
        self.start(status);
        self.error_rest(status, &[]);
    }

    /// Like [`Responder::error`], with extra header lines (e.g. `Allow`) before the body.
    pub fn error_with(&mut self, status: u16, extra: &[(&str, &[u8])]) {
        self.start(status);
        self.error_rest(status, extra);
    }

    fn error_rest(&mut self, status: u16, extra: &[(&str, &[u8])]) {
        for (k, v) in extra {
            self.header(k, v);
        }
        let mut page = Vec::new();
        if let Some(prefix) = &self.settings.errorfile_prefix {
            let path = format!("{prefix}{status}.html");
            if let Ok(bytes) = std::fs::read(&path) {
                page = bytes;
            }
        }
        if page.is_empty() {
            write_error_page(&mut page, status);
        }
        self.body_bytes(b"text/html; charset=utf-8", &page);
    }
}

fn has_crlf(s: &str) -> bool {
    s.bytes().any(|b| b == b'\r' || b == b'\n')
}

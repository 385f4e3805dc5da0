//! A response as a value: what glint answers from itself (files, listings,
//! the status page, redirects, error pages). A handler fills a [`Reply`];
//! the protocol layer writes it out (`proto::h1::write_reply` for
//! HTTP/1.x). A handler never sees the bytes of a protocol.
//!
//! One `Reply` is reused from request to request (its buffers keep their
//! capacity), so building an answer allocates nothing in the common case.

use std::fs::File;
use std::ops::Range;
use std::rc::Rc;

use crate::compress::Coding;
use crate::config::Settings;
use crate::msg::status::{itoa_u64, write_error_page};

/// One piece of a reply's body, in order.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Bytes of the reply's own buffer.
    Mem(Range<usize>),
    /// Bytes shared with a cache (a small file's content).
    Shared(Rc<[u8]>),
    /// `len` bytes of `file` from `offset`, sent with sendfile where the
    /// protocol allows.
    File {
        file: Rc<File>,
        offset: u64,
        len: u64,
    },
}

/// A response glint gives itself: its [`ReplyData`] behind one pointer.
/// The reply is handed from the exchange to the connection and back
/// whole; boxed, each of those moves (an `Outcome` returned through the
/// phases, the builder taken and given back) is a pointer, where the
/// 112 bytes inline were a `memcpy` call each (five per request).
pub type Reply = Box<ReplyData>;

impl ReplyData {
    /// An empty reply made under `settings`.
    pub fn boxed(settings: Rc<Settings>, head_only: bool) -> Reply {
        Box::new(ReplyData {
            settings,
            status: 0,
            fields: Vec::new(),
            content_length: None,
            head_only,
            status_override: None,
            close: false,
            delay: false,
            encode: None,
            encoding_decided: false,
            pieces: Vec::new(),
            mem: Vec::new(),
        })
    }
}

/// What a [`Reply`] holds.
#[derive(Debug)]
pub struct ReplyData {
    /// The settings it was made under: the `Server` tag, `setenv`
    /// response headers, `server.errorfile-prefix`.
    pub settings: Rc<Settings>,
    pub status: u16,
    /// Header lines, `Name: value\r\n` each; values never hold CR or LF.
    pub fields: Vec<u8>,
    /// The body's length as announced (for HEAD, as a GET would have it).
    pub content_length: Option<u64>,
    /// A HEAD request: the body is not sent (handlers may leave it out).
    pub head_only: bool,
    /// Sent instead of a 200 (`server.error-handler` keeps the error's status).
    pub status_override: Option<u16>,
    /// Close the connection after this reply (a body is left unread, or
    /// the answer could not be completed as announced).
    pub close: bool,
    /// A refused login (lighttpd's `auth.delay-invalid-creds`): the
    /// connection's output is held for a second before this reply goes
    /// out (HTTP/2: the whole connection's, after a GOAWAY).
    pub delay: bool,
    /// The body goes out compressed with this coding as it is written (a
    /// stream: the head has no Content-Length). The head already says so
    /// (`Content-Encoding`, `Vary`, the variant's ETag).
    pub encode: Option<Coding>,
    /// Compression was decided for this reply where it was made (a static
    /// file and its variants): the generic step leaves it alone.
    pub encoding_decided: bool,
    pieces: Vec<Piece>,
    mem: Vec<u8>,
}

impl ReplyData {
    /// Empties the reply for the next request, keeping its buffers.
    pub fn reset(&mut self, settings: Rc<Settings>, head_only: bool) {
        self.settings = settings;
        self.status = 0;
        self.fields.clear();
        self.content_length = None;
        self.head_only = head_only;
        self.status_override = None;
        self.close = false;
        self.delay = false;
        self.encode = None;
        self.encoding_decided = false;
        self.pieces.clear();
        self.mem.clear();
    }

    /// Drops the head and body written so far (an error handler answers instead).
    pub fn clear_answer(&mut self) {
        self.status = 0;
        self.fields.clear();
        self.content_length = None;
        self.encode = None;
        self.encoding_decided = false;
        self.pieces.clear();
        self.mem.clear();
    }

    /// The value of the first header line named `name` (ASCII case-insensitive).
    pub fn field(&self, name: &str) -> Option<&[u8]> {
        self.fields.split(|&b| b == b'\n').find_map(|line| {
            let line = line.strip_suffix(b"\r")?;
            let colon = line.iter().position(|&b| b == b':')?;
            line[..colon]
                .eq_ignore_ascii_case(name.as_bytes())
                .then(|| <[u8]>::trim_ascii(&line[colon + 1..]))
        })
    }

    /// Removes every header line named `name`.
    pub fn remove_field(&mut self, name: &str) {
        if self.field(name).is_none() {
            return;
        }
        let mut kept = Vec::with_capacity(self.fields.len());
        for line in self.fields.split_inclusive(|&b| b == b'\n') {
            let colon = line.iter().position(|&b| b == b':');
            if !colon.is_some_and(|c| line[..c].eq_ignore_ascii_case(name.as_bytes())) {
                kept.extend_from_slice(line);
            }
        }
        self.fields = kept;
    }

    /// Replaces the body with `bytes` (the compressed form of what it was);
    /// the caller sets the length with [`Reply::end_head`].
    pub fn replace_body(&mut self, bytes: &[u8]) {
        self.pieces.clear();
        self.mem.clear();
        self.push_mem(bytes);
    }

    /// Sets the status; any header lines follow.
    pub fn start(&mut self, status: u16) {
        self.status = match self.status_override {
            Some(o) if status == 200 => o,
            _ => status,
        };
    }

    /// One header line. The value must not contain CR or LF; callers pass
    /// values they built or validated.
    pub fn header(&mut self, name: &str, value: &[u8]) {
        self.fields.extend_from_slice(name.as_bytes());
        self.fields.extend_from_slice(b": ");
        self.fields.extend_from_slice(value);
        self.fields.extend_from_slice(b"\r\n");
    }

    /// Header lines rendered beforehand (`Name: value\r\n` each, no CR or
    /// LF inside a value), as a file cache keeps them.
    pub fn header_lines(&mut self, lines: &[u8]) {
        self.fields.extend_from_slice(lines);
    }

    /// A header whose value is a number.
    pub fn header_num(&mut self, name: &str, value: u64) {
        self.header(name, itoa_u64(value).as_bytes());
    }

    /// Ends the head: the body that follows has `content_length` bytes.
    pub fn end_head(&mut self, content_length: Option<u64>) {
        self.content_length = content_length;
    }

    /// Appends body bytes from memory.
    pub fn push_mem(&mut self, bytes: &[u8]) {
        if bytes.is_empty() || self.head_only {
            return;
        }
        let start = self.mem.len();
        self.mem.extend_from_slice(bytes);
        match self.pieces.last_mut() {
            Some(Piece::Mem(r)) if r.end == start => r.end = self.mem.len(),
            _ => self.pieces.push(Piece::Mem(start..self.mem.len())),
        }
    }

    /// Appends shared body bytes (no copy until they are written).
    pub fn push_shared(&mut self, bytes: Rc<[u8]>) {
        if !bytes.is_empty() && !self.head_only {
            self.pieces.push(Piece::Shared(bytes));
        }
    }

    /// Appends `len` bytes of `file` from `offset`.
    pub fn push_file(&mut self, file: Rc<File>, offset: u64, len: u64) {
        if len > 0 && !self.head_only {
            self.pieces.push(Piece::File { file, offset, len });
        }
    }

    /// A complete reply with a body from memory.
    pub fn body_bytes(&mut self, content_type: &[u8], body: &[u8]) {
        self.header("Content-Type", content_type);
        self.end_head(Some(body.len() as u64));
        self.push_mem(body);
    }

    /// Ends the head and takes `len` bytes of `file` from `offset` as the body.
    pub fn body_file(&mut self, file: Rc<File>, offset: u64, len: u64) {
        self.end_head(Some(len));
        self.push_file(file, offset, len);
    }

    /// A complete error reply: the status and a small HTML page, or the
    /// configured `server.errorfile-prefix` page.
    pub fn error(&mut self, status: u16) {
        self.error_with(status, &[]);
    }

    /// Like [`Reply::error`], with extra header lines (e.g. `Allow`) before the body.
    pub fn error_with(&mut self, status: u16, extra: &[(&str, &[u8])]) {
        self.start(status);
        for (k, v) in extra {
            self.header(k, v);
        }
        let mut page = Vec::new();
        if let Some(prefix) = &self.settings.errors.errorfile_prefix {
            let path = format!("{prefix}{status}.html");
            if let Ok(bytes) = std::fs::read(&path) {
                page = bytes;
            }
        }
        if page.is_empty() {
            write_error_page(&mut page, self.status);
        }
        self.body_bytes(b"text/html; charset=utf-8", &page);
    }

    /// The body's pieces, in order (none for HEAD).
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// The bytes of a [`Piece::Mem`].
    pub fn mem(&self, r: &Range<usize>) -> &[u8] {
        self.mem.get(r.clone()).unwrap_or(&[])
    }

    /// The whole body when it is in memory (no file pieces), for a caller
    /// that compresses it at once; `None` when a piece is a file.
    pub fn body_bytes_in_memory(&self) -> Option<Vec<u8>> {
        let mut all = Vec::new();
        for p in &self.pieces {
            match p {
                Piece::Mem(r) => all.extend_from_slice(self.mem(r)),
                Piece::Shared(b) => all.extend_from_slice(b),
                Piece::File { .. } => return None,
            }
        }
        Some(all)
    }

    /// Body bytes as announced, for the access log.
    pub fn body_len(&self) -> u64 {
        self.content_length.unwrap_or(0)
    }
}

//! HTTP/1.1 backends (`proxy.server`, mod_proxy): the fourth codec beside
//! FastCGI, SCGI and uwsgi, on the same pool, caps, queue, time-outs and
//! [`Sink`]. The pure parts are [`crate::httpup`]'s: the request head
//! (built by the exchange), the answer's head and framing, the client's
//! header lines, the dechunker, the retry rule. Here: reading an answer
//! off a backend connection as it comes and passing it on, and what the
//! end of it means for the connection (kept for the next request, or
//! closed).
//!
//! Kept connections: a backend closes an idle connection after its own
//! time-out (gunicorn 2 s, Node 5 s, Apache 5 s), and a request sent just
//! then meets a closed connection. glint closes idle connections first,
//! after [`IDLE_SECS`] (or one second less than the backend's own
//! `Keep-Alive: timeout=N`), and sends a request whose method is not
//! idempotent only on a connection idle for less than a second, or a new
//! one; one that still meets a closed connection is sent again on a new
//! connection when [`crate::httpup::retry::may_retry`] allows it.

pub use super::http_state::HttpJob;
use super::http_state::{Body, HttpRead};
use super::job::{Answer, Job};
use crate::httpup::response::{self, Field, Framing, Kind};
use crate::msg::{AnswerHead, Sink};

/// A kept connection to an HTTP backend that no request used for this long
/// is closed: below the shortest keep-alive time-out of common application
/// servers (gunicorn's 2 s). The tick runs once a second, so a connection
/// goes after one to two seconds of rest.
pub const IDLE_SECS: u64 = 2;

/// What reading an HTTP answer came to.
pub(super) enum Step {
    /// More is to come.
    More,
    /// The answer is complete.
    Complete,
}

/// Passes the bytes `data` read from the backend on: the head once it is
/// complete (interim answers dropped), then the body in its framing. An
/// error is a broken answer (the client gets 502, or a cut).
pub(super) fn deliver(
    job: &mut Job,
    head_buf: &mut Vec<u8>,
    read: &mut HttpRead,
    fields: &mut Vec<Field>,
    data: &[u8],
    sink: &mut dyn Sink,
) -> Result<Step, String> {
    let owned;
    let mut body = data;
    if let Body::Head = read.body {
        head_buf.extend_from_slice(data);
        match pass_head(job, head_buf, read, fields, sink)? {
            Some(rest) => {
                owned = rest;
                body = &owned;
            }
            None => return Ok(Step::More),
        }
    }
    if job.answer == Answer::Dropping {
        return pass_body(read, body, &mut Discard);
    }
    pass_body(read, body, sink)
}

/// Where the body of an answer the client does not get goes (an
/// intercepted error's): read to its end in its framing, so that the
/// backend's connection may be kept.
struct Discard;

impl Sink for Discard {
    fn has_room(&self) -> bool {
        true
    }
    fn head(&mut self, _: &AnswerHead<'_>) {}
    fn data(&mut self, _: &[u8]) {}
    fn file(&mut self, _: &AnswerHead<'_>, _: std::rc::Rc<std::fs::File>, _: u64) {}
    fn end(&mut self) {}
    fn fail(&mut self, _: u16) {}
    fn rerun(&mut self, _: crate::msg::Rerun) {}
}

/// Parses the answer's head in `head_buf` and passes it on once it is
/// complete: the bytes after it, or `None` while it is not.
fn pass_head(
    job: &mut Job,
    head_buf: &mut Vec<u8>,
    read: &mut HttpRead,
    fields: &mut Vec<Field>,
    sink: &mut dyn Sink,
) -> Result<Option<Vec<u8>>, String> {
    let Some(http) = job.http.as_mut() else {
        return Err("no request".into());
    };
    loop {
        let Some(head) =
            response::parse_head(head_buf, &http.sent, fields).map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        if head.kind == Kind::Interim {
            // glint answers 100-continue itself and passes no 1xx on
            // (`server.h1-discard-backend-1xx`).
            head_buf.drain(..head.head_len);
            continue;
        }
        let mut lines = Vec::with_capacity(512);
        response::write_client_headers(
            head_buf,
            &head,
            fields,
            &http.opts.header,
            &mut http.sent.remap,
            &mut lines,
        );
        start_answer(job, read, &head, &pairs_of(&lines), sink);
        let rest = head_buf.split_off(head.head_len);
        head_buf.clear();
        return Ok(Some(rest));
    }
}

/// The answer's head `head` (its header lines as `pairs`) goes to the
/// client; `read` and `job` take the framing of the body that follows.
fn start_answer(
    job: &mut Job,
    read: &mut HttpRead,
    head: &response::Head,
    pairs: &[(String, Vec<u8>)],
    sink: &mut dyn Sink,
) {
    let upgrade = head.kind == Kind::Switching;
    let (content_length, bodiless) = match head.framing {
        Framing::Length(n) => (Some(n), false),
        // A HEAD answer announces the length of the GET's body.
        Framing::None if job.head_only => (head.content_length, false),
        Framing::None => (None, true),
        Framing::Chunked | Framing::UntilClose | Framing::Tunnel => (None, false),
    };
    read.reusable = head.reusable;
    read.keep_secs = head.keep_alive_timeout;
    read.body = match head.framing {
        Framing::None => Body::Done,
        Framing::Length(0) => Body::Done,
        Framing::Length(n) => Body::Length(n),
        Framing::Chunked => Body::Chunked(Box::default()),
        Framing::UntilClose | Framing::Tunnel => Body::UntilClose,
    };
    if !upgrade && super::answer::intercepts(job, head.status) {
        // server.error-intercept: the body is read in its framing and dropped.
        job.answer = Answer::Dropping;
        return sink.rerun(super::answer::intercepted(head.status, pairs));
    }
    job.answer = Answer::Streaming;
    if upgrade {
        // The client's bytes go to the backend from now on.
        job.upload.start_tunnel();
    }
    let (kept, rate_limit) = super::answer::client_headers(pairs);
    let headers = job.with_alt_svc(&kept);
    sink.head(&AnswerHead {
        status: head.status,
        headers: &headers,
        content_length,
        bodiless,
        upgrade,
        rate_limit,
    });
}

/// Passes body bytes on in the answer's framing.
fn pass_body(read: &mut HttpRead, body: &[u8], sink: &mut dyn Sink) -> Result<Step, String> {
    match &mut read.body {
        Body::Head => Ok(Step::More),
        Body::Done => {
            if !body.is_empty() {
                // Bytes after the end of the answer: not a next answer to trust.
                read.reusable = false;
            }
            Ok(Step::Complete)
        }
        Body::Length(rem) => {
            let take = (body.len() as u64).min(*rem) as usize;
            if take > 0 {
                sink.data(&body[..take]);
            }
            *rem -= take as u64;
            if take < body.len() {
                read.reusable = false;
            }
            if *rem == 0 {
                read.body = Body::Done;
                return Ok(Step::Complete);
            }
            Ok(Step::More)
        }
        Body::Chunked(d) => {
            let used = d
                .feed(body, |piece| sink.data(piece))
                .map_err(|e| e.to_string())?;
            if d.is_done() {
                if used < body.len() {
                    read.reusable = false;
                }
                read.body = Body::Done;
                return Ok(Step::Complete);
            }
            Ok(Step::More)
        }
        Body::UntilClose => {
            if !body.is_empty() {
                sink.data(body);
            }
            Ok(Step::More)
        }
    }
}

/// `Name: value\r\n` lines as (name, value) pairs; glint frames the body
/// itself, so `Content-Length` is left out (the sink has it as a number).
/// The backend's `Date` and `Server` are passed on (glint then writes
/// neither of its own), as lighttpd does.
fn pairs_of(lines: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::with_capacity(16);
    for line in lines.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let name = &line[..colon];
        if name.eq_ignore_ascii_case(b"content-length") {
            continue;
        }
        let value = line[colon + 1..]
            .strip_prefix(b" ")
            .unwrap_or(&line[colon + 1..]);
        // httparse accepted the name: a token, so ASCII.
        out.push((String::from_utf8_lossy(name).into_owned(), value.to_vec()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines_become_pairs_without_the_length() {
        let p = pairs_of(
            b"Content-Type: text/plain\r\nContent-Length: 5\r\nDate: x\r\nServer: y\r\nX-A: b: c\r\n",
        );
        assert_eq!(
            p,
            [
                ("Content-Type".to_string(), b"text/plain".to_vec()),
                // The backend's Date and Server go on (glint's then do not).
                ("Date".to_string(), b"x".to_vec()),
                ("Server".to_string(), b"y".to_vec()),
                ("X-A".to_string(), b"b: c".to_vec())
            ]
        );
    }
}

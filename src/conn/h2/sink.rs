//! How an answer becomes frames on one stream: glint's own [`Reply`]
//! ([`send_reply`]) and a backend's, heard through the [`Sink`] of the
//! stream's gateway exchange ([`StreamSink`]). Heads go to the protocol
//! core at once (HEADERS are small and come first); body bytes join the
//! stream's queue, framed as DATA by the writer as windows allow.

use std::fs::File;
use std::rc::Rc;

use super::fields::{FieldBuf, HeadCache};
use super::stream::Task;
use super::{CONN_QUEUE_CAP, STREAM_HIGH_WATER};
use crate::conn::encoded::Encoded;
use crate::conn::gateway::Sent;
use crate::date::HTTP_DATE_LEN;
use crate::exchange::error_run_status;
use crate::msg::plan::{self, Shape};
use crate::msg::{AnswerHead, Reply, Rerun, Sink};
use crate::proto::h2::conn::{Connection as Core, SendError};

/// Sends one of glint's replies on `stream`: its head (with END_STREAM
/// when there is no body: HEAD, 304, 204, an empty file) and its body's
/// pieces into the task's queue. Returns the bytes of the encoded head.
pub fn send_reply(
    core: &mut Core,
    fields: &mut FieldBuf,
    heads: &mut HeadCache,
    task: &mut Task,
    stream: u32,
    r: &Reply,
    date: &[u8],
) -> usize {
    let has_body = !r.head_only && !task.head_only && !r.pieces().is_empty();
    let before = core.output().len();
    let cached = heads.find(r.status, r.content_length, &r.settings, date, &r.fields);
    let sent = match cached {
        Some((block, generation)) => {
            core.send_head_block(stream, r.status, block, generation, !has_body)
        }
        None => Err(SendError::Stale),
    };
    let sent = match sent {
        Err(SendError::Stale) => {
            fields.start(&r.settings, date);
            fields.lines(&r.fields);
            let (length, _) = plan::stream_head(r.head_only || task.head_only, Shape::of_reply(r));
            fields.finish(&r.settings, length);
            let generation = core.encoder_generation();
            let sent = core.send_headers(stream, r.status, fields.iter(), !has_body);
            if sent.is_ok() && core.encoder_generation() == generation {
                let block = core.last_head_block();
                heads.put(
                    r.status,
                    r.content_length,
                    &r.settings,
                    date,
                    &r.fields,
                    generation,
                    block,
                );
            }
            sent
        }
        other => other,
    };
    if let Err(e) = sent {
        log::debug!("HTTP/2 stream {stream}: no head sent: {e:?}");
        task.complete = true;
        task.ended = true;
        return 0;
    }
    let n = core.output().len().saturating_sub(before);
    task.head_sent = true;
    task.complete = true;
    if has_body {
        match r.encode {
            // The head said Content-Encoding: the body is compressed as it
            // goes out (no encoder, no body: the stream is reset).
            Some(coding) => match Encoded::of_reply(r, coding, false) {
                Some(e) => {
                    task.encoded = Some(Box::new(e));
                    task.complete = false;
                }
                None => task.cut = true,
            },
            None => {
                task.push_reply(r);
            }
        }
        core.set_ready(stream, true);
    } else {
        task.ended = true;
    }
    n
}

/// The client's side of a stream's gateway exchange, as the upstream sees it.
pub struct StreamSink<'a> {
    pub core: &'a mut Core,
    pub fields: &'a mut FieldBuf,
    pub heads: &'a mut HeadCache,
    pub task: &'a mut Task,
    pub stream: u32,
    /// Memory queued by the connection's other streams, for the
    /// connection-wide bound in [`Sink::has_room`].
    pub others: usize,
    pub date: [u8; HTTP_DATE_LEN],
}

impl StreamSink<'_> {
    fn send_head(
        &mut self,
        status: u16,
        headers: &[(String, Vec<u8>)],
        content_length: Option<u64>,
        end: bool,
    ) {
        let Some(g) = self.task.gw.as_deref() else {
            return;
        };
        let settings = Rc::clone(&g.start.settings);
        self.fields.start_answer(&settings, &self.date, headers);
        for (k, v) in headers {
            self.fields.push(k.as_bytes(), v);
        }
        self.fields.finish(&settings, content_length);
        match self
            .core
            .send_headers(self.stream, status, self.fields.iter(), end)
        {
            Ok(()) => {
                self.task.head_sent = true;
                if end {
                    self.task.complete = true;
                    self.task.ended = true;
                }
            }
            Err(e) => {
                log::debug!("HTTP/2 stream {}: no head sent: {e:?}", self.stream);
                self.task.complete = true;
                self.task.ended = true;
            }
        }
    }
}

impl Sink for StreamSink<'_> {
    fn has_room(&self) -> bool {
        let t = &*self.task;
        let room = t.mem < STREAM_HIGH_WATER && self.others + t.mem < CONN_QUEUE_CAP;
        if !room {
            // The backend pauses: pump it once the stream has drained.
            t.paused.set(true);
        }
        room
    }

    fn head(&mut self, head: &AnswerHead<'_>) {
        if head.upgrade {
            // HTTP/2 has no 101 (RFC 9113 §8.6): no request of a stream asked
            // for one (its Upgrade field is refused), so a backend that
            // switches anyway answers nothing the client can use.
            log::error!("a backend answered 101 to an HTTP/2 request; answering 502");
            return self.fail(502);
        }
        let Some(g) = self.task.gw.as_deref_mut() else {
            return;
        };
        // An error handler's answer: the status lighttpd gives it.
        let status = match g.start.carry.error.as_ref() {
            Some(run) => error_run_status(run, head.status),
            None => head.status,
        };
        g.status = status;
        let remaining = if head.bodiless {
            Some(0)
        } else {
            head.content_length
        };
        g.sent = Sent::Body {
            chunked: false,
            remaining,
        };
        // HEAD keeps the length a GET would have; the body ends with the head.
        let shape = Shape::of_answer(head.bodiless, head.content_length);
        let (length, end) = plan::stream_head(g.start.head_only, shape);
        self.send_head(status, head.headers, length, end);
    }

    fn data(&mut self, bytes: &[u8]) {
        let Some(g) = self.task.gw.as_deref_mut() else {
            return;
        };
        let Sent::Body { remaining, .. } = &mut g.sent else {
            return;
        };
        let mut body = bytes;
        if let Some(rem) = remaining.as_mut() {
            let take = (body.len() as u64).min(*rem) as usize;
            body = &body[..take];
            *rem -= take as u64;
        }
        if body.is_empty() || g.start.head_only || self.task.ended {
            return;
        }
        g.body_sent += body.len() as u64;
        self.task.push_mem(body);
        self.core.set_ready(self.stream, true);
    }

    fn file(&mut self, head: &AnswerHead<'_>, file: Rc<File>, len: u64) {
        let Some(g) = self.task.gw.as_deref_mut() else {
            return;
        };
        g.status = head.status;
        // Whatever body the backend sends is not passed on.
        g.sent = Sent::Body {
            chunked: false,
            remaining: Some(0),
        };
        g.body_sent = len;
        let (length, end) = plan::stream_head(g.start.head_only, Shape::Sized(len));
        self.send_head(head.status, head.headers, length, end || len == 0);
        if !self.task.ended {
            self.task.push_file(file, 0, len);
            self.core.set_ready(self.stream, true);
        }
    }

    fn end(&mut self) {
        let Some(g) = self.task.gw.as_deref_mut() else {
            return;
        };
        g.done = true;
        if g.rerun.is_some() {
            // Nothing was sent: the session runs the request again.
            return;
        }
        if let Sent::Body {
            remaining: Some(r), ..
        } = g.sent
        {
            if r > 0 && !g.start.head_only {
                log::error!(
                    "backend sent less than its Content-Length; resetting the HTTP/2 stream"
                );
                self.task.cut = true;
            }
        }
        self.task.complete = true;
        self.core.set_ready(self.stream, true);
    }

    fn fail(&mut self, status: u16) {
        let Some(g) = self.task.gw.as_deref_mut() else {
            return;
        };
        g.end_failed();
        if self.task.head_sent {
            // The head promised a body that will not come: the client
            // sees the stream reset after what was queued.
            self.task.cut = true;
            self.task.complete = true;
            self.core.set_ready(self.stream, true);
            return;
        }
        let r = g.error_reply(status);
        let date = self.date;
        send_reply(
            self.core,
            self.fields,
            self.heads,
            self.task,
            self.stream,
            &r,
            &date,
        );
    }

    fn rerun(&mut self, why: Rerun) {
        if let Some(g) = self.task.gw.as_deref_mut() {
            g.rerun = Some(why);
        }
    }
}

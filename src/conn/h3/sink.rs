//! Answers onto a request stream: a backend's through the [`Sink`] of the
//! stream's gateway exchange ([`StreamSink`]); glint's own `Reply` goes
//! through `reply.rs`. The head is a HEADERS frame in the stream's output at
//! once; body pieces join the stream's queue, framed as DATA by the writer
//! as QUIC's flow control allows. Request bodies go to the job here too.

use std::fs::File;
use std::rc::Rc;

use quinn_proto::{Connection, StreamId};

use super::reply::{encode_head, send_reply};
use super::session::{stream_id, Io, Req, Session, BODY_CAP};
use crate::conn::gateway::Sent;
use crate::conn::h2::fields::FieldBuf;
use crate::conn::h2::stream::{Task, Use};
use crate::conn::h2::STREAM_HIGH_WATER;
use crate::exchange::{self, error_run_status};
use crate::msg::plan::{self, Shape};
use crate::msg::{AnswerHead, Request, Rerun, Sink};
use crate::upstream::JobId;

/// The client's side of a stream's gateway exchange, as the upstream sees it.
pub struct StreamSink<'a> {
    pub fields: &'a mut FieldBuf,
    pub section: &'a mut Vec<u8>,
    pub task: &'a mut Task,
    pub out: &'a mut Vec<u8>,
    pub date: [u8; crate::date::HTTP_DATE_LEN],
}

impl StreamSink<'_> {
    fn send_head(
        &mut self,
        status: u16,
        headers: &[(String, Vec<u8>)],
        length: Option<u64>,
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
        self.fields.finish(&settings, length);
        encode_head(status, self.fields, self.section, self.out);
        self.task.head_sent = true;
        if end {
            self.task.complete = true;
        }
    }
}

impl Sink for StreamSink<'_> {
    fn has_room(&self) -> bool {
        let room = self.task.mem < STREAM_HIGH_WATER;
        if !room {
            self.task.paused.set(true);
        }
        room
    }

    fn head(&mut self, head: &AnswerHead<'_>) {
        if head.upgrade {
            // HTTP/3 has no 101 (RFC 9114 §4.5): the Upgrade field is refused.
            log::error!("a backend answered 101 to an HTTP/3 request; answering 502");
            return self.fail(502);
        }
        let Some(g) = self.task.gw.as_deref_mut() else {
            return;
        };
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
    }

    fn file(&mut self, head: &AnswerHead<'_>, file: Rc<File>, len: u64) {
        let Some(g) = self.task.gw.as_deref_mut() else {
            return;
        };
        g.status = head.status;
        g.sent = Sent::Body {
            chunked: false,
            remaining: Some(0),
        };
        g.body_sent = len;
        let (length, end) = plan::stream_head(g.start.head_only, Shape::Sized(len));
        self.send_head(head.status, head.headers, length, end || len == 0);
        self.task.push_file(file, 0, len);
    }

    fn end(&mut self) {
        let Some(g) = self.task.gw.as_deref_mut() else {
            return;
        };
        g.done = true;
        if g.rerun.is_some() {
            return;
        }
        if let Sent::Body {
            remaining: Some(r), ..
        } = g.sent
        {
            if r > 0 && !g.start.head_only {
                log::error!(
                    "backend sent less than its Content-Length; resetting the HTTP/3 stream"
                );
                self.task.cut = true;
            }
        }
        self.task.complete = true;
    }

    fn fail(&mut self, status: u16) {
        let Some(g) = self.task.gw.as_deref_mut() else {
            return;
        };
        g.end_failed();
        if self.task.head_sent {
            self.task.cut = true;
            self.task.complete = true;
            return;
        }
        let r = g.error_reply(status);
        let date = self.date;
        send_reply(self.fields, self.section, self.task, self.out, &r, &date);
    }

    fn rerun(&mut self, why: Rerun) {
        if let Some(g) = self.task.gw.as_deref_mut() {
            g.rerun = Some(why);
        }
    }
}

impl Session {
    /// Request body bytes read for `id`: to its job as far as the job's
    /// window takes them, or dropped when nothing wants them.
    pub(super) fn feed_body(&mut self, id: StreamId, req: &mut Req, io: &mut Io<'_>) {
        let Some(task) = req.task.as_mut() else {
            return;
        };
        let job = match (task.body.use_, task.gw.as_ref()) {
            (Use::Hold, _) => return,
            (Use::Feed, Some(g)) => g.start.job,
            _ => {
                req.body.clear();
                return;
            }
        };
        let now = io.now();
        let done = task.body.done;
        // Bounded: each round takes bytes or stops.
        for _ in 0..64 {
            if !io.sv.upstream.takes_body(job) {
                break;
            }
            let result = if task.body.unframed {
                // A job collects a body of unknown length with HTTP/1's
                // chunked decoder, as it does for HTTP/2.
                let mut chunk = Vec::new();
                if req.body.is_empty() {
                    if !done || task.body.terminated {
                        break;
                    }
                    task.body.terminated = true;
                    chunk.extend_from_slice(b"0\r\n\r\n");
                } else {
                    crate::httpup::chunked::write_chunk_header(req.body.len(), &mut chunk);
                    chunk.extend_from_slice(&req.body);
                    chunk.extend_from_slice(b"\r\n");
                }
                let n = req.body.len();
                match io.sv.upstream.feed(job, &chunk, now, io.registry) {
                    Ok((used, _)) if used == chunk.len() => Ok(n),
                    Ok(_) => Err(400),
                    Err(s) => Err(s),
                }
            } else {
                if req.body.is_empty() {
                    break;
                }
                io.sv
                    .upstream
                    .feed(job, &req.body, now, io.registry)
                    .map(|(used, _)| used)
            };
            match result {
                Ok(0) if task.body.unframed && task.body.terminated => continue,
                Ok(0) => break,
                Ok(used) => {
                    req.body.drain(..used.min(req.body.len()));
                }
                Err(status) => {
                    if status == 413 {
                        log::warn!(
                            "an HTTP/3 request body for a backend is over its limit; answering 413"
                        );
                    }
                    task.body.use_ = Use::Drop;
                    req.body.clear();
                    let mut sink = self.sink(task, &mut req.out, io);
                    Sink::fail(&mut sink, status);
                    self.after_gw(id, req, io);
                    return;
                }
            }
        }
        let _ = BODY_CAP;
    }

    fn sink<'s>(
        &'s mut self,
        task: &'s mut Task,
        out: &'s mut Vec<u8>,
        io: &Io<'_>,
    ) -> StreamSink<'s> {
        StreamSink {
            fields: &mut self.fields,
            section: &mut self.section,
            task,
            out,
            date: io.sv.clock.http_date,
        }
    }

    /// Runs `f` with the sink of `stream`'s gateway exchange, then acts on
    /// what the answer came to.
    pub(super) fn with_sink(
        &mut self,
        stream: u32,
        io: &mut Io<'_>,
        f: impl FnOnce(&mut StreamSink<'_>, &mut Io<'_>, JobId),
    ) {
        let Some(id) = stream_id(stream) else { return };
        let Some(mut req) = self.reqs.remove(&id) else {
            return;
        };
        if let Some(mut task) = req.task.take() {
            if let Some(job) = task.gw.as_ref().map(|g| g.start.job) {
                let mut sink = self.sink(&mut task, &mut req.out, io);
                f(&mut sink, io, job);
            }
            req.task = Some(task);
            self.after_gw(id, &mut req, io);
        }
        self.reqs.insert(id, req);
    }

    pub fn backend_ready(
        &mut self,
        conn: &mut Connection,
        stream: u32,
        bkey: usize,
        io: &mut Io<'_>,
    ) {
        self.with_sink(stream, io, |sink, io, _| {
            let now = io.now();
            io.sv.upstream.drive_backend(bkey, sink, now, io.registry);
        });
        // The backend took body bytes: the stream's window may have room.
        self.wake(conn, stream, io);
    }

    pub fn upstream_news(
        &mut self,
        conn: &mut Connection,
        stream: u32,
        failed: Option<u16>,
        io: &mut Io<'_>,
    ) {
        self.with_sink(stream, io, |sink, _, _| match failed {
            Some(status) => Sink::fail(sink, status),
            None => Sink::end(sink),
        });
        let _ = conn;
    }

    /// After the upstream spoke through a stream's sink: a complete answer
    /// ends the job (logged), one that says so runs the request again.
    pub(super) fn after_gw(&mut self, id: StreamId, req: &mut Req, io: &mut Io<'_>) {
        let Some(task) = req.task.as_mut() else {
            return;
        };
        if !task.gw.as_ref().is_some_and(|g| g.done) {
            return;
        }
        let Some(mut gw) = task.gw.take() else { return };
        let info = gw.start.info.clone();
        if let Some(why) = gw.rerun.take() {
            io.sv.upstream.finish(gw.start.job);
            let head = gw.start.head.clone();
            // An authorizer's (a vhost lookup's) request keeps its body; a redirected one spent it.
            let authorized = why.keeps_body();
            let outcome = exchange::rerun(io.sv, &info, gw.start, why, io.registry);
            let mut hs = Vec::new();
            let view = head.view(&mut hs);
            let view = Request {
                body: if authorized {
                    view.body
                } else {
                    crate::msg::Body::None
                },
                ..view
            };
            let mut task = req
                .task
                .take()
                .unwrap_or_else(|| Task::new(io.now(), true, false));
            self.take_outcome(&mut task, &mut req.out, outcome, &view, &info, io);
            req.task = Some(task);
            self.feed_body(id, req, io);
            return;
        }
        io.sv.upstream.finish(gw.start.job);
        exchange::log_gateway(io.sv, &info, &gw.start, gw.status, gw.body_sent);
        task.body.use_ = Use::Drop;
        req.body.clear();
    }
}

//! Request bodies on HTTP/2 streams: DATA buffered in the core goes to the
//! stream's job as far as the job's window takes it (the client's window
//! is the back-pressure), or is consumed and dropped when nothing needs it;
//! and what a finished gateway answer leads to (its log line, a rerun).

use super::stream::{self, Task};
use super::{Io, Session, StreamSink};
use crate::exchange;
use crate::msg::Request;
use crate::upstream::JobId;

impl Session {
    /// Request body bytes buffered in the core for `stream`: to its job as
    /// far as the job's window takes them, or dropped when nothing wants
    /// them. What is not taken stays in the core, and its credit with it.
    pub(super) fn feed_body(&mut self, stream: u32, io: &mut Io<'_>) {
        let Some(mut task) = self.tasks.remove(&stream) else {
            if !self.held.iter().any(|h| h.stream == stream) {
                self.core.consume_all_body(stream);
            }
            return;
        };
        self.feed_task(stream, &mut task, io);
        self.tasks.insert(stream, task);
    }

    pub(super) fn feed_task(&mut self, stream: u32, task: &mut Task, io: &mut Io<'_>) {
        let Some(job) = self.feeding_job(stream, task) else {
            return;
        };
        let now = io.now();
        // Bounded: each round either takes bytes or stops.
        for _ in 0..64 {
            if !io.sv.upstream.takes_body(job) {
                break;
            }
            let result = if task.body.unframed {
                match self.feed_unframed(stream, task, job, now, io) {
                    Some(r) => r,
                    None => break,
                }
            } else {
                let body = self.core.body(stream);
                if body.is_empty() {
                    break;
                }
                io.sv
                    .upstream
                    .feed(job, body, now, io.registry)
                    .map(|(used, _)| used)
            };
            match result {
                Ok(0) => {
                    if task.body.unframed && task.body.terminated {
                        continue;
                    }
                    break;
                }
                Ok(used) => self.core.consume_body(stream, used),
                Err(status) => {
                    self.fail_body(stream, task, status, io);
                    return;
                }
            }
        }
    }

    /// The job that takes `stream`'s body, if one does now; a body nothing
    /// wants is consumed here (one held for an authorizer stays).
    fn feeding_job(&mut self, stream: u32, task: &Task) -> Option<JobId> {
        match (&task.body.use_, task.gw.as_ref()) {
            (stream::Use::Hold, _) => None,
            (stream::Use::Feed, Some(g)) => Some(g.start.job),
            _ => {
                self.core.consume_all_body(stream);
                None
            }
        }
    }

    /// One round of a body of unknown length: the job collects it with
    /// HTTP/1's chunked decoder (it needs the length before a backend is
    /// asked), so each DATA payload is handed over as one chunk, and
    /// END_STREAM as the last chunk, and the collector, its limit (413) and
    /// its dispatch stay one code path. `None`: nothing to hand over yet.
    fn feed_unframed(
        &mut self,
        stream: u32,
        task: &mut Task,
        job: JobId,
        now: u64,
        io: &mut Io<'_>,
    ) -> Option<Result<usize, u16>> {
        let body = self.core.body(stream);
        if body.is_empty() {
            if !task.body.done || task.body.terminated {
                return None;
            }
            task.body.terminated = true;
            self.chunk.clear();
            self.chunk.extend_from_slice(b"0\r\n\r\n");
        } else {
            self.chunk.clear();
            crate::httpup::chunked::write_chunk_header(body.len(), &mut self.chunk);
            self.chunk.extend_from_slice(body);
            self.chunk.extend_from_slice(b"\r\n");
        }
        let n = body.len();
        Some(
            match io.sv.upstream.feed(job, &self.chunk, now, io.registry) {
                Ok((used, _)) if used == self.chunk.len() => Ok(n),
                Ok(_) => Err(400),
                Err(status) => Err(status),
            },
        )
    }

    /// The job refused the body (`status`: 413 over its limit): the rest is
    /// dropped and the stream answers with the failure.
    fn fail_body(&mut self, stream: u32, task: &mut Task, status: u16, io: &mut Io<'_>) {
        if status == 413 {
            log::warn!("an HTTP/2 request body for a backend is over its limit; answering 413");
        }
        task.body.use_ = stream::Use::Drop;
        self.core.consume_all_body(stream);
        let date = io.sv.clock.http_date;
        let mut sink = StreamSink {
            core: &mut self.core,
            fields: &mut self.fields,
            heads: &mut self.heads,
            task,
            stream,
            others: 0,
            date,
        };
        crate::msg::Sink::fail(&mut sink, status);
        self.after_gw(stream, task, io);
    }

    /// After the upstream spoke through a stream's sink: a complete answer
    /// ends the job (logged), an answer that says so runs the request again.
    pub(super) fn after_gw(&mut self, stream: u32, task: &mut Task, io: &mut Io<'_>) {
        if !task.gw.as_ref().is_some_and(|g| g.done) {
            return;
        }
        let Some(mut gw) = task.gw.take() else { return };
        let info = gw.start.info.clone();
        if let Some(why) = gw.rerun.take() {
            // A backend that redirected before the whole body came: the
            // rest is dropped (the rerun has no body).
            io.sv.upstream.finish(gw.start.job);
            let head = gw.start.head.clone();
            // An authorizer's (a vhost lookup's) request keeps its body; a redirected one spent it.
            let authorized = why.keeps_body();
            let outcome = exchange::rerun(io.sv, &info, gw.start, why, io.registry);
            let mut hs = Vec::new();
            let req = head.view(&mut hs);
            let req = Request {
                body: if authorized {
                    req.body
                } else {
                    crate::msg::Body::None
                },
                ..req
            };
            self.take_outcome(stream, task, outcome, &req, &info, io);
            self.feed_task(stream, task, io);
            return;
        }
        io.sv.upstream.finish(gw.start.job);
        exchange::log_gateway(io.sv, &info, &gw.start, gw.status, gw.body_sent);
        task.body.use_ = stream::Use::Drop;
        self.core.consume_all_body(stream);
    }
}

//! The client's side of a gateway exchange on an HTTP/1 connection: how a
//! backend's answer, heard through the [`Sink`], becomes response bytes
//! (its head, a body framed with Content-Length or chunked), and what the
//! connection does when the backend is done.

use std::fs::File;
use std::rc::Rc;

mod drive;
pub mod ws;

use super::encoded::{self, AnswerPlan, Encoded};
use crate::exchange::{error_run_status, GwStart};
use crate::msg::plan::Shape;
use crate::msg::{AnswerHead, Reply, Rerun, Sink};
use crate::output::encode::MAX_SLICE;
use crate::output::Output;
use crate::proto::h1::session::{Offer, Plan, Session};
use crate::proto::h1::{self, Fields, Framing, Head};

/// Stop reading from a backend while the client has this much unsent.
pub const CLIENT_HIGH_WATER: usize = 256 * 1024;
/// Reading resumes once the client caught up below this.
pub const CLIENT_LOW_WATER: usize = CLIENT_HIGH_WATER / 2;

/// How much of the answer has gone to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Nothing: an error page may still answer.
    Nothing,
    /// The head, and the body is under way.
    Body {
        chunked: bool,
        /// Body bytes still expected, when the head announced a length.
        remaining: Option<u64>,
    },
}

/// A gateway exchange, from the head of its request to the end of its answer.
#[derive(Debug)]
pub struct GwSide {
    pub start: GwStart,
    pub sent: Sent,
    pub status: u16,
    pub body_sent: u64,
    /// The backend is done with the request (its answer complete, or failed).
    pub done: bool,
    /// The answer says to run the request again (once `done`).
    pub rerun: Option<Rerun>,
    /// The answer's body goes through a compressor (mod_deflate).
    pub encoded: Option<Box<Encoded>>,
    /// Body bytes compressed in this turn of the loop: at [`MAX_SLICE`] the
    /// backend pauses until the next turn, so that a fast backend cannot
    /// keep the loop compressing (at brotli 5, 128 KiB takes about 5 ms).
    pub fed: usize,
    /// Paused at that bound: read the backend again next turn.
    pub resume: bool,
    /// The compressed body broke off: it must not end as if complete.
    pub cut: bool,
    /// mod_wstunnel: the WebSocket the tunnel's bytes are framed in.
    pub ws: Option<Box<ws::WsSide>>,
}

impl GwSide {
    pub fn new(start: GwStart) -> GwSide {
        GwSide {
            start,
            sent: Sent::Nothing,
            status: 0,
            body_sent: 0,
            done: false,
            rerun: None,
            encoded: None,
            fed: 0,
            resume: false,
            cut: false,
            ws: None,
        }
    }

    pub fn head_sent(&self) -> bool {
        self.sent != Sent::Nothing
    }

    /// The backend failed: the exchange is over and is not run again (a
    /// failure while the rest of an answer was being dropped ends it too).
    pub fn end_failed(&mut self) {
        self.done = true;
        self.rerun = None;
    }

    /// The error page that answers a failure before any head went out; the
    /// exchange counts it as its whole answer.
    pub fn error_reply(&mut self, status: u16) -> Reply {
        let mut r =
            crate::msg::ReplyData::boxed(Rc::clone(&self.start.settings), self.start.head_only);
        r.error(status);
        self.status = status;
        self.body_sent = r.body_len();
        self.sent = Sent::Body {
            chunked: false,
            remaining: Some(0),
        };
        r
    }

    /// The client has the whole body its head announced.
    pub fn body_complete(&self) -> bool {
        matches!(
            self.sent,
            Sent::Body {
                remaining: Some(0),
                ..
            }
        )
    }
}

/// The part of `bytes` the head's length still allows (all of them when it
/// announced none), counted off `remaining`: a backend's bytes beyond its
/// Content-Length are dropped.
fn within<'b>(remaining: &mut Option<u64>, bytes: &'b [u8]) -> &'b [u8] {
    match remaining {
        Some(rem) => {
            let take = (bytes.len() as u64).min(*rem) as usize;
            *rem -= take as u64;
            &bytes[..take]
        }
        None => bytes,
    }
}

/// The [`Sink`] of one gateway exchange: its connection's output queue,
/// framed as the HTTP/1 session plans each head.
pub struct ClientSink<'a> {
    pub out: &'a mut Output,
    pub gw: &'a mut GwSide,
    pub h1: &'a mut Session,
    /// What the connection offers (keep-alive) as the head is planned.
    pub offer: Offer,
    /// The `Date` value of this second.
    pub date: &'a [u8],
    /// The load average, when `deflate.max-loadavg` asks for it.
    pub load: f64,
    /// The connection's download limits (a backend may lower them).
    pub throttle: &'a mut crate::output::throttle::Throttle,
}

impl ClientSink<'_> {
    /// The session's plan for a head of `shape`.
    fn plan(&mut self, shape: Shape) -> Plan {
        self.h1.plan(shape, false, self.offer)
    }

    pub(super) fn write_head(&mut self, status: u16, headers: &[(String, Vec<u8>)], plan: &Plan) {
        let g = &mut self.gw;
        g.status = status;
        let head = Head {
            status,
            fields: Fields::Pairs(headers),
            framing: plan.framing,
            settings: &g.start.settings,
            date: self.date,
            keep_alive: plan.keep_alive,
            minor: plan.minor,
            http10: plan.http10,
        };
        h1::write_head(self.out, &head);
    }

    /// An error handler's answer: the status lighttpd gives it.
    fn shown_status(&self, status: u16) -> u16 {
        match self.gw.start.carry.error.as_ref() {
            Some(run) => error_run_status(run, status),
            None => status,
        }
    }

    /// The answer's head passed on (with `headers`: the backend's, or
    /// those with `Vary` added).
    fn head_as_is(&mut self, head: &AnswerHead<'_>, headers: &[(String, Vec<u8>)]) {
        let plan = self.plan(Shape::of_answer(head.bodiless, head.content_length));
        let status = self.shown_status(head.status);
        self.gw.sent = Sent::Body {
            chunked: plan.framing == Framing::Chunked && plan.body,
            remaining: plan.framing.length(),
        };
        self.write_head(status, headers, &plan);
    }

    /// Body bytes passed on as they came.
    fn data_as_is(&mut self, bytes: &[u8]) {
        let g = &mut self.gw;
        let Sent::Body { chunked, remaining } = &mut g.sent else {
            return;
        };
        let body = within(remaining, bytes);
        if body.is_empty() || g.start.head_only {
            return;
        }
        g.body_sent += body.len() as u64;
        if *chunked {
            h1::write_chunk(self.out, body);
        } else {
            self.out.mem.extend_from_slice(body);
        }
    }
}

impl ClientSink<'_> {
    /// A 101 to an `Upgrade` request: the head as the backend gave it
    /// (`Upgrade`, `Connection: upgrade`), then the connection is a
    /// tunnel: bytes both ways, unframed, until either side closes; it is
    /// never used for another request.
    fn switch(&mut self, head: &AnswerHead<'_>) {
        let plan = self.plan(Shape::Tunnel);
        let g = &mut self.gw;
        g.status = head.status;
        g.sent = Sent::Body {
            chunked: false,
            remaining: None,
        };
        let mut fields = head.headers.to_vec();
        if !fields
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("connection"))
        {
            fields.push(("Connection".into(), b"upgrade".to_vec()));
        }
        let h = Head {
            status: head.status,
            fields: Fields::Pairs(&fields),
            framing: plan.framing,
            settings: &g.start.settings,
            date: self.date,
            // (Not `Connection: close`: the field above says what happens.)
            keep_alive: true,
            minor: plan.minor,
            http10: plan.http10,
        };
        h1::write_head(self.out, &h);
    }
}

impl Sink for ClientSink<'_> {
    fn has_room(&self) -> bool {
        self.out.pending_mem() < CLIENT_HIGH_WATER && self.gw.fed < MAX_SLICE
    }

    fn head(&mut self, head: &AnswerHead<'_>) {
        if let Some(limit) = head.rate_limit {
            self.throttle.lower(limit);
        }
        if head.upgrade {
            return self.switch(head);
        }
        let plan = encoded::plan_answer(&self.gw.start, head, self.load);
        let headers = match plan {
            AnswerPlan::AsIs => return self.head_as_is(head, head.headers),
            AnswerPlan::Headers(h) => return self.head_as_is(head, &h),
            AnswerPlan::Precondition(status, h) => {
                // The backend's body is not passed on.
                self.gw.sent = Sent::Body {
                    chunked: false,
                    remaining: Some(0),
                };
                let shape = Shape::of_answer(status == 304, Some(0));
                let plan = self.plan(shape);
                return self.write_head(status, &h, &plan);
            }
            AnswerPlan::Compress(coding, h) => (coding, h),
        };
        let (coding, h) = headers;
        // The compressed body's length is the compressor's: a stream.
        let plan = self.plan(Shape::Stream);
        let g = &mut self.gw;
        let chunked = plan.framing == Framing::Chunked;
        let enc = if plan.body {
            match encoded::for_answer(&g.start, coding, &h, head.content_length, chunked) {
                Some(e) => Some(Box::new(e)),
                // No encoder: the answer goes as it came (with its Vary).
                None => {
                    let plain: Vec<_> = h
                        .into_iter()
                        .filter(|(k, _)| !k.eq_ignore_ascii_case("content-encoding"))
                        .collect();
                    return self.head_as_is(head, &plain);
                }
            }
        } else {
            // HEAD: the compressed variant's head, whose length is unknown.
            None
        };
        let status = self.shown_status(head.status);
        let g = &mut self.gw;
        g.sent = Sent::Body {
            chunked: false,
            // The backend's own length still bounds what is taken from it.
            remaining: head.content_length,
        };
        g.encoded = enc;
        self.write_head(status, &h, &plan);
    }

    fn data(&mut self, bytes: &[u8]) {
        let g = &mut self.gw;
        if let Some(ws) = g.ws.as_deref_mut() {
            g.body_sent += bytes.len() as u64;
            return ws.send_data(bytes, &mut self.out.mem);
        }
        let Sent::Body { remaining, .. } = &mut g.sent else {
            return;
        };
        if g.encoded.is_none() {
            return self.data_as_is(bytes);
        }
        let body = within(remaining, bytes);
        if body.is_empty() || g.start.head_only {
            return;
        }
        g.fed += body.len();
        if let Some(enc) = g.encoded.as_mut() {
            match enc.feed(body, self.out) {
                Ok(n) => g.body_sent += n,
                Err(e) => {
                    // The answer cannot be completed: the client sees it cut.
                    log::warn!("{e}; connection closed");
                    g.encoded = None;
                    g.sent = Sent::Body {
                        chunked: false,
                        remaining: Some(0),
                    };
                    g.cut = true;
                    self.h1.cut();
                }
            }
        }
    }

    fn file(&mut self, head: &AnswerHead<'_>, file: Rc<File>, len: u64) {
        if let Some(limit) = head.rate_limit {
            self.throttle.lower(limit);
        }
        let plan = self.plan(Shape::Sized(len));
        self.write_head(head.status, head.headers, &plan);
        let g = &mut self.gw;
        // Whatever body the backend sends is not passed on.
        g.sent = Sent::Body {
            chunked: false,
            remaining: Some(0),
        };
        g.body_sent = len;
        if !g.start.head_only {
            self.out.push_file(file, 0, len);
        }
    }

    fn end(&mut self) {
        let g = &mut self.gw;
        g.done = true;
        if let Some(ws) = g.ws.as_deref_mut() {
            // The backend is done: the WebSocket closes ("going away").
            return ws.send_close(1001, &mut self.out.mem);
        }
        if g.rerun.is_some() {
            // Nothing was written: the connection runs the request again.
            return;
        }
        if let Some(mut enc) = g.encoded.take() {
            match enc.finish(self.out) {
                Ok(n) => g.body_sent += n,
                Err(e) => {
                    log::warn!("{e}; connection closed");
                    g.cut = true;
                }
            }
        }
        if g.cut {
            self.h1.cut();
            return;
        }
        match g.sent {
            Sent::Nothing => {}
            Sent::Body { chunked, remaining } => {
                if chunked {
                    h1::write_last_chunk(self.out);
                }
                if remaining.is_some_and(|r| r > 0) && !g.start.head_only {
                    log::error!(
                        "backend sent less than its Content-Length; closing the connection"
                    );
                    self.h1.cut();
                }
            }
        }
    }

    fn fail(&mut self, status: u16) {
        let g = &mut self.gw;
        g.end_failed();
        if let Some(ws) = g.ws.as_deref_mut() {
            ws.send_close(1001, &mut self.out.mem);
        }
        if g.head_sent() {
            // The head promised a body that will not come: the client must see the cut.
            self.h1.cut();
            return;
        }
        let r = g.error_reply(status);
        let plan = self.plan(Shape::of_reply(&r));
        h1::write_reply(self.out, &r, self.date, &plan, true);
    }

    fn rerun(&mut self, why: Rerun) {
        self.gw.rerun = Some(why);
    }
}

//! The client's side of a gateway exchange on an HTTP/1 connection: how a
//! backend's answer, heard through the [`Sink`], becomes response bytes
//! (its head, a body framed with Content-Length or chunked), and what the
//! connection does when the backend is done.

use std::fs::File;
use std::rc::Rc;

use crate::exchange::{error_run_status, GwStart};
use crate::msg::{AnswerHead, Reply, Rerun, Sink};
use crate::output::Output;
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
        }
    }

    pub fn head_sent(&self) -> bool {
        self.sent != Sent::Nothing
    }
}

/// The [`Sink`] of one gateway exchange: its connection's output queue.
pub struct ClientSink<'a> {
    pub out: &'a mut Output,
    pub gw: &'a mut GwSide,
    /// The `Date` value of this second.
    pub date: &'a [u8],
}

impl ClientSink<'_> {
    fn write_head(&mut self, status: u16, headers: &[(String, Vec<u8>)], framing: Framing) {
        let g = &mut self.gw;
        g.status = status;
        let head = Head {
            status,
            fields: Fields::Pairs(headers),
            framing,
            settings: &g.start.settings,
            date: self.date,
            keep_alive: g.start.keep_alive,
            minor: g.start.minor,
        };
        h1::write_head(self.out, &head);
    }
}

impl Sink for ClientSink<'_> {
    fn has_room(&self) -> bool {
        self.out.pending_mem() < CLIENT_HIGH_WATER
    }

    fn head(&mut self, head: &AnswerHead<'_>) {
        let g = &mut self.gw;
        let (framing, remaining) = match head.content_length {
            _ if head.bodiless => (Framing::None, None),
            Some(n) => (Framing::Length(n), Some(n)),
            None if g.start.minor >= 1 => (Framing::Chunked, None),
            None => {
                // HTTP/1.0 without a length: the body ends when the connection does.
                g.start.keep_alive = false;
                (Framing::None, None)
            }
        };
        // An error handler's answer: the status lighttpd gives it.
        let status = match g.start.carry.error.as_ref() {
            Some(run) => error_run_status(run, head.status),
            None => head.status,
        };
        g.sent = Sent::Body {
            chunked: framing == Framing::Chunked && !g.start.head_only,
            remaining,
        };
        self.write_head(status, head.headers, framing);
    }

    fn data(&mut self, bytes: &[u8]) {
        let g = &mut self.gw;
        let Sent::Body { chunked, remaining } = &mut g.sent else {
            return;
        };
        let mut body = bytes;
        if let Some(rem) = remaining.as_mut() {
            let take = (body.len() as u64).min(*rem) as usize;
            body = &body[..take];
            *rem -= take as u64;
        }
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

    fn file(&mut self, head: &AnswerHead<'_>, file: Rc<File>, len: u64) {
        self.write_head(head.status, head.headers, Framing::Length(len));
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
        if g.rerun.is_some() {
            // Nothing was written: the connection runs the request again.
            return;
        }
        match g.sent {
            Sent::Nothing => {}
            Sent::Body { chunked, remaining } => {
                if chunked {
                    h1::write_last_chunk(self.out);
                }
                if remaining.is_some_and(|r| r > 0) {
                    log::error!(
                        "backend sent less than its Content-Length; closing the connection"
                    );
                    g.start.keep_alive = false;
                }
            }
        }
    }

    fn fail(&mut self, status: u16) {
        let g = &mut self.gw;
        g.done = true;
        // A failure while the rest of an answer was being dropped ends the
        // request too: it is not run again.
        g.rerun = None;
        if g.head_sent() {
            // The head promised a body that will not come: the client must see the cut.
            g.start.keep_alive = false;
            return;
        }
        let mut r = Reply::new(Rc::clone(&g.start.settings), g.start.head_only);
        r.error(status);
        g.status = status;
        g.body_sent = r.body_len();
        g.sent = Sent::Body {
            chunked: false,
            remaining: Some(0),
        };
        h1::write_reply(self.out, &r, self.date, g.start.keep_alive, g.start.minor);
    }

    fn rerun(&mut self, why: Rerun) {
        self.gw.rerun = Some(why);
    }
}

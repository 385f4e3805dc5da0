//! The reading side: the preface, then each frame against the stream
//! states of RFC 9113 §5.1 and the limits of `limits.rs`.

use super::*;
use crate::proto::h2::frame::{Frame, DEFAULT_MAX_FRAME_SIZE};

use ErrorCode as E;

impl Connection {
    /// Feeds received bytes; returns how many were used. The rest (an
    /// incomplete frame, at most 9 + 16384 bytes) must be passed again with
    /// what follows. Events are queued for [`Connection::poll_event`] and
    /// frames for [`Connection::output`]; check both after every call.
    ///
    /// A connection error queues GOAWAY and is returned; the caller writes
    /// the output and closes (every later call returns the same error).
    /// `now_ms` is any monotonic clock, for the per-time-window budgets.
    pub fn recv(&mut self, bytes: &[u8], now_ms: u64) -> Result<usize, Error> {
        let mut used = 0;
        loop {
            let rest = bytes.get(used..).unwrap_or_default();
            match self.phase {
                Phase::Failed(e) => return Err(e),
                Phase::Preface(matched) => {
                    let want = &PREFACE[matched..];
                    let n = want.len().min(rest.len());
                    if rest[..n] != want[..n] {
                        // §3.4 lets GOAWAY be omitted: this peer likely
                        // does not speak HTTP/2 at all.
                        let e = Error::conn(E::PROTOCOL_ERROR, "no HTTP/2 client preface");
                        self.phase = Phase::Failed(e);
                        return Err(e);
                    }
                    used += n;
                    if matched + n < PREFACE.len() {
                        self.phase = Phase::Preface(matched + n);
                        return Ok(used);
                    }
                    self.phase = Phase::FirstSettings;
                }
                Phase::FirstSettings | Phase::Frames => {
                    let (result, n) = match frame::parse(rest, DEFAULT_MAX_FRAME_SIZE) {
                        Ok(None) => return Ok(used),
                        Ok(Some((f, n))) => (self.on_frame(f, now_ms), n),
                        Err(e) => {
                            let len = frame::parse_head(rest).map_or(0, |h| h.len as usize);
                            (Err(e), HEADER_LEN + len)
                        }
                    };
                    used += n;
                    match result {
                        Ok(()) => {}
                        Err(Error::Stream { stream, code, why })
                            if self.pending.is_none() && self.phase == Phase::Frames =>
                        {
                            if let Err(e) = self.stream_error(stream, code, why, now_ms) {
                                return Err(self.fail(e));
                            }
                        }
                        // A stream error inside a field block, or before the
                        // first SETTINGS, leaves nothing sane to go on with.
                        Err(e @ Error::Stream { .. }) => {
                            return Err(self.fail(Error::conn(E::PROTOCOL_ERROR, e.why())));
                        }
                        Err(e) => return Err(self.fail(e)),
                    }
                }
            }
        }
    }

    /// Ends the connection: GOAWAY(code) naming the last stream processed.
    pub(super) fn fail(&mut self, e: Error) -> Error {
        if !matches!(self.phase, Phase::Failed(_)) {
            let last = self
                .goaway_sent
                .unwrap_or(self.last_stream)
                .min(self.last_stream);
            encode::goaway(&mut self.out, last, e.code(), e.why().as_bytes());
            self.goaway_sent = Some(last);
            self.phase = Phase::Failed(e);
        }
        e
    }

    /// A frame the client provoked is about to be queued: refuse once the
    /// client has left too much output unread (PING/SETTINGS floods).
    pub(super) fn provoked(&self) -> Result<(), Error> {
        if self.output().len() > self.cfg.max_pending_output {
            return Err(Error::conn(
                E::ENHANCE_YOUR_CALM,
                "client leaves its control frames unread",
            ));
        }
        Ok(())
    }

    /// Resets a stream because of the client's error; every such reset
    /// spends the reset budget (MadeYouReset, CVE-2025-8671).
    pub(super) fn stream_error(
        &mut self,
        stream: StreamId,
        code: ErrorCode,
        why: &'static str,
        now_ms: u64,
    ) -> Result<(), Error> {
        if !self.streams.contains_key(&stream) && self.closed_how(stream) == Some(Closed::ResetByUs)
        {
            // Already reset: the client's frames in flight are ignored (§5.1).
            return Ok(());
        }
        if self.after_goaway(stream) {
            return Ok(());
        }
        if stream > self.last_stream {
            // §6.4: no RST_STREAM for an idle stream; the error is the
            // connection's (a bad PRIORITY or WINDOW_UPDATE before HEADERS).
            return Err(Error::conn(code, why));
        }
        self.provoked()?;
        encode::rst_stream(&mut self.out, stream, code);
        if self.streams.contains_key(&stream) {
            self.remove_stream(stream, Closed::ResetByUs);
            self.events.push_back(Event::Reset {
                stream,
                code,
                by_peer: false,
            });
        } else {
            self.note_closed(stream, Closed::ResetByUs);
            self.events.push_back(Event::Rejected { stream, why });
        }
        self.spend_reset(now_ms)
    }

    pub(super) fn spend_reset(&mut self, now_ms: u64) -> Result<(), Error> {
        if !self.resets.spend(now_ms) {
            return Err(Error::conn(E::ENHANCE_YOUR_CALM, "too many stream resets"));
        }
        Ok(())
    }

    pub(super) fn spend_empty(&mut self, now_ms: u64) -> Result<(), Error> {
        if !self.empties.spend(now_ms) {
            return Err(Error::conn(E::ENHANCE_YOUR_CALM, "too many empty frames"));
        }
        Ok(())
    }

    /// A stream the client may have opened after our GOAWAY named an
    /// earlier last stream: everything on it is ignored (§6.8).
    pub(super) fn after_goaway(&self, id: StreamId) -> bool {
        self.goaway_sent.is_some_and(|last| id > last)
    }

    /// How a stream at or below `last_stream` without a record was closed,
    /// if it is among the recently closed.
    pub(super) fn closed_how(&self, stream: StreamId) -> Option<Closed> {
        self.recently_closed
            .iter()
            .rev()
            .find(|(id, _)| *id == stream)
            .map(|&(_, how)| how)
    }

    pub(super) fn on_frame(&mut self, f: Frame<'_>, now_ms: u64) -> Result<(), Error> {
        if self.phase == Phase::FirstSettings {
            if !matches!(f, Frame::Settings { ack: false, .. }) {
                return Err(Error::conn(E::PROTOCOL_ERROR, "first frame not SETTINGS"));
            }
            self.phase = Phase::Frames;
        }
        if let Some(p) = self.pending {
            // §6.10: nothing but CONTINUATION on that stream until END_HEADERS.
            return match f {
                Frame::Continuation {
                    stream,
                    fragment,
                    end_headers,
                } if stream == p.stream => self.on_continuation(p, fragment, end_headers, now_ms),
                _ => Err(Error::conn(E::PROTOCOL_ERROR, "frame inside a field block")),
            };
        }
        match f {
            Frame::Data {
                stream,
                data,
                end_stream,
                flow_len,
            } => self.on_data(stream, data, end_stream, flow_len, now_ms),
            Frame::Headers {
                stream,
                priority,
                fragment,
                end_stream,
                end_headers,
            } => {
                let p = Pending {
                    stream,
                    end_stream,
                    priority,
                    continuations: 0,
                };
                self.on_headers(p, fragment, end_headers, now_ms)
            }
            // RFC 7540 priorities are ignored (RFC 9218 §2.1); the parser
            // already checked the frame.
            Frame::Priority { .. } | Frame::Unknown { .. } => Ok(()),
            Frame::RstStream { stream, code } => self.on_rst(stream, code, now_ms),
            Frame::Settings { ack, params } => {
                if ack {
                    self.settings_unacked = false;
                } else {
                    self.on_settings(params)?;
                }
                Ok(())
            }
            Frame::PushPromise { .. } => {
                Err(Error::conn(E::PROTOCOL_ERROR, "PUSH_PROMISE from a client"))
            }
            Frame::Ping { ack, data } => {
                if !ack {
                    self.provoked()?;
                    encode::ping_ack(&mut self.out, data);
                }
                Ok(())
            }
            Frame::GoAway { code, debug, .. } => {
                self.on_goaway(code, debug);
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => self.on_window_update(stream, increment),
            Frame::Continuation { .. } => Err(Error::conn(
                E::PROTOCOL_ERROR,
                "CONTINUATION without a field block",
            )),
            Frame::PriorityUpdate {
                prioritized,
                field_value,
            } => {
                self.on_priority_update(prioritized, field_value);
                Ok(())
            }
        }
    }

    /// The client's GOAWAY, its debug data cut to 256 bytes.
    fn on_goaway(&mut self, code: ErrorCode, debug: &[u8]) {
        self.goaway_received = true;
        self.events.push_back(Event::GoAway {
            code,
            debug: debug[..debug.len().min(256)].to_vec(),
        });
    }

    /// The client sent END_STREAM on `stream`.
    pub(super) fn close_remote(&mut self, stream: StreamId) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        match s.state {
            State::Open => s.state = State::HalfClosedRemote,
            // The caller still has body to read: keep the record for it.
            State::HalfClosedLocal if s.buffered() > 0 => s.state = State::Closed,
            _ => self.remove_stream(stream, Closed::EndStream),
        }
    }

    pub(super) fn on_data(
        &mut self,
        id: StreamId,
        data: &[u8],
        end_stream: bool,
        flow_len: u32,
        now_ms: u64,
    ) -> Result<(), Error> {
        // Every DATA frame counts against the connection window, whatever
        // becomes of its stream (§6.9).
        let flow = flow_len as usize;
        if flow as i64 > self.conn_recv {
            return Err(Error::conn(
                E::FLOW_CONTROL_ERROR,
                "DATA past the connection window",
            ));
        }
        self.conn_recv -= flow as i64;
        if data.is_empty() && !end_stream {
            self.spend_empty(now_ms)?;
        }
        if self.after_goaway(id) {
            self.credit_conn(flow);
            return Ok(());
        }
        if id > self.last_stream {
            return Err(Error::conn(E::PROTOCOL_ERROR, "DATA on an idle stream"));
        }
        let serr = |code, why| Err(Error::stream(id, code, why));
        let Some(s) = self.streams.get_mut(&id) else {
            return self.data_on_gone(id, flow);
        };
        if s.state == State::Closed {
            return Err(Error::conn(E::STREAM_CLOSED, "DATA on a closed stream"));
        }
        if !s.remote_open() {
            self.credit_conn(flow);
            return serr(E::STREAM_CLOSED, "DATA after END_STREAM");
        }
        if flow as i64 > s.recv_window {
            self.credit_conn(flow);
            return serr(E::FLOW_CONTROL_ERROR, "DATA past the stream window");
        }
        s.recv_window -= flow as i64;
        s.received += data.len() as u64;
        if let Some(cl) = s.content_length {
            if s.received > cl || (end_stream && s.received != cl) {
                self.credit_conn(flow);
                return serr(E::PROTOCOL_ERROR, "body length differs from content-length");
            }
        }
        if s.drain.is_some() {
            self.drop_data(id, flow, end_stream);
            return Ok(());
        }
        s.body.extend_from_slice(data);
        // Padding is nobody's to consume: its credit goes back now.
        let pad = flow - data.len();
        if pad > 0 && !end_stream {
            credit_stream(s, id, pad, self.cfg.stream_window, &mut self.out);
        }
        self.credit_conn(pad);
        self.events.push_back(Event::Data {
            stream: id,
            len: data.len(),
            end_stream,
        });
        if end_stream {
            self.close_remote(id);
        }
        Ok(())
    }

    /// DATA on a stream no longer open: its credit goes back, and the frame
    /// is ignored or an error by how the stream closed.
    fn data_on_gone(&mut self, id: StreamId, flow: usize) -> Result<(), Error> {
        self.credit_conn(flow);
        match self.closed_how(id) {
            Some(Closed::ResetByUs) => Ok(()),
            // §5.1: frames after END_STREAM both ways end the connection.
            Some(Closed::EndStream) => {
                Err(Error::conn(E::STREAM_CLOSED, "DATA on a closed stream"))
            }
            _ => Err(Error::stream(
                id,
                E::STREAM_CLOSED,
                "DATA on a closed stream",
            )),
        }
    }
}

/// `n` bytes' credit on stream `id` back to the client (padding, or a
/// dropped body): a WINDOW_UPDATE once enough is due (the connection's
/// comes back with `credit_conn`).
#[inline]
pub(super) fn credit_stream(
    s: &mut Stream,
    id: StreamId,
    n: usize,
    window: u32,
    out: &mut Vec<u8>,
) {
    s.recv_unacked += n as u32;
    if flow::due(s.recv_unacked, window) {
        encode::window_update(out, id, s.recv_unacked);
        s.recv_window += s.recv_unacked as i64;
        s.recv_unacked = 0;
    }
}

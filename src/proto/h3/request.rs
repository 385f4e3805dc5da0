//! One request stream (RFC 9114 §4.1): a HEADERS frame, DATA frames, an
//! optional trailing HEADERS, then the end of the stream. Fed bytes as
//! QUIC delivers them, it reports the head (decoded and checked as HTTP/2's
//! is, RFC 9114 §4.3 being RFC 9113 §8.3's rules), body bytes as they come,
//! and the end; frames of other streams are a connection error, and a
//! malformed message a stream error (§4.1.2).

use super::{conn_err, frame, qpack, stream_err, Code, Failure};
use crate::proto::h2::conn::request::{request_head, trailers, RequestHead};
use crate::proto::h2::hpack::HeaderList;

/// What a request stream's bytes came to, in order.
#[derive(Debug)]
pub enum Event<'a> {
    /// The request head.
    Head(RequestHead),
    /// The head is past the advertised bound (or its frame past
    /// [`Limits::max_headers_frame`]): answer 431; the rest of the stream
    /// is dropped.
    TooLarge,
    /// Body bytes.
    Data(&'a [u8]),
    /// The stream ended cleanly after a head: the body is complete.
    End,
}

/// The bounds a request stream is read under.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The decoded size a head may have (SETTINGS_MAX_FIELD_SECTION_SIZE).
    pub max_field_section: usize,
    /// The bytes a HEADERS frame may have, encoded.
    pub max_headers_frame: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Head,
    Body,
    /// Trailers came: only the end (or unknown frames) may follow.
    Trailers,
    /// The head was refused: the rest is read and dropped.
    Discard,
    Done,
}

/// A request stream's reading state.
#[derive(Debug, Default)]
pub struct RequestStream {
    state: State,
    /// The bytes of a frame head cut short, or of a HEADERS payload.
    buf: Vec<u8>,
    /// A HEADERS payload of this length is being collected in `buf`.
    headers_len: Option<u64>,
    /// DATA payload bytes of the current frame still to come.
    data_left: u64,
    /// Payload bytes of an unknown frame still to skip.
    skip_left: u64,
    content_length: Option<u64>,
    body_seen: u64,
}

impl RequestStream {
    /// Whether the stream ended (or was refused): nothing more is read.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done | State::Discard)
    }

    /// Feeds bytes of the stream (`fin`: the last ones). Events go to
    /// `emit` in order; an error stops reading.
    pub fn recv(
        &mut self,
        mut input: &[u8],
        fin: bool,
        lim: &Limits,
        emit: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), Failure> {
        if self.state == State::Discard {
            return Ok(());
        }
        while !input.is_empty() && self.state != State::Discard {
            input = self.step(input, lim, emit)?;
        }
        if fin && self.state != State::Discard {
            self.finish(emit)?;
        }
        Ok(())
    }

    /// One piece of work on `input`; returns what is left of it.
    fn step<'a>(
        &mut self,
        input: &'a [u8],
        lim: &Limits,
        emit: &mut dyn FnMut(Event<'_>),
    ) -> Result<&'a [u8], Failure> {
        if self.data_left > 0 {
            let n = (self.data_left.min(input.len() as u64)) as usize;
            self.data_left -= n as u64;
            self.body_seen += n as u64;
            if self.content_length.is_some_and(|cl| self.body_seen > cl) {
                return Err(stream_err(Code::MESSAGE_ERROR, "body past content-length"));
            }
            emit(Event::Data(&input[..n]));
            return Ok(&input[n..]);
        }
        if self.skip_left > 0 {
            let n = (self.skip_left.min(input.len() as u64)) as usize;
            self.skip_left -= n as u64;
            return Ok(&input[n..]);
        }
        if let Some(len) = self.headers_len {
            let want = len as usize - self.buf.len();
            let n = want.min(input.len());
            self.buf.extend_from_slice(&input[..n]);
            if self.buf.len() == len as usize {
                self.headers_len = None;
                self.on_headers(lim, emit)?;
                self.buf.clear();
            }
            return Ok(&input[n..]);
        }
        // A frame head, perhaps joined to the start of one cut short.
        let (head, used) = if self.buf.is_empty() {
            match frame::parse_head(input) {
                Some(h) => (h, h.head_len),
                None => {
                    self.buf.extend_from_slice(input);
                    return Ok(&[]);
                }
            }
        } else {
            let had = self.buf.len();
            let take = input.len().min(16 - had.min(16));
            self.buf.extend_from_slice(&input[..take]);
            match frame::parse_head(&self.buf) {
                Some(h) => {
                    self.buf.clear();
                    (h, h.head_len - had)
                }
                None => return Ok(&input[take..]),
            }
        };
        self.on_frame_head(head, lim, emit)?;
        Ok(&input[used..])
    }

    fn on_frame_head(
        &mut self,
        head: frame::Head,
        lim: &Limits,
        emit: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), Failure> {
        match head.ty {
            frame::DATA => {
                if self.state != State::Body {
                    return Err(conn_err(Code::FRAME_UNEXPECTED, "DATA out of place"));
                }
                self.data_left = head.len;
            }
            frame::HEADERS => {
                if self.state == State::Trailers {
                    return Err(conn_err(Code::FRAME_UNEXPECTED, "HEADERS after trailers"));
                }
                if head.len > lim.max_headers_frame {
                    if self.state == State::Head {
                        emit(Event::TooLarge);
                        self.state = State::Discard;
                        return Ok(());
                    }
                    return Err(stream_err(Code::EXCESSIVE_LOAD, "trailers too large"));
                }
                self.headers_len = Some(head.len);
                if head.len == 0 {
                    return Err(conn_err(Code::FRAME_ERROR, "empty HEADERS"));
                }
            }
            frame::CANCEL_PUSH
            | frame::SETTINGS
            | frame::GOAWAY
            | frame::MAX_PUSH_ID
            | frame::PUSH_PROMISE => {
                return Err(conn_err(
                    Code::FRAME_UNEXPECTED,
                    "a control frame on a request stream",
                ));
            }
            t if frame::is_reserved_h2_type(t) => {
                return Err(conn_err(Code::FRAME_UNEXPECTED, "an HTTP/2 frame type"));
            }
            _ => self.skip_left = head.len,
        }
        Ok(())
    }

    /// A whole HEADERS payload is in `buf`: the head, or trailers.
    fn on_headers(&mut self, lim: &Limits, emit: &mut dyn FnMut(Event<'_>)) -> Result<(), Failure> {
        let mut list = HeaderList::default();
        match qpack::decode(&self.buf, lim.max_field_section, &mut list) {
            Ok(()) => {}
            Err(qpack::DecodeError::Failed(why)) => {
                return Err(conn_err(Code::QPACK_DECOMPRESSION_FAILED, why));
            }
            Err(qpack::DecodeError::TooLarge) if self.state == State::Head => {
                emit(Event::TooLarge);
                self.state = State::Discard;
                return Ok(());
            }
            Err(qpack::DecodeError::TooLarge) => {
                return Err(stream_err(Code::EXCESSIVE_LOAD, "trailers too large"));
            }
        }
        if self.state == State::Head {
            let head = request_head(list).map_err(|why| stream_err(Code::MESSAGE_ERROR, why))?;
            self.content_length = head.content_length();
            self.state = State::Body;
            emit(Event::Head(head));
        } else {
            trailers(&list).map_err(|why| stream_err(Code::MESSAGE_ERROR, why))?;
            self.state = State::Trailers;
        }
        Ok(())
    }

    /// The stream's end: it must fall between frames, after a head, with
    /// the body content-length announced.
    fn finish(&mut self, emit: &mut dyn FnMut(Event<'_>)) -> Result<(), Failure> {
        if self.state == State::Done {
            return Ok(());
        }
        if !self.buf.is_empty()
            || self.headers_len.is_some()
            || self.data_left > 0
            || self.skip_left > 0
        {
            return Err(conn_err(
                Code::FRAME_ERROR,
                "the stream ended inside a frame",
            ));
        }
        if self.state == State::Head {
            return Err(stream_err(Code::REQUEST_INCOMPLETE, "no request head"));
        }
        if self.content_length.is_some_and(|cl| cl != self.body_seen) {
            return Err(stream_err(
                Code::MESSAGE_ERROR,
                "body shorter than content-length",
            ));
        }
        self.state = State::Done;
        emit(Event::End);
        Ok(())
    }
}

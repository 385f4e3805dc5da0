//! The reading side's field blocks: HEADERS and CONTINUATION collected
//! into one block, HPACK-decoded, and what the block is — a new stream's
//! request head (checked against the stream states and limits), trailers,
//! or a head refused with 431.

use super::request::{self, RequestHead};
use super::*;
use crate::proto::h2::hpack::DecodeError;

use ErrorCode as E;

impl Connection {
    /// HEADERS: the first fragment of a field block.
    pub(super) fn on_headers(
        &mut self,
        p: Pending,
        fragment: &[u8],
        end_headers: bool,
        now_ms: u64,
    ) -> Result<(), Error> {
        if fragment.is_empty() && !end_headers {
            self.spend_empty(now_ms)?;
        }
        self.block.clear();
        self.add_fragment(p, fragment, end_headers, now_ms)
    }

    pub(super) fn on_continuation(
        &mut self,
        mut p: Pending,
        fragment: &[u8],
        end_headers: bool,
        now_ms: u64,
    ) -> Result<(), Error> {
        p.continuations += 1;
        if p.continuations > self.cfg.max_continuation_frames {
            return Err(Error::conn(
                E::ENHANCE_YOUR_CALM,
                "too many CONTINUATION frames",
            ));
        }
        if fragment.is_empty() && !end_headers {
            self.spend_empty(now_ms)?;
        }
        self.add_fragment(p, fragment, end_headers, now_ms)
    }

    pub(super) fn add_fragment(
        &mut self,
        p: Pending,
        fragment: &[u8],
        end_headers: bool,
        now_ms: u64,
    ) -> Result<(), Error> {
        if self.block.len() + fragment.len() > self.cfg.max_header_block_bytes {
            return Err(Error::conn(E::ENHANCE_YOUR_CALM, "field block too large"));
        }
        self.block.extend_from_slice(fragment);
        if end_headers {
            self.pending = None;
            self.on_block(p, now_ms)
        } else {
            self.pending = Some(p);
            Ok(())
        }
    }

    /// A complete field block: HPACK first, whatever becomes of the stream,
    /// so the dynamic table stays in step with the client's.
    pub(super) fn on_block(&mut self, p: Pending, now_ms: u64) -> Result<(), Error> {
        let (list, too_large) = self.decode_block()?;
        let id = p.stream;
        if self.streams.contains_key(&id) {
            return self.on_trailers(p, list, too_large);
        }
        if !self.admit(id)? {
            return Ok(());
        }
        let serr = |code, why| Err(Error::stream(id, code, why));
        self.last_stream = id;
        if p.priority.is_some_and(|pr| pr.dependency == id) {
            return serr(E::PROTOCOL_ERROR, "stream depends on itself");
        }
        if self.streams.len() >= self.cfg.max_concurrent_streams as usize {
            return serr(E::REFUSED_STREAM, "over SETTINGS_MAX_CONCURRENT_STREAMS");
        }
        if too_large {
            return self.reject_431(id, p.end_stream, now_ms);
        }
        let head = match request::request_head(list) {
            Ok(h) => h,
            Err(why) => return serr(E::PROTOCOL_ERROR, why),
        };
        if p.end_stream && head.content_length().is_some_and(|n| n != 0) {
            return serr(E::PROTOCOL_ERROR, "content-length without a body");
        }
        self.open_stream(id, head, p.end_stream);
        if id == limits::MAX_STREAM_ID {
            // The client can open no further stream here.
            self.shutdown();
        }
        Ok(())
    }

    /// The field block decoded, and whether it was over the header list
    /// size (the fields are then incomplete; the table is still right).
    pub(super) fn decode_block(&mut self) -> Result<(HeaderList, bool), Error> {
        // Sized once: indexed fields decode to about 4 times their encoded
        // bytes (a browser's head: 300 encoded, 1,200 decoded), and growing
        // the list field by field was a tenth of a small request's CPU.
        // A list the caller gave back (see `recycle`) when there is one.
        let cap = (self.block.len() * 4).clamp(256, self.cfg.max_header_list_size as usize);
        let mut list = self.spare_lists.pop().unwrap_or_default();
        list.reset(cap, 24);
        let decoded = self.decoder.decode(
            &self.block,
            self.cfg.max_header_list_size as usize,
            &mut list,
        );
        let too_large = match decoded {
            Ok(()) => false,
            Err(DecodeError::ListTooLarge) => true,
            Err(DecodeError::Compression(c)) => {
                return Err(Error::conn(E::COMPRESSION_ERROR, c.0));
            }
        };
        Ok((list, too_large))
    }

    /// Gives back a field list the caller is done with (a request head's,
    /// by [`RequestHead::into_list`], or trailers): its memory decodes a
    /// later block. Allocating and freeing the list's two buffers was a
    /// twentieth of a small request's instructions.
    pub fn recycle(&mut self, list: HeaderList) {
        if self.spare_lists.len() < limits::SPARE_LISTS
            && list.capacity() <= limits::SPARE_LIST_BYTES
        {
            self.spare_lists.push(list);
        }
    }

    /// A second field block on an open stream: its trailers (§8.1).
    pub(super) fn on_trailers(
        &mut self,
        p: Pending,
        list: HeaderList,
        too_large: bool,
    ) -> Result<(), Error> {
        let id = p.stream;
        let serr = |code, why| Err(Error::stream(id, code, why));
        let Some(s) = self.streams.get(&id) else {
            return Ok(());
        };
        if s.state == State::Closed {
            return Err(Error::conn(E::STREAM_CLOSED, "HEADERS on a closed stream"));
        }
        if !s.remote_open() {
            return serr(E::STREAM_CLOSED, "HEADERS after END_STREAM");
        }
        if !p.end_stream {
            return serr(E::PROTOCOL_ERROR, "second HEADERS without END_STREAM");
        }
        if too_large {
            return serr(E::PROTOCOL_ERROR, "trailers over the header list size");
        }
        if let Err(why) = request::trailers(&list) {
            return serr(E::PROTOCOL_ERROR, why);
        }
        if s.content_length.is_some_and(|n| n != s.received) {
            return serr(E::PROTOCOL_ERROR, "body shorter than content-length");
        }
        self.events.push_back(Event::Trailers {
            stream: id,
            fields: list,
        });
        self.close_remote(id);
        Ok(())
    }

    /// Whether a new stream `id` may open: false to ignore its HEADERS
    /// (a stream we reset, or one after GOAWAY), an error for an id a
    /// client must not use.
    pub(super) fn admit(&self, id: StreamId) -> Result<bool, Error> {
        if id.is_multiple_of(2) {
            return Err(Error::conn(
                E::PROTOCOL_ERROR,
                "even stream id from a client",
            ));
        }
        if id <= self.last_stream {
            return match self.closed_how(id) {
                // In flight when we reset it: ignore (§5.1).
                Some(Closed::ResetByUs) => Ok(false),
                Some(Closed::ResetByPeer) => Err(Error::stream(
                    id,
                    E::STREAM_CLOSED,
                    "HEADERS after RST_STREAM",
                )),
                Some(Closed::EndStream) => {
                    Err(Error::conn(E::STREAM_CLOSED, "HEADERS on a closed stream"))
                }
                None => Err(Error::conn(
                    E::PROTOCOL_ERROR,
                    "stream id not above the last one",
                )),
            };
        }
        // After GOAWAY, new streams are not processed (§6.8).
        Ok(!self.after_goaway(id))
    }

    pub(super) fn open_stream(&mut self, id: StreamId, head: RequestHead, end_stream: bool) {
        let mut s = Stream::new(self.peer.initial_window, self.cfg.stream_window, end_stream);
        s.content_length = head.content_length();
        for (n, v) in head.fields() {
            if n == b"priority" {
                s.priority = s.priority.apply(v);
            }
        }
        let early = || self.early_priority.iter().position(|(sid, _)| *sid == id);
        if let Some(i) = (!self.early_priority.is_empty()).then(early).flatten() {
            if let Some((_, pr)) = self.early_priority.remove(i) {
                s.priority = pr;
            }
        }
        self.streams.insert(id, s);
        self.events.push_back(Event::Request {
            stream: id,
            head,
            end_stream,
        });
    }

    /// RFC 9113 §10.5.1 / RFC 6585: a head over our list size is answered
    /// 431 here, and the body, if any, stopped with RST_STREAM(NO_ERROR)
    /// (§8.1 allows that after a complete response).
    pub(super) fn reject_431(
        &mut self,
        id: StreamId,
        end_stream: bool,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.provoked()?;
        self.scratch.clear();
        self.encoder.encode_head(&mut self.scratch, 431, []);
        encode::headers(
            &mut self.out,
            id,
            &self.scratch,
            true,
            self.peer.max_frame_size,
        );
        if !end_stream {
            encode::rst_stream(&mut self.out, id, E::NO_ERROR);
        }
        self.note_closed(id, Closed::ResetByUs);
        self.events.push_back(Event::Rejected {
            stream: id,
            why: "header list over SETTINGS_MAX_HEADER_LIST_SIZE",
        });
        self.spend_reset(now_ms)
    }
}

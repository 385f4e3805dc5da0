//! The sending side: response heads (encoded, or a block encoded before
//! and sent again), trailers, and the headers of DATA frames against the
//! send windows.

use super::*;

/// The stream's record, when it may still send.
#[inline]
fn sendable(streams: &mut StreamSlots<Stream>, stream: StreamId) -> Result<&mut Stream, SendError> {
    let s = streams.get_mut(&stream).ok_or(SendError::NoSuchStream)?;
    if !s.local_open() {
        return Err(SendError::Finished);
    }
    Ok(s)
}

impl Connection {
    /// Encodes a response head. Status 1xx may come before the final one;
    /// connection-specific fields (`connection`, `keep-alive`, ...) are
    /// dropped, as HTTP/2 forbids them (§8.2.2). The frames go into
    /// [`Self::output`].
    pub fn send_headers<'f>(
        &mut self,
        stream: StreamId,
        status: u16,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
        end_stream: bool,
    ) -> Result<(), SendError> {
        let s = self.streams.get(&stream).ok_or(SendError::NoSuchStream)?;
        if !s.local_open() {
            return Err(SendError::Finished);
        }
        if s.response_started {
            return Err(SendError::HeadAlreadySent);
        }
        let informational = (100..200).contains(&status);
        self.scratch.clear();
        let fields = fields.into_iter().filter(|(n, _)| !connection_specific(n));
        self.encoder.encode_head(&mut self.scratch, status, fields);
        let end = end_stream && !informational;
        encode::headers(
            &mut self.out,
            stream,
            &self.scratch,
            end,
            self.peer.max_frame_size,
        );
        if let Some(s) = self.streams.get_mut(&stream) {
            s.response_started |= !informational;
        }
        if end {
            self.close_local(stream);
        }
        Ok(())
    }

    /// The HPACK encoder's generation (see `hpack::Encoder::generation`):
    /// read it before [`Self::send_headers`] and after; when both agree, the
    /// block just sent ([`Self::last_head_block`]) may be sent again with
    /// [`Self::send_head_block`] on another stream while the generation
    /// stays the same. A server whose answers repeat (a static file's head
    /// differs from one request to the next only in `date`, once a second)
    /// saves the encoding.
    pub fn encoder_generation(&self) -> u64 {
        self.encoder.generation()
    }

    /// The field block the last [`Self::send_headers`] encoded.
    pub fn last_head_block(&self) -> &[u8] {
        &self.scratch
    }

    /// Sends a head `block` encoded earlier by [`Self::send_headers`] on
    /// this connection, at encoder generation `generation`, for `status`.
    /// Refused ([`SendError::Stale`]) when the table has changed since: the
    /// caller encodes afresh.
    pub fn send_head_block(
        &mut self,
        stream: StreamId,
        status: u16,
        block: &[u8],
        generation: u64,
        end_stream: bool,
    ) -> Result<(), SendError> {
        if generation != self.encoder.generation() {
            return Err(SendError::Stale);
        }
        let s = sendable(&mut self.streams, stream)?;
        if s.response_started {
            return Err(SendError::HeadAlreadySent);
        }
        let informational = (100..200).contains(&status);
        let end = end_stream && !informational;
        s.response_started |= !informational;
        let gone = end && super::end_local(s);
        encode::headers(&mut self.out, stream, block, end, self.peer.max_frame_size);
        if gone {
            self.remove_stream(stream, Closed::EndStream);
        }
        Ok(())
    }

    /// Ends the response with trailers (fields without pseudo-headers).
    pub fn send_trailers<'f>(
        &mut self,
        stream: StreamId,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    ) -> Result<(), SendError> {
        let s = self.streams.get(&stream).ok_or(SendError::NoSuchStream)?;
        if !s.local_open() {
            return Err(SendError::Finished);
        }
        if !s.response_started {
            return Err(SendError::NoHead);
        }
        self.scratch.clear();
        let fields = fields.into_iter().filter(|(n, _)| !connection_specific(n));
        self.encoder.encode_fields(&mut self.scratch, fields);
        encode::headers(
            &mut self.out,
            stream,
            &self.scratch,
            true,
            self.peer.max_frame_size,
        );
        self.close_local(stream);
        Ok(())
    }

    /// How many payload bytes the next DATA frame on `stream` may carry:
    /// bounded by the stream's and the connection's send windows and the
    /// peer's SETTINGS_MAX_FRAME_SIZE. 0 when blocked or not sendable.
    pub fn send_window(&self, stream: StreamId) -> usize {
        match self.streams.get(&stream) {
            Some(s) if s.local_open() && s.response_started => {
                flow::budget(s.send_window, self.conn_send, self.peer.max_frame_size)
            }
            _ => 0,
        }
    }

    /// The 9-byte header of a DATA frame of `len` bytes, debiting both
    /// windows. The caller sends it and then exactly `len` payload bytes,
    /// after everything in [`Self::output`] at this moment. `len` 0 with
    /// `end_stream` ends the response whatever the windows.
    pub fn data_header(
        &mut self,
        stream: StreamId,
        len: usize,
        end_stream: bool,
    ) -> Result<[u8; HEADER_LEN], SendError> {
        // One look-up of the record for all of it: a DATA frame per small
        // answer made four.
        let s = sendable(&mut self.streams, stream)?;
        if !s.response_started {
            return Err(SendError::NoHead);
        }
        let budget = flow::budget(s.send_window, self.conn_send, self.peer.max_frame_size);
        if len > budget {
            return Err(SendError::OverWindow);
        }
        s.send_window -= len as i64;
        self.conn_send -= len as i64;
        if end_stream && super::end_local(s) {
            self.remove_stream(stream, Closed::EndStream);
        }
        Ok(encode::data_header(stream, len, end_stream))
    }
}

/// Fields HTTP/2 forbids (RFC 9113 §8.2.2), dropped from responses.
fn connection_specific(name: &[u8]) -> bool {
    [
        &b"connection"[..],
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
    ]
    .iter()
    .any(|c| c.eq_ignore_ascii_case(name))
}

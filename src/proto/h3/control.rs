//! The unidirectional streams a client opens (RFC 9114 §6.2): its control
//! stream (SETTINGS first, then GOAWAY, MAX_PUSH_ID, CANCEL_PUSH), its
//! QPACK encoder and decoder streams (RFC 9204 §4.2), at most one of each
//! and none ever closed; push streams are a server's only (a client's is
//! an error); other types are reserved or unknown and are ignored with
//! STOP_SENDING (§6.2.3).

use super::frame::{self, Settings};
use super::{conn_err, qpack, varint, Code, Failure};

/// Largest control frame read whole (SETTINGS; GOAWAY and the push frames
/// are a varint): 4 KiB holds some 500 settings, GREASE included, where a
/// client sends 3-8. A larger one is H3_EXCESSIVE_LOAD.
pub const MAX_CONTROL_FRAME: u64 = 4096;

pub const TYPE_CONTROL: u64 = 0x00;
pub const TYPE_PUSH: u64 = 0x01;
pub const TYPE_ENCODER: u64 = 0x02;
pub const TYPE_DECODER: u64 = 0x03;

/// What the client's unidirectional streams told the connection.
#[derive(Debug, Default)]
pub struct Peer {
    control: bool,
    encoder: bool,
    decoder: bool,
    /// The client's SETTINGS, once its control stream brought them.
    pub settings: Option<Settings>,
    /// The client said GOAWAY (it will open no more requests).
    pub goaway: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Control,
    Encoder,
    Decoder,
    /// Unknown or reserved: ignored.
    Ignored,
}

/// What became of a unidirectional stream after some bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uni {
    /// Read on.
    Reading,
    /// A type glint does not know: stop it with this code, read no more.
    Stop(Code),
}

/// One unidirectional stream of the client's.
#[derive(Debug, Default)]
pub struct UniStream {
    kind: Option<Kind>,
    buf: Vec<u8>,
    skip_left: u64,
}

impl UniStream {
    /// Feeds bytes of the stream (`fin`: the last ones).
    pub fn recv(&mut self, input: &[u8], fin: bool, peer: &mut Peer) -> Result<Uni, Failure> {
        self.buf.extend_from_slice(input);
        if self.kind.is_none() {
            let Some((ty, n)) = varint::decode(&self.buf) else {
                return Ok(Uni::Reading);
            };
            self.buf.drain(..n);
            let (kind, seen) = match ty {
                TYPE_CONTROL => (Kind::Control, &mut peer.control),
                TYPE_ENCODER => (Kind::Encoder, &mut peer.encoder),
                TYPE_DECODER => (Kind::Decoder, &mut peer.decoder),
                TYPE_PUSH => {
                    return Err(conn_err(
                        Code::STREAM_CREATION_ERROR,
                        "a push stream from a client",
                    ))
                }
                _ => {
                    self.kind = Some(Kind::Ignored);
                    self.buf = Vec::new();
                    return Ok(Uni::Stop(Code::STREAM_CREATION_ERROR));
                }
            };
            if std::mem::replace(seen, true) {
                return Err(conn_err(
                    Code::STREAM_CREATION_ERROR,
                    "a second control or QPACK stream",
                ));
            }
            self.kind = Some(kind);
        }
        let used = match self.kind {
            Some(Kind::Control) => self.control_frames(peer)?,
            Some(Kind::Encoder) => qpack::encoder_stream(&self.buf)
                .map_err(|why| conn_err(Code::QPACK_ENCODER_STREAM_ERROR, why))?,
            Some(Kind::Decoder) => qpack::decoder_stream(&self.buf)
                .map_err(|why| conn_err(Code::QPACK_DECODER_STREAM_ERROR, why))?,
            Some(Kind::Ignored) | None => self.buf.len(),
        };
        self.buf.drain(..used);
        if fin && self.kind != Some(Kind::Ignored) {
            return Err(conn_err(
                Code::CLOSED_CRITICAL_STREAM,
                "a control or QPACK stream closed",
            ));
        }
        Ok(Uni::Reading)
    }

    /// Whole control frames from `buf`; returns the bytes used.
    fn control_frames(&mut self, peer: &mut Peer) -> Result<usize, Failure> {
        let mut at = 0;
        loop {
            let rest = &self.buf[at..];
            if self.skip_left > 0 {
                let n = (self.skip_left.min(rest.len() as u64)) as usize;
                self.skip_left -= n as u64;
                at += n;
                if self.skip_left > 0 {
                    return Ok(at);
                }
                continue;
            }
            let Some(head) = frame::parse_head(rest) else {
                return Ok(at);
            };
            let first = peer.settings.is_none();
            if first && head.ty != frame::SETTINGS {
                return Err(conn_err(
                    Code::MISSING_SETTINGS,
                    "control stream without SETTINGS first",
                ));
            }
            let known = matches!(
                head.ty,
                frame::SETTINGS | frame::GOAWAY | frame::MAX_PUSH_ID | frame::CANCEL_PUSH
            );
            if !known {
                if matches!(head.ty, frame::DATA | frame::HEADERS | frame::PUSH_PROMISE)
                    || frame::is_reserved_h2_type(head.ty)
                {
                    return Err(conn_err(
                        Code::FRAME_UNEXPECTED,
                        "a request frame on the control stream",
                    ));
                }
                self.skip_left = head.len;
                at += head.head_len;
                continue;
            }
            if head.len > MAX_CONTROL_FRAME {
                return Err(conn_err(Code::EXCESSIVE_LOAD, "a control frame too large"));
            }
            let end = head.head_len + head.len as usize;
            if rest.len() < end {
                return Ok(at);
            }
            let payload = &rest[head.head_len..end];
            match head.ty {
                frame::SETTINGS if first => peer.settings = Some(frame::parse_settings(payload)?),
                frame::SETTINGS => {
                    return Err(conn_err(Code::FRAME_UNEXPECTED, "a second SETTINGS"));
                }
                frame::GOAWAY => {
                    if varint::decode(payload).map(|(_, n)| n) != Some(payload.len()) {
                        return Err(conn_err(Code::FRAME_ERROR, "GOAWAY not one varint"));
                    }
                    peer.goaway = true;
                }
                _ => {
                    // MAX_PUSH_ID, CANCEL_PUSH: glint never pushes.
                    if varint::decode(payload).map(|(_, n)| n) != Some(payload.len()) {
                        return Err(conn_err(Code::FRAME_ERROR, "push frame not one varint"));
                    }
                }
            }
            at += end;
        }
    }
}

/// The control stream glint opens: its type, then SETTINGS. The dynamic
/// table capacity stays 0 (the default, not sent); the field section bound
/// is said so that clients know it.
pub fn server_control_preamble(max_field_section: u64, out: &mut Vec<u8>) {
    varint::encode(TYPE_CONTROL, out);
    // A GREASE setting (RFC 9114 §7.2.4.1: 0x1f * N + 0x21), so that
    // clients keep ignoring unknown ones.
    frame::write_settings(
        &[
            (frame::SETTINGS_MAX_FIELD_SECTION_SIZE, max_field_section),
            (0x1f * 7 + 0x21, 0),
        ],
        out,
    );
}

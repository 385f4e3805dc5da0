//! The HTTP/2 connection never panics on any bytes after a valid preface,
//! and what it sends back is always well-formed: every frame parses, every
//! field block decodes with the client's HPACK state, and nothing is sent
//! on a stream after its END_STREAM or RST_STREAM. The first byte picks
//! small limits (so each bound is reached by short inputs) and how the
//! bytes are cut into reads.
#![no_main]

use std::collections::{HashMap, HashSet};

use glint::proto::h2::conn::{Config, Connection, Event, PREFACE};
use glint::proto::h2::ErrorCode;
use glint::proto::h2::frame::{self, Frame, DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE};
use glint::proto::h2::hpack::{Decoder, HeaderList};
use libfuzzer_sys::fuzz_target;

/// The client's view of what the server sent.
#[derive(Default)]
struct Wire {
    bytes: Vec<u8>,
    decoder: Decoder,
    block: Option<(u32, bool, Vec<u8>)>,
    ended: HashSet<u32>,
    reset: HashSet<u32>,
}

impl Wire {
    fn check(&mut self) {
        let mut at = 0;
        while let Some((f, n)) = frame::parse(&self.bytes[at..], MAX_MAX_FRAME_SIZE)
            .unwrap_or_else(|e| panic!("server sent a bad frame: {e}"))
        {
            at += n;
            if self.block.is_some() {
                assert!(matches!(f, Frame::Continuation { .. }), "{f:?} inside a block");
            }
            let (stream, end_stream, reset) = match f {
                Frame::Headers { stream, fragment, end_stream, end_headers, .. } => {
                    self.block = Some((stream, end_stream, fragment.to_vec()));
                    if end_headers {
                        self.finish();
                    }
                    (stream, end_stream, false)
                }
                Frame::Continuation { stream, fragment, end_headers } => {
                    let Some(b) = self.block.as_mut() else { panic!("stray CONTINUATION") };
                    assert_eq!(b.0, stream);
                    b.2.extend_from_slice(fragment);
                    if end_headers {
                        self.finish();
                    }
                    continue;
                }
                Frame::Data { stream, end_stream, .. } => (stream, end_stream, false),
                // Past the few closed streams remembered, a late frame gets
                // RST_STREAM(STREAM_CLOSED) again: the only repeat allowed.
                Frame::RstStream { stream, code } if code == ErrorCode::STREAM_CLOSED => {
                    self.reset.insert(stream);
                    continue;
                }
                Frame::RstStream { stream, .. } => (stream, false, true),
                _ => continue,
            };
            // After RST_STREAM nothing more; after END_STREAM, only RST_STREAM
            // (the client's half may still be open, RFC 9113 §5.1).
            assert!(!self.reset.contains(&stream), "frame on stream {stream} after RST_STREAM");
            if !reset {
                assert!(!self.ended.contains(&stream), "frame on stream {stream} after END_STREAM");
            }
            if end_stream {
                self.ended.insert(stream);
            }
            if reset {
                self.reset.insert(stream);
            }
        }
        self.bytes.drain(..at);
    }

    fn finish(&mut self) {
        if let Some((_, _, b)) = self.block.take() {
            let mut list = HeaderList::default();
            assert_eq!(self.decoder.decode(&b, 1 << 20, &mut list), Ok(()), "our HPACK");
            assert!(list.iter().next().is_some(), "an empty head");
        }
    }
}

fn small() -> Config {
    Config {
        max_concurrent_streams: 4,
        max_header_list_size: 300,
        max_header_block_bytes: 600,
        max_continuation_frames: 3,
        reset_budget: 6,
        empty_frame_budget: 6,
        budget_window_ms: 50,
        max_pending_output: 2048,
        ..Config::default()
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, input)) = data.split_first() else {
        return;
    };
    let cfg = if ctl & 1 == 1 { small() } else { Config::default() };
    let mut conn = Connection::new(cfg);
    let mut wire = Wire::default();
    let mut hello = PREFACE.to_vec();
    hello.extend_from_slice(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00");
    assert_eq!(conn.recv(&hello, 0), Ok(hello.len()));
    let chunk = 1 + (ctl >> 1) as usize * 9;
    // Frames of DATA sent per stream; a response is two frames.
    let mut sent: HashMap<u32, u8> = HashMap::new();
    let mut pending = Vec::new();
    let mut now = 0;
    for piece in input.chunks(chunk) {
        pending.extend_from_slice(piece);
        now += 7;
        let r = conn.recv(&pending, now);
        match r {
            Ok(n) => {
                assert!(n <= pending.len());
                pending.drain(..n);
                assert!(pending.len() < 9 + DEFAULT_MAX_FRAME_SIZE as usize, "a whole frame left");
            }
            Err(_) => assert!(!conn.wants_read()),
        }
        while let Some(ev) = conn.poll_event() {
            match ev {
                Event::Request { stream, head, .. } => {
                    assert!(head.path().is_some() || head.method() == b"CONNECT");
                    let fields: [(&[u8], &[u8]); 2] =
                        [(b"server", b"glint"), (b"content-type", b"text/plain")];
                    // A later event of this batch may have ended the stream.
                    let open = conn.priority(stream).is_some();
                    let r = conn.send_headers(stream, 200, fields, false);
                    assert_eq!(r.is_ok(), open, "{r:?}");
                    conn.set_ready(stream, true);
                }
                Event::Data { stream, len, .. } => {
                    // Unless a later event in this batch ended the stream,
                    // each event's bytes are there until consumed.
                    if conn.priority(stream).is_some() {
                        assert!(conn.body(stream).len() >= len, "the body stays until read");
                    }
                    conn.consume_body(stream, len);
                }
                _ => {}
            }
        }
        for _ in 0..8 {
            let Some(s) = conn.next_stream_to_send() else { break };
            let w = conn.send_window(s).min(50);
            let k = sent.entry(s).or_default();
            *k += 1;
            let end = *k >= 2;
            let head = conn.data_header(s, w, end).expect("within send_window");
            wire.bytes.extend_from_slice(conn.output());
            let n = conn.output().len();
            conn.advance_output(n);
            wire.bytes.extend_from_slice(&head);
            wire.bytes.resize(wire.bytes.len() + w, b'd');
        }
        wire.bytes.extend_from_slice(conn.output());
        let n = conn.output().len();
        conn.advance_output(n);
        wire.check();
        assert!(conn.stream_count() <= cfg.max_concurrent_streams as usize);
        if r.is_err() {
            break;
        }
    }
});

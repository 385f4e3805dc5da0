//! Each hard limit of `limits.rs`, shown at its bound: the last thing
//! allowed passes, one more does not.

use super::*;
use crate::proto::h2::conn::limits::*;

fn code(r: Result<(), Error>) -> Result<(), ErrorCode> {
    r.map_err(|e| e.code())
}

#[test]
fn max_concurrent_streams() {
    let mut c = Client::new();
    for i in 0..MAX_CONCURRENT_STREAMS {
        c.get(1 + 2 * i);
    }
    assert_eq!(c.conn.stream_count(), 100);
    let next = 1 + 2 * MAX_CONCURRENT_STREAMS;
    c.send(&headers(next, GET, true))
        .expect("refused, not fatal");
    assert_eq!(c.frames(), [Out::Rst(next, E::REFUSED_STREAM)]);
    assert!(matches!(c.events()[..], [Event::Rejected { .. }]));
    // One finishes: room for one more.
    c.conn.send_headers(1, 204, [], true).expect("204");
    c.get(next + 2);
    assert_eq!(c.conn.stream_count(), 100);
}

/// A valid GET block of exactly `len` bytes (len >= 60), padded with one field.
fn block_of(len: usize) -> Vec<u8> {
    let mut b = block(GET);
    let base = b.len() + 1 + 1 + 5 + 3;
    let pad = "a".repeat(len - base);
    b.extend(block(&[("x-pad", &pad)]));
    assert_eq!(b.len(), len, "block size");
    b
}

#[test]
fn header_block_bytes() {
    let cfg = Config {
        max_header_block_bytes: 1000,
        ..Config::default()
    };
    let mut c = Client::with(cfg);
    let b = block_of(1000);
    c.send(&frame(kind::HEADERS, flag::END_STREAM, 1, &b[..600]))
        .expect("first part");
    c.send(&frame(kind::CONTINUATION, flag::END_HEADERS, 1, &b[600..]))
        .expect("at the cap");
    assert!(matches!(c.events()[..], [Event::Request { .. }]));
    let b = block_of(1001);
    c.send(&frame(kind::HEADERS, flag::END_STREAM, 3, &b[..600]))
        .expect("first part");
    let e = c.conn.recv(
        &frame(kind::CONTINUATION, flag::END_HEADERS, 3, &b[600..]),
        c.now,
    );
    assert_eq!(e.map_err(|e| e.code()), Err(E::ENHANCE_YOUR_CALM));
    // The default: 32 KiB, twice the list size.
    assert_eq!(MAX_HEADER_BLOCK_BYTES, 32_768);
}

#[test]
fn continuation_frames_per_block() {
    // HEADERS + 32 CONTINUATION frames of one byte each, then the rest.
    let b = block(GET);
    let mut bytes = frame(kind::HEADERS, flag::END_STREAM, 1, &b[..1]);
    for i in 1..MAX_CONTINUATION_FRAMES as usize {
        bytes.extend(frame(kind::CONTINUATION, 0, 1, &b[i..i + 1]));
    }
    let at = MAX_CONTINUATION_FRAMES as usize;
    bytes.extend(frame(kind::CONTINUATION, flag::END_HEADERS, 1, &b[at..]));
    let mut c = Client::new();
    c.send(&bytes).expect("32 CONTINUATION frames");
    assert!(matches!(c.events()[..], [Event::Request { .. }]));
    // The 33rd ends the connection, END_HEADERS or not: a flood of empty
    // CONTINUATION frames, which never add a byte, stops here.
    let mut c = Client::new();
    let mut bytes = frame(kind::HEADERS, 0, 1, &b);
    for _ in 0..MAX_CONTINUATION_FRAMES {
        bytes.extend(frame(kind::CONTINUATION, 0, 1, b""));
    }
    let cfg_empty = Config::default().empty_frame_budget;
    assert!(
        MAX_CONTINUATION_FRAMES < cfg_empty,
        "the count bites before the empty-frame budget"
    );
    c.send(&bytes).expect("32 empty ones");
    let e = c.conn.recv(&frame(kind::CONTINUATION, 0, 1, b""), c.now);
    assert_eq!(e.map_err(|e| e.code()), Err(E::ENHANCE_YOUR_CALM));
}

#[test]
fn header_list_size_answers_431() {
    let mut c = Client::new();
    // GET's four fields count 7+3+32 + 7+5+32 + 10+11+32 + 5+1+32 = 177.
    let fits = MAX_HEADER_LIST_SIZE as usize - 177 - 32 - 5;
    let pad = "p".repeat(fits);
    let mut f = GET.to_vec();
    f.push(("x-pad", &pad));
    c.send(&headers(1, &f, true)).expect("at the cap");
    assert!(matches!(c.events()[..], [Event::Request { stream: 1, .. }]));
    let pad = "p".repeat(fits + 1);
    let mut f = GET.to_vec();
    f.push(("x-pad", &pad));
    c.send(&headers(3, &f, false)).expect("431, not fatal");
    assert!(matches!(
        c.events()[..],
        [Event::Rejected { stream: 3, .. }]
    ));
    let out = c.frames();
    assert_eq!(
        out.iter().map(status).collect::<Vec<_>>()[..1],
        [Some("431")]
    );
    assert_eq!(out[1], Out::Rst(3, E::NO_ERROR), "body stopped: {out:?}");
}

#[test]
fn hpack_bomb_is_answered_431_and_the_connection_goes_on() {
    let mut c = Client::new();
    // A 4000-byte table entry, then 12000 one-byte references: 48 MB asked.
    let mut b = block(GET);
    b.extend([0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e]); // value length 4000
    b.extend([b'v'; 4000]);
    b.extend(std::iter::repeat_n(0xbe, 12_000));
    // The block is longer than one frame: HEADERS + CONTINUATION.
    let mut bytes = frame(kind::HEADERS, flag::END_STREAM, 1, &b[..16_000]);
    bytes.extend(frame(
        kind::CONTINUATION,
        flag::END_HEADERS,
        1,
        &b[16_000..],
    ));
    c.send(&bytes).expect("431, not fatal");
    assert!(matches!(
        c.events()[..],
        [Event::Rejected { stream: 1, .. }]
    ));
    assert_eq!(
        c.frames().iter().map(status).collect::<Vec<_>>(),
        [Some("431")]
    );
    // The entry is in the table: the next request can use it.
    let mut b = block(GET);
    b.push(0xbe);
    c.send(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        &b,
    ))
    .expect("next");
    match &c.events()[..] {
        [Event::Request { head, .. }] => assert_eq!(head.header(b"x").map(<[u8]>::len), Some(4000)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn rapid_reset_budget() {
    let mut c = Client::new();
    for i in 0..RESET_BUDGET {
        let s = 1 + 2 * i;
        c.send(&[headers(s, GET, true), rst(s, E::CANCEL)].concat())
            .expect("within the budget");
    }
    let s = 1 + 2 * RESET_BUDGET;
    let e = c
        .conn
        .recv(&[headers(s, GET, true), rst(s, E::CANCEL)].concat(), c.now);
    assert_eq!(e.map_err(|e| e.code()), Err(E::ENHANCE_YOUR_CALM));
    assert!(c.frames().contains(&Out::GoAway(s, E::ENHANCE_YOUR_CALM)));
    // The same count spread over two windows is fine.
    let mut c = Client::new();
    for i in 0..RESET_BUDGET + 50 {
        if i == RESET_BUDGET {
            c.now += BUDGET_WINDOW_MS;
        }
        let s = 1 + 2 * i;
        c.send(&[headers(s, GET, true), rst(s, E::CANCEL)].concat())
            .expect("two windows");
    }
}

#[test]
fn server_made_resets_count_too() {
    // MadeYouReset (CVE-2025-8671): malformed requests, WINDOW_UPDATE of 0
    // on a stream and over-limit streams all end in a reset by the server.
    let mut c = Client::new();
    let malformed: &[(&str, &str)] = &[(":method", "GET"), (":path", "/")];
    for i in 0..RESET_BUDGET {
        let s = 1 + 2 * i;
        let bytes = match i % 3 {
            0 => headers(s, malformed, true),
            1 => [headers(s, GET, true), window_update(s, 0)].concat(),
            _ => [headers_owned(s, &post(1), false), data(s, b"xx", true)].concat(),
        };
        code(c.send(&bytes)).expect("within the budget");
    }
    let s = 1 + 2 * RESET_BUDGET;
    assert_eq!(
        code(c.send(&headers(s, malformed, true))),
        Err(E::ENHANCE_YOUR_CALM)
    );
}

#[test]
fn ping_and_settings_floods_stop_when_the_client_does_not_read() {
    for flood in [frame(kind::PING, 0, 0, b"12345678"), settings(&[])] {
        let mut c = Client::new();
        // A client that reads: any number is fine.
        for _ in 0..10_000 {
            c.send(&flood).expect("read as it goes");
            let n = c.conn.output().len();
            c.conn.advance_output(n);
        }
        // One that does not: the output stops at MAX_PENDING_OUTPUT.
        let mut sent = 0;
        let err = loop {
            match c.send(&flood) {
                Ok(()) => sent += 1,
                Err(e) => break e,
            }
            assert!(sent < 100_000, "no bound");
        };
        assert_eq!(err.code(), E::ENHANCE_YOUR_CALM);
        let ack = if flood.len() == 17 { 17 } else { 9 };
        assert_eq!(
            sent,
            MAX_PENDING_OUTPUT / ack + 1,
            "acks queued before the cap"
        );
        assert!(c.conn.output().len() <= MAX_PENDING_OUTPUT + ack + 9 + 8 + 64);
    }
}

#[test]
fn empty_frame_floods() {
    // Empty DATA without END_STREAM.
    let mut c = Client::new();
    c.send(&headers_owned(1, &post(1), false)).expect("post");
    for _ in 0..EMPTY_FRAME_BUDGET {
        c.send(&data(1, b"", false)).expect("within the budget");
    }
    assert_eq!(
        code(c.send(&data(1, b"", false))),
        Err(E::ENHANCE_YOUR_CALM)
    );
    // Empty HEADERS fragments count too.
    let mut c2 = Client::new();
    for i in 0..EMPTY_FRAME_BUDGET {
        let s = 1 + 2 * i;
        let bytes = [
            frame(kind::HEADERS, flag::END_STREAM, s, b""),
            frame(kind::CONTINUATION, flag::END_HEADERS, s, &block(GET)),
        ]
        .concat();
        c2.send(&bytes).expect("within the budget");
        c2.conn.send_headers(s, 204, [], true).expect("204");
        c2.frames();
    }
    let s = 1 + 2 * EMPTY_FRAME_BUDGET;
    let e = c2.send(&frame(kind::HEADERS, flag::END_STREAM, s, b""));
    assert_eq!(code(e), Err(E::ENHANCE_YOUR_CALM));
}

#[test]
fn window_update_of_zero() {
    // On the connection: a connection error (RFC 9113 §6.9).
    let mut c = Client::new();
    assert_eq!(code(c.send(&window_update(0, 0))), Err(E::PROTOCOL_ERROR));
    // On a stream: that stream only, counted as a server-made reset.
    let mut c = Client::new();
    c.get(1);
    c.send(&window_update(1, 0)).expect("stream error");
    assert_eq!(c.frames(), [Out::Rst(1, E::PROTOCOL_ERROR)]);
}

#[test]
fn stream_id_exhaustion() {
    let mut c = Client::new();
    c.get(MAX_STREAM_ID);
    // The last id there is: GOAWAY at once, the stream still served.
    assert_eq!(c.frames(), [Out::GoAway(MAX_STREAM_ID, E::NO_ERROR)]);
    c.conn
        .send_headers(MAX_STREAM_ID, 200, [], true)
        .expect("served");
    c.frames();
    assert!(c.conn.is_done());
}

#[test]
fn early_priority_updates_are_bounded() {
    let mut c = Client::new();
    for i in 0..MAX_CONCURRENT_STREAMS + 50 {
        let s = 1 + 2 * i;
        let mut p = s.to_be_bytes().to_vec();
        p.extend_from_slice(b"u=1");
        c.send(&frame(kind::PRIORITY_UPDATE, 0, 0, &p))
            .expect("priority update");
    }
    assert_eq!(c.conn.early_priority.len(), MAX_CONCURRENT_STREAMS as usize);
}

//! Stream states (RFC 9113 §5.1), stream ids, and the frames that are
//! connection errors wherever they come.

use super::*;

/// Which error ended the connection, or what the server sent for a stream.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Conn(ErrorCode),
    Rst(StreamId, ErrorCode),
    Fine,
}

fn run(setup: &[Vec<u8>], then: &[u8]) -> Outcome {
    let mut c = Client::new();
    for s in setup {
        c.send(s).expect("setup");
    }
    c.frames();
    match c.conn.recv(then, c.now) {
        Err(e) => {
            let out = c.frames();
            assert!(
                out.iter()
                    .any(|o| matches!(o, Out::GoAway(_, code) if *code == e.code())),
                "GOAWAY sent: {out:?}"
            );
            Outcome::Conn(e.code())
        }
        Ok(_) => match c.frames().iter().find(|o| matches!(o, Out::Rst(..))) {
            Some(Out::Rst(s, code)) => Outcome::Rst(*s, *code),
            _ => Outcome::Fine,
        },
    }
}

#[test]
#[rustfmt::skip]
fn frames_by_stream_state() {
    use Outcome::*;
    let open = || vec![headers_owned(1, &post(10), false)];
    let half_closed_remote = || vec![headers(1, GET, true)];
    let closed = || vec![headers(1, GET, true), rst(1, E::CANCEL)];
    let three = || vec![headers(3, GET, true)];
    // Malformed (no :scheme): the server resets it.
    let refused = || vec![headers(1, &[(":method", "GET"), (":path", "/")], false)];
    type Case = (&'static str, Vec<Vec<u8>>, Vec<u8>, Outcome);
    let cases: Vec<Case> = vec![
        // idle
        ("DATA on an idle stream", vec![], data(1, b"x", false), Conn(E::PROTOCOL_ERROR)),
        ("RST_STREAM on an idle stream", vec![], rst(1, E::CANCEL), Conn(E::PROTOCOL_ERROR)),
        ("WINDOW_UPDATE on an idle stream", vec![], window_update(1, 1), Conn(E::PROTOCOL_ERROR)),
        ("PRIORITY on an idle stream is fine", vec![], frame(kind::PRIORITY, 0, 1, b"\x00\x00\x00\x03\x10"), Fine),
        ("a bad PRIORITY on an idle stream: no RST for it", vec![], frame(kind::PRIORITY, 0, 1, b"\x00"), Conn(E::FRAME_SIZE_ERROR)),
        ("WINDOW_UPDATE of 0 on an idle stream", vec![], window_update(1, 0), Conn(E::PROTOCOL_ERROR)),
        ("HEADERS on an even stream", vec![], headers(2, GET, true), Conn(E::PROTOCOL_ERROR)),
        // open
        ("DATA on an open stream", open(), data(1, b"x", false), Fine),
        ("second HEADERS without END_STREAM", open(), headers(1, &[("x", "y")], false), Rst(1, E::PROTOCOL_ERROR)),
        ("trailers with a pseudo-header", open(), headers(1, &[(":path", "/")], true), Rst(1, E::PROTOCOL_ERROR)),
        ("trailers before all of content-length", open(), headers(1, &[("x", "y")], true), Rst(1, E::PROTOCOL_ERROR)),
        ("more DATA than content-length", open(), data(1, &[0; 11], false), Rst(1, E::PROTOCOL_ERROR)),
        ("END_STREAM before content-length", open(), data(1, &[0; 9], true), Rst(1, E::PROTOCOL_ERROR)),
        ("CONTINUATION with no field block", open(), frame(kind::CONTINUATION, flag::END_HEADERS, 1, b""), Conn(E::PROTOCOL_ERROR)),
        ("PUSH_PROMISE from a client", open(), frame(kind::PUSH_PROMISE, flag::END_HEADERS, 1, b"\x00\x00\x00\x02"), Conn(E::PROTOCOL_ERROR)),
        ("WINDOW_UPDATE of 0 on a stream", open(), window_update(1, 0), Rst(1, E::PROTOCOL_ERROR)),
        ("stream window past 2^31-1", open(), window_update(1, 0x7fff_ffff), Rst(1, E::FLOW_CONTROL_ERROR)),
        // half-closed (remote)
        ("DATA after END_STREAM", half_closed_remote(), data(1, b"x", false), Rst(1, E::STREAM_CLOSED)),
        ("HEADERS after END_STREAM", half_closed_remote(), headers(1, &[("x", "y")], true), Rst(1, E::STREAM_CLOSED)),
        ("WINDOW_UPDATE after END_STREAM is fine", half_closed_remote(), window_update(1, 100), Fine),
        ("RST_STREAM after END_STREAM is fine", half_closed_remote(), rst(1, E::CANCEL), Fine),
        // closed
        ("DATA after the client's reset", closed(), data(1, b"x", false), Rst(1, E::STREAM_CLOSED)),
        ("HEADERS after the client's reset", closed(), headers(1, GET, true), Rst(1, E::STREAM_CLOSED)),
        ("DATA after the server's reset is ignored", refused(), data(1, b"x", false), Fine),
        ("HEADERS after the server's reset is ignored", refused(), headers(1, GET, true), Fine),
        ("WINDOW_UPDATE on a closed stream is ignored", closed(), window_update(1, 5), Fine),
        ("RST_STREAM on a closed stream is ignored", closed(), rst(1, E::CANCEL), Fine),
        // stream ids
        ("a lower stream id than the last", three(), headers(1, GET, true), Conn(E::PROTOCOL_ERROR)),
        ("the same id again while half-closed", three(), headers(3, GET, true), Rst(3, E::STREAM_CLOSED)),
        ("the same id again once closed", vec![headers(3, GET, true), rst(3, E::CANCEL), headers(5, GET, true), rst(5, E::NO_ERROR)], headers(1, GET, true), Conn(E::PROTOCOL_ERROR)),
        ("ids may skip", three(), headers(11, GET, true), Fine),
        ("DATA on a lower id that never opened", three(), data(1, b"", true), Rst(1, E::STREAM_CLOSED)),
        // the connection
        ("a frame inside a field block", vec![frame(kind::HEADERS, 0, 1, &block(GET))], window_update(0, 1), Conn(E::PROTOCOL_ERROR)),
        ("CONTINUATION on another stream", vec![frame(kind::HEADERS, 0, 1, &block(GET))], frame(kind::CONTINUATION, flag::END_HEADERS, 3, b""), Conn(E::PROTOCOL_ERROR)),
        ("connection window past 2^31-1", vec![], window_update(0, 0x7fff_ffff), Conn(E::FLOW_CONTROL_ERROR)),
        ("a frame over 16384 bytes", vec![], data(1, &[0; 16_385], false), Conn(E::FRAME_SIZE_ERROR)),
        ("bad HPACK", vec![], frame(kind::HEADERS, flag::END_HEADERS, 1, b"\x80"), Conn(E::COMPRESSION_ERROR)),
        ("a self-dependent HEADERS", vec![], frame(kind::HEADERS, flag::END_HEADERS | flag::PRIORITY, 1, &[&b"\x00\x00\x00\x01\x10"[..], &block(GET)].concat()), Rst(1, E::PROTOCOL_ERROR)),
        ("a malformed request", vec![], headers(1, &[(":method", "GET")], true), Rst(1, E::PROTOCOL_ERROR)),
        ("an empty field block", vec![], headers(1, &[], true), Rst(1, E::PROTOCOL_ERROR)),
        ("unknown frame types are ignored", vec![], frame(0xee, 0xff, 0, b"whatever"), Fine),
        ("a client GOAWAY", vec![], frame(kind::GOAWAY, 0, 0, b"\x00\x00\x00\x00\x00\x00\x00\x00"), Fine),
    ];
    for (why, setup, then, want) in cases {
        assert_eq!(run(&setup, &then), want, "{why}");
    }
}

#[test]
fn trailers_and_headers_in_pieces() {
    let mut c = Client::new();
    // HEADERS + 2 CONTINUATION, all in one recv, and then split byte by byte.
    let b = block(GET);
    let mut bytes = frame(kind::HEADERS, flag::END_STREAM, 1, &b[..3]);
    bytes.extend(frame(kind::CONTINUATION, 0, 1, &b[3..10]));
    bytes.extend(frame(kind::CONTINUATION, flag::END_HEADERS, 1, &b[10..]));
    c.send(&bytes).expect("pieces");
    assert!(matches!(
        c.events()[..],
        [Event::Request {
            stream: 1,
            end_stream: true,
            ..
        }]
    ));
    let mut bytes = frame(kind::HEADERS, flag::END_STREAM, 3, &b[..3]);
    bytes.extend(frame(kind::CONTINUATION, flag::END_HEADERS, 3, &b[3..]));
    let mut fed = Vec::new();
    for &byte in &bytes {
        fed.push(byte);
        let n = c.conn.recv(&fed, c.now).expect("byte by byte");
        fed.drain(..n);
    }
    assert!(fed.is_empty());
    assert!(matches!(c.events()[..], [Event::Request { stream: 3, .. }]));
}

#[test]
fn client_reset_is_reported() {
    let mut c = Client::new();
    c.get(1);
    c.send(&rst(1, E::CANCEL)).expect("rst");
    assert_eq!(
        c.events(),
        [Event::Reset {
            stream: 1,
            code: E::CANCEL,
            by_peer: true
        }]
    );
    assert_eq!(
        c.conn.send_headers(1, 200, [], true),
        Err(SendError::NoSuchStream)
    );
    assert_eq!(c.conn.stream_count(), 0);
}

#[test]
fn server_reset_and_malformed_requests() {
    let mut c = Client::new();
    c.get(1);
    c.conn.reset_stream(1, E::INTERNAL_ERROR);
    assert_eq!(c.frames(), [Out::Rst(1, E::INTERNAL_ERROR)]);
    assert_eq!(c.conn.stream_count(), 0);
    // A malformed request is refused before the caller sees it.
    c.send(&headers(3, &[(":method", "GET"), (":path", "/")], true))
        .expect("malformed");
    assert!(matches!(
        c.events()[..],
        [Event::Rejected { stream: 3, .. }]
    ));
    assert_eq!(c.frames(), [Out::Rst(3, E::PROTOCOL_ERROR)]);
    // A stream error on a stream the caller knows is reported as a reset.
    c.send(&headers_owned(5, &post(1), false)).expect("post");
    c.events();
    c.send(&data(5, b"toolong", true)).expect("bad length");
    assert_eq!(
        c.events(),
        [Event::Reset {
            stream: 5,
            code: E::PROTOCOL_ERROR,
            by_peer: false
        }]
    );
}

#[test]
fn early_response_leaves_the_body_to_finish() {
    let mut c = Client::new();
    c.send(&headers_owned(1, &post(4), false)).expect("post");
    c.events();
    // The server answers before the body: half-closed (local).
    c.conn.send_headers(1, 413, [], true).expect("413");
    assert_eq!(c.conn.stream_count(), 1);
    assert_eq!(c.conn.data_header(1, 0, true), Err(SendError::Finished));
    c.send(&data(1, b"body", true)).expect("body");
    assert!(matches!(
        c.events()[..],
        [Event::Data {
            stream: 1,
            len: 4,
            end_stream: true
        }]
    ));
    c.conn.consume_body(1, 4);
    assert_eq!(
        c.conn.stream_count(),
        0,
        "closed once the body ended and was read"
    );
}

#[test]
fn graceful_shutdown_drains() {
    let mut c = Client::new();
    c.get(1);
    c.get(3);
    c.conn.shutdown();
    assert_eq!(c.frames(), [Out::GoAway(3, E::NO_ERROR)]);
    // Streams above 3 are ignored, but their HPACK state is kept: this
    // block inserts an entry that the next one (on 3's trailers path) uses.
    let mut b = vec![0x40, 0x01, b'x', 0x01, b'y'];
    b.extend(block(GET));
    c.send(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        5,
        &b,
    ))
    .expect("ignored");
    // Its body, resets and window updates, in flight, are ignored too.
    c.send(
        &[
            data(7, b"late", true),
            rst(9, E::CANCEL),
            window_update(11, 1),
        ]
        .concat(),
    )
    .expect("in flight after GOAWAY");
    assert!(c.events().is_empty());
    assert_eq!(c.conn.decoder.table().len(), 1);
    assert!(!c.conn.is_done(), "1 and 3 still open");
    c.conn.send_headers(1, 200, [], true).expect("1");
    c.conn.send_headers(3, 200, [], true).expect("3");
    assert!(!c.conn.is_done(), "heads not written yet");
    c.frames();
    assert!(c.conn.is_done());
}

#[test]
fn client_goaway_drains_too() {
    let mut c = Client::new();
    c.get(1);
    c.send(&frame(
        kind::GOAWAY,
        0,
        0,
        b"\x00\x00\x00\x00\x00\x00\x00\x00bye",
    ))
    .expect("goaway");
    assert_eq!(
        c.events(),
        [Event::GoAway {
            code: E::NO_ERROR,
            debug: b"bye".to_vec()
        }]
    );
    assert!(!c.conn.is_done());
    c.conn.send_headers(1, 204, [], true).expect("204");
    c.frames();
    assert!(c.conn.is_done());
}

#[test]
fn ping_and_settings_are_answered() {
    let mut c = Client::new();
    c.send(&frame(kind::PING, 0, 0, b"abcdefgh")).expect("ping");
    c.send(&frame(kind::PING, flag::ACK, 0, b"ignored!"))
        .expect("ping ack");
    c.send(&settings(&[(setting::HEADER_TABLE_SIZE, 0)]))
        .expect("settings");
    assert_eq!(c.frames(), [Out::PingAck(*b"abcdefgh"), Out::SettingsAck]);
    // The table size change is signalled at the start of the next head.
    c.get(1);
    c.conn.send_headers(1, 200, [], true).expect("head");
    assert!(
        c.conn.output()[9..].starts_with(b"\x20\x88"),
        "{:02x?}",
        c.conn.output()
    );
}

#[test]
fn frames_after_both_sides_ended() {
    let mut c = Client::new();
    c.get(1);
    c.conn.send_headers(1, 204, [], true).expect("204");
    c.frames();
    // DATA or HEADERS: a connection error (§5.1 "closed").
    let e = c.conn.recv(&data(1, b"x", true), c.now);
    assert_eq!(e.map_err(|e| e.code()), Err(E::STREAM_CLOSED));
    let mut c = Client::new();
    c.get(1);
    c.conn.send_headers(1, 204, [], true).expect("204");
    let e = c.conn.recv(&headers(1, GET, true), c.now);
    assert_eq!(e.map_err(|e| e.code()), Err(E::STREAM_CLOSED));
}

#[test]
fn a_body_that_ends_after_the_response_can_still_be_read() {
    let mut c = Client::new();
    c.send(&headers_owned(1, &post(4), false)).expect("post");
    c.conn.send_headers(1, 200, [], true).expect("early answer");
    c.send(&data(1, b"body", true)).expect("body");
    c.events();
    // Both sides ended, but the record stays for the unread body.
    assert_eq!(c.conn.body(1), b"body");
    assert_eq!(c.conn.stream_count(), 1);
    assert_eq!(
        c.conn.send_headers(1, 200, [], true),
        Err(SendError::Finished)
    );
    c.conn.consume_body(1, 3);
    assert_eq!(c.conn.stream_count(), 1);
    c.conn.consume_body(1, 1);
    assert_eq!(c.conn.stream_count(), 0, "gone once read");
    assert!(c.frames().iter().all(|o| !matches!(o, Out::Rst(..))));
    // Same from the other side: the body ends first, then the response.
    c.send(&headers_owned(3, &post(2), false)).expect("post");
    c.send(&data(3, b"hi", true)).expect("body");
    c.conn.send_headers(3, 200, [], true).expect("answer");
    assert_eq!(c.conn.body(3), b"hi");
    // A reset by the caller only forgets it: no frame on a closed stream.
    c.conn.reset_stream(3, E::CANCEL);
    assert_eq!(c.conn.stream_count(), 0);
    assert!(c.frames().iter().all(|o| !matches!(o, Out::Rst(..))));
    // Late DATA on a stream closed both ways ends the connection.
    let e = c.conn.recv(&data(3, b"x", true), c.now);
    assert_eq!(e.map_err(|e| e.code()), Err(E::STREAM_CLOSED));
}

#[test]
fn no_second_reset_for_a_stream_already_reset() {
    // Found by fuzzing: a stream error on a stream the server had reset
    // sent RST_STREAM again. Frames in flight after our reset are ignored.
    let mut c = Client::new();
    c.send(&headers(1, &[(":method", "GET")], false))
        .expect("malformed");
    assert_eq!(c.frames(), [Out::Rst(1, E::PROTOCOL_ERROR)]);
    let late = [
        window_update(1, 0),
        frame(kind::PRIORITY, 0, 1, b"\x00\x00"),
        data(1, b"x", false),
    ];
    for f in late {
        c.send(&f).expect("ignored");
    }
    assert!(c.frames().is_empty());
    assert!(c
        .events()
        .iter()
        .all(|e| matches!(e, Event::Rejected { .. })));
}

/// RFC 7540 §3.2: the upgraded request is stream 1, half-closed from the
/// client; HTTP2-Settings counts as the client's SETTINGS, without an ACK.
#[test]
fn upgrade_from_http1_makes_stream_1() {
    let mut payload = frame::setting::INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
    payload.extend_from_slice(&1000u32.to_be_bytes());
    let mut conn = Connection::upgrade(Config::default(), &payload).expect("upgrade");
    assert_eq!(conn.stream_count(), 1);
    conn.send_headers(1, 200, [(&b"x"[..], &b"y"[..])], false)
        .expect("stream 1 answers");
    // The client's window from HTTP2-Settings bounds what stream 1 may carry.
    assert_eq!(conn.send_window(1), 1000);
    let mut c = Client {
        conn,
        now: 1_000,
        decoder: hpack::Decoder::default(),
    };
    let mut hello = PREFACE.to_vec();
    hello.extend(settings(&[]));
    c.send(&hello).expect("preface after the 101");
    let out = c.frames();
    assert!(matches!(out[0], Out::Settings(_)), "{out:?}");
    assert_eq!(
        out.iter().filter(|o| **o == Out::SettingsAck).count(),
        1,
        "{out:?}"
    );
    // A new stream must be above 1.
    c.get(3);
    // A payload that is no SETTINGS payload is refused.
    assert!(Connection::upgrade(Config::default(), b"12345").is_err());
    let bad_window = [0, 4, 0x80, 0, 0, 0];
    assert!(Connection::upgrade(Config::default(), &bad_window).is_err());
}

#[test]
fn settings_ack_is_tracked_and_abort_says_goaway() {
    let mut c = Client::new();
    assert!(c.conn.awaits_settings_ack());
    c.send(&frame(kind::SETTINGS, flag::ACK, 0, b""))
        .expect("ack");
    assert!(!c.conn.awaits_settings_ack());
    let mut c = Client::new();
    c.conn.abort(E::SETTINGS_TIMEOUT, "no SETTINGS ack");
    assert_eq!(c.frames(), [Out::GoAway(0, E::SETTINGS_TIMEOUT)]);
    assert!(!c.conn.wants_read());
    assert!(c.conn.is_done());
}

/// A head block that changed nothing in the encoder's table can be sent
/// again while the table stays the same; one from a passed generation is
/// refused.
#[test]
fn head_blocks_are_replayed_only_at_their_generation() {
    let mut c = Client::new();
    c.get(1);
    c.get(3);
    c.get(5);
    let fields = [
        (&b"content-type"[..], &b"text/html"[..]),
        (b"etag", b"\"x\""),
    ];
    // The first time content-type enters the table: the generation moves.
    let g0 = c.conn.encoder_generation();
    c.conn.send_headers(1, 200, fields, true).expect("head");
    assert_ne!(c.conn.encoder_generation(), g0);
    let g1 = c.conn.encoder_generation();
    c.conn.send_headers(3, 200, fields, true).expect("head");
    assert_eq!(
        c.conn.encoder_generation(),
        g1,
        "found in the table: no change"
    );
    let block = c.conn.last_head_block().to_vec();
    c.conn
        .send_head_block(5, 200, &block, g1, true)
        .expect("replayed");
    let out = c.frames();
    let heads: Vec<&Out> = out
        .iter()
        .filter(|o| matches!(o, Out::Headers { .. }))
        .collect();
    assert_eq!(heads.len(), 3);
    let fields_of = |o: &Out| match o {
        Out::Headers { fields, .. } => fields.clone(),
        _ => Vec::new(),
    };
    assert_eq!(fields_of(heads[1]), fields_of(heads[2]));
    assert_eq!(fields_of(heads[0]), fields_of(heads[2]));
    c.get(7);
    assert_eq!(
        c.conn.send_head_block(7, 200, &block, g0, true),
        Err(SendError::Stale)
    );
}

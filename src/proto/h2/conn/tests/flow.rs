//! Flow control both ways (RFC 9113 §5.2, §6.9).

use super::*;

fn upload(c: &mut Client, stream: StreamId, len: usize) {
    c.send(&headers_owned(stream, &post(len), false))
        .expect("post");
    c.events();
}

/// Sends `len` body bytes in frames of at most 16384.
fn body(c: &mut Client, stream: StreamId, len: usize) -> Result<(), Error> {
    let mut left = len;
    while left > 0 {
        let n = left.min(16_384);
        c.send(&data(stream, &vec![b'b'; n], false))?;
        left -= n;
    }
    Ok(())
}

#[test]
fn a_caller_that_does_not_consume_stops_the_client() {
    let mut c = Client::new();
    upload(&mut c, 1, 1 << 20);
    body(&mut c, 1, 65_535).expect("a whole stream window");
    assert_eq!(c.conn.body(1).len(), 65_535);
    assert!(c.frames().is_empty(), "nothing consumed: no WINDOW_UPDATE");
    // One byte more than the stream window.
    c.send(&data(1, b"x", false)).expect("stream error only");
    assert_eq!(c.frames(), [Out::Rst(1, E::FLOW_CONTROL_ERROR)]);
}

#[test]
fn consuming_returns_credit_in_halves() {
    let mut c = Client::new();
    upload(&mut c, 1, 1 << 20);
    body(&mut c, 1, 40_000).expect("body");
    c.conn.consume_body(1, 30_000);
    assert!(c.frames().is_empty(), "30000 < 65535/2: not yet");
    c.conn.consume_body(1, 10_000);
    assert_eq!(c.frames(), [Out::WindowUpdate(1, 40_000)]);
    // The connection's credit comes at 128 KiB consumed.
    body(&mut c, 1, 65_535).expect("body");
    c.conn.consume_body(1, 65_535);
    assert_eq!(c.frames(), [Out::WindowUpdate(1, 65_535)]);
    body(&mut c, 1, 30_000).expect("body");
    c.conn.consume_body(1, 30_000);
    assert_eq!(
        c.frames(),
        [Out::WindowUpdate(0, 135_535)],
        "stream 1 owes 30000 < half; connection owes 135535 >= 131072"
    );
}

#[test]
fn buffered_body_is_capped_by_the_connection_window() {
    let mut c = Client::new();
    for s in [1, 3, 5, 7, 9] {
        upload(&mut c, s, 1 << 20);
    }
    // 4 x 65535 = 262140 buffered, 4 bytes short of 256 KiB.
    for s in [1, 3, 5, 7] {
        body(&mut c, s, 65_535).expect("body");
    }
    c.send(&data(9, b"1234", false)).expect("the last 4 bytes");
    let buffered: usize = [1, 3, 5, 7, 9].iter().map(|&s| c.conn.body(s).len()).sum();
    assert_eq!(buffered, 256 * 1024);
    let e = c.conn.recv(&data(9, b"5", false), c.now);
    assert_eq!(e.map_err(|e| e.code()), Err(E::FLOW_CONTROL_ERROR));
}

#[test]
fn closing_a_stream_returns_its_unread_body_to_the_connection() {
    let mut c = Client::new();
    upload(&mut c, 1, 1 << 20);
    upload(&mut c, 3, 1 << 20);
    body(&mut c, 1, 65_535).expect("body");
    body(&mut c, 3, 65_535).expect("body");
    c.events();
    c.conn.reset_stream(1, E::CANCEL);
    c.conn.reset_stream(3, E::CANCEL);
    // 131070 owed: 2 short of half the connection window.
    assert_eq!(c.frames(), [Out::Rst(1, E::CANCEL), Out::Rst(3, E::CANCEL)]);
    // DATA in flight on the reset streams still counts, and is credited.
    c.send(&data(1, &[0; 1000], false)).expect("ignored");
    assert!(c.events().is_empty());
    assert_eq!(c.frames(), [Out::WindowUpdate(0, 132_070)]);
}

#[test]
fn padding_is_credited_at_once() {
    let mut c = Client::new();
    upload(&mut c, 1, 10);
    // 1 + 10 data + 200 padding = 211 of flow control, then 40000 more padding.
    let mut p = vec![200u8];
    p.extend_from_slice(b"0123456789");
    p.extend_from_slice(&[0; 200]);
    c.send(&frame(kind::DATA, flag::PADDED, 1, &p))
        .expect("padded");
    assert_eq!(c.conn.body(1), b"0123456789");
    assert!(matches!(c.events()[..], [Event::Data { len: 10, .. }]));
    let streams = c
        .conn
        .streams
        .get(&1)
        .map(|s| (s.recv_window, s.recv_unacked));
    assert_eq!(
        streams,
        Some((65_535 - 211, 201)),
        "201 owed back, not yet due"
    );
    assert_eq!(c.conn.conn_unacked, 201);
}

#[test]
fn send_window_is_the_least_of_stream_connection_and_frame_size() {
    let mut c = Client::new();
    c.send(&settings(&[(setting::INITIAL_WINDOW_SIZE, 100)]))
        .expect("settings");
    c.get(1);
    assert_eq!(c.conn.send_window(1), 0, "no head sent yet");
    c.conn.send_headers(1, 200, [], false).expect("head");
    assert_eq!(c.conn.send_window(1), 100);
    assert_eq!(
        c.conn.data_header(1, 101, false),
        Err(SendError::OverWindow)
    );
    c.conn.data_header(1, 60, false).expect("60");
    assert_eq!(c.conn.send_window(1), 40);
    // A bigger stream window: now the frame size bounds it, then the
    // connection's 65535.
    c.send(&window_update(1, 200_000)).expect("wu");
    assert_eq!(c.conn.send_window(1), 16_384);
    for _ in 0..3 {
        c.conn.data_header(1, 16_384, false).expect("16k");
    }
    assert_eq!(c.conn.send_window(1), 65_535 - 60 - 3 * 16_384);
    c.conn.data_header(1, 16_323, false).expect("the rest");
    assert_eq!(c.conn.send_window(1), 0);
    assert_eq!(c.conn.next_stream_to_send(), None);
    // An empty END_STREAM needs no window.
    c.conn.data_header(1, 0, true).expect("end");
}

#[test]
fn initial_window_changes_can_go_negative() {
    let mut c = Client::new();
    c.get(1);
    c.conn.send_headers(1, 200, [], false).expect("head");
    c.conn.data_header(1, 16_384, false).expect("data");
    // 65535 - 16384 = 49151; the new initial 1000 takes it to -15151.
    c.send(&settings(&[(setting::INITIAL_WINDOW_SIZE, 1000)]))
        .expect("smaller");
    assert_eq!(
        c.conn.streams.get(&1).map(|s| s.send_window),
        Some(1000 - 16_384)
    );
    assert_eq!(c.conn.send_window(1), 0);
    c.send(&window_update(1, 16_384)).expect("wu");
    assert_eq!(c.conn.send_window(1), 1000);
    // 5000 more, then an initial window of 2^31-1 would put it 5000 past.
    c.send(&window_update(1, 5000)).expect("wu");
    let e = c.conn.recv(
        &settings(&[(setting::INITIAL_WINDOW_SIZE, 0x7fff_ffff)]),
        c.now,
    );
    assert_eq!(e.map_err(|e| e.code()), Err(E::FLOW_CONTROL_ERROR));
}

#[test]
fn streams_opened_later_use_the_new_initial_window() {
    let mut c = Client::new();
    c.send(&settings(&[(setting::INITIAL_WINDOW_SIZE, 5)]))
        .expect("settings");
    c.get(1);
    c.conn.send_headers(1, 200, [], false).expect("head");
    assert_eq!(c.conn.send_window(1), 5);
}

#[test]
fn windows_below_the_protocol_default_are_raised() {
    let cfg = Config {
        stream_window: 1000,
        connection_window: 10,
        ..Config::default()
    };
    let mut c = Client::with(cfg);
    upload(&mut c, 1, 1 << 20);
    body(&mut c, 1, 65_535).expect("the default window, whatever was asked");
}

//! A body still coming after its complete answer: dropped as it comes for
//! one stream window, its stream's frames judged all along (RFC 9113 §5.1,
//! §6.9.1, §8.1), then stopped with RST_STREAM(NO_ERROR).

use super::*;

/// A GET without END_STREAM (a body may follow), answered whole at once,
/// as glint answers a static file: the caller is done with the body.
fn answered_early() -> Client {
    let mut c = Client::new();
    c.send(&headers(1, GET, false)).expect("get");
    c.events();
    c.conn
        .send_headers(1, 200, [], true)
        .expect("the whole answer");
    c.conn.drop_body(1);
    c.frames();
    c
}

#[test]
fn a_window_update_past_the_maximum_after_an_early_answer_is_a_flow_control_error() {
    // h2spec 6.9.1/3, whose frames used to come after the stream was
    // reset with NO_ERROR (and were ignored) one run in three.
    let mut c = answered_early();
    c.send(&window_update(1, 0x7fff_ffff)).expect("first");
    assert_eq!(c.frames(), [Out::Rst(1, E::FLOW_CONTROL_ERROR)]);
    c.send(&window_update(1, 0x7fff_ffff))
        .expect("second, ignored");
    assert!(c.frames().is_empty());
    assert_eq!(c.conn.stream_count(), 0);
}

#[test]
fn trailers_without_end_stream_after_an_early_answer_are_a_protocol_error() {
    // h2spec 8.1/1.
    let mut c = answered_early();
    c.send(&data(1, b"test", false)).expect("body");
    c.send(&headers(1, &[("x-test", "ok")], false))
        .expect("trailers");
    assert!(c.frames().contains(&Out::Rst(1, E::PROTOCOL_ERROR)));
}

#[test]
fn a_body_longer_than_its_content_length_after_an_early_answer_is_a_protocol_error() {
    // h2spec 8.1.2.6/1.
    let mut c = Client::new();
    c.send(&headers_owned(1, &post(4), false)).expect("post");
    c.conn.send_headers(1, 200, [], true).expect("answer");
    c.conn.drop_body(1);
    c.frames();
    c.send(&data(1, b"too long", true)).expect("body");
    assert_eq!(c.frames(), [Out::Rst(1, E::PROTOCOL_ERROR)]);
}

#[test]
fn a_dropped_body_that_ends_closes_its_stream_without_a_reset() {
    let mut c = answered_early();
    let piece = [b'x'; 16_384];
    c.send(&data(1, &piece, false)).expect("body");
    c.send(&data(1, &piece, false)).expect("body");
    c.send(&data(1, &piece, true)).expect("its end");
    let out = c.frames();
    assert!(out.iter().all(|o| !matches!(o, Out::Rst(..))), "{out:?}");
    // The credit came back (once half the window was owed): the client
    // was never stalled.
    assert!(out.contains(&Out::WindowUpdate(1, 32_768)), "{out:?}");
    assert_eq!(c.conn.stream_count(), 0);
    // Nothing of it was left for the caller.
    assert!(c.events().is_empty());
}

#[test]
fn a_body_going_on_past_a_window_after_its_answer_is_stopped() {
    let mut c = answered_early();
    let piece = [b'x'; 16_384];
    let mut sent = 0;
    let mut reset = false;
    // Bounded: a window (65,535) and one frame more.
    for _ in 0..6 {
        c.send(&data(1, &piece, false)).expect("body");
        sent += piece.len();
        if c.frames().contains(&Out::Rst(1, E::NO_ERROR)) {
            reset = true;
            break;
        }
    }
    assert!(reset, "still taking the body after {sent} bytes");
    assert!(sent > 65_535 && sent <= 65_535 + piece.len(), "{sent}");
    // Frames in flight after the reset are ignored.
    c.send(&data(1, &piece, false)).expect("late");
    assert!(c.frames().is_empty());
}

#[test]
fn a_stalled_body_after_its_answer_is_stopped_by_age_and_by_goaway() {
    let mut c = answered_early();
    c.conn.age_drains(3);
    c.conn.age_drains(3);
    assert!(c.frames().is_empty());
    c.conn.age_drains(3);
    assert_eq!(c.frames(), [Out::Rst(1, E::NO_ERROR)]);
    // GOAWAY stops every drain at once: nothing on them is awaited.
    c.send(&headers(3, GET, false)).expect("get");
    c.conn.send_headers(3, 200, [], true).expect("answer");
    c.conn.drop_body(3);
    c.frames();
    c.conn.shutdown();
    let out = c.frames();
    assert_eq!(out[0], Out::Rst(3, E::NO_ERROR), "{out:?}");
    assert!(matches!(out[1], Out::GoAway(3, E::NO_ERROR)), "{out:?}");
    assert!(c.conn.is_done());
}

#[test]
fn a_body_not_answered_yet_is_stopped_at_once() {
    // The answer is cut, not ended: the body is not worth a window.
    let mut c = Client::new();
    c.send(&headers(1, GET, false)).expect("get");
    c.conn.drop_body(1);
    assert_eq!(c.frames(), [Out::Rst(1, E::NO_ERROR)]);
}

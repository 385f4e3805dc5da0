//! The HTTP/1 session driven with byte literals, no socket: each test is a
//! client's conversation, the session's answers checked step by step.

use super::session::*;
use crate::msg::plan::{Framing, Shape};

const LIMITS: Limits = Limits {
    max_head: 8192,
    max_requests: 100,
};

fn offer() -> Offer {
    Offer {
        keep_alive: true,
        room: true,
        limits: LIMITS,
    }
}

/// What `input` made of `buf`, as a value that does not borrow it.
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Wait,
    Drop(usize),
    /// A request: its target and head length.
    Request(String, usize),
    Bad(u16),
    Body(usize),
}

fn feed(s: &mut Session, buf: &[u8], o: Offer) -> Got {
    let mut headers = header_slots();
    match s.input(buf, &mut headers, o) {
        Input::Wait => Got::Wait,
        Input::Drop(n) => Got::Drop(n),
        Input::Request(r) => Got::Request(r.target.to_string(), r.head_len),
        Input::Bad(e) => Got::Bad(e.status),
        Input::Body(b) => Got::Body(b.len()),
    }
}

/// Hands out the request at the start of `buf`; its head length.
fn request(s: &mut Session, buf: &[u8]) -> usize {
    match feed(s, buf, offer()) {
        Got::Request(_, n) => n,
        other => panic!("expected a request in {buf:?}, got {other:?}"),
    }
}

/// glint answers the request itself with `len` bytes.
fn answer(s: &mut Session, len: u64) -> Plan {
    s.hand_body(BodyTo::Nobody);
    let plan = s.plan(Shape::Sized(len), false, offer());
    s.complete(offer(), false);
    plan
}

#[test]
fn keep_alive_get_then_the_next_request() {
    let mut s = Session::new();
    let n = request(&mut s, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(n, 27);
    let plan = answer(&mut s, 5);
    assert_eq!(plan.framing, Framing::Length(5));
    assert!(plan.keep_alive && plan.body);
    assert_eq!(s.write_state(), Write::Idle);
    assert_eq!(s.read_state(), Read::Head);
    assert_eq!(s.written(0), Next::Read);
    assert!(s.is_idle());
    request(&mut s, b"GET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(s.requests(), 2);
}

#[test]
fn pipelined_requests_are_answered_while_the_queue_has_room() {
    let two = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n";
    let mut s = Session::new();
    let n = request(&mut s, two);
    answer(&mut s, 3);
    let rest = &two[n..];
    let full = Offer {
        room: false,
        ..offer()
    };
    assert_eq!(feed(&mut s, rest, full), Got::Wait, "no room: it waits");
    assert_eq!(
        feed(&mut s, rest, offer()),
        Got::Request("/b".into(), rest.len())
    );
}

#[test]
fn a_body_nobody_reads_is_dropped_and_the_connection_kept() {
    let mut s = Session::new();
    let head = b"POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n";
    let mut buf = head.to_vec();
    buf.extend_from_slice(b"0123");
    let n = request(&mut s, &buf);
    let plan = answer(&mut s, 30);
    assert!(
        plan.keep_alive,
        "10 bytes are dropped, not a reason to close"
    );
    assert_eq!(s.read_state(), Read::Drop { left: Some(10) });
    assert_eq!(feed(&mut s, &buf[n..], offer()), Got::Drop(4));
    // The rest of the body, then the next request in the same read.
    let next = b"456789GET /n HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_eq!(feed(&mut s, next, offer()), Got::Drop(6));
    assert_eq!(s.read_state(), Read::Head);
    assert_eq!(
        feed(&mut s, &next[6..], offer()),
        Got::Request("/n".into(), 28)
    );
}

#[test]
fn an_early_answer_with_connection_close_lingers_for_the_body() {
    // The client uploads 5 MB and asked to close: the answer goes out
    // while its body still comes, and the close waits for the client.
    let mut s = Session::new();
    request(
        &mut s,
        b"POST /f.bin HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: 5000000\r\n\r\n",
    );
    let plan = answer(&mut s, 30_000);
    assert_eq!(plan.framing, Framing::Length(30_000));
    assert!(!plan.keep_alive, "the head says Connection: close");
    assert_eq!(s.write_state(), Write::Closing { linger: true });
    // Body bytes that come while the answer is written are dropped, so a
    // client that sends before it reads is not stuck.
    assert_eq!(s.read_state(), Read::Drop { left: None });
    assert!(s.reads());
    assert_eq!(feed(&mut s, &[b'x'; 4096], offer()), Got::Drop(4096));
    assert_eq!(s.written(100), Next::Linger);
    assert_eq!(s.linger_until(), Some(100 + LINGER_SECS));
    assert_eq!(feed(&mut s, &[b'x'; 4096], offer()), Got::Drop(4096));
    assert_eq!(s.peer_closed(), Eof::Finish);
}

#[test]
fn a_body_too_large_to_drop_closes_after_the_answer() {
    let mut s = Session::new();
    request(
        &mut s,
        b"POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 100000000\r\n\r\n",
    );
    let plan = answer(&mut s, 3);
    assert!(!plan.keep_alive);
    assert_eq!(s.written(0), Next::Linger);
}

#[test]
fn expect_100_continue_for_a_backend_and_for_an_own_answer() {
    let req =
        b"POST /app HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n";
    // A backend takes the body: the caller sends 100 Continue first.
    let mut s = Session::new();
    request(&mut s, req);
    assert!(s.awaits_continue());
    s.hand_body(BodyTo::Consumer);
    s.continue_sent();
    assert!(s.feeds_body());
    assert_eq!(feed(&mut s, &[b'b'; 60], offer()), Got::Body(60));
    s.body_taken(60, false);
    assert_eq!(feed(&mut s, &[b'b'; 40], offer()), Got::Body(40));
    s.body_taken(40, false);
    assert_eq!(s.read_state(), Read::Done);
    let plan = s.plan(Shape::Stream, false, offer());
    assert_eq!(plan.framing, Framing::Chunked);
    assert!(plan.keep_alive);
    s.complete(offer(), false);
    assert_eq!(s.read_state(), Read::Head);

    // glint refuses it before the body (a 401): the client may never send
    // the body, or send it anyway: only a close tells.
    let mut s = Session::new();
    request(&mut s, req);
    let plan = answer(&mut s, 10);
    assert!(!plan.keep_alive);
    assert_eq!(s.written(0), Next::Linger);

    // A body already here needs no 100 Continue.
    let mut s = Session::new();
    let mut whole = req.to_vec();
    whole.extend_from_slice(&[b'b'; 100]);
    request(&mut s, &whole);
    assert!(!s.awaits_continue());
}

#[test]
fn http_1_0_closes_unless_it_asks_for_keep_alive() {
    let mut s = Session::new();
    request(&mut s, b"GET / HTTP/1.0\r\n\r\n");
    let plan = answer(&mut s, 5);
    assert!(!plan.keep_alive);
    assert_eq!(plan.minor, 0);
    assert_eq!(s.written(0), Next::Close);

    let mut s = Session::new();
    request(&mut s, b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert!(answer(&mut s, 5).keep_alive);

    // A body of unknown length on HTTP/1.0 ends with the connection.
    let mut s = Session::new();
    request(&mut s, b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    s.hand_body(BodyTo::Nobody);
    let plan = s.plan(Shape::Stream, false, offer());
    assert_eq!(plan.framing, Framing::UntilClose);
    assert!(!plan.keep_alive);
}

#[test]
fn a_client_that_half_closes_still_gets_its_answer() {
    let mut s = Session::new();
    request(
        &mut s,
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    );
    s.hand_body(BodyTo::Consumer);
    assert!(s.may_half_close());
    assert_eq!(s.peer_closed(), Eof::Finish, "the answer is still due");
    let plan = s.plan(Shape::Sized(3), false, offer());
    assert!(!plan.keep_alive);
    s.complete(offer(), false);
    assert_eq!(s.written(0), Next::Close, "no lingering: the client closed");

    // With its body cut short, the request cannot be answered.
    let mut s = Session::new();
    request(
        &mut s,
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n",
    );
    s.hand_body(BodyTo::Consumer);
    s.body_taken(4, false);
    assert_eq!(s.peer_closed(), Eof::BodyCut);
}

#[test]
fn bad_heads_and_blank_lines() {
    let mut s = Session::new();
    assert_eq!(
        feed(&mut s, b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", offer()),
        Got::Drop(2)
    );
    assert_eq!(
        feed(&mut s, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", offer()),
        Got::Request("/".into(), 27)
    );
    let mut s = Session::new();
    assert_eq!(
        feed(&mut s, b"\r\n\r\nGET / HTTP/1.1\r\n", offer()),
        Got::Bad(400)
    );
    let mut s = Session::new();
    assert_eq!(
        feed(&mut s, b"GET / HTTP/1.1\r\n\r\n", offer()),
        Got::Bad(400),
        "no Host"
    );
    let plan = s.plan(Shape::Sized(10), true, offer());
    assert!(!plan.keep_alive);
    s.complete(offer(), true);
    assert_eq!(s.read_state(), Read::Drop { left: None });
    assert_eq!(s.written(0), Next::Linger);
    let mut s = Session::new();
    assert_eq!(
        feed(&mut s, b"GET / HTTP/1.1\r\nHo", offer()),
        Got::Wait,
        "more to come"
    );
}

#[test]
fn the_last_of_max_keep_alive_requests_closes() {
    let limits = Limits {
        max_requests: 2,
        ..LIMITS
    };
    let o = Offer { limits, ..offer() };
    let mut s = Session::new();
    for (i, keeps) in [(1, true), (2, false)] {
        let mut headers = header_slots();
        let Input::Request(_) = s.input(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", &mut headers, o)
        else {
            panic!("request {i}");
        };
        s.hand_body(BodyTo::Nobody);
        assert_eq!(
            s.plan(Shape::Sized(1), false, o).keep_alive,
            keeps,
            "request {i}"
        );
        s.complete(o, false);
        s.written(0);
    }
}

#[test]
fn the_server_that_stops_offering_keep_alive_closes_after_the_answer() {
    let mut s = Session::new();
    request(&mut s, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    s.hand_body(BodyTo::Nobody);
    let plan = s.plan(Shape::Sized(1), false, offer());
    assert!(plan.keep_alive);
    let stopping = Offer {
        keep_alive: false,
        ..offer()
    };
    s.complete(stopping, false);
    assert_eq!(s.written(0), Next::Close);
}

#[test]
fn an_unread_chunked_body_closes_and_a_tunnel_passes_bytes() {
    let mut s = Session::new();
    request(
        &mut s,
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    assert!(!answer(&mut s, 2).keep_alive);
    assert_eq!(s.written(0), Next::Linger);

    let mut s = Session::new();
    request(
        &mut s,
        b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
    );
    s.hand_body(BodyTo::Consumer);
    let plan = s.plan(Shape::Tunnel, false, offer());
    assert_eq!(plan.framing, Framing::None);
    assert_eq!(s.write_state(), Write::Tunnel);
    assert_eq!(feed(&mut s, b"frame", offer()), Got::Body(5));
    assert_eq!(s.peer_closed(), Eof::Tunnel);
    // The backend's end ends the connection once its last bytes are out.
    s.complete(offer(), false);
    assert_eq!(s.written(0), Next::Close);

    // With the client still sending, after reading (and dropping) what it
    // sends for a while: its close must not reset the last bytes.
    let mut s = Session::new();
    s.plan(Shape::Tunnel, false, offer());
    s.complete(offer(), false);
    assert_eq!(s.write_state(), Write::Closing { linger: true });
    assert_eq!(feed(&mut s, b"late", offer()), Got::Drop(4));
    assert_eq!(s.written(0), Next::Linger);
}

#[test]
fn an_authorizer_holds_the_body_until_the_request_runs_again() {
    let mut s = Session::new();
    request(
        &mut s,
        b"POST /app HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n",
    );
    s.hand_body(BodyTo::Hold);
    assert!(!s.reads(), "the body waits in the socket");
    assert_eq!(feed(&mut s, b"abc", offer()), Got::Wait);
    // Allowed: the request's handler takes the body.
    s.hand_body(BodyTo::Consumer);
    assert_eq!(feed(&mut s, b"abc", offer()), Got::Body(3));
    s.body_taken(3, false);
    assert_eq!(s.read_state(), Read::Done);
}

#[test]
fn a_downgraded_request_is_answered_as_http_1_0() {
    // HTTP/1.1: an HTTP/1.0 head, no chunks, no 100 Continue, the close.
    let mut s = Session::new();
    request(
        &mut s,
        b"POST / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n",
    );
    assert!(s.awaits_continue());
    s.downgrade();
    assert!(!s.awaits_continue(), "no 100 Continue for HTTP/1.0");
    s.hand_body(BodyTo::Nobody);
    let plan = s.plan(Shape::Stream, false, offer());
    assert_eq!(
        (plan.framing, plan.keep_alive, plan.minor, plan.http10),
        (Framing::UntilClose, false, 0, true)
    );
    s.complete(offer(), false);
    // The unread body: the close lingers so that the answer arrives whole.
    assert_eq!(s.written(0), Next::Linger);

    // HTTP/1.0 asking for keep-alive keeps it, under an HTTP/1.0 head.
    let mut s = Session::new();
    request(&mut s, b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    s.downgrade();
    let plan = answer(&mut s, 5);
    assert!(plan.keep_alive && plan.http10);
    assert_eq!(s.written(0), Next::Read);
}

//! RFC 9218 priorities through the connection, and the DATA scheduler.

use super::*;

fn get_with_priority(c: &mut Client, stream: StreamId, priority: Option<&str>) {
    let mut f = GET.to_vec();
    if let Some(p) = priority {
        f.push(("priority", p));
    }
    c.send(&headers(stream, &f, true)).expect("get");
    c.events();
    c.conn.send_headers(stream, 200, [], false).expect("head");
}

/// Drives the scheduler like a server would: ask, send one frame of up to
/// the window, repeat. `left` is each stream's remaining body.
fn drive(c: &mut Client, left: &mut Vec<(StreamId, usize)>, frames: usize) -> Vec<StreamId> {
    let mut order = Vec::new();
    for _ in 0..frames {
        let Some(s) = c.conn.next_stream_to_send() else {
            break;
        };
        let Some(i) = left.iter().position(|(id, _)| *id == s) else {
            panic!("stream {s} was never made ready");
        };
        let n = left[i].1.min(c.conn.send_window(s));
        let end = n == left[i].1;
        c.conn.data_header(s, n, end).expect("within the window");
        left[i].1 -= n;
        if end {
            left.remove(i);
        }
        order.push(s);
    }
    order
}

#[test]
fn priority_header_and_updates() {
    let mut c = Client::new();
    get_with_priority(&mut c, 1, Some("u=1, i"));
    assert_eq!(
        c.conn.priority(1),
        Some(Priority {
            urgency: 1,
            incremental: true
        })
    );
    get_with_priority(&mut c, 3, None);
    assert_eq!(c.conn.priority(3), Some(Priority::default()));
    // PRIORITY_UPDATE replaces the whole value.
    c.send(&frame(kind::PRIORITY_UPDATE, 0, 0, b"\x00\x00\x00\x01u=6"))
        .expect("update");
    assert_eq!(
        c.conn.priority(1),
        Some(Priority {
            urgency: 6,
            incremental: false
        })
    );
    // One for a stream not yet open waits for it, and beats its header.
    c.send(&frame(kind::PRIORITY_UPDATE, 0, 0, b"\x00\x00\x00\x05u=0"))
        .expect("early");
    get_with_priority(&mut c, 5, Some("u=7"));
    assert_eq!(
        c.conn.priority(5),
        Some(Priority {
            urgency: 0,
            incremental: false
        })
    );
    // For a closed stream, nothing happens.
    c.conn.reset_stream(3, E::CANCEL);
    c.send(&frame(kind::PRIORITY_UPDATE, 0, 0, b"\x00\x00\x00\x03u=0"))
        .expect("late");
    assert_eq!(c.conn.priority(3), None);
}

#[test]
fn a_large_download_does_not_starve_small_ones() {
    let mut c = Client::new();
    c.send(&window_update(0, 10_000_000))
        .expect("room on the connection");
    c.send(&settings(&[(setting::INITIAL_WINDOW_SIZE, 10_000_000)]))
        .expect("room on streams");
    get_with_priority(&mut c, 1, None); // 1 MB at u=3
    get_with_priority(&mut c, 3, None); // 20 KB at u=3
    get_with_priority(&mut c, 5, Some("u=0")); // 30 KB, urgent
    for s in [1, 3, 5] {
        c.conn.set_ready(s, true);
    }
    let mut left = vec![(1, 1_000_000), (3, 20_000), (5, 30_000)];
    let order = drive(&mut c, &mut left, 8);
    // 5 first (two frames), then 1 and 3 in turn until 3 is done.
    assert_eq!(order, [5, 5, 1, 3, 1, 3, 1, 1]);
}

#[test]
fn blocked_streams_give_way_and_come_back() {
    let mut c = Client::new();
    c.send(&settings(&[(setting::INITIAL_WINDOW_SIZE, 100)]))
        .expect("small windows");
    get_with_priority(&mut c, 1, Some("u=0"));
    get_with_priority(&mut c, 3, Some("u=5"));
    c.conn.set_ready(1, true);
    c.conn.set_ready(3, true);
    let mut left = vec![(1, 1000), (3, 1000)];
    // 1 is more urgent but both have 100 bytes of window.
    assert_eq!(drive(&mut c, &mut left, 10), [1, 3]);
    assert_eq!(c.conn.next_stream_to_send(), None, "both blocked");
    c.send(&window_update(3, 50)).expect("wu");
    assert_eq!(drive(&mut c, &mut left, 10), [3]);
    c.send(&window_update(1, 50)).expect("wu");
    c.send(&window_update(3, 50)).expect("wu");
    assert_eq!(drive(&mut c, &mut left, 10), [1, 3]);
    // A stream no longer ready leaves the rotation.
    c.send(&window_update(1, 50)).expect("wu");
    c.conn.set_ready(1, false);
    assert_eq!(c.conn.next_stream_to_send(), None);
}

#[test]
fn an_urgency_change_moves_a_ready_stream() {
    let mut c = Client::new();
    get_with_priority(&mut c, 1, Some("u=2"));
    get_with_priority(&mut c, 3, Some("u=4"));
    c.conn.set_ready(1, true);
    c.conn.set_ready(3, true);
    assert_eq!(c.conn.next_stream_to_send(), Some(1));
    c.send(&frame(kind::PRIORITY_UPDATE, 0, 0, b"\x00\x00\x00\x03u=1"))
        .expect("update");
    assert_eq!(c.conn.next_stream_to_send(), Some(3));
    assert_eq!(c.conn.next_stream_to_send(), Some(3), "u=1 before u=2");
    // Marking ready again does not queue twice.
    for _ in 0..10 {
        c.conn.set_ready(3, true);
    }
    assert!(c.conn.sched.len() <= 3, "{} entries", c.conn.sched.len());
    // A finished stream is dropped from the rotation.
    c.conn.data_header(3, 0, true).expect("end");
    assert_eq!(c.conn.next_stream_to_send(), Some(1));
    assert_eq!(c.conn.next_stream_to_send(), Some(1));
}

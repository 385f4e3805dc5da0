use super::*;

fn env() -> Env {
    Env::from_pairs(&[("REQUEST_METHOD", "POST")])
}

/// Feeds `body` in `step`-sized reads, letting a backend take `drain`
/// bytes after each; returns everything the backend got.
fn run(u: &mut Upload, body: &[u8], step: usize, drain: usize) -> Vec<u8> {
    let mut got = Vec::new();
    let mut at = 0;
    for _ in 0..body.len() * 2 + 10 {
        if at < body.len() {
            let end = (at + step).min(body.len());
            let (used, _) = u.take(&body[at..end]).unwrap();
            at += used;
        }
        assert!(u.held() <= 200 + BODY_WINDOW + FRAMING_SLACK + step);
        let n = u.pending().len().min(drain);
        got.extend_from_slice(&u.pending()[..n]);
        u.advance(n);
        if u.all_sent() {
            break;
        }
    }
    assert!(u.all_sent(), "the request never completed");
    got
}

#[test]
fn scgi_content_length_streams_within_the_window() {
    let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut u = Upload::new(
        Protocol::Scgi,
        env(),
        BodyFraming::Length(body.len() as u64),
    );
    let mut want = Vec::new();
    scgi::encode_head(body.len() as u64, &env(), &mut want);
    want.extend_from_slice(&body);
    assert_eq!(run(&mut u, &body, 16 * 1024, 5000), want);
    assert!(!u.is_whole(), "a large body is let go as it is sent");
    assert!(!u.rewind());
}

#[test]
fn the_window_stops_taking_until_the_backend_drains() {
    let mut u = Upload::new(Protocol::Scgi, env(), BodyFraming::Length(1 << 20));
    let chunk = vec![1u8; 16 * 1024];
    let mut taken = 0;
    for _ in 0..100 {
        taken += u.take(&chunk).unwrap().0;
    }
    assert_eq!(
        taken + u.head_len,
        BODY_WINDOW,
        "no backend: only the window is read"
    );
    assert_eq!(u.room(), 0);
    let n = u.pending().len();
    u.advance(n);
    assert_eq!(u.room(), BODY_WINDOW);
}

#[test]
fn fastcgi_small_body_stays_whole_for_a_retry() {
    let body = vec![9u8; 50_000];
    let mut u = Upload::new(
        Protocol::FastCgi,
        env(),
        BodyFraming::Length(body.len() as u64),
    );
    let mut want = Vec::new();
    fastcgi::encode_head(body.len() as u64, &env(), &mut want);
    for part in body.chunks(1000) {
        fastcgi::stdin(part, &mut want);
    }
    fastcgi::end_stdin(&mut want);
    let got = run(&mut u, &body, 1000, 700);
    assert_eq!(got, want);
    assert!(u.rewind(), "a body within the window can be sent again");
    assert_eq!(u.pending(), &want[..]);
}

#[test]
fn only_a_request_that_cannot_outgrow_the_window_stays_whole() {
    let small = 7 * 1024;
    let mut u = Upload::new(Protocol::FastCgi, env(), BodyFraming::Length(small));
    assert!(u.stays_whole());
    // The worst a client can do: one byte per read, the backend taking each.
    for _ in 0..small {
        u.take(&[1]).unwrap();
        let n = u.pending().len();
        u.advance(n);
    }
    assert!(u.all_sent() && u.is_whole() && u.rewind());
    let big = Upload::new(Protocol::FastCgi, env(), BodyFraming::Length(8 * 1024));
    assert!(
        !big.stays_whole(),
        "a byte per read would outgrow the window"
    );
    let none = Upload::new(Protocol::FastCgi, env(), BodyFraming::Length(0));
    assert!(none.stays_whole());
    let chunked = Upload::new(
        Protocol::FastCgi,
        env(),
        BodyFraming::Chunked { limit: 1 << 20 },
    );
    assert!(chunked.stays_whole());
}

#[test]
fn keep_conn_is_set_before_sending_only() {
    let mut u = Upload::new(Protocol::FastCgi, env(), BodyFraming::Length(0));
    u.set_keep_conn(true);
    assert_eq!(u.pending()[10], 1);
    u.advance(3);
    u.set_keep_conn(false);
    assert!(u.rewind());
    assert_eq!(
        u.pending()[10],
        1,
        "not changed under a connection that has some of it"
    );
    u.sent = 0;
    u.set_keep_conn(false);
    assert_eq!(u.pending()[10], 0);
}

#[test]
fn empty_body_is_complete_at_once() {
    let u = Upload::new(Protocol::FastCgi, env(), BodyFraming::Length(0));
    assert!(!u.wants_body());
    assert!(u.pending().ends_with(&[1, 5, 0, 1, 0, 0, 0, 0]));
}

#[test]
fn chunked_is_collected_then_sent_with_its_length() {
    let mut u = Upload::new(Protocol::Scgi, env(), BodyFraming::Chunked { limit: 100 });
    assert!(u.pending().is_empty(), "nothing before the length is known");
    let (used, done) = u.take(b"5\r\nhello\r\n").unwrap();
    assert_eq!((used, done), (10, false));
    let (used, done) = u.take(b"0\r\n\r\nGET /next").unwrap();
    assert_eq!((used, done), (5, true));
    let mut want = Vec::new();
    scgi::encode_head(5, &env(), &mut want);
    want.extend_from_slice(b"hello");
    assert_eq!(u.pending(), &want[..]);
    assert!(u.is_whole());
}

#[test]
fn chunked_over_the_limit_is_413_and_garbage_400() {
    let mut u = Upload::new(Protocol::Scgi, env(), BodyFraming::Chunked { limit: 4 });
    assert_eq!(u.take(b"5\r\nhello\r\n"), Err(413));
    let mut u = Upload::new(Protocol::Scgi, env(), BodyFraming::Chunked { limit: 4 });
    assert_eq!(u.take(b"zz\r\n"), Err(400));
}

#[test]
fn discard_counts_down_what_is_left() {
    let mut u = Upload::new(Protocol::Scgi, env(), BodyFraming::Length(10));
    assert_eq!(u.discard(b"abcdefgh"), 8);
    assert_eq!(u.discard(b"ijklmnop"), 2);
    assert!(!u.wants_body());
}

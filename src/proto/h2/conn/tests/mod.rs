//! A scripted client for the connection: builds frames as byte strings,
//! feeds them, and reads back what the server queued.

mod drain;
mod flow;
mod limits;
mod scheduling;
mod states;

use super::*;
use crate::proto::h2::frame::{encode as fe, flag, kind, Frame};
use crate::proto::h2::hpack::encode_int;

pub use crate::proto::h2::error::ErrorCode as E;

/// A frame of any type, length taken from the payload.
pub fn frame(kind: u8, flags: u8, stream: StreamId, payload: &[u8]) -> Vec<u8> {
    let mut v = fe::head(payload.len(), kind, flags, stream).to_vec();
    v.extend_from_slice(payload);
    v
}

/// A field block of literals without indexing, raw strings: plain to read
/// in a test and leaves the dynamic table alone.
pub fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in fields {
        b.push(0x00);
        encode_int(&mut b, n.len(), 7, 0);
        b.extend_from_slice(n.as_bytes());
        encode_int(&mut b, v.len(), 7, 0);
        b.extend_from_slice(v.as_bytes());
    }
    b
}

pub const GET: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "example.com"),
    (":path", "/"),
];

pub fn post(len: usize) -> Vec<(&'static str, String)> {
    vec![
        (":method", "POST".into()),
        (":scheme", "https".into()),
        (":authority", "example.com".into()),
        (":path", "/upload".into()),
        ("content-length", len.to_string()),
    ]
}

pub fn headers(stream: StreamId, fields: &[(&str, &str)], end_stream: bool) -> Vec<u8> {
    let flags = flag::END_HEADERS | if end_stream { flag::END_STREAM } else { 0 };
    frame(kind::HEADERS, flags, stream, &block(fields))
}

pub fn headers_owned(stream: StreamId, fields: &[(&str, String)], end_stream: bool) -> Vec<u8> {
    let f: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
    headers(stream, &f, end_stream)
}

pub fn data(stream: StreamId, bytes: &[u8], end_stream: bool) -> Vec<u8> {
    frame(
        kind::DATA,
        if end_stream { flag::END_STREAM } else { 0 },
        stream,
        bytes,
    )
}

pub fn rst(stream: StreamId, code: ErrorCode) -> Vec<u8> {
    frame(kind::RST_STREAM, 0, stream, &code.0.to_be_bytes())
}

pub fn window_update(stream: StreamId, inc: u32) -> Vec<u8> {
    frame(kind::WINDOW_UPDATE, 0, stream, &inc.to_be_bytes())
}

pub fn settings(params: &[(u16, u32)]) -> Vec<u8> {
    let mut v = Vec::new();
    fe::settings(&mut v, params);
    v
}

/// A frame the server sent, owned, with field blocks decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    Settings(Vec<(u16, u32)>),
    SettingsAck,
    Headers {
        stream: StreamId,
        fields: Vec<(String, String)>,
        end_stream: bool,
    },
    Rst(StreamId, ErrorCode),
    GoAway(StreamId, ErrorCode),
    WindowUpdate(StreamId, u32),
    PingAck([u8; 8]),
}

pub struct Client {
    pub conn: Connection,
    pub now: u64,
    decoder: hpack::Decoder,
}

impl Client {
    /// A connection past the preface and the first SETTINGS, with the
    /// server preface already read.
    pub fn new() -> Client {
        Client::with(Config::default())
    }

    pub fn with(cfg: Config) -> Client {
        let mut c = Client {
            conn: Connection::new(cfg),
            now: 1_000,
            decoder: hpack::Decoder::default(),
        };
        let mut hello = PREFACE.to_vec();
        hello.extend(settings(&[]));
        c.send(&hello).expect("preface");
        let out = c.frames();
        assert!(matches!(out[0], Out::Settings(_)), "{out:?}");
        assert!(out.contains(&Out::SettingsAck), "{out:?}");
        c
    }

    /// Feeds bytes that must all be used.
    pub fn send(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let n = self.conn.recv(bytes, self.now)?;
        assert_eq!(n, bytes.len(), "all bytes used");
        Ok(())
    }

    pub fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.conn.poll_event()).collect()
    }

    /// Reads every frame queued so far (and marks it written).
    pub fn frames(&mut self) -> Vec<Out> {
        let bytes = self.conn.output().to_vec();
        self.conn.advance_output(bytes.len());
        let mut out = Vec::new();
        let mut at = 0;
        let mut block: Option<(StreamId, bool, Vec<u8>)> = None;
        while at < bytes.len() {
            let (f, n) = match frame::parse(&bytes[at..], frame::MAX_MAX_FRAME_SIZE) {
                Ok(Some(x)) => x,
                other => panic!("server sent a bad frame: {other:?}"),
            };
            at += n;
            if block.is_some() && !matches!(f, Frame::Continuation { .. }) {
                panic!("{f:?} inside a field block");
            }
            let (fragment, end_headers) = match f {
                Frame::Settings { ack: true, .. } => {
                    out.push(Out::SettingsAck);
                    continue;
                }
                Frame::Settings { params, .. } => {
                    out.push(Out::Settings(params.iter().collect()));
                    continue;
                }
                Frame::RstStream { stream, code } => {
                    out.push(Out::Rst(stream, code));
                    continue;
                }
                Frame::GoAway {
                    last_stream, code, ..
                } => {
                    out.push(Out::GoAway(last_stream, code));
                    continue;
                }
                Frame::WindowUpdate { stream, increment } => {
                    out.push(Out::WindowUpdate(stream, increment));
                    continue;
                }
                Frame::Ping { ack: true, data } => {
                    out.push(Out::PingAck(data));
                    continue;
                }
                Frame::Headers {
                    stream,
                    fragment,
                    end_stream,
                    end_headers,
                    ..
                } => {
                    block = Some((stream, end_stream, Vec::new()));
                    (fragment, end_headers)
                }
                Frame::Continuation {
                    fragment,
                    end_headers,
                    ..
                } => (fragment, end_headers),
                other => panic!("unexpected frame from the server: {other:?}"),
            };
            let Some(b) = block.as_mut() else {
                panic!("CONTINUATION without HEADERS");
            };
            b.2.extend_from_slice(fragment);
            if end_headers {
                let Some((stream, end_stream, b)) = block.take() else {
                    continue;
                };
                let mut list = HeaderList::default();
                assert_eq!(self.decoder.decode(&b, 1 << 20, &mut list), Ok(()));
                let fields = list
                    .iter()
                    .map(|(n, v)| {
                        (
                            String::from_utf8_lossy(n).into_owned(),
                            String::from_utf8_lossy(v).into_owned(),
                        )
                    })
                    .collect();
                out.push(Out::Headers {
                    stream,
                    fields,
                    end_stream,
                });
            }
        }
        out
    }

    /// Opens a GET on `stream` and returns its head.
    pub fn get(&mut self, stream: StreamId) -> RequestHead {
        self.send(&headers(stream, GET, true)).expect("GET");
        match self.events().pop() {
            Some(Event::Request { head, .. }) => head,
            other => panic!("no request: {other:?}"),
        }
    }
}

pub fn status(o: &Out) -> Option<&str> {
    match o {
        Out::Headers { fields, .. } => fields.first().map(|(_, v)| v.as_str()),
        _ => None,
    }
}

#[test]
fn server_preface_comes_first_and_settings_are_acked() {
    let mut c = Connection::new(Config::default());
    let first = c.output().to_vec();
    // SETTINGS (4 params) and the connection WINDOW_UPDATE to 256 KiB.
    assert_eq!(
        first,
        [
            &b"\x00\x00\x18\x04\x00\x00\x00\x00\x00"[..],
            b"\x00\x03\x00\x00\x00\x64\x00\x04\x00\x00\xff\xff\x00\x06\x00\x00\x40\x00\x00\x09\x00\x00\x00\x01",
            b"\x00\x00\x04\x08\x00\x00\x00\x00\x00\x00\x03\x00\x01",
        ]
        .concat()
    );
    // The preface may come in pieces.
    assert_eq!(c.recv(&PREFACE[..5], 0), Ok(5));
    assert_eq!(c.recv(&PREFACE[5..], 0), Ok(19));
    assert_eq!(c.recv(b"\x00\x00\x00\x04", 0), Ok(0), "half a frame waits");
    assert_eq!(c.recv(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00", 0), Ok(9));
    assert!(c
        .output()
        .ends_with(b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"));
}

#[test]
#[rustfmt::skip]
fn bad_openings() {
    let cases: &[(&str, &[u8], ErrorCode, bool)] = &[
        ("HTTP/1.1 instead of the preface", b"GET / HTTP/1.1\r\n", E::PROTOCOL_ERROR, false),
        ("preface then PING first", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x08\x06\x00\x00\x00\x00\x0012345678", E::PROTOCOL_ERROR, true),
        ("preface then SETTINGS ack first", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x01\x00\x00\x00\x00", E::PROTOCOL_ERROR, true),
    ];
    for (why, bytes, code, goaway) in cases {
        let mut c = Connection::new(Config::default());
        let before = c.output().len();
        let got = c.recv(bytes, 0);
        assert_eq!(got.map_err(|e| e.code()), Err(*code), "{why}");
        assert_eq!(c.output().len() > before, *goaway, "{why}: GOAWAY sent");
        assert!(!c.wants_read(), "{why}");
        // Every later call answers the same.
        assert_eq!(c.recv(b"x", 0).map_err(|e| e.code()), Err(*code), "{why}");
    }
}

#[test]
fn get_then_response_head_and_body() {
    let mut c = Client::new();
    let head = c.get(1);
    assert_eq!((head.method(), head.path()), (&b"GET"[..], Some(&b"/"[..])));
    let fields: &[(&[u8], &[u8])] = &[(b"content-type", b"text/plain"), (b"Connection", b"close")];
    c.conn
        .send_headers(1, 200, fields.iter().copied(), false)
        .expect("head");
    assert_eq!(
        c.conn.send_headers(1, 200, [], false),
        Err(SendError::HeadAlreadySent)
    );
    let out = c.frames();
    assert_eq!(
        out,
        [Out::Headers {
            stream: 1,
            fields: vec![
                (":status".into(), "200".into()),
                ("content-type".into(), "text/plain".into())
            ],
            end_stream: false
        }],
        "the connection field is dropped"
    );
    assert_eq!(
        c.conn.send_window(1),
        16_384,
        "bounded by the max frame size"
    );
    let h = c.conn.data_header(1, 5, true).expect("data");
    assert_eq!(h, *b"\x00\x00\x05\x00\x01\x00\x00\x00\x01");
    assert_eq!(c.conn.stream_count(), 0, "both sides ended: closed");
    assert_eq!(c.conn.data_header(1, 0, true), Err(SendError::NoSuchStream));
}

#[test]
fn post_body_and_trailers() {
    let mut c = Client::new();
    c.send(&headers_owned(1, &post(5), false)).expect("head");
    assert!(matches!(
        c.events()[..],
        [Event::Request {
            stream: 1,
            end_stream: false,
            ..
        }]
    ));
    c.send(&data(1, b"hel", false)).expect("data");
    c.send(&data(1, b"lo", false)).expect("data");
    assert_eq!(c.conn.body(1), b"hello");
    c.conn.consume_body(1, 2);
    assert_eq!(c.conn.body(1), b"llo");
    c.send(&headers(1, &[("x-sum", "abc")], true))
        .expect("trailers");
    let ev = c.events();
    assert!(
        matches!(
            ev[..2],
            [Event::Data { len: 3, .. }, Event::Data { len: 2, .. }]
        ),
        "{ev:?}"
    );
    match &ev[2] {
        Event::Trailers { stream: 1, fields } => {
            assert_eq!(fields.get(0), Some((&b"x-sum"[..], &b"abc"[..])))
        }
        other => panic!("{other:?}"),
    }
    // 1xx then the final head and trailers.
    c.conn.send_headers(1, 100, [], true).expect("100");
    c.conn.send_headers(1, 200, [], false).expect("200");
    c.conn
        .send_trailers(1, [(&b"x-done"[..], &b"1"[..])])
        .expect("trailers");
    let out = c.frames();
    assert_eq!(
        out.iter().map(status).collect::<Vec<_>>(),
        [Some("100"), Some("200"), Some("1")]
    );
    assert!(
        matches!(&out[2], Out::Headers { end_stream: true, fields, .. } if fields[0].0 == "x-done")
    );
    assert_eq!(c.conn.stream_count(), 1, "3 body bytes are still unread");
    c.conn.consume_body(1, 3);
    assert_eq!(c.conn.stream_count(), 0);
}

#[test]
fn response_heads_split_at_the_peers_max_frame_size() {
    let mut c = Client::new();
    c.send(&settings(&[(setting::MAX_FRAME_SIZE, 20_000)]))
        .expect("settings");
    c.frames();
    c.get(1);
    let big = "v".repeat(50_000);
    c.conn
        .send_headers(1, 200, [(&b"x-big"[..], big.as_bytes())], true)
        .expect("head");
    let bytes = c.conn.output().to_vec();
    let mut at = 0;
    let mut sizes = Vec::new();
    while let Ok(Some((_, n))) = frame::parse(&bytes[at..], frame::MAX_MAX_FRAME_SIZE) {
        sizes.push(n - 9);
        at += n;
    }
    assert!(
        sizes.len() >= 2 && sizes.iter().all(|&s| s <= 20_000),
        "{sizes:?}"
    );
    let out = c.frames();
    assert!(
        matches!(&out[..], [Out::Headers { end_stream: true, fields, .. }] if fields[1].1 == big)
    );
}

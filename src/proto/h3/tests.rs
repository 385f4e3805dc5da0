//! Byte-literal tests of the HTTP/3 layer, table style.

use super::control::{Peer, Uni, UniStream};
use super::request::{Event, Limits, RequestStream};
use super::{frame, qpack, Code, Failure};
use crate::proto::h2::hpack::HeaderList;

const LIM: Limits = Limits {
    max_field_section: 16 * 1024,
    max_headers_frame: 32 * 1024,
};

/// A field section for `fields`, from glint's encoder.
fn section(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    qpack::begin_section(&mut out);
    for (n, v) in fields {
        qpack::encode_field(n.as_bytes(), v.as_bytes(), &mut out);
    }
    out
}

fn headers_frame(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_headers(&section(fields), &mut out);
    out
}

const GET: [(&str, &str); 4] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "example.com"),
    (":path", "/index.html"),
];

#[test]
fn qpack_decodes_rfc9204_b1() {
    // RFC 9204 Appendix B.1: a literal with a static name reference.
    let bytes = [
        0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d, 0x6c,
    ];
    let mut l = HeaderList::default();
    qpack::decode(&bytes, 4096, &mut l).unwrap();
    assert_eq!(l.get(0), Some((&b":path"[..], &b"/index.html"[..])));
    assert_eq!(l.len(), 1);
}

#[test]
fn qpack_encoder_bytes() {
    // (fields, expected section bytes after the 2-byte prefix)
    let cases: &[(&str, &str, &[u8])] = &[
        (":status", "200", &[0xd9]),
        (":status", "404", &[0xdb]),
        (":status", "500", &[0xc0 | 63, 71 - 63]),
        ("content-type", "text/css", &[0xc0 | 51]),
        // Name 4 (content-length), value "12" literal (Huffman is no shorter).
        ("content-length", "12", &[0x54, 0x02, b'1', b'2']),
        // Name not in the table: literal name, 3-bit length prefix.
        ("x-a", "b", &[0x23, b'x', b'-', b'a', 0x01, b'b']),
    ];
    for (n, v, want) in cases {
        let got = section(&[(n, v)]);
        assert_eq!(&got[..2], &[0, 0]);
        assert_eq!(&got[2..], *want, "{n}: {v}");
        let mut l = HeaderList::default();
        qpack::decode(&got, 4096, &mut l).unwrap();
        assert_eq!(l.get(0), Some((n.as_bytes(), v.as_bytes())));
    }
}

#[test]
fn qpack_round_trips_huffman_and_long_values() {
    let long = "v".repeat(300);
    let fields = [
        ("date", "Wed, 02 Dec 2026 07:00:00 GMT"),
        ("x-long-name-of-a-field", long.as_str()),
        ("etag", "\"12ab-34cd\""),
    ];
    let s = section(&fields);
    let mut l = HeaderList::default();
    qpack::decode(&s, 4096, &mut l).unwrap();
    let got: Vec<_> = l.iter().collect();
    let want: Vec<_> = fields
        .iter()
        .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn qpack_refusals() {
    let cases: &[(&str, &[u8], Result<(), qpack::DecodeError>)] = &[
        (
            "required insert count",
            &[0x01, 0x00],
            Err(qpack::DecodeError::Failed("")),
        ),
        (
            "dynamic indexed",
            &[0, 0, 0x80],
            Err(qpack::DecodeError::Failed("")),
        ),
        (
            "dynamic name ref",
            &[0, 0, 0x40, 0x00],
            Err(qpack::DecodeError::Failed("")),
        ),
        (
            "post-base index",
            &[0, 0, 0x10],
            Err(qpack::DecodeError::Failed("")),
        ),
        (
            "post-base name",
            &[0, 0, 0x00, 0x00],
            Err(qpack::DecodeError::Failed("")),
        ),
        (
            "static index 99",
            &[0, 0, 0xc0 | 63, 36],
            Err(qpack::DecodeError::Failed("")),
        ),
        (
            "string past the end",
            &[0, 0, 0x51, 0x05, b'/'],
            Err(qpack::DecodeError::Failed("")),
        ),
        ("empty section", &[0, 0], Ok(())),
    ];
    for (why, bytes, want) in cases {
        let mut l = HeaderList::default();
        let got = qpack::decode(bytes, 4096, &mut l);
        let kind = |r: &Result<(), qpack::DecodeError>| match r {
            Ok(()) => 0,
            Err(qpack::DecodeError::Failed(_)) => 1,
            Err(qpack::DecodeError::TooLarge) => 2,
        };
        assert_eq!(kind(&got), kind(want), "{why}: {got:?}");
    }
}

#[test]
fn qpack_bound_stops_a_bomb() {
    // 1,000 references to a 53-byte static entry (plus 32 each): 85 KB
    // decoded from 1 KB, refused at a 4 KiB bound.
    let mut s = vec![0, 0];
    s.extend(std::iter::repeat_n(0xc0 | 58, 1000));
    let mut l = HeaderList::default();
    assert_eq!(
        qpack::decode(&s, 4096, &mut l),
        Err(qpack::DecodeError::TooLarge)
    );
    assert!(l.size() <= 4096);
}

#[test]
fn qpack_streams() {
    assert_eq!(qpack::encoder_stream(&[0x20]), Ok(1), "capacity 0");
    assert!(qpack::encoder_stream(&[0x21]).is_err(), "capacity 1");
    assert!(
        qpack::encoder_stream(&[0xc1, 0x01, b'x']).is_err(),
        "insert"
    );
    assert_eq!(qpack::encoder_stream(&[0x3f]), Ok(0), "cut short: waits");
    assert_eq!(qpack::decoder_stream(&[0x44]), Ok(1), "stream cancellation");
    assert!(qpack::decoder_stream(&[0x84]).is_err(), "section ack");
    assert!(
        qpack::decoder_stream(&[0x01]).is_err(),
        "insert count increment"
    );
}

/// Feeds `bytes` to a new request stream in pieces of `step`, returning a
/// summary of the events and the result.
fn run_request(bytes: &[u8], step: usize, fin: bool) -> (Vec<String>, Result<(), Failure>) {
    let mut s = RequestStream::default();
    let mut ev = Vec::new();
    let mut body = Vec::new();
    let mut result = Ok(());
    let chunks: Vec<&[u8]> = bytes.chunks(step.max(1)).collect();
    let n = chunks.len();
    for (i, c) in chunks.into_iter().enumerate() {
        result = s.recv(c, fin && i + 1 == n, &LIM, &mut |e| match e {
            Event::Head(h) => ev.push(format!(
                "head {}",
                String::from_utf8_lossy(h.path().unwrap_or_default())
            )),
            Event::TooLarge => ev.push("431".into()),
            Event::Data(d) => body.extend_from_slice(d),
            Event::End => ev.push(format!("end {}", body.len())),
        });
        if result.is_err() {
            break;
        }
    }
    if n == 0 && fin {
        result = s.recv(&[], true, &LIM, &mut |_| {});
    }
    (ev, result)
}

fn code(r: &Result<(), Failure>) -> Option<(bool, u64)> {
    match r {
        Ok(()) => None,
        Err(Failure::Conn(e)) => Some((true, e.code.0)),
        Err(Failure::Stream(e)) => Some((false, e.code.0)),
    }
}

#[test]
fn request_streams() {
    let mut post: Vec<(&str, &str)> = GET.to_vec();
    post[0].1 = "POST";
    post.push(("content-length", "5"));
    let data = |payload: &[u8]| {
        let mut out = Vec::new();
        frame::write_data_head(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    };
    let cat = |parts: &[Vec<u8>]| parts.concat();
    let unknown = vec![0x21, 0x03, 1, 2, 3];
    let settings = {
        let mut v = Vec::new();
        frame::write_settings(&[], &mut v);
        v
    };
    type Case = (
        &'static str,
        Vec<u8>,
        Vec<&'static str>,
        Option<(bool, u64)>,
    );
    let cases: Vec<Case> = vec![
        (
            "GET",
            headers_frame(&GET),
            vec!["head /index.html", "end 0"],
            None,
        ),
        (
            "POST with a body in two frames and an unknown frame",
            cat(&[
                headers_frame(&post),
                data(b"ab"),
                unknown.clone(),
                data(b"cde"),
            ]),
            vec!["head /index.html", "end 5"],
            None,
        ),
        (
            "trailers",
            cat(&[
                headers_frame(&post),
                data(b"abcde"),
                headers_frame(&[("x-t", "1")]),
            ]),
            vec!["head /index.html", "end 5"],
            None,
        ),
        (
            "body longer than content-length",
            cat(&[headers_frame(&post), data(b"abcdef")]),
            vec!["head /index.html"],
            Some((false, Code::MESSAGE_ERROR.0)),
        ),
        (
            "body shorter than content-length",
            cat(&[headers_frame(&post), data(b"abc")]),
            vec!["head /index.html"],
            Some((false, Code::MESSAGE_ERROR.0)),
        ),
        (
            "DATA first",
            data(b"x"),
            vec![],
            Some((true, Code::FRAME_UNEXPECTED.0)),
        ),
        (
            "SETTINGS on a request stream",
            cat(&[headers_frame(&GET), settings]),
            vec!["head /index.html"],
            Some((true, Code::FRAME_UNEXPECTED.0)),
        ),
        (
            "HTTP/2 PING type",
            vec![0x06, 0x00],
            vec![],
            Some((true, Code::FRAME_UNEXPECTED.0)),
        ),
        (
            "end with no head",
            vec![],
            vec![],
            Some((false, Code::REQUEST_INCOMPLETE.0)),
        ),
        (
            "end inside a frame",
            headers_frame(&GET)[..5].to_vec(),
            vec![],
            Some((true, Code::FRAME_ERROR.0)),
        ),
        (
            "uppercase field name",
            headers_frame(&[GET[0], GET[1], GET[2], GET[3], ("X-Up", "1")]),
            vec![],
            Some((false, Code::MESSAGE_ERROR.0)),
        ),
        (
            "connection-specific field",
            headers_frame(&[GET[0], GET[1], GET[2], GET[3], ("connection", "close")]),
            vec![],
            Some((false, Code::MESSAGE_ERROR.0)),
        ),
        (
            "no :path",
            headers_frame(&GET[..3]),
            vec![],
            Some((false, Code::MESSAGE_ERROR.0)),
        ),
        (
            "a HEADERS frame past the bound",
            vec![0x01, 0x80, 0x01, 0x00, 0x00],
            vec!["431"],
            None,
        ),
    ];
    for (why, bytes, want_ev, want_err) in &cases {
        for step in [bytes.len().max(1), 1, 3] {
            let (ev, r) = run_request(bytes, step, true);
            assert_eq!(&ev, want_ev, "{why} (pieces of {step})");
            assert_eq!(code(&r), *want_err, "{why} (pieces of {step})");
        }
    }
}

#[test]
fn control_streams() {
    let settings = |pairs: &[(u64, u64)]| {
        let mut v = vec![0x00];
        frame::write_settings(pairs, &mut v);
        v
    };
    let goaway = {
        let mut v = Vec::new();
        frame::write_goaway(8, &mut v);
        v
    };
    type Case = (&'static str, Vec<u8>, bool, Result<Uni, u64>);
    let cases: Vec<Case> = vec![
        (
            "SETTINGS",
            settings(&[(6, 1000), (0x21, 3)]),
            false,
            Ok(Uni::Reading),
        ),
        (
            "SETTINGS then GOAWAY",
            [settings(&[]), goaway.clone()].concat(),
            false,
            Ok(Uni::Reading),
        ),
        (
            "GOAWAY first",
            [vec![0x00], goaway].concat(),
            false,
            Err(Code::MISSING_SETTINGS.0),
        ),
        (
            "an HTTP/2 setting",
            settings(&[(2, 1)]),
            false,
            Err(Code::SETTINGS_ERROR.0),
        ),
        (
            "a setting twice",
            settings(&[(6, 1), (6, 2)]),
            false,
            Err(Code::SETTINGS_ERROR.0),
        ),
        (
            "two SETTINGS",
            [settings(&[]), settings(&[])[1..].to_vec()].concat(),
            false,
            Err(Code::FRAME_UNEXPECTED.0),
        ),
        (
            "control stream closed",
            settings(&[]),
            true,
            Err(Code::CLOSED_CRITICAL_STREAM.0),
        ),
        (
            "push stream",
            vec![0x01],
            false,
            Err(Code::STREAM_CREATION_ERROR.0),
        ),
        (
            "unknown type",
            vec![0x21, 1, 2, 3],
            true,
            Ok(Uni::Stop(Code::STREAM_CREATION_ERROR)),
        ),
        (
            "QPACK encoder, capacity 0",
            vec![0x02, 0x20],
            false,
            Ok(Uni::Reading),
        ),
        (
            "QPACK encoder insert",
            vec![0x02, 0xc0, 0x00],
            false,
            Err(Code::QPACK_ENCODER_STREAM_ERROR.0),
        ),
        (
            "QPACK decoder closed",
            vec![0x03],
            true,
            Err(Code::CLOSED_CRITICAL_STREAM.0),
        ),
        (
            "a huge control frame",
            vec![0x00, 0x04, 0x80, 0x01, 0x00, 0x00],
            false,
            Err(Code::EXCESSIVE_LOAD.0),
        ),
    ];
    for (why, bytes, fin, want) in &cases {
        for step in [bytes.len(), 1] {
            let mut peer = Peer::default();
            let mut s = UniStream::default();
            let mut got = Ok(Uni::Reading);
            let chunks: Vec<&[u8]> = bytes.chunks(step).collect();
            let n = chunks.len();
            for (i, c) in chunks.into_iter().enumerate() {
                got = s
                    .recv(c, *fin && i + 1 == n, &mut peer)
                    .map_err(|e| match e {
                        Failure::Conn(e) => e.code.0,
                        Failure::Stream(e) => e.code.0,
                    });
                if !matches!(got, Ok(Uni::Reading)) {
                    break;
                }
            }
            assert_eq!(got, *want, "{why} (pieces of {step})");
        }
    }
    // A second control stream.
    let mut peer = Peer::default();
    assert!(UniStream::default()
        .recv(&settings(&[]), false, &mut peer)
        .is_ok());
    assert!(peer.settings.is_some());
    let second = UniStream::default().recv(&[0x00], false, &mut peer);
    assert!(matches!(second, Err(Failure::Conn(e)) if e.code == Code::STREAM_CREATION_ERROR));
}

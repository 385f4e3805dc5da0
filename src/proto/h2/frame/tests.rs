use super::encode::*;
use super::*;
use crate::proto::h2::error::ErrorCode as E;

const MAX: u32 = DEFAULT_MAX_FRAME_SIZE;

/// Which error: `None` for the connection, else the stream, and the code.
type Failure = (Option<StreamId>, E);
type Encoder<'a> = &'a dyn Fn(&mut Vec<u8>);

fn conn(code: E) -> Result<(), Failure> {
    Err((None, code))
}
fn strm(s: StreamId, code: E) -> Result<(), Failure> {
    Err((Some(s), code))
}

/// Parses and reduces the error to (stream or connection, code) for tables.
fn outcome(b: &[u8]) -> Result<Option<(Frame<'_>, usize)>, Failure> {
    parse(b, MAX).map_err(|e| match e {
        Error::Connection { code, .. } => (None, code),
        Error::Stream { stream, code, .. } => (Some(stream), code),
    })
}

#[test]
#[rustfmt::skip]
fn frames_that_parse() {
    let p = |dependency, weight, exclusive| Priority {
        exclusive,
        dependency,
        weight,
    };
    let cases: &[(&str, &[u8], Frame)] = &[
        (
            "DATA with END_STREAM",
            b"\x00\x00\x03\x00\x01\x00\x00\x00\x01abc",
            Frame::Data { stream: 1, data: b"abc", end_stream: true, flow_len: 3 },
        ),
        (
            "DATA padded: pad length 2, 'hi', two pad bytes; flow counts all 5",
            b"\x00\x00\x05\x00\x08\x00\x00\x00\x03\x02hi\x00\x00",
            Frame::Data { stream: 3, data: b"hi", end_stream: false, flow_len: 5 },
        ),
        (
            "DATA padded with all-but-one byte of padding leaves empty data",
            b"\x00\x00\x03\x00\x08\x00\x00\x00\x03\x02\x00\x00",
            Frame::Data { stream: 3, data: b"", end_stream: false, flow_len: 3 },
        ),
        (
            "DATA reserved bit of the stream id is ignored",
            b"\x00\x00\x00\x00\x00\x80\x00\x00\x05",
            Frame::Data { stream: 5, data: b"", end_stream: false, flow_len: 0 },
        ),
        (
            "HEADERS with END_HEADERS|END_STREAM",
            b"\x00\x00\x01\x01\x05\x00\x00\x00\x01\x82",
            Frame::Headers { stream: 1, priority: None, fragment: b"\x82", end_stream: true, end_headers: true },
        ),
        (
            "HEADERS with PRIORITY|PADDED: pad 1, exclusive dep 3 weight 15",
            b"\x00\x00\x08\x01\x2c\x00\x00\x00\x05\x01\x80\x00\x00\x03\x0f\x82\x00",
            Frame::Headers { stream: 5, priority: Some(p(3, 15, true)), fragment: b"\x82", end_stream: false, end_headers: true },
        ),
        (
            "PRIORITY on stream 3 depending on 1",
            b"\x00\x00\x05\x02\x00\x00\x00\x00\x03\x00\x00\x00\x01\x10",
            Frame::Priority { stream: 3, priority: p(1, 16, false) },
        ),
        (
            "RST_STREAM CANCEL",
            b"\x00\x00\x04\x03\x00\x00\x00\x00\x01\x00\x00\x00\x08",
            Frame::RstStream { stream: 1, code: E::CANCEL },
        ),
        (
            "RST_STREAM with a code the RFC does not define is kept as sent",
            b"\x00\x00\x04\x03\x00\x00\x00\x00\x01\x00\x00\x01\x00",
            Frame::RstStream { stream: 1, code: ErrorCode(256) },
        ),
        (
            "SETTINGS empty",
            b"\x00\x00\x00\x04\x00\x00\x00\x00\x00",
            Frame::Settings { ack: false, params: Settings(b"") },
        ),
        (
            "SETTINGS ack",
            b"\x00\x00\x00\x04\x01\x00\x00\x00\x00",
            Frame::Settings { ack: true, params: Settings(b"") },
        ),
        (
            "SETTINGS with an unknown id is accepted",
            b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff",
            Frame::Settings { ack: false, params: Settings(b"\x00\xff\xff\xff\xff\xff") },
        ),
        (
            "PUSH_PROMISE parses (the connection rejects it from a client)",
            b"\x00\x00\x05\x05\x04\x00\x00\x00\x01\x00\x00\x00\x02\x82",
            Frame::PushPromise { stream: 1, promised: 2, fragment: b"\x82", end_headers: true },
        ),
        (
            "PING",
            b"\x00\x00\x08\x06\x00\x00\x00\x00\x00abcdefgh",
            Frame::Ping { ack: false, data: *b"abcdefgh" },
        ),
        (
            "GOAWAY with debug data",
            b"\x00\x00\x0a\x07\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x0bhi",
            Frame::GoAway { last_stream: 7, code: E::ENHANCE_YOUR_CALM, debug: b"hi" },
        ),
        (
            "WINDOW_UPDATE on the connection, reserved bit ignored",
            b"\x00\x00\x04\x08\x00\x00\x00\x00\x00\x80\x00\x10\x00",
            Frame::WindowUpdate { stream: 0, increment: 4096 },
        ),
        (
            "CONTINUATION without END_HEADERS",
            b"\x00\x00\x02\x09\x00\x00\x00\x00\x01\x84\x86",
            Frame::Continuation { stream: 1, fragment: b"\x84\x86", end_headers: false },
        ),
        (
            "PRIORITY_UPDATE for stream 1: u=0",
            b"\x00\x00\x07\x10\x00\x00\x00\x00\x00\x00\x00\x00\x01u=0",
            Frame::PriorityUpdate { prioritized: 1, field_value: b"u=0" },
        ),
        (
            "an unknown type is returned to be ignored, on any stream",
            b"\x00\x00\x02\xfa\xff\x00\x00\x00\x07zz",
            Frame::Unknown { kind: 0xfa, stream: 7 },
        ),
    ];
    for (why, bytes, want) in cases {
        let got = outcome(bytes);
        assert_eq!(got, Ok(Some((*want, bytes.len()))), "{why}");
        // One byte short of a whole frame is always "need more".
        assert_eq!(outcome(&bytes[..bytes.len() - 1]), Ok(None), "{why}: short");
        // Bytes after the frame are left for the next call.
        let mut more = bytes.to_vec();
        more.extend_from_slice(b"\x00\x00");
        assert_eq!(outcome(&more), Ok(Some((*want, bytes.len()))), "{why}: trailing");
    }
}

#[test]
#[rustfmt::skip]
fn frames_that_are_errors() {
    let cases: &[(&str, &[u8], Result<(), Failure>)] = &[
        ("DATA on stream 0", b"\x00\x00\x00\x00\x00\x00\x00\x00\x00", conn(E::PROTOCOL_ERROR)),
        ("DATA padding equal to payload", b"\x00\x00\x02\x00\x08\x00\x00\x00\x01\x02\x00", conn(E::PROTOCOL_ERROR)),
        ("DATA padding longer than payload", b"\x00\x00\x02\x00\x08\x00\x00\x00\x01\x09\x00", conn(E::PROTOCOL_ERROR)),
        ("DATA PADDED with empty payload", b"\x00\x00\x00\x00\x08\x00\x00\x00\x01", conn(E::FRAME_SIZE_ERROR)),
        ("HEADERS on stream 0", b"\x00\x00\x01\x01\x04\x00\x00\x00\x00\x82", conn(E::PROTOCOL_ERROR)),
        ("HEADERS PRIORITY flag but 4 bytes", b"\x00\x00\x04\x01\x24\x00\x00\x00\x01\x00\x00\x00\x03", conn(E::FRAME_SIZE_ERROR)),
        ("HEADERS padding over the whole payload", b"\x00\x00\x02\x01\x0c\x00\x00\x00\x01\x05\x82", conn(E::PROTOCOL_ERROR)),
        ("PRIORITY on stream 0", b"\x00\x00\x05\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x10", conn(E::PROTOCOL_ERROR)),
        ("PRIORITY length 4 is a stream error", b"\x00\x00\x04\x02\x00\x00\x00\x00\x03\x00\x00\x00\x01", strm(3, E::FRAME_SIZE_ERROR)),
        ("PRIORITY depending on itself", b"\x00\x00\x05\x02\x00\x00\x00\x00\x03\x00\x00\x00\x03\x10", strm(3, E::PROTOCOL_ERROR)),
        ("RST_STREAM on stream 0", b"\x00\x00\x04\x03\x00\x00\x00\x00\x00\x00\x00\x00\x08", conn(E::PROTOCOL_ERROR)),
        ("RST_STREAM length 3", b"\x00\x00\x03\x03\x00\x00\x00\x00\x01\x00\x00\x08", conn(E::FRAME_SIZE_ERROR)),
        ("SETTINGS on stream 1", b"\x00\x00\x00\x04\x00\x00\x00\x00\x01", conn(E::PROTOCOL_ERROR)),
        ("SETTINGS ack with payload", b"\x00\x00\x06\x04\x01\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64", conn(E::FRAME_SIZE_ERROR)),
        ("SETTINGS length 5", b"\x00\x00\x05\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00", conn(E::FRAME_SIZE_ERROR)),
        ("SETTINGS_ENABLE_PUSH 2", b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x02", conn(E::PROTOCOL_ERROR)),
        ("SETTINGS_INITIAL_WINDOW_SIZE 2^31", b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x04\x80\x00\x00\x00", conn(E::FLOW_CONTROL_ERROR)),
        ("SETTINGS_MAX_FRAME_SIZE 16383", b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x05\x00\x00\x3f\xff", conn(E::PROTOCOL_ERROR)),
        ("SETTINGS_MAX_FRAME_SIZE 2^24", b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x05\x01\x00\x00\x00", conn(E::PROTOCOL_ERROR)),
        ("SETTINGS_ENABLE_CONNECT_PROTOCOL 2", b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x08\x00\x00\x00\x02", conn(E::PROTOCOL_ERROR)),
        ("SETTINGS_NO_RFC7540_PRIORITIES 7", b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x09\x00\x00\x00\x07", conn(E::PROTOCOL_ERROR)),
        ("PUSH_PROMISE on stream 0", b"\x00\x00\x04\x05\x04\x00\x00\x00\x00\x00\x00\x00\x02", conn(E::PROTOCOL_ERROR)),
        ("PUSH_PROMISE too short", b"\x00\x00\x03\x05\x04\x00\x00\x00\x01\x00\x00\x02", conn(E::FRAME_SIZE_ERROR)),
        ("PING on stream 1", b"\x00\x00\x08\x06\x00\x00\x00\x00\x01abcdefgh", conn(E::PROTOCOL_ERROR)),
        ("PING length 7", b"\x00\x00\x07\x06\x00\x00\x00\x00\x00abcdefg", conn(E::FRAME_SIZE_ERROR)),
        ("PING length 9", b"\x00\x00\x09\x06\x00\x00\x00\x00\x00abcdefghi", conn(E::FRAME_SIZE_ERROR)),
        ("GOAWAY on stream 1", b"\x00\x00\x08\x07\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00", conn(E::PROTOCOL_ERROR)),
        ("GOAWAY length 7", b"\x00\x00\x07\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", conn(E::FRAME_SIZE_ERROR)),
        ("WINDOW_UPDATE length 5", b"\x00\x00\x05\x08\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00", conn(E::FRAME_SIZE_ERROR)),
        ("WINDOW_UPDATE of 0 on the connection", b"\x00\x00\x04\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00", conn(E::PROTOCOL_ERROR)),
        ("WINDOW_UPDATE of 0 on a stream", b"\x00\x00\x04\x08\x00\x00\x00\x00\x01\x80\x00\x00\x00", strm(1, E::PROTOCOL_ERROR)),
        ("CONTINUATION on stream 0", b"\x00\x00\x00\x09\x04\x00\x00\x00\x00", conn(E::PROTOCOL_ERROR)),
        ("PRIORITY_UPDATE on stream 1", b"\x00\x00\x04\x10\x00\x00\x00\x00\x01\x00\x00\x00\x01", conn(E::PROTOCOL_ERROR)),
        ("PRIORITY_UPDATE length 3", b"\x00\x00\x03\x10\x00\x00\x00\x00\x00\x00\x00\x01", conn(E::FRAME_SIZE_ERROR)),
        ("PRIORITY_UPDATE for stream 0", b"\x00\x00\x04\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00", conn(E::PROTOCOL_ERROR)),
    ];
    for (why, bytes, want) in cases {
        let got = outcome(bytes).map(|_| ());
        assert_eq!(&got, want, "{why}");
    }
}

#[test]
fn frame_size_is_checked_before_the_payload_arrives() {
    // A 16385-byte DATA header alone is refused: nobody buffers it first.
    let h = b"\x00\x40\x01\x00\x00\x00\x00\x00\x01";
    assert_eq!(outcome(h).map(|_| ()), conn(E::FRAME_SIZE_ERROR));
    // Exactly 16384 is fine, and waits for its payload.
    assert_eq!(outcome(b"\x00\x40\x00\x00\x00\x00\x00\x00\x01"), Ok(None));
    // A larger advertised maximum admits it.
    assert_eq!(parse(h, 32_768), Ok(None));
    // Fewer than 9 bytes is "need more", whatever they say.
    for n in 0..9 {
        assert_eq!(outcome(&h[..n]), Ok(None), "{n} bytes");
    }
}

#[test]
fn settings_iterate_in_order() {
    let b = b"\x00\x00\x0c\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64\x00\x04\x00\x01\x00\x00";
    let Ok(Some((Frame::Settings { ack: false, params }, 21))) = parse(b, MAX) else {
        panic!("SETTINGS did not parse");
    };
    let got: Vec<_> = params.iter().collect();
    assert_eq!(
        got,
        [
            (setting::MAX_CONCURRENT_STREAMS, 100),
            (setting::INITIAL_WINDOW_SIZE, 65536)
        ]
    );
}

#[test]
#[rustfmt::skip]
fn encoders() {
    let mut out = Vec::new();
    let cases: &[(&str, Encoder, &[u8])] = &[
        ("SETTINGS", &|o| settings(o, &[(3, 100), (4, 65536)]), b"\x00\x00\x0c\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64\x00\x04\x00\x01\x00\x00"),
        ("SETTINGS ack", &|o| settings_ack(o), b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"),
        ("PING ack", &|o| ping_ack(o, *b"12345678"), b"\x00\x00\x08\x06\x01\x00\x00\x00\x0012345678"),
        ("GOAWAY", &|o| goaway(o, 5, E::PROTOCOL_ERROR, b"x"), b"\x00\x00\x09\x07\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x01x"),
        ("RST_STREAM", &|o| rst_stream(o, 3, E::REFUSED_STREAM), b"\x00\x00\x04\x03\x00\x00\x00\x00\x03\x00\x00\x00\x07"),
        ("WINDOW_UPDATE", &|o| window_update(o, 0, 0x7fff_ffff), b"\x00\x00\x04\x08\x00\x00\x00\x00\x00\x7f\xff\xff\xff"),
        ("HEADERS in one frame", &|o| headers(o, 1, b"\x88", true, 16_384), b"\x00\x00\x01\x01\x05\x00\x00\x00\x01\x88"),
        ("HEADERS empty block", &|o| headers(o, 1, b"", false, 16_384), b"\x00\x00\x00\x01\x04\x00\x00\x00\x01"),
        (
            "HEADERS split at max 2: HEADERS(2) CONT(2) CONT(1, END_HEADERS)",
            &|o| headers(o, 3, b"abcde", true, 2),
            b"\x00\x00\x02\x01\x01\x00\x00\x00\x03ab\x00\x00\x02\x09\x00\x00\x00\x00\x03cd\x00\x00\x01\x09\x04\x00\x00\x00\x03e",
        ),
        (
            "HEADERS exactly two frames",
            &|o| headers(o, 3, b"abcd", false, 2),
            b"\x00\x00\x02\x01\x00\x00\x00\x00\x03ab\x00\x00\x02\x09\x04\x00\x00\x00\x03cd",
        ),
    ];
    for (why, f, want) in cases {
        out.clear();
        f(&mut out);
        assert_eq!(out, *want, "{why}");
    }
    assert_eq!(&data_header(1, 16_384, true), b"\x00\x40\x00\x00\x01\x00\x00\x00\x01");
    assert_eq!(&data_header(0x7fff_ffff, 0, false), b"\x00\x00\x00\x00\x00\x7f\xff\xff\xff");
    // A long GOAWAY debug text is cut, and the frame still parses.
    out.clear();
    goaway(&mut out, 1, E::NO_ERROR, &[b'a'; 1000]);
    assert_eq!(out.len(), 9 + 8 + 256);
    assert!(matches!(parse(&out, MAX), Ok(Some((Frame::GoAway { debug, .. }, _))) if debug.len() == 256));
}

#[test]
fn split_headers_reassemble() {
    // Whatever the split, the fragments read back are the block.
    let block: Vec<u8> = (0..=255u8).cycle().take(40_000).collect();
    for max in [16_384u32, 16_385, 20_000, 40_000] {
        let mut out = Vec::new();
        headers(&mut out, 9, &block, false, max);
        let mut at = 0;
        let mut got = Vec::new();
        let mut frames = 0;
        while at < out.len() {
            let (f, n) = match parse(&out[at..], MAX_MAX_FRAME_SIZE) {
                Ok(Some(x)) => x,
                other => panic!("max {max}: {other:?}"),
            };
            frames += 1;
            match f {
                Frame::Headers {
                    fragment,
                    end_headers,
                    ..
                } if frames == 1 => {
                    got.extend_from_slice(fragment);
                    assert_eq!(end_headers, n == out.len());
                }
                Frame::Continuation {
                    fragment,
                    end_headers,
                    ..
                } => {
                    got.extend_from_slice(fragment);
                    assert_eq!(end_headers, at + n == out.len());
                }
                other => panic!("unexpected {other:?}"),
            }
            assert!(n - 9 <= max as usize);
            at += n;
        }
        assert_eq!(got, block, "max {max}");
        assert_eq!(frames, block.len().div_ceil(max as usize));
    }
}

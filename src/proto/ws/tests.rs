use super::*;

/// A client's frame: masked with `key`.
fn client_frame(b0: u8, payload: &[u8], key: [u8; 4]) -> Vec<u8> {
    let mut out = vec![b0];
    let n = payload.len();
    if n < 126 {
        out.push(0x80 | n as u8);
    } else if n <= 0xffff {
        out.push(0x80 | 126);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
    out.extend_from_slice(&key);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    out
}

/// Everything `input` decodes to, fed `step` bytes at a time.
fn decode_all(input: &[u8], step: usize) -> Result<(Vec<u8>, Vec<Control>), Violation> {
    let mut d = Decoder::default();
    let (mut data, mut controls) = (Vec::new(), Vec::new());
    let mut at = 0;
    while at < input.len() {
        let end = (at + step).min(input.len());
        let mut piece = &input[at..end];
        while !piece.is_empty() {
            let (n, c) = d.feed(piece, &mut data)?;
            controls.extend(c);
            piece = &piece[n..];
        }
        at = end;
    }
    Ok((data, controls))
}

#[test]
fn accept_key_of_rfc_6455_section_1_3() {
    assert_eq!(
        accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
}

#[test]
fn masked_frames_decode_whole_and_byte_by_byte() {
    let big: Vec<u8> = (0..70_000u32).map(|i| i as u8).collect();
    let mut input = client_frame(0x81, b"Hello", [0x37, 0xfa, 0x21, 0x3d]);
    input.extend(client_frame(0x82, &big, [1, 2, 3, 4]));
    input.extend(client_frame(0x89, b"ping!", [9, 8, 7, 6]));
    input.extend(client_frame(0x01, b"frag", [5, 5, 5, 5]));
    input.extend(client_frame(0x80, b"ment", [6, 6, 6, 6]));
    input.extend(client_frame(0x8a, b"", [0, 0, 0, 0]));
    input.extend(client_frame(0x88, &1000u16.to_be_bytes(), [7, 7, 7, 7]));
    let mut want = b"Hello".to_vec();
    want.extend_from_slice(&big);
    want.extend_from_slice(b"fragment");
    for step in [1, 3, 7, 4096, input.len()] {
        let (data, controls) = decode_all(&input, step).expect("valid frames");
        assert!(data == want, "step {step}: {} bytes", data.len());
        assert_eq!(
            controls,
            [
                Control::Ping(b"ping!".to_vec()),
                Control::Pong,
                Control::Close(Some(1000))
            ],
            "step {step}"
        );
    }
}

#[test]
fn rule_breaking_frames_are_protocol_errors() {
    let cases: &[(&str, Vec<u8>)] = &[
        ("not masked", vec![0x81, 0x02, b'h', b'i']),
        ("reserved bit", client_frame(0xc1, b"x", [1, 2, 3, 4])),
        ("unknown opcode 3", client_frame(0x83, b"x", [1, 2, 3, 4])),
        ("fragmented ping", client_frame(0x09, b"x", [1, 2, 3, 4])),
        (
            "ping over 125 bytes",
            client_frame(0x89, &[0; 126], [1, 2, 3, 4]),
        ),
        ("continuation first", client_frame(0x80, b"x", [1, 2, 3, 4])),
        ("close of one byte", client_frame(0x88, b"x", [1, 2, 3, 4])),
        ("top length bit", {
            let mut f = vec![0x82, 0x80 | 127];
            f.extend_from_slice(&(1u64 << 63).to_be_bytes());
            f.extend_from_slice(&[1, 2, 3, 4]);
            f
        }),
        ("new message inside a fragmented one", {
            let mut f = client_frame(0x01, b"a", [1, 2, 3, 4]);
            f.extend(client_frame(0x81, b"b", [1, 2, 3, 4]));
            f
        }),
    ];
    for (why, input) in cases {
        let got = decode_all(input, input.len());
        assert_eq!(got.map(|_| ()).map_err(|v| v.code), Err(1002), "{why}");
    }
}

#[test]
fn server_frames_use_the_shortest_length() {
    let mut out = Vec::new();
    encode(Op::Text, b"hi", &mut out);
    assert_eq!(out, [0x81, 2, b'h', b'i']);
    out.clear();
    encode(Op::Binary, &[0; 300], &mut out);
    assert_eq!(&out[..4], [0x82, 126, 1, 44]);
    out.clear();
    encode(Op::Binary, &vec![0; 70_000], &mut out);
    assert_eq!(&out[..10], [0x82, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70]);
    out.clear();
    encode_close(1001, &mut out);
    assert_eq!(out, [0x88, 2, 0x03, 0xe9]);
}

#[test]
fn text_is_cut_on_whole_characters() {
    let euro = "€".as_bytes(); // e2 82 ac
    assert_eq!(utf8_whole(b"abc"), 3);
    assert_eq!(utf8_whole(&euro[..1]), 0);
    assert_eq!(utf8_whole(&euro[..2]), 0);
    assert_eq!(utf8_whole(euro), 3);
    let mut s = b"ab".to_vec();
    s.extend_from_slice(&"😀".as_bytes()[..3]);
    assert_eq!(utf8_whole(&s), 2);
    assert_eq!(
        utf8_whole(&[0xff, 0xfe]),
        2,
        "not UTF-8: passed on as it is"
    );
}

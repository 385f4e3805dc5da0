use crate::httpup::chunked::{write_chunk_header, ChunkError, Dechunker, LAST_CHUNK, MAX_LINE};

/// Decodes `input` fed in pieces of `step` bytes; (data, consumed, done, trailers).
fn run(input: &[u8], step: usize) -> Result<(Vec<u8>, usize, bool, Vec<u8>), ChunkError> {
    let mut d = Dechunker::default();
    let mut data = Vec::new();
    let mut used = 0;
    while used < input.len() && !d.is_done() {
        let end = (used + step).min(input.len());
        let piece = &input[used..end];
        let n = d.feed(piece, |s| data.extend_from_slice(s))?;
        assert!(
            n == piece.len() || d.is_done(),
            "a decoder not done consumes all"
        );
        used += n;
    }
    Ok((data, used, d.is_done(), d.trailers().to_vec()))
}

#[test]
fn decodes_whole_and_byte_by_byte() {
    type Case<'a> = (&'a str, &'a [u8], &'a [u8], &'a [u8]);
    let cases: &[Case] = &[
        (
            "two chunks",
            b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
            b"hello world",
            b"",
        ),
        (
            "hex upper and lower",
            b"A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n",
            b"01234567890123456789",
            b"",
        ),
        (
            "extensions",
            b"3;name=value;q=\"x y\"\r\nabc\r\n0;last\r\n\r\n",
            b"abc",
            b"",
        ),
        (
            "space before extension",
            b"3 ;x\r\nabc\r\n0\r\n\r\n",
            b"abc",
            b"",
        ),
        ("leading zeros", b"0003\r\nabc\r\n000\r\n\r\n", b"abc", b""),
        (
            "trailers",
            b"1\r\na\r\n0\r\nX-Checksum: 1\r\nGrpc-Status: 0\r\n\r\n",
            b"a",
            b"X-Checksum: 1\r\nGrpc-Status: 0\r\n",
        ),
        ("empty body", b"0\r\n\r\n", b"", b""),
    ];
    for &(what, input, want, trailers) in cases {
        for step in [input.len(), 1, 2, 7] {
            let (data, used, done, t) =
                run(input, step).unwrap_or_else(|e| panic!("{what} step {step}: {e}"));
            assert_eq!(data, want, "{what} step {step}");
            assert!(done, "{what}");
            assert_eq!(used, input.len(), "{what}");
            assert_eq!(t, trailers, "{what}");
        }
    }
}

#[test]
fn stops_at_the_end_of_the_body() {
    let input = b"2\r\nok\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n";
    let mut d = Dechunker::default();
    let mut data = Vec::new();
    let n = d.feed(input, |s| data.extend_from_slice(s)).expect("valid");
    assert_eq!(n, 12);
    assert!(d.is_done());
    assert_eq!(&input[n..], b"HTTP/1.1 200 OK\r\n");
    assert_eq!(d.feed(b"more", |_| panic!("no data after the end")), Ok(0));
}

#[test]
fn data_passes_as_slices_of_the_input() {
    let input = b"4\r\nabcd\r\n0\r\n\r\n";
    let mut d = Dechunker::default();
    let mut seen = Vec::new();
    d.feed(input, |s| {
        seen.push(s.as_ptr() as usize - input.as_ptr() as usize)
    })
    .expect("valid");
    assert_eq!(seen, vec![3]);
}

#[test]
fn hostile_framing_is_refused() {
    let long_ext = {
        let mut v = b"1;".to_vec();
        v.resize(MAX_LINE + 10, b'a');
        v
    };
    let cases: &[(&str, &[u8])] = &[
        ("bare LF after size", b"5\nhello\r\n0\r\n\r\n"),
        ("bare LF after data", b"5\r\nhello\n0\r\n\r\n"),
        ("data longer than size", b"3\r\nhello\r\n0\r\n\r\n"),
        ("no size", b"\r\nhello\r\n"),
        ("sign", b"+5\r\nhello\r\n"),
        ("negative", b"-5\r\nhello\r\n"),
        ("leading space", b" 5\r\nhello\r\n"),
        ("0x prefix", b"0x5\r\nhello\r\n"),
        ("trailing space without extension", b"5 \r\nhello\r\n"),
        ("too many digits", b"10000000000000000\r\n"),
        ("LF in extension", b"5;a\nb\r\nhello\r\n"),
        ("NUL in extension", b"5;a\0\r\nhello\r\n"),
        ("CR CR", b"5\r\rhello\r\n"),
        ("long extension", &long_ext),
        ("trailer without colon", b"0\r\nnot a field\r\n\r\n"),
        ("obs-fold trailer", b"0\r\nX-A: 1\r\n b\r\n\r\n"),
        ("bare LF in trailer", b"0\r\nX-A: 1\n\r\n"),
        ("NUL in trailer", b"0\r\nX-A: \0\r\n\r\n"),
    ];
    for &(what, input) in cases {
        for step in [input.len(), 1] {
            assert!(
                run(input, step).is_err(),
                "{what} step {step}: {:?}",
                run(input, step)
            );
        }
    }
}

#[test]
fn sixteen_digits_fit() {
    let mut d = Dechunker::default();
    assert_eq!(d.feed(b"ffffffffffffffff\r\nab", |_| {}), Ok(20));
    assert!(!d.is_done());
}

#[test]
fn encoder_round_trips() {
    let mut body = Vec::new();
    for part in [&b"hello"[..], &[b'x'; 300][..]] {
        write_chunk_header(part.len(), &mut body);
        body.extend_from_slice(part);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(LAST_CHUNK);
    assert!(body.starts_with(b"5\r\nhello\r\n12c\r\n"));
    let (data, used, done, _) = run(&body, 3).expect("valid");
    assert!(done && used == body.len() && data.len() == 305);
}

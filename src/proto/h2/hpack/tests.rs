use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    s.chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap_or("zz"), 16).unwrap_or(0))
        .collect()
}

fn fields(list: &HeaderList) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect()
}

fn table(t: &DynamicTable) -> Vec<(String, String)> {
    (0..t.len())
        .filter_map(|i| t.get(i))
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect()
}

fn owned(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
#[rustfmt::skip]
fn c1_integers() {
    let cases: &[(&str, u64, u8, &[u8])] = &[
        ("C.1.1 10 with a 5-bit prefix", 10, 5, b"\x0a"),
        ("C.1.2 1337 with a 5-bit prefix", 1337, 5, b"\x1f\x9a\x0a"),
        ("C.1.3 42 at an octet boundary", 42, 8, b"\x2a"),
        ("prefix exactly full: 31 with 5 bits", 31, 5, b"\x1f\x00"),
        ("u32::MAX with 7 bits", u32::MAX as u64, 7, b"\x7f\x80\xff\xff\xff\x0f"),
    ];
    for (why, value, prefix, bytes) in cases {
        let mut out = Vec::new();
        encode_int(&mut out, *value as usize, *prefix, 0);
        assert_eq!(out, *bytes, "{why}: encode");
        let mut b: &[u8] = bytes;
        assert_eq!(decode_int(&mut b, *prefix), Ok(*value), "{why}: decode");
        assert!(b.is_empty(), "{why}: all consumed");
    }
}

#[test]
#[rustfmt::skip]
fn bad_integers() {
    let cases: &[(&str, &[u8], u8)] = &[
        ("empty", b"", 5),
        ("continuation cut short", b"\x1f\x9a", 5),
        ("u32::MAX + 1", b"\x7f\x81\xff\xff\xff\x0f", 7),
        ("six continuation bytes of nothing", b"\x1f\x80\x80\x80\x80\x80\x00", 5),
        ("2^64 would wrap", b"\x1f\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 5),
    ];
    for (why, bytes, prefix) in cases {
        let mut b: &[u8] = bytes;
        assert!(decode_int(&mut b, *prefix).is_err(), "{why}");
    }
}

#[test]
fn c2_single_representations() {
    let cases: &[(&str, &str, (&str, &str), usize)] = &[
        (
            "C.2.1 literal with indexing",
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            ("custom-key", "custom-header"),
            55,
        ),
        (
            "C.2.2 literal without indexing",
            "040c 2f73 616d 706c 652f 7061 7468",
            (":path", "/sample/path"),
            0,
        ),
        (
            "C.2.3 literal never indexed",
            "1008 7061 7373 776f 7264 0673 6563 7265 74",
            ("password", "secret"),
            0,
        ),
        ("C.2.4 indexed", "82", (":method", "GET"), 0),
    ];
    for (why, block, field, size) in cases {
        let mut d = Decoder::default();
        let mut list = HeaderList::default();
        assert_eq!(d.decode(&hex(block), 1 << 16, &mut list), Ok(()), "{why}");
        assert_eq!(fields(&list), owned(&[*field]), "{why}");
        assert_eq!(d.table().size(), *size, "{why}: table size");
    }
}

/// One connection's blocks in order, with the list and the table after each.
type Sequence<'a> = &'a [(
    &'a str,
    &'a [(&'a str, &'a str)],
    &'a [(&'a str, &'a str)],
    usize,
)];

fn run_sequence(name: &str, table_size: usize, seq: Sequence) {
    // C.5 and C.6 run with SETTINGS_HEADER_TABLE_SIZE 256 from the start.
    let mut d = Decoder::new(table_size);
    let mut list = HeaderList::default();
    for (i, (block, want, want_table, size)) in seq.iter().enumerate() {
        assert_eq!(
            d.decode(&hex(block), 1 << 16, &mut list),
            Ok(()),
            "{name}.{}",
            i + 1
        );
        assert_eq!(fields(&list), owned(want), "{name}.{} list", i + 1);
        assert_eq!(
            table(d.table()),
            owned(want_table),
            "{name}.{} table",
            i + 1
        );
        assert_eq!(d.table().size(), *size, "{name}.{} size", i + 1);
    }
}

const REQ1: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQ2: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQ3: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];
const T1: &[(&str, &str)] = &[(":authority", "www.example.com")];
const T2: &[(&str, &str)] = &[
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];
const T3: &[(&str, &str)] = &[
    ("custom-key", "custom-value"),
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];

#[test]
fn c3_requests_without_huffman() {
    run_sequence(
        "C.3",
        4096,
        &[
            (
                "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                REQ1,
                T1,
                57,
            ),
            ("8286 84be 5808 6e6f 2d63 6163 6865", REQ2, T2, 110),
            (
                "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                REQ3,
                T3,
                164,
            ),
        ],
    );
}

#[test]
fn c4_requests_with_huffman() {
    run_sequence(
        "C.4",
        4096,
        &[
            ("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", REQ1, T1, 57),
            ("8286 84be 5886 a8eb 1064 9cbf", REQ2, T2, 110),
            (
                "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                REQ3,
                T3,
                164,
            ),
        ],
    );
}

const DATE1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE2: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOC: &str = "https://www.example.com";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const RESP1: &[(&str, &str)] = &[
    (":status", "302"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOC),
];
const RESP2: &[(&str, &str)] = &[
    (":status", "307"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOC),
];
const RESP3: &[(&str, &str)] = &[
    (":status", "200"),
    ("cache-control", "private"),
    ("date", DATE2),
    ("location", LOC),
    ("content-encoding", "gzip"),
    ("set-cookie", COOKIE),
];
const RT1: &[(&str, &str)] = &[
    ("location", LOC),
    ("date", DATE1),
    ("cache-control", "private"),
    (":status", "302"),
];
const RT2: &[(&str, &str)] = &[
    (":status", "307"),
    ("location", LOC),
    ("date", DATE1),
    ("cache-control", "private"),
];
const RT3: &[(&str, &str)] = &[
    ("set-cookie", COOKIE),
    ("content-encoding", "gzip"),
    ("date", DATE2),
];

#[test]
fn c5_responses_without_huffman() {
    run_sequence("C.5", 256, &[
        ("4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", RESP1, RT1, 222),
        ("4803 3330 37c1 c0bf", RESP2, RT2, 222),
        ("88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31", RESP3, RT3, 215),
    ]);
}

#[test]
fn c6_responses_with_huffman() {
    run_sequence("C.6", 256, &[
        ("4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3", RESP1, RT1, 222),
        ("4883 640e ffc1 c0bf", RESP2, RT2, 222),
        ("88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07", RESP3, RT3, 215),
    ]);
}

#[test]
#[rustfmt::skip]
fn malformed_blocks() {
    let cases: &[(&str, &str)] = &[
        ("index 0", "80"),
        ("index past the static table with an empty dynamic table", "be"),
        ("literal name index past the tables", "7e 01 61"),
        ("string longer than the block", "40 05 61 62 01 61"),
        ("value missing", "40 01 61"),
        ("Huffman EOS in a name", "40 84 ff ff ff ff 01 61"),
        ("Huffman padding of zeros", "40 81 18 01 61"),
        ("size update after a field", "82 3f e1 1f"),
        ("size update above 4096", "3f e2 1f"),
        ("integer overflow in an index", "ff ff ff ff ff 7f"),
    ];
    for (why, block) in cases {
        let mut d = Decoder::default();
        let mut list = HeaderList::default();
        let got = d.decode(&hex(block), 1 << 16, &mut list);
        assert!(matches!(got, Err(DecodeError::Compression(_))), "{why}: {got:?}");
    }
}

#[test]
fn table_size_updates() {
    let mut d = Decoder::default();
    let mut list = HeaderList::default();
    // C.3.1 fills one entry (57 bytes).
    assert_eq!(
        d.decode(
            &hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
            1 << 16,
            &mut list
        ),
        Ok(())
    );
    assert_eq!(d.table().size(), 57);
    // Two updates at the start (0 then 4096) empty it, then index 2 decodes.
    assert_eq!(d.decode(&hex("20 3f e1 1f 82"), 1 << 16, &mut list), Ok(()));
    assert_eq!(d.table().size(), 0);
    assert_eq!(d.table().max_size(), 4096);
    assert_eq!(fields(&list), owned(&[(":method", "GET")]));
    // 4096 exactly is allowed, 4097 not.
    assert_eq!(d.decode(&hex("3f e1 1f"), 1 << 16, &mut list), Ok(()));
    assert!(d.decode(&hex("3f e2 1f"), 1 << 16, &mut list).is_err());
}

#[test]
fn eviction_keeps_the_size_within_the_maximum() {
    let mut t = DynamicTable::new(100);
    t.insert(b"aaaa", b"bbbb"); // 40
    t.insert(b"cccc", b"dddd"); // 80
    assert_eq!((t.len(), t.size()), (2, 80));
    t.insert(b"eeee", b"ffff"); // the oldest goes
    assert_eq!((t.len(), t.size()), (2, 80));
    assert_eq!(t.get(1), Some((&b"cccc"[..], &b"dddd"[..])));
    // An entry larger than the table empties it (§4.4).
    t.insert(&[b'x'; 60], &[b'y'; 9]);
    assert_eq!((t.len(), t.size()), (0, 0));
    t.insert(b"a", b"b");
    t.set_max_size(20); // 34 > 20: evicted
    assert_eq!((t.len(), t.size()), (0, 0));
}

/// A literal with incremental indexing of `name: value` (raw strings, 7-bit lengths won't do past 127).
fn literal_indexed(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x40);
    encode_int(out, name.len(), 7, 0);
    out.extend_from_slice(name);
    encode_int(out, value.len(), 7, 0);
    out.extend_from_slice(value);
}

#[test]
fn hpack_bomb_stops_at_the_cap() {
    // One 4000-byte entry, then 2000 one-byte references to it: 8 MB of
    // headers from 6 KB on the wire.
    let mut block = Vec::new();
    literal_indexed(&mut block, b"x", &[b'v'; 4000]);
    block.extend(std::iter::repeat_n(0xbe, 2000));
    let cap = 16_384;
    let mut d = Decoder::default();
    let mut list = HeaderList::default();
    assert_eq!(
        d.decode(&block, cap, &mut list),
        Err(DecodeError::ListTooLarge)
    );
    // 4033 per field: four fit under 16384, the fifth would not.
    assert_eq!(list.len(), 4);
    assert!(list.size() <= cap);
    assert!(
        list.bytes.capacity() < 2 * cap,
        "capacity {}",
        list.bytes.capacity()
    );
    // The table was kept: the next block can use the entry.
    assert_eq!(d.decode(b"\xbe", cap, &mut list), Ok(()));
    assert_eq!(
        list.get(0).map(|(n, v)| (n.len(), v.len())),
        Some((1, 4000))
    );
}

#[test]
fn fields_past_the_cap_still_enter_the_table() {
    let mut block = Vec::new();
    literal_indexed(&mut block, b"big", &[b'a'; 100]);
    literal_indexed(&mut block, b"later", b"kept");
    let mut d = Decoder::default();
    let mut list = HeaderList::default();
    // A cap of 50: the first field (135) is already over it.
    assert_eq!(
        d.decode(&block, 50, &mut list),
        Err(DecodeError::ListTooLarge)
    );
    assert!(list.is_empty());
    assert_eq!(
        table(d.table()),
        owned(&[("later", "kept"), ("big", &"a".repeat(100))])
    );
    // A Huffman value past the cap and past the table size empties the table.
    let mut block = vec![0x40, 0x01, b'h'];
    let long = vec![b'0'; 8000];
    encode_string(&mut block, &long);
    assert_eq!(
        d.decode(&block, 50, &mut list),
        Err(DecodeError::ListTooLarge)
    );
    assert!(d.table().is_empty());
}

#[test]
fn the_cap_counts_name_value_and_32() {
    // ":method: GET" is 7 + 3 + 32 = 42.
    let mut d = Decoder::default();
    let mut list = HeaderList::default();
    assert_eq!(d.decode(b"\x82\x82", 84, &mut list), Ok(()));
    assert_eq!(list.size(), 84);
    assert_eq!(
        d.decode(b"\x82\x82", 83, &mut list),
        Err(DecodeError::ListTooLarge)
    );
    assert_eq!(list.len(), 1);
}

fn decode_all(d: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
    let mut list = HeaderList::default();
    assert_eq!(d.decode(block, 1 << 16, &mut list), Ok(()), "{block:02x?}");
    fields(&list)
}

#[test]
fn encoder_round_trips_and_indexes_what_repeats() {
    let mut e = Encoder::new();
    let mut d = Decoder::default();
    let head: &[(&[u8], &[u8])] = &[
        (b"Server", b"glint"),
        (b"content-type", b"text/html; charset=utf-8"),
        (b"date", b"Mon, 21 Oct 2013 20:13:21 GMT"),
        (b"content-length", b"1234"),
        (b"set-cookie", b"id=secret"),
        (b"x-custom", b"Some Value"),
    ];
    let want = owned(&[
        (":status", "200"),
        ("server", "glint"),
        ("content-type", "text/html; charset=utf-8"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("content-length", "1234"),
        ("set-cookie", "id=secret"),
        ("x-custom", "Some Value"),
    ]);
    let mut first = Vec::new();
    e.encode_head(&mut first, 200, head.iter().copied());
    assert_eq!(first[0], 0x88, ":status 200 is static index 8");
    assert_eq!(decode_all(&mut d, &first), want);
    // server, content-type and x-custom entered both tables; date,
    // content-length and set-cookie did not.
    assert_eq!(table(d.table()), table(e.table()));
    assert_eq!(e.table().len(), 3);
    let mut second = Vec::new();
    e.encode_head(&mut second, 200, head.iter().copied());
    assert_eq!(decode_all(&mut d, &second), want);
    // One byte each for :status and the three indexed fields: server is
    // the oldest entry (64), content-type 63, x-custom the newest (62).
    assert_eq!(&second[..3], &[0x88, 0xc0, 0xbf][..]);
    assert_eq!(second.last(), Some(&0xbe));
    assert!(
        second.len() + 30 < first.len(),
        "{} vs {}",
        second.len(),
        first.len()
    );
    // set-cookie went as "never indexed" (0001 with the static name 55).
    assert!(
        second.windows(2).any(|w| w == [0x1f, 0x28]),
        "{second:02x?}"
    );
}

#[test]
fn encoder_statuses_and_huffman() {
    let mut e = Encoder::new();
    let mut d = Decoder::default();
    for status in [100u16, 200, 204, 206, 301, 304, 404, 500, 503, 999] {
        let mut out = Vec::new();
        e.encode_head(&mut out, status, []);
        assert_eq!(
            decode_all(&mut d, &out),
            owned(&[(":status", &status.to_string())])
        );
    }
    // Huffman only when shorter: a value of bytes with 30-bit codes goes raw.
    let mut out = Vec::new();
    e.encode_head(&mut out, 204, [(&b"x-raw"[..], &[0xfeu8; 8][..])]);
    assert!(
        out.windows(9).any(|w| w[0] == 8 && w[1..] == [0xfe; 8]),
        "{out:02x?}"
    );
    assert_eq!(decode_all(&mut d, &out)[1].0, "x-raw");
}

#[test]
fn encoder_follows_the_peers_table_size() {
    let mut e = Encoder::new();
    let mut d = Decoder::default();
    let mut out = Vec::new();
    e.encode_head(&mut out, 200, [(&b"server"[..], &b"glint"[..])]);
    decode_all(&mut d, &out);
    assert_eq!(d.table().len(), 1);
    // The peer says 0 then 1024: the next block starts with both updates.
    e.set_max_table_size(0);
    e.set_max_table_size(1024);
    out.clear();
    e.encode_head(&mut out, 200, [(&b"server"[..], &b"glint"[..])]);
    assert_eq!(&out[..4], b"\x20\x3f\xe1\x07", "{out:02x?}");
    decode_all(&mut d, &out);
    assert_eq!(d.table().max_size(), 1024);
    assert_eq!(table(d.table()), table(e.table()));
    // A peer offering more than 4096 still gets a 4096 table: no update.
    e.set_max_table_size(1 << 20);
    assert_eq!(e.table().max_size(), 4096);
    out.clear();
    e.encode_head(&mut out, 200, []);
    assert_eq!(out[..2], [0x3f, 0xe1], "{out:02x?}");
    decode_all(&mut d, &out);
    // No table: nothing is indexed, everything still decodes.
    e.set_max_table_size(0);
    out.clear();
    e.encode_head(&mut out, 200, [(&b"server"[..], &b"glint"[..])]);
    assert_eq!(
        decode_all(&mut d, &out)[1],
        ("server".into(), "glint".into())
    );
    assert!(e.table().is_empty() && d.table().is_empty());
}

#[test]
fn empty_fields_count_their_32_bytes() {
    // Found by fuzzing: with the list already past the cap, an empty
    // name and value (0 + 0 + 32) was still stored.
    let mut d = Decoder::default();
    let mut list = HeaderList::default();
    let block = [0x00, 0x00, 0x00].repeat(6);
    assert_eq!(
        d.decode(&block, 40, &mut list),
        Err(DecodeError::ListTooLarge)
    );
    assert_eq!((list.len(), list.size()), (1, 32));
    assert_eq!(d.decode(&block, 6 * 32, &mut list), Ok(()));
    assert_eq!(list.len(), 6);
}

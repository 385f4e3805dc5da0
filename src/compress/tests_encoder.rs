//! Every coding round-trips through an independent decoder (flate2 on
//! miniz_oxide, the brotli crate's decompressor, libzstd's decoder) and,
//! where installed, through `gzip -d`, `brotli -d`, `zstd -d` and Python's
//! zlib (Debian: `apt-get install gzip brotli zstd python3`).

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use super::spec::EncoderParams;
use super::*;

const CODINGS: [Coding; 5] = Coding::ALL;

/// Text that compresses like a web page: words from a small vocabulary in
/// a pseudo-random order (an LCG, so every run sees the same bytes).
pub(super) fn text(len: usize, seed: u32) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "<div class=\"row\">",
        "</div>",
        "function",
        "return",
        "const",
        "the",
        "glint",
        "lighttpd",
        "compress",
        "{ margin: 0; }",
        "<a href=\"/index.html\">",
        "</a>",
        "\n",
        "  ",
        "=",
        ";",
        "var(--accent)",
        "0123456789",
        "Accept-Encoding",
        "window.addEventListener(",
        ")",
    ];
    let mut out = Vec::with_capacity(len + 32);
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    while out.len() < len {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        out.extend_from_slice(WORDS[(x >> 16) as usize % WORDS.len()].as_bytes());
        out.push(b' ');
    }
    out.truncate(len);
    out
}

fn params(budget: usize) -> EncoderParams {
    EncoderParams {
        out_budget: budget,
        ..DeflateSpec::default().encoder_params()
    }
}

/// Compress `input` fed in `piece`-byte slices, checking the per-call bound.
fn compress(coding: Coding, p: &EncoderParams, input: &[u8], piece: usize) -> Vec<u8> {
    let mut enc = Encoder::new(coding, p, Some("text/html"), Some(input.len() as u64)).unwrap();
    let mut all = Vec::new();
    let mut out = Vec::new();
    for chunk in input.chunks(piece.max(1)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let n = enc.feed(rest, &mut out).unwrap();
            assert!(
                out.len() <= p.out_budget,
                "{coding:?}: feed appended {} > {}",
                out.len(),
                p.out_budget
            );
            rest = &rest[n..];
            all.append(&mut out);
        }
    }
    loop {
        let progress = enc.finish(&mut out).unwrap();
        assert!(
            out.len() <= p.out_budget,
            "{coding:?}: finish appended {}",
            out.len()
        );
        all.append(&mut out);
        if progress == Progress::Done {
            break;
        }
    }
    assert_eq!(enc.bytes_in(), input.len() as u64);
    assert_eq!(enc.bytes_out(), all.len() as u64);
    all
}

pub(super) fn decode(coding: Coding, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        Coding::Gzip | Coding::XGzip => flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .map(|_| ()),
        Coding::Deflate => flate2::read::ZlibDecoder::new(data)
            .read_to_end(&mut out)
            .map(|_| ()),
        Coding::Br => brotli::Decompressor::new(data, 4096)
            .read_to_end(&mut out)
            .map(|_| ()),
        Coding::Zstd => zstd::stream::copy_decode(data, &mut out),
    }
    .unwrap_or_else(|e| panic!("{coding:?}: decode failed: {e}"));
    out
}

#[test]
fn every_coding_round_trips_in_any_slicing() {
    let input = text(200_000, 1);
    for coding in CODINGS {
        for (budget, piece) in [(64 * 1024, 200_000), (512, 7_000), (4096, 1)] {
            let input = if piece == 1 {
                &input[..20_000]
            } else {
                &input[..]
            };
            let z = compress(coding, &params(budget), input, piece);
            assert_eq!(
                decode(coding, &z),
                input,
                "{coding:?} budget {budget} piece {piece}"
            );
            assert!(
                z.len() < input.len() / 2,
                "{coding:?}: {} of {}",
                z.len(),
                input.len()
            );
        }
    }
}

#[test]
fn edge_inputs_round_trip() {
    let mut noise = Vec::with_capacity(100_000);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.push(x as u8);
    }
    for coding in CODINGS {
        for input in [&b""[..], b"x", &noise] {
            let z = compress(coding, &params(1024), input, 4096);
            assert_eq!(decode(coding, &z), input, "{coding:?} len {}", input.len());
        }
    }
}

#[test]
fn gzip_and_deflate_framing() {
    let input = text(10_000, 2);
    let gz = compress(Coding::Gzip, &params(65536), &input, 65536);
    assert_eq!(&gz[..3], &[0x1f, 0x8b, 8], "gzip magic and CM=deflate");
    let mut crc = flate2::Crc::new();
    crc.update(&input);
    let n = gz.len();
    assert_eq!(
        &gz[n - 8..n - 4],
        &crc.sum().to_le_bytes(),
        "trailer CRC-32"
    );
    assert_eq!(
        &gz[n - 4..],
        &(input.len() as u32).to_le_bytes(),
        "trailer ISIZE"
    );
    let z = compress(Coding::Deflate, &params(65536), &input, 65536);
    assert_eq!(z[0] & 0x0f, 8, "zlib CM=8 (RFC 1950), not raw deflate");
    assert_eq!((z[0] as u16 * 256 + z[1] as u16) % 31, 0, "zlib FCHECK");
    assert_eq!(
        compress(Coding::XGzip, &params(65536), &input, 65536),
        gz,
        "x-gzip is gzip"
    );
}

/// After `flush_sync`, what was sent so far decodes to everything fed so
/// far: what `deflate.sync-flush` and server-sent events need.
#[test]
fn sync_flush_makes_everything_decodable() {
    let events: Vec<Vec<u8>> = (0..5)
        .map(|i| format!("data: event {i} {}\n\n", "x".repeat(i * 50)).into_bytes())
        .collect();
    for coding in CODINGS {
        let mut enc = Encoder::new(coding, &params(64), Some("text/event-stream"), None).unwrap();
        let mut wire = Vec::new();
        let mut fed = Vec::new();
        for ev in &events {
            let mut rest = &ev[..];
            while !rest.is_empty() {
                let mut out = Vec::new();
                let n = enc.feed(rest, &mut out).unwrap();
                assert!(out.len() <= 64, "{coding:?}");
                wire.extend_from_slice(&out);
                rest = &rest[n..];
            }
            fed.extend_from_slice(ev);
            loop {
                let mut out = Vec::new();
                let p = enc.flush_sync(&mut out).unwrap();
                assert!(out.len() <= 64);
                wire.extend_from_slice(&out);
                if p == Progress::Done {
                    break;
                }
            }
            assert_eq!(
                decode_prefix(coding, &wire),
                fed,
                "{coding:?} after {} events",
                fed.len()
            );
        }
        let mut out = Vec::new();
        while enc.finish(&mut out).unwrap() == Progress::More {}
        wire.extend_from_slice(&out);
        assert_eq!(decode(coding, &wire), fed);
        let mut again = Vec::new();
        assert!(
            enc.feed(b"late", &mut again).is_err(),
            "{coding:?}: feed after finish"
        );
        assert_eq!(enc.finish(&mut again).unwrap(), Progress::Done);
    }
}

/// Decode an unfinished stream: everything the decoder can give.
fn decode_prefix(coding: Coding, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        Coding::Gzip | Coding::XGzip | Coding::Deflate => {
            // gzip: zlib-rs writes the 10-byte header with no optional fields.
            let (zlib, body) = if coding == Coding::Deflate {
                (true, data)
            } else {
                (false, &data[10..])
            };
            let mut d = flate2::Decompress::new(zlib);
            out.reserve(1 << 20);
            d.decompress_vec(body, &mut out, flate2::FlushDecompress::Sync)
                .unwrap();
        }
        Coding::Br => {
            let mut r = brotli::Decompressor::new(data, 4096);
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = r.read(&mut buf) {
                out.extend_from_slice(&buf[..n]);
            }
        }
        Coding::Zstd => {
            let mut d = zstd::zstd_safe::DCtx::create();
            let mut buf = vec![0u8; 1 << 20];
            let mut inb = zstd::zstd_safe::InBuffer::around(data);
            let mut outb = zstd::zstd_safe::OutBuffer::around(&mut buf[..]);
            d.decompress_stream(&mut outb, &mut inb).unwrap();
            let n = outb.pos();
            out.extend_from_slice(&buf[..n]);
        }
    }
    out
}

#[test]
fn parameters_take_effect_and_bad_ones_are_errors() {
    let input = text(100_000, 3);
    let base = params(65536);
    let huff = EncoderParams {
        gzip_strategy: 2,
        ..base
    };
    let (a, b) = (
        compress(Coding::Gzip, &base, &input, 65536),
        compress(Coding::Gzip, &huff, &input, 65536),
    );
    assert!(
        b.len() > a.len() * 2,
        "huffman-only ({}) is much larger than default ({})",
        b.len(),
        a.len()
    );
    assert_eq!(decode(Coding::Gzip, &b), input);
    let q1 = EncoderParams {
        brotli_quality: 1,
        ..base
    };
    assert!(
        compress(Coding::Br, &q1, &input, 65536).len()
            > compress(Coding::Br, &base, &input, 65536).len()
    );
    let fast = EncoderParams {
        zstd_strategy: Some(1),
        zstd_window_log: Some(10),
        ..base
    };
    let zf = compress(Coding::Zstd, &fast, &input, 65536);
    assert!(zf.len() > compress(Coding::Zstd, &base, &input, 65536).len());
    assert_eq!(decode(Coding::Zstd, &zf), input);

    let bad = [
        (
            Coding::Gzip,
            EncoderParams {
                gzip_level: 10,
                ..base
            },
        ),
        (
            Coding::Deflate,
            EncoderParams {
                gzip_window_bits: 8,
                ..base
            },
        ),
        (
            Coding::Gzip,
            EncoderParams {
                gzip_mem_level: 0,
                ..base
            },
        ),
        (
            Coding::Gzip,
            EncoderParams {
                gzip_strategy: 5,
                ..base
            },
        ),
        (
            Coding::Br,
            EncoderParams {
                brotli_quality: 12,
                ..base
            },
        ),
        (
            Coding::Br,
            EncoderParams {
                brotli_lgwin: 25,
                ..base
            },
        ),
        (
            Coding::Zstd,
            EncoderParams {
                zstd_strategy: Some(10),
                ..base
            },
        ),
        (
            Coding::Zstd,
            EncoderParams {
                zstd_window_log: Some(40),
                ..base
            },
        ),
    ];
    for (coding, p) in bad {
        assert!(
            Encoder::new(coding, &p, None, None).is_err(),
            "{coding:?} {p:?}"
        );
    }
}

/// Run `cmd` with `input` on stdin; `None` when the tool is not installed.
fn external(cmd: &str, args: &[&str], input: &[u8]) -> Option<Vec<u8>> {
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let data = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&data));
    let out = child.wait_with_output().ok()?;
    assert!(
        writer.join().is_ok_and(|r| r.is_ok()),
        "{cmd}: writing stdin"
    );
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {:?}",
        out.status
    );
    Some(out.stdout)
}

#[test]
fn external_decoders_agree() {
    let input = text(150_000, 4);
    let py = "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read()))";
    let tools: [(Coding, &str, &[&str]); 4] = [
        (Coding::Gzip, "gzip", &["-d", "-c"]),
        (Coding::Br, "brotli", &["-d", "-c"]),
        (Coding::Zstd, "zstd", &["-d", "-c", "-q"]),
        (Coding::Deflate, "python3", &["-c", py]),
    ];
    let mut ran = Vec::new();
    for (coding, cmd, args) in tools {
        let z = compress(coding, &params(8192), &input, 10_000);
        match external(cmd, args, &z) {
            Some(out) => {
                assert!(
                    out == input,
                    "{cmd} decoded {} bytes, want {}",
                    out.len(),
                    input.len()
                );
                ran.push(cmd);
            }
            None => eprintln!("{cmd} not installed: skipped (Debian: apt-get install {cmd})"),
        }
    }
    eprintln!("external decoders run: {ran:?}");
}

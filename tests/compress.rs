//! mod_deflate over real sockets: every coding decoded (by the Rust
//! decoders and by the reference tools: gzip, brotli, zstd, Python's zlib,
//! `curl --compressed`) and compared byte for byte with the file; the HTTP
//! rules of variants (Vary, ETags, If-None-Match, Range, HEAD, sizes,
//! q-values); the cache under concurrent first requests and a file changed
//! while it is compressed; precompressed siblings; a gateway's answer
//! streamed compressed; Debian's 20-deflate.conf; and the event loop
//! answering small requests while a large file is compressed.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, UNIX_EPOCH};

const CODINGS: [&str; 5] = ["gzip", "x-gzip", "deflate", "br", "zstd"];

/// Compressible text (words picked pseudo-randomly, so no two files are
/// alike and a misplaced byte shows), `len` bytes.
fn text(len: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "<div class=\"row\">",
        "</div>\n",
        "lighttpd",
        "glint",
        "compression",
        "the",
        "of",
        "event-loop",
        "{ color: #333; }\n",
        "function(a, b) { return a + b; }\n",
        "\"key\": [1, 2, 3],",
        "Accept-Encoding",
        "sendfile",
        "\n",
        "  ",
        "zstd br gzip deflate",
    ];
    let picks = pseudo_random(len, seed);
    let mut out = Vec::with_capacity(len + 40);
    for b in picks {
        out.extend_from_slice(WORDS[(b & 15) as usize].as_bytes());
        out.push(b' ');
        if out.len() >= len {
            break;
        }
    }
    out.truncate(len);
    out
}

/// Decodes `body` with the Rust decoders (miniz_oxide for gzip and
/// deflate, brotli-decompressor, libzstd).
fn decode(coding: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let ok = match coding {
        "gzip" | "x-gzip" => flate2::read::GzDecoder::new(body).read_to_end(&mut out),
        "deflate" => flate2::read::ZlibDecoder::new(body).read_to_end(&mut out),
        "br" => brotli::BrotliDecompress(&mut &body[..], &mut out).map(|_| 0),
        "zstd" => zstd::stream::copy_decode(body, &mut out).map(|_| 0),
        other => panic!("no decoder for {other}"),
    };
    if let Err(e) = ok {
        panic!("{coding}: not a valid stream ({} bytes): {e}", body.len());
    }
    out
}

/// Decodes `body` with the reference implementation's own tool.
fn decode_external(coding: &str, body: &[u8]) -> Vec<u8> {
    let mut cmd = match coding {
        "gzip" | "x-gzip" => {
            let mut c = Command::new("gzip");
            c.arg("-dc");
            c
        }
        "br" => {
            let mut c = Command::new("brotli");
            c.arg("-dc");
            c
        }
        "zstd" => {
            let mut c = Command::new("zstd");
            c.args(["-qdc"]);
            c
        }
        "deflate" => {
            let mut c = Command::new("python3");
            c.args([
                "-c",
                "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read()))",
            ]);
            c
        }
        other => panic!("no tool for {other}"),
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{coding}: cannot run its decoder (apt-get install brotli zstd): {e}")
        });
    let mut stdin = child.stdin.take().expect("stdin");
    let input = body.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("decoder output");
    let _ = writer.join();
    assert!(
        out.status.success(),
        "{coding}: the reference decoder refused the stream: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// glint serving `d` with `extra` configuration lines.
fn start(d: &Docroot, extra: &str) -> Server {
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n{extra}\n",
        d.root.display()
    );
    Launch::new().config(&conf).start()
}

/// The same with the debug log on (to see what the compression threads did).
fn start_logging(d: &Docroot, extra: &str) -> Server {
    let conf_path = d.base.join("glint-debug.conf");
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n{extra}\n",
        d.root.display()
    );
    std::fs::write(&conf_path, conf).expect("write config");
    let mut cmd = Command::new(glint_bin());
    cmd.arg("-D").env("RUST_LOG", "debug");
    Launch::command(cmd).config_file(&conf_path).start()
}

fn get_ae(s: &Server, path: &str, ae: &str) -> Response {
    let line = format!("Accept-Encoding: {ae}");
    let extra: Vec<&str> = if ae.is_empty() { vec![] } else { vec![&line] };
    fetch(s, &get(path, &extra))
}

/// The body of `r` as the client means it: decoded when it has a Content-Encoding.
fn plain(r: &Response) -> Vec<u8> {
    match r.header("content-encoding") {
        Some(c) => decode(c, &r.body),
        None => r.body.clone(),
    }
}

/// Asks until the answer comes from the cache (compressed, with a
/// Content-Length); the copy is made off the loop.
fn wait_cached(s: &Server, path: &str, ae: &str) -> Response {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = get_ae(s, path, ae);
        assert_eq!(r.status, 200, "{path}: {}", r.describe());
        if r.header("content-encoding").is_some() && r.content_length().is_some() {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "{path} ({ae}) never came from the cache: {}\n{}",
            r.describe(),
            s.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every regular file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn set_mtime(p: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

fn gzip_bytes(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn brotli_bytes(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        ..Default::default()
    };
    brotli::BrotliCompress(&mut &b[..], &mut out, &params).unwrap();
    out
}

#[test]
fn every_coding_decodes_to_the_file_byte_for_byte() {
    let d = Docroot::new();
    let cache = d.base.join("cache");
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("small.html", text(9_000, 1)),
        ("page.css", text(60_000, 2)),
        ("app.js", text(300_000, 3)),
        ("data.json", text(40_000, 4)),
        ("icon.svg", text(20_000, 5)),
    ];
    for (name, body) in &files {
        d.file(name, body);
    }
    let s = start(
        &d,
        &format!(
            "deflate.cache-dir = \"{}\"\ndeflate.mimetypes = ( \"text/\", \"application/json\", \"image/svg+xml\" )",
            cache.display()
        ),
    );
    for (name, body) in &files {
        let path = format!("/{name}");
        for coding in CODINGS {
            // The first answer: compressed at once (a small file) or the
            // file as it is while the copy is made; either is the file.
            let first = get_ae(&s, &path, coding);
            assert_eq!(first.status, 200, "{}", first.describe());
            assert_eq!(&plain(&first), body, "{path} {coding}: first answer");
            let r = wait_cached(&s, &path, coding);
            assert_eq!(r.header("content-encoding"), Some(coding), "{path}");
            assert!(r.has_token("vary", "accept-encoding"), "{}", r.describe());
            assert!(
                r.body.len() * 2 < body.len(),
                "{path} {coding}: {} bytes for {}",
                r.body.len(),
                body.len()
            );
            assert_eq!(
                &decode(coding, &r.body),
                body,
                "{path} {coding}: Rust decoder"
            );
            assert_eq!(
                &decode_external(coding, &r.body),
                body,
                "{path} {coding}: reference decoder"
            );
        }
        // curl asks for all it can decode and decodes it itself.
        let out = Command::new("curl")
            .args(["-s", "--compressed", "-D", "-", "-o", "-"])
            .arg(format!("http://127.0.0.1:{}{path}", s.port))
            .output()
            .expect("curl");
        let split = find(&out.stdout, b"\r\n\r\n").expect("curl's head") + 4;
        let head = String::from_utf8_lossy(&out.stdout[..split]).to_lowercase();
        assert!(head.contains("content-encoding: "), "{head}");
        assert_eq!(&out.stdout[split..], &body[..], "{path}: curl --compressed");
    }
    // Copies are named as lighttpd names them: cache dir, file path, ETag, coding.
    let copies = files_under(&cache);
    let want = d.root.join("app.js");
    let prefix = cache.join(want.strip_prefix("/").unwrap());
    for coding in CODINGS {
        assert!(
            copies.iter().any(|p| {
                let p = p.to_string_lossy();
                p.starts_with(&*prefix.to_string_lossy()) && p.ends_with(&format!("-{coding}"))
            }),
            "no {coding} copy of app.js in {copies:?}"
        );
    }
}

#[test]
fn http_rules_of_compressed_variants() {
    let d = Docroot::new();
    let cache = d.base.join("cache");
    let page = text(50_000, 10);
    let tiny = text(200, 11);
    d.file("page.html", &page)
        .file("tiny.html", &tiny)
        .file("photo.jpg", &pseudo_random(30_000, 12));
    let s = start(
        &d,
        &format!(
            "deflate.cache-dir = \"{}\"\ndeflate.mimetypes = ( \"text/html\" )",
            cache.display()
        ),
    );
    for coding in ["br", "zstd", "deflate"] {
        wait_cached(&s, "/page.html", coding);
    }
    let gz = wait_cached(&s, "/page.html", "gzip");
    let identity = get_ae(&s, "/page.html", "");
    // Vary on every compressible answer, compressed or not.
    assert!(identity.header("content-encoding").is_none());
    assert!(
        identity.has_token("vary", "accept-encoding"),
        "{}",
        identity.describe()
    );
    assert_eq!(identity.body, page);
    // The variant's ETag is the file's with the coding before its quote.
    let tag = identity.header("etag").expect("identity ETag").to_string();
    let gz_tag = gz.header("etag").expect("gzip ETag");
    assert_eq!(gz_tag, format!("{}-gzip\"", &tag[..tag.len() - 1]));
    // If-None-Match meets the variant the client would get.
    let inm = |tag: &str, ae: &str| {
        let h1 = format!("If-None-Match: {tag}");
        let h2 = format!("Accept-Encoding: {ae}");
        fetch(&s, &get("/page.html", &[&h1, &h2]))
    };
    let r = inm(gz_tag, "gzip");
    assert_eq!(r.status, 304, "{}", r.describe());
    assert_eq!(r.header("etag"), Some(gz_tag));
    assert!(r.has_token("vary", "accept-encoding"));
    let r = inm(&tag, "gzip");
    assert_eq!(r.status, 200, "the identity tag is not the gzip variant's");
    assert_eq!(decode("gzip", &r.body), page);
    let r = inm(gz_tag, "identity");
    assert_eq!(r.status, 200, "the gzip tag is not the identity's");
    assert_eq!(r.body, page);
    let r = inm(&tag, "");
    assert_eq!(r.status, 304);
    // Range is answered from the identity bytes.
    let r = fetch(
        &s,
        &get(
            "/page.html",
            &["Accept-Encoding: gzip", "Range: bytes=10-19"],
        ),
    );
    assert_eq!(r.status, 206);
    assert!(r.header("content-encoding").is_none());
    assert_eq!(r.body, &page[10..20]);
    assert!(r.has_token("vary", "accept-encoding"));
    // HEAD gets the compressed variant's head.
    let r = fetch(&s, &head("/page.html", &["Accept-Encoding: gzip"]));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("etag"), Some(gz_tag));
    assert_eq!(r.content_length(), Some(gz.body.len() as u64));
    assert!(r.body.is_empty());
    // At or below deflate.min-compress-size (256), and types not listed:
    // never compressed, so no Vary either.
    for path in ["/tiny.html", "/photo.jpg"] {
        let r = get_ae(&s, path, "gzip, br");
        assert!(r.header("content-encoding").is_none(), "{path}");
        assert!(
            !r.has_token("vary", "accept-encoding"),
            "{path}: {}",
            r.describe()
        );
    }
    // q-values: the highest weight wins; q=0 refuses; identity;q=0 with no
    // coding left still gets the file.
    let cases: &[(&str, Option<&str>)] = &[
        ("gzip;q=0.5, br;q=0.9", Some("br")),
        ("gzip;q=0, deflate", Some("deflate")),
        ("br, zstd", Some("zstd")),
        ("*", Some("zstd")),
        ("*;q=0, gzip", Some("gzip")),
        ("gzip;q=0", None),
        ("identity;q=0", None),
        ("compress, bzip2", None),
        ("GZIP", Some("gzip")),
    ];
    for (ae, want) in cases {
        let r = get_ae(&s, "/page.html", ae);
        assert_eq!(r.status, 200, "{ae}");
        assert_eq!(r.header("content-encoding"), *want, "Accept-Encoding: {ae}");
        assert_eq!(plain(&r), page, "{ae}");
    }
    // An HTTP/1.0 client gets the same variant.
    let r = fetch(
        &s,
        b"GET /page.html HTTP/1.0\r\nAccept-Encoding: br\r\n\r\n",
    );
    assert_eq!(r.header("content-encoding"), Some("br"));
    assert_eq!(decode("br", &r.body), page);
}

#[test]
fn streamed_without_a_cache_on_http_1_1_and_1_0() {
    let d = Docroot::new();
    let page = text(600_000, 20);
    d.file("big.txt", &page);
    d.dir("listed");
    for i in 0..40 {
        d.file(&format!("listed/file-number-{i:03}.txt"), b"x");
    }
    let log = d.base.join("access.log");
    let s = start(
        &d,
        &format!(
            "deflate.mimetypes = ( \"text/\" )\ndir-listing.activate = \"enable\"\n\
             accesslog.filename = \"{}\"\naccesslog.format = \"%b %{{Accept-Encoding}}i\"",
            log.display()
        ),
    );
    let mut sizes = Vec::new();
    for coding in CODINGS {
        let r = get_ae(&s, "/big.txt", coding);
        assert_eq!(r.framing, "chunked", "{coding}: {}", r.describe());
        assert_eq!(r.header("content-encoding"), Some(coding));
        assert_eq!(decode(coding, &r.body), page, "{coding}");
        assert_eq!(decode_external(coding, &r.body), page, "{coding}");
        sizes.push(format!("{} {coding}", r.body.len()));
    }
    // The access log counts the bytes that went out, once they have.
    assert!(
        wait_for(TIMEOUT, || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            sizes.iter().all(|l| text.lines().any(|x| x == l))
        }),
        "want {sizes:?} in {:?}",
        std::fs::read_to_string(&log)
    );
    let r = fetch(
        &s,
        b"GET /big.txt HTTP/1.0\r\nAccept-Encoding: gzip\r\n\r\n",
    );
    assert_eq!(r.framing, "close", "{}", r.describe());
    assert_eq!(decode("gzip", &r.body), page);
    // Keep-alive goes on after a compressed stream, pipelined or not.
    let mut c = s.connect();
    let one = b"GET /big.txt HTTP/1.1\r\nHost: t\r\nAccept-Encoding: br\r\n\r\n";
    let mut both = one.to_vec();
    both.extend_from_slice(b"GET /listed/ HTTP/1.1\r\nHost: t\r\nAccept-Encoding: zstd\r\n\r\n");
    c.send(&both).unwrap();
    let a = c.read_response(false).unwrap();
    let b = c.read_response(false).unwrap();
    assert_eq!(decode("br", &a.body), page);
    assert_eq!(b.header("content-encoding"), Some("zstd"));
    let listing = String::from_utf8(decode("zstd", &b.body)).unwrap();
    assert!(listing.contains("file-number-039.txt"), "{listing}");
    let plain_listing = get_ae(&s, "/listed/", "");
    assert_eq!(plain_listing.body, listing.as_bytes());
    assert!(plain_listing.has_token("vary", "accept-encoding"));
}

#[test]
fn concurrent_first_requests_make_one_copy() {
    let d = Docroot::new();
    let cache = d.base.join("cache");
    let page = text(1_500_000, 30);
    d.file("big.html", &page);
    let s = start(
        &d,
        &format!(
            "deflate.cache-dir = \"{}\"\ndeflate.mimetypes = ( \"text/html\" )",
            cache.display()
        ),
    );
    let n = 8;
    let barrier = Arc::new(Barrier::new(n));
    let addr = s.addr();
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let b = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut c = Conn::open(addr).expect("connect");
                b.wait();
                c.send(&get("/big.html", &["Accept-Encoding: br"])).unwrap();
                c.read_response(false).expect("a response")
            })
        })
        .collect();
    for t in threads {
        let r = t.join().expect("client thread");
        assert_eq!(r.status, 200);
        assert_eq!(plain(&r), page, "{}", r.head);
    }
    let r = wait_cached(&s, "/big.html", "br");
    assert_eq!(decode_external("br", &r.body), page);
    // One copy, whole, and no temporary file left behind.
    let copies = files_under(&cache);
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert!(copies[0].to_string_lossy().ends_with("-br"), "{copies:?}");
    assert_eq!(std::fs::read(&copies[0]).unwrap(), r.body);
}

#[test]
fn a_file_changed_while_compressed_is_never_sent_with_the_other_version() {
    let d = Docroot::new();
    let cache = d.base.join("cache");
    let old = text(3_000_000, 40);
    let new = text(2_900_000, 41);
    d.file("doc.html", &old);
    let s = start_logging(
        &d,
        &format!(
            "deflate.cache-dir = \"{}\"\ndeflate.mimetypes = ( \"text/html\" )\n\
             deflate.params = ( \"BROTLI_PARAM_QUALITY\" => 9 )",
            cache.display()
        ),
    );
    let first = get_ae(&s, "/doc.html", "br");
    assert_eq!(plain(&first), old);
    // Rewritten in place while the copy of the old version is being made
    // (3 MB at brotli 9 takes well over the time this takes).
    std::fs::write(d.path("doc.html"), &new).unwrap();
    set_mtime(&d.path("doc.html"), MTIME_EPOCH + 100);
    assert!(
        wait_for(Duration::from_secs(60), || s
            .log()
            .contains("the file changed while it was compressed")),
        "the job did not notice the change:\n{}",
        s.log()
    );
    // The open-file cache holds an entry for a second at most.
    std::thread::sleep(Duration::from_millis(2100));
    let r = wait_cached(&s, "/doc.html", "br");
    assert_eq!(decode("br", &r.body), new);
    let now = get_ae(&s, "/doc.html", "");
    let tag = now.header("etag").unwrap().trim_matches('"').to_string();
    for copy in files_under(&cache) {
        let name = copy.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains(&tag) {
            assert_eq!(decode("br", &std::fs::read(&copy).unwrap()), new, "{name}");
        } else {
            panic!("a copy under another tag than the file's: {name}");
        }
    }
}

#[test]
fn precompressed_siblings_are_sent_as_they_are() {
    let d = Docroot::new();
    let css = text(30_000, 50);
    let js = text(30_000, 51);
    let (css_br, css_gz) = (brotli_bytes(&css), gzip_bytes(&css));
    d.file("site.css", &css)
        .file("site.css.br", &css_br)
        .file("site.css.gz", &css_gz)
        .file("app.js", &js)
        .file("app.js.gz", &gzip_bytes(b"an old build"))
        .file("tiny.css", b"a{}")
        .file("tiny.css.gz", &gzip_bytes(b"a{}"));
    // The sibling of app.js is older than the file: not used.
    set_mtime(&d.path("app.js.gz"), MTIME_EPOCH - 10);
    let s = start(
        &d,
        "glint.static-precompressed = ( \"br\", \"zstd\", \"gzip\" )",
    );
    let r = get_ae(&s, "/site.css", "gzip, deflate, br");
    assert_eq!(r.header("content-encoding"), Some("br"));
    assert_eq!(r.body, css_br, "the .br file as it is");
    assert!(r.header("content-type").unwrap().starts_with("text/css"));
    assert!(r.has_token("vary", "accept-encoding"));
    assert_eq!(decode_external("br", &r.body), css);
    let br_tag = r.header("etag").unwrap().to_string();
    assert!(br_tag.ends_with("-br\""), "{br_tag}");
    let r = get_ae(&s, "/site.css", "gzip");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.body, css_gz);
    let r = get_ae(&s, "/site.css", "x-gzip");
    assert_eq!(r.header("content-encoding"), Some("x-gzip"));
    assert_eq!(r.body, css_gz);
    // No sibling for zstd: the file, with Vary.
    for ae in ["zstd", "", "br;q=0, gzip;q=0"] {
        let r = get_ae(&s, "/site.css", ae);
        assert!(r.header("content-encoding").is_none(), "{ae}");
        assert_eq!(r.body, css);
        assert!(r.has_token("vary", "accept-encoding"), "{ae}");
    }
    let r = get_ae(&s, "/app.js", "gzip");
    assert!(
        r.header("content-encoding").is_none(),
        "an older sibling is stale"
    );
    assert_eq!(r.body, js);
    // Precompressed files are the site's own: sent whatever their size.
    let r = get_ae(&s, "/tiny.css", "gzip");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let r = fetch(&s, &head("/site.css", &["Accept-Encoding: br"]));
    assert_eq!(r.content_length(), Some(css_br.len() as u64));
    assert_eq!(r.header("content-encoding"), Some("br"));
    let h = format!("If-None-Match: {br_tag}");
    let r = fetch(&s, &get("/site.css", &[&h, "Accept-Encoding: br"]));
    assert_eq!(r.status, 304);
    // Range asks for bytes of the file.
    let r = fetch(
        &s,
        &get("/site.css", &["Accept-Encoding: br", "Range: bytes=0-9"]),
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &css[..10]);
}

/// A backend process, killed on drop.
struct Backend(Child);

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `tests/backends/scgi_app.py` on a TCP port.
fn scgi_backend() -> (Backend, String) {
    let mut child = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/backends/scgi_app.py"))
        .arg("tcp")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 with the scgi package (pip install scgi)");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    let port = line
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("scgi_app.py did not start: {line:?}"))
        .trim()
        .to_string();
    (Backend(child), port)
}

/// What `scgi_app.py`'s /text?N sends.
fn streamed_text(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 40);
    let mut i = 0;
    while out.len() < n {
        out.extend_from_slice(format!("line {i:08} of a streamed answer\n").as_bytes());
        i += 1;
    }
    out.truncate(n);
    out
}

#[test]
fn a_gateway_answer_is_streamed_compressed() {
    let (_b, port) = scgi_backend();
    let d = Docroot::new();
    let s = start(
        &d,
        &format!(
            "server.modules += ( \"mod_scgi\", \"mod_deflate\" )\n\
             deflate.mimetypes = ( \"text/plain\" )\n\
             scgi.server = ( \"/app\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {port}, \"check-local\" => \"disable\" ) ) )"
        ),
    );
    let n = 2_000_000;
    let want = streamed_text(n);
    let path = format!("/app/text?{n}");
    for coding in CODINGS {
        let r = get_ae(&s, &path, coding);
        assert_eq!(r.status, 200, "{}", r.describe());
        assert_eq!(r.framing, "chunked", "{coding}");
        assert_eq!(r.header("content-encoding"), Some(coding));
        assert_eq!(r.header("etag"), Some(format!("\"gw1-{coding}\"").as_str()));
        assert!(r.has_token("vary", "accept-encoding"));
        assert!(r.body.len() * 4 < n, "{coding}: {} bytes", r.body.len());
        assert_eq!(decode(coding, &r.body), want, "{coding}");
        assert_eq!(decode_external(coding, &r.body), want, "{coding}");
    }
    let r = get_ae(&s, &path, "");
    assert_eq!(r.body, want);
    assert!(r.has_token("vary", "accept-encoding"));
    let r = fetch(
        &s,
        format!("GET {path} HTTP/1.0\r\nAccept-Encoding: gzip\r\n\r\n").as_bytes(),
    );
    assert_eq!(r.framing, "close");
    assert_eq!(decode("gzip", &r.body), want);
    let r = fetch(&s, &head(&path, &["Accept-Encoding: br"]));
    assert_eq!(r.header("content-encoding"), Some("br"));
    assert!(r.body.is_empty());
    let r = fetch(
        &s,
        &get(
            &path,
            &["Accept-Encoding: gzip", "If-None-Match: \"gw1-gzip\""],
        ),
    );
    assert_eq!(r.status, 304, "{}", r.describe());
    assert_eq!(r.header("etag"), Some("\"gw1-gzip\""));
    // Two answers on one connection: the compressed stream ends cleanly.
    let mut c = s.connect();
    for coding in ["zstd", "deflate"] {
        let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\nAccept-Encoding: {coding}\r\n\r\n");
        c.send(req.as_bytes()).unwrap();
        let r = c.read_response(false).unwrap();
        assert_eq!(
            decode(coding, &r.body),
            want,
            "{coding} on a kept connection"
        );
    }
}

#[test]
fn debian_20_deflate_conf_works() {
    let d = Docroot::new();
    let cache = d.base.join("var/cache/lighttpd/compress");
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("index.html", text(20_000, 60)),
        ("style.css", text(20_000, 61)),
        ("notes.txt", text(20_000, 62)),
        ("app.js", text(20_000, 63)),
    ];
    for (name, body) in &files {
        d.file(name, body);
    }
    d.file("image.png", &pseudo_random(20_000, 64));
    // /etc/lighttpd/conf-available/20-deflate.conf of Debian's lighttpd
    // 1.4.69-1, with the cache dir under the test's directory.
    let debian = format!(
        "# https://redmine.lighttpd.net/projects/lighttpd/wiki/Docs_ModDeflate\n\n\
         server.modules += ( \"mod_deflate\" )\n\n\
         deflate.cache-dir = \"{}/\"\n\
         deflate.mimetypes = ( \"application/javascript\", \"text/css\", \"text/html\", \"text/plain\" )\n",
        cache.display()
    );
    let s = start(&d, &debian);
    // Made at start, once privileges are dropped (just after "listening").
    assert!(
        wait_for(TIMEOUT, || cache.is_dir()),
        "the cache dir is made at start"
    );
    for (name, body) in &files {
        let r = wait_cached(&s, &format!("/{name}"), "gzip, deflate, br, zstd");
        // lighttpd's order: zstd first.
        assert_eq!(r.header("content-encoding"), Some("zstd"), "{name}");
        assert_eq!(&decode_external("zstd", &r.body), body, "{name}");
        let r = wait_cached(&s, &format!("/{name}"), "gzip, deflate, br");
        assert_eq!(r.header("content-encoding"), Some("br"), "{name}");
        assert_eq!(&decode_external("br", &r.body), body, "{name}");
    }
    let r = get_ae(&s, "/image.png", "gzip");
    assert!(r.header("content-encoding").is_none());
    // mod_compress's old names still do it, as lighttpd maps them.
    let d2 = Docroot::new();
    d2.file("old.html", &files[0].1);
    let s2 = start(
        &d2,
        &format!(
            "server.modules += ( \"mod_compress\" )\ncompress.cache-dir = \"{}\"\ncompress.filetype = ( \"text/html\" )",
            d2.base.join("c").display()
        ),
    );
    let r = wait_cached(&s2, "/old.html", "gzip");
    assert_eq!(decode("gzip", &r.body), files[0].1);
}

/// The longest answer time of small requests made one after another
/// while `busy` runs on another thread.
fn slowest_small_answer(s: &Server, busy: impl FnOnce() + Send + 'static) -> Duration {
    let worker = std::thread::spawn(busy);
    let mut slowest = Duration::ZERO;
    let mut c = s.connect();
    let mut n = 0;
    while !worker.is_finished() || n < 20 {
        let t = Instant::now();
        c.send(b"GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let r = c.read_response(false).unwrap();
        assert_eq!(r.status, 200);
        slowest = slowest.max(t.elapsed());
        n += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    worker.join().expect("busy thread");
    slowest
}

#[test]
fn small_requests_are_answered_while_a_large_file_is_compressed() {
    let d = Docroot::new();
    let cache = d.base.join("cache");
    let big = text(4_000_000, 70);
    d.file("big.html", &big)
        .file("small.txt", b"small and quick");
    d.dir("nocache");
    d.file("nocache/big.html", &big);
    let s = start(
        &d,
        &format!(
            "deflate.cache-dir = \"{}\"\ndeflate.mimetypes = ( \"text/html\" )\n\
             $HTTP[\"url\"] =^ \"/nocache/\" {{ deflate.cache-dir = \"\" }}",
            cache.display()
        ),
    );
    let addr = s.addr();
    // The first request of a large file: its copy is made off the loop.
    let pool = slowest_small_answer(&s, move || {
        let mut c = Conn::open(addr).unwrap();
        c.send(&get("/big.html", &["Accept-Encoding: br"])).unwrap();
        let _ = c.read_response(false).unwrap();
        std::thread::sleep(Duration::from_millis(300));
    });
    // No cache: compressed on the loop, one slice per turn.
    let stream = slowest_small_answer(&s, move || {
        let mut c = Conn::open(addr).unwrap();
        c.send(&get("/nocache/big.html", &["Accept-Encoding: gzip"]))
            .unwrap();
        let r = c.read_response(false).unwrap();
        assert_eq!(r.header("content-encoding"), Some("gzip"));
    });
    eprintln!("slowest small answer: {pool:?} during a cache job, {stream:?} during a stream");
    // Generous bounds for a debug build on a shared machine; the release
    // build's figures are in benches/results/compress.md.
    assert!(pool < Duration::from_millis(300), "{pool:?}");
    assert!(stream < Duration::from_millis(600), "{stream:?}");
}

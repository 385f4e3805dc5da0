//! Micro benchmarks of the request path's pieces, each per operation:
//! request-head parsing, path normalisation, response-head encoding and
//! per-request condition matching. `cargo bench --bench micro`.

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};

use glint::config::{Config, RequestFacts, Settings};
use glint::msg::{ReplyData, MAX_HEADERS};
use glint::output::Output;
use glint::path::normalize;
use glint::proto::h1::session::Plan;
use glint::proto::h1::{parse, write_reply, Framing};

/// What ab sends (seed 001/004 workloads).
const AB_REQUEST: &[u8] =
    b"GET /test.jpg HTTP/1.0\r\nHost: 127.0.0.1:8080\r\nUser-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n";
/// What a browser sends.
const BROWSER_REQUEST: &[u8] = b"GET /static/css/site.min.css?v=20261130 HTTP/1.1\r\nHost: www.example.org\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0\r\n\
Accept: text/css,*/*;q=0.1\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\n\
Referer: https://www.example.org/\r\nConnection: keep-alive\r\nSec-Fetch-Dest: style\r\n\
If-None-Match: \"8c3a4f2b1e0d9a77\"\r\nIf-Modified-Since: Mon, 30 Nov 2026 10:45:42 GMT\r\n\r\n";

fn bench_parse(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_request_head");
    for (name, req) in [("ab", AB_REQUEST), ("browser", BROWSER_REQUEST)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let r = parse(black_box(req), &mut headers, 8192);
                black_box(r.map(|o| o.map(|r| r.head_len)).ok())
            })
        });
    }
    g.finish();
}

fn bench_normalize(c: &mut Criterion) {
    let mut g = c.benchmark_group("normalize_path");
    let mut scratch = Vec::new();
    let mut out = String::new();
    for (name, p) in [
        ("plain", "/test.jpg"),
        ("deep", "/static/css/vendor/bootstrap/5.3/bootstrap.min.css"),
        ("escaped_dots", "/a/./b/../c/%7Euser/%E2%9C%93/index.html"),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let r = normalize(black_box(p), &mut scratch, &mut out);
                black_box((r.is_ok(), out.len()))
            })
        });
    }
    g.finish();
}

fn bench_response_head(c: &mut Criterion) {
    let settings = std::rc::Rc::new(Settings::default());
    let date = *b"Mon, 30 Nov 2026 10:45:42 GMT";
    let mut out = Output::default();
    let mut r = ReplyData::boxed(std::rc::Rc::clone(&settings), false);
    c.bench_function("encode_response_head", |b| {
        b.iter(|| {
            out.clear();
            r.reset(std::rc::Rc::clone(&settings), false);
            r.start(200);
            r.header("ETag", b"\"8c3a4f2b1e0d9a77\"");
            r.header("Last-Modified", b"Mon, 30 Nov 2026 10:45:42 GMT");
            r.header("Accept-Ranges", b"bytes");
            r.header("Content-Type", b"image/jpeg");
            r.end_head(Some(25_190));
            let plan = Plan {
                framing: Framing::Length(25_190),
                keep_alive: true,
                body: true,
                minor: 1,
                http10: false,
            };
            write_reply(&mut out, &r, &date, &plan, true);
            black_box(out.mem.len())
        })
    });
}

fn bench_conditions(c: &mut Criterion) {
    let conf = r#"
server.document-root = "/srv/www"
$HTTP["host"] == "static.example.org" { server.document-root = "/srv/static" }
else $HTTP["host"] =~ "^(www\.)?example\.org$" { server.document-root = "/srv/example" }
$HTTP["url"] =^ "/images/" { expire.url = ( "" => "access plus 1 hours" ) }
$HTTP["remoteip"] == "10.0.0.0/8" { url.access-deny = ( "" ) }
"#;
    let config = match Config::parse_str(conf, "bench.conf", Path::new(".")) {
        Ok(c) => c,
        Err(e) => panic!("bench configuration: {e}"),
    };
    let headers = [httparse::EMPTY_HEADER; 0];
    let mut g = c.benchmark_group("resolve_conditions");
    for (name, host, url) in [
        ("no_block_matches", "other.test", "/index.html"),
        ("regex_host_and_prefix", "www.example.org", "/images/a.jpg"),
    ] {
        let facts = RequestFacts {
            listener: 0,
            remote_ip: Some(
                "127.0.0.1"
                    .parse()
                    .unwrap_or(std::net::Ipv4Addr::LOCALHOST.into()),
            ),
            scheme: "http",
            method: "GET",
            host,
            url,
            query: "",
            headers: &headers,
        };
        g.bench_function(name, |b| {
            b.iter(|| black_box(config.resolve(black_box(&facts)).settings.listener.port))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_parse,
    bench_normalize,
    bench_response_head,
    bench_conditions
);
criterion_main!(benches);

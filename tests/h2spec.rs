//! h2spec, the HTTP/2 conformance suite (2.6.0, `../shared/h2spec`), in
//! strict mode (`-S`, every case) with a 5 s time-out (`-o 5`) against
//! glint over TLS (ALPN h2) and over h2c (prior knowledge). TLS passes all
//! 147 cases; h2c all but 3.5/2, an invalid preface on a port that also
//! speaks HTTP/1.1, which gets an HTTP/1.1 400 (as from lighttpd and h2o).
//!
//! `.ci/run` builds h2spec offline into `$HOME/h2spec/h2spec` when it is
//! missing (`H2SPEC=/path` names another); without it these tests fail.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;

/// The one case h2c is expected to fail: (JUnit package, case).
const H2C_EXPECTED: (&str, &str) = ("http2/3.5", "Sends invalid connection preface");

/// Every case of h2spec 2.6.0 in strict mode.
const CASES: usize = 147;

fn h2spec_bin() -> PathBuf {
    let p = match std::env::var_os("H2SPEC") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join("h2spec/h2spec"),
    };
    assert!(
        p.is_file(),
        "h2spec is missing at {} (.ci/run builds it: ../shared/h2spec/build.sh {})",
        p.display(),
        p.display()
    );
    p
}

/// glint on 127.0.0.1: h2c (and HTTP/1) on its first port, TLS on `tls_port`.
fn server(d: &Docroot, certs: &TempDir, tls_port: u16) -> Server {
    make_cert(certs.path());
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.modules += ( \"mod_openssl\" )\nssl.pemfile = \"{}\"\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{tls_port}\" {{\n  ssl.engine = \"enable\"\n}}\n",
        d.root.display(),
        certs.join("server.pem").display()
    );
    Launch::new().config(&conf).listeners(2).start()
}

/// What one h2spec run came to: the cases run, and those that did not
/// pass as (package, case description).
struct Run {
    cases: usize,
    failed: Vec<(String, String)>,
    output: String,
}

/// Runs h2spec in strict mode on `port` (`tls`: over TLS, not verifying
/// the test certificate), the groups `only` (all when empty), with its
/// time-out `secs`; the result is read from its JUnit report.
fn h2spec(port: u16, tls: bool, secs: u32, only: &[&str]) -> Run {
    let dir = TempDir::new("h2spec");
    let report = dir.join("report.xml");
    let mut cmd = Command::new("timeout");
    cmd.arg("300")
        .arg(h2spec_bin())
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-S"])
        .args(["-o", &secs.to_string()])
        .arg("-j")
        .arg(&report);
    if tls {
        cmd.args(["-t", "-k"]);
    }
    let out = cmd.args(only).output().expect("h2spec");
    let output = String::from_utf8_lossy(&out.stdout).into_owned();
    let xml = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no h2spec report ({e}):\n{output}"));
    let (cases, failed) = junit(&xml);
    Run {
        cases,
        failed,
        output,
    }
}

/// The test cases of a JUnit report and those with an error, a failure
/// or skipped.
fn junit(xml: &str) -> (usize, Vec<(String, String)>) {
    let attr = |tag: &str, name: &str| -> String {
        let key = format!("{name}=\"");
        tag.find(&key)
            .map(|i| {
                let rest = &tag[i + key.len()..];
                rest[..rest.find('"').unwrap_or(rest.len())].to_string()
            })
            .unwrap_or_default()
    };
    let mut cases = 0;
    let mut failed = Vec::new();
    for piece in xml.split("<testcase ").skip(1) {
        cases += 1;
        let tag = &piece[..piece.find('>').unwrap_or(piece.len())];
        let body = &piece[..piece.find("</testcase>").unwrap_or(piece.len())];
        if body.contains("<error") || body.contains("<failure") || body.contains("<skipped") {
            failed.push((attr(tag, "package"), attr(tag, "classname")));
        }
    }
    (cases, failed)
}

#[test]
fn h2spec_strict_passes_every_case_over_tls_and_all_but_the_shared_port_preface_over_h2c() {
    let d = Docroot::new();
    d.file("index.html", b"<h1>h2spec</h1>\n");
    let certs = TempDir::new("h2spec-certs");
    let tls_port = free_port();
    let s = server(&d, &certs, tls_port);
    let tls = h2spec(tls_port, true, 5, &[]);
    assert_eq!(
        (tls.cases, tls.failed.as_slice()),
        (CASES, &[][..]),
        "over TLS:\n{}",
        tls.output
    );
    let h2c = h2spec(s.port, false, 5, &[]);
    let expected = [(H2C_EXPECTED.0.to_string(), H2C_EXPECTED.1.to_string())];
    assert_eq!(
        (h2c.cases, h2c.failed.as_slice()),
        (CASES, &expected[..]),
        "over h2c:\n{}",
        h2c.output
    );
}

/// The cases whose frames come after a request glint can answer at once
/// (a static file on HEADERS): the stream is still judged when they come,
/// so the errors are reported at once, whatever the timing. Five runs
/// each, with a 1 s time-out: a case that passed only because the idle
/// connection closed (5 s) fails here.
#[test]
fn the_cases_after_an_early_answer_pass_every_time_without_waiting() {
    let d = Docroot::new();
    d.file("index.html", b"<h1>h2spec</h1>\n");
    let certs = TempDir::new("h2spec-certs");
    let tls_port = free_port();
    let s = server(&d, &certs, tls_port);
    let groups = ["http2/5.1", "http2/6.9", "http2/8.1"];
    for round in 1..=5 {
        for (port, tls) in [(s.port, false), (tls_port, true)] {
            let r = h2spec(port, tls, 1, &groups);
            assert!(
                r.cases > 20 && r.failed.is_empty(),
                "round {round}, tls={tls}: {} cases, failed {:?}\n{}",
                r.cases,
                r.failed,
                r.output
            );
        }
    }
}

//! mod_magnet: the scripts of lighttpd's documentation and wiki (a front
//! controller, secdownload and evasive and usertrack replacements, a
//! maintenance page, header edits, restarts, the older `lighty.*`
//! interface, the `lighty.c` helpers) run on glint and on lighttpd 1.4.69
//! with Debian's lighttpd-modules-lua, the same requests sent to both and
//! their answers compared (status, body, the headers that matter). Then
//! what only glint promises: a runaway or memory-hungry script costs its
//! own request only, a script error is a 500 with the traceback logged.

mod common;

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use common::*;

/// The same scripts and files served by glint and by lighttpd.
struct Both {
    dir: TempDir,
    glint: Server,
    lighttpd: Option<Child>,
    lighttpd_port: u16,
}

impl Drop for Both {
    fn drop(&mut self) {
        if let Some(mut c) = self.lighttpd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The configuration both read: `extra` names the scripts (`@DIR@` is
/// the test's directory).
fn conf_text(dir: &Path, port: u16, log: &str, extra: &str) -> String {
    let d = dir.display().to_string();
    format!(
        "server.document-root = \"{d}/root\"\nserver.bind = \"127.0.0.1\"\n\
         server.port = {port}\nserver.errorlog = \"{d}/{log}\"\n\
         server.modules += ( \"mod_magnet\" )\nserver.stat-cache-engine = \"disable\"\nindex-file.names = ( \"index.html\" )\n\
         mimetype.assign = ( \".txt\" => \"text/plain\", \".html\" => \"text/html\" )\n{}\n",
        extra.replace("@DIR@", &d)
    )
}

/// Writes the fixture files and scripts, starts both servers (lighttpd
/// only when `compare`).
fn start(extra: &str, compare: bool) -> Both {
    let dir = TempDir::new("magnet");
    let d = dir.path().display().to_string();
    for sub in ["root", "root/new", "root/protected", "scripts"] {
        std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    for (name, body) in [
        ("root/index.html", "<p>front controller</p>\n"),
        ("root/a.txt", "file a\n"),
        ("root/new/a.txt", "new a\n"),
        ("root/new/b.txt", "new b\n"),
        ("root/protected/report.txt", "the secret report\n"),
        ("maintenance.html", "<h1>back soon</h1>\n"),
    ] {
        std::fs::write(dir.join(name), body).expect("fixture");
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/magnet");
    for e in std::fs::read_dir(&src).expect("tests/magnet") {
        let p = e.expect("entry").path();
        let text = std::fs::read_to_string(&p).expect("script");
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        std::fs::write(dir.join("scripts").join(name), text.replace("@DIR@", &d)).expect("copy");
    }
    let conf = dir.join("glint.conf");
    std::fs::write(&conf, conf_text(dir.path(), 0, "glint-error.log", extra)).expect("conf");
    let glint = Launch::new().config_file(&conf).start();
    let (lighttpd, lighttpd_port) = if compare {
        let port = free_port();
        let conf = dir.join("lighttpd.conf");
        let text = conf_text(dir.path(), port, "lighttpd-error.log", extra);
        std::fs::write(&conf, text).expect("conf");
        (Some(lighttpd_on(&conf, port)), port)
    } else {
        (None, 0)
    };
    Both {
        dir,
        glint,
        lighttpd,
        lighttpd_port,
    }
}

/// lighttpd with `conf`, accepting on `port`.
fn lighttpd_on(conf: &Path, port: u16) -> Child {
    start_lighttpd(conf, port).unwrap_or_else(|e| {
        panic!("{e} (lighttpd with mod_magnet: apt-get install lighttpd lighttpd-modules-lua)")
    })
}

fn send(port: u16, request: &[u8]) -> Response {
    let mut c = Conn::connect(port);
    c.send(request).expect("send");
    c.read_response(request.starts_with(b"HEAD "))
        .unwrap_or_else(|e| panic!("{e}: {}", show(request)))
}

impl Both {
    /// `request` to glint and to lighttpd: the same status and body, and
    /// the same values of `headers` (absent on both counts as the same).
    fn ask(&self, request: &[u8], headers: &[&str]) -> Response {
        let g = send(self.glint.port, request);
        if self.lighttpd.is_some() {
            let l = send(self.lighttpd_port, request);
            let what = show(request);
            assert_eq!(
                g.status,
                l.status,
                "status of {what}\nglint: {}\nlighttpd: {}",
                g.describe(),
                l.describe()
            );
            assert_eq!(show(&g.body), show(&l.body), "body of {what}");
            for h in headers {
                assert_eq!(g.header(h), l.header(h), "{h} of {what}");
            }
        }
        g
    }

    fn glint_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("glint-error.log")).unwrap_or_default()
    }
}

fn get_req(path: &str, extra: &[&str]) -> Vec<u8> {
    let mut s = format!("GET {path} HTTP/1.1\r\nHost: test\r\n");
    for h in extra {
        s.push_str(h);
        s.push_str("\r\n");
    }
    s.push_str("Connection: close\r\n\r\n");
    s.into_bytes()
}

#[test]
fn rewrite_to_index_when_the_file_does_not_exist() {
    let b = start(
        "magnet.attract-physical-path-to = ( \"@DIR@/scripts/rewrite_index.lua\" )",
        true,
    );
    let r = b.ask(&get_req("/a.txt", &[]), &["Content-Type"]);
    assert_eq!((r.status, show(&r.body).as_str()), (200, "file a\n"));
    let r = b.ask(&get_req("/no/such/page?x=1", &[]), &["Content-Type"]);
    assert_eq!(
        (r.status, show(&r.body).as_str()),
        (200, "<p>front controller</p>\n")
    );
    assert_eq!(r.header("Content-Type"), Some("text/html"));
    let r = b.ask(&get_req("/new/", &[]), &[]);
    assert_eq!(r.status, 200, "{}", r.describe());
}

/// The link secdownload.lua accepts for `rel` at `time`.
fn signed(rel: &str, time: u64) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let ts = format!("{time:x}");
    let key = b"correct horse battery staple";
    let mut k = key.to_vec();
    k.resize(64, 0);
    let pad = |x: u8| k.iter().map(|b| b ^ x).collect::<Vec<u8>>();
    let inner = sha2::Sha256::digest([pad(0x36), format!("{rel}{ts}").into_bytes()].concat());
    let mac = sha2::Sha256::digest([pad(0x5c), inner.to_vec()].concat());
    let mac = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac);
    format!("/dl/{mac}/{ts}{rel}")
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

#[test]
fn secdownload_replacement_checks_the_hmac_and_the_expiry() {
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/secdownload.lua\" )",
        true,
    );
    let now = unix_now();
    let good = signed("/report.txt", now);
    let r = b.ask(&get_req(&good, &[]), &["Content-Type"]);
    assert_eq!(
        (r.status, show(&r.body).as_str()),
        (200, "the secret report\n")
    );
    // The attacker's side: a forged MAC, a MAC for another file, an
    // expired link, the file asked for directly, a path escaping the tree.
    let forged = good.replacen("/dl/", "/dl/A", 1);
    assert_eq!(b.ask(&get_req(&forged, &[]), &[]).status, 403);
    let other = signed("/report.txt", now).replace("/report.txt", "/other.txt");
    assert_eq!(b.ask(&get_req(&other, &[]), &[]).status, 403);
    let expired = signed("/report.txt", now - 3600);
    assert_eq!(b.ask(&get_req(&expired, &[]), &[]).status, 410);
    assert_eq!(
        b.ask(&get_req("/protected/report.txt", &[]), &[]).status,
        403
    );
    let escape = signed("/../a.txt", now);
    let r = b.ask(&get_req(&escape, &[]), &[]);
    assert_ne!(show(&r.body), "file a\n", "{}", r.describe());
    assert_eq!(b.ask(&get_req("/a.txt", &[]), &[]).status, 200);
}

#[test]
fn evasive_replacement_limits_each_client() {
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/evasive.lua\" )",
        true,
    );
    for _ in 0..3 {
        assert_eq!(b.ask(&get_req("/a.txt", &[]), &[]).status, 200);
    }
    let r = b.ask(&get_req("/a.txt", &[]), &["Retry-After", "Content-Type"]);
    assert_eq!(r.status, 429, "{}", r.describe());
    assert_eq!(show(&r.body), "too many requests from 127.0.0.1\n");
    assert_eq!(r.header("Retry-After"), Some("60"));
}

#[test]
fn usertrack_replacement_sets_a_cookie_once() {
    let b = start(
        "magnet.attract-response-start-to = ( \"@DIR@/scripts/usertrack.lua\" )",
        true,
    );
    let r = b.ask(&get_req("/a.txt", &[]), &[]);
    let cookie = r.header("Set-Cookie").unwrap_or_default();
    let id = cookie
        .strip_prefix("TRACKID=")
        .and_then(|c| c.strip_suffix("; Path=/; Max-Age=3600"))
        .unwrap_or_else(|| panic!("cookie {cookie:?}"));
    assert!(
        id.len() == 32 && id.bytes().all(|c| c.is_ascii_hexdigit()),
        "{id}"
    );
    let r = b.ask(
        &get_req("/a.txt", &["Cookie: a=1; TRACKID=abc"]),
        &["Set-Cookie"],
    );
    assert_eq!(r.header("Set-Cookie"), None);
}

#[test]
fn maintenance_page_while_the_flag_exists() {
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/maintenance.lua\" )",
        true,
    );
    assert_eq!(b.ask(&get_req("/a.txt", &[]), &[]).status, 200);
    std::fs::write(b.dir.join("maintenance.flag"), "").expect("flag");
    let r = b.ask(
        &get_req("/a.txt", &[]),
        &["Retry-After", "Content-Type", "Content-Length"],
    );
    assert_eq!(
        (r.status, show(&r.body).as_str()),
        (503, "<h1>back soon</h1>\n")
    );
    std::fs::remove_file(b.dir.join("maintenance.flag")).expect("unflag");
    assert_eq!(b.ask(&get_req("/a.txt", &[]), &[]).status, 200);
}

#[test]
fn request_and_response_header_edits() {
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/request_headers.lua\" )\n\
         magnet.attract-response-start-to = ( \"@DIR@/scripts/response_headers.lua\" )",
        true,
    );
    let keys = [
        "X-Frame-Options",
        "Cache-Control",
        "ETag",
        "X-Seen-Who",
        "X-Seen-Drop",
        "X-Type",
        "Content-Type",
    ];
    let r = b.ask(&get_req("/a.txt", &["X-Drop: 1"]), &keys);
    assert_eq!(r.header("X-Frame-Options"), Some("DENY"));
    assert_eq!(r.header("ETag"), None);
    assert_eq!(r.header("X-Seen-Who"), Some("magnet"));
    assert_eq!(r.header("X-Seen-Drop"), Some("none"));
    assert_eq!(r.header("X-Type"), Some("text/plain"));
    // (glint's error pages say `text/html; charset=utf-8`.)
    let r = b.ask(&get_req("/missing", &[]), &keys[..5]);
    assert_eq!(r.status, 404);
}

#[test]
fn request_reads_as_lighttpd_gives_them() {
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/reads.lua\" )",
        true,
    );
    let req = get_req(
        "/p/q.html?a=1&b",
        &["X-Twice: one", "X-Once: solo", "X-Twice: two"],
    );
    let r = b.ask(&req, &["Content-Type"]);
    assert_eq!(r.status, 200);
    has_lines(
        &r.body,
        &[
            "twice=one, two",
            "case=solo",
            "missing=nil",
            "numkey=nil",
            "host=test",
            "path=/p/q.html",
            "query=a=1&b",
            "method=GET",
            "env=/p/q.html",
            "unknown=nil",
            "attrnum=nil",
        ],
    );
}

/// What a script reads after its own writes and after a restart, and a
/// file's attributes after the path changed: the request is read when the
/// script asks, so these are where a stale or a too-new value would show.
#[test]
fn reads_after_writes_and_restarts_as_lighttpd_gives_them() {
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/lazy.lua\" )\n\
         magnet.attract-physical-path-to = ( \"@DIR@/scripts/lazy_physical.lua\" )",
        true,
    );
    let r = b.ask(&get_req("/lazy?q=1", &["X-Client: c1"]), &["Content-Type"]);
    assert_eq!(r.status, 200, "{}", r.describe());
    has_lines(
        &r.body,
        &[
            "first path=/changed",
            "first uri=/lazy?q=1",
            "first uri2=/lazy/again?q=2",
            "first raw2=/lazy/again",
            "first lent=set",
            "first client=c1",
            "first client2=nil",
            "uri=/lazy/again?q=2",
            "orig=/lazy?q=1",
            "query=q=2",
            "pass=1",
            "client=nil",
        ],
    );
    std::fs::write(b.dir.join("root/lazy.txt"), "lazy\n").expect("fixture");
    let r = b.ask(&get_req("/lazy.txt?x=y", &[]), &["Content-Type"]);
    assert_eq!(r.status, 200, "{}", r.describe());
    has_lines(
        &r.body,
        &[
            "physical=true",
            "path=/other.txt",
            "physical3=true",
            "query=x=y",
        ],
    );
}

#[test]
fn restart_request_runs_the_new_target_and_is_bounded() {
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/restart.lua\" )",
        true,
    );
    let r = b.ask(&get_req("/old/b.txt", &[]), &["Content-Type"]);
    assert_eq!((r.status, show(&r.body).as_str()), (200, "new b\n"));
    // Restarting without end: glint answers 500 after 10 restarts
    // (lighttpd gives up at the same count and closes the connection).
    let r = send(b.glint.port, &get_req("/loop", &[]));
    assert_eq!(r.status, 500);
    assert!(
        b.glint_log().contains("too many request restarts"),
        "{}",
        b.glint_log()
    );
}

#[test]
fn older_interface_and_helpers() {
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/legacy.lua\" )",
        true,
    );
    let r = b.ask(
        &get_req("/legacy", &["User-Agent: probe/1"]),
        &["Content-Type", "X-Method"],
    );
    assert_eq!(
        (r.status, show(&r.body).as_str()),
        (200, "agent=probe/1\nfile a\n")
    );
    let r = b.ask(&get_req("/helpers", &[]), &["Content-Type"]);
    assert_eq!(r.status, 200, "{}", r.describe());
    let body = show(&r.body);
    assert!(body.starts_with("aGVsbG8/\n"), "{body}");
    assert!(
        body.contains("A9993E364706816ABA3E25717850C26C9CD0D89D"),
        "{body}"
    );
    assert!(
        body.contains("F7BC83F430538424B13298E6AA6FB143EF4D59A14946175997479DBC2D1A3CD8"),
        "{body}"
    );
}

#[test]
fn a_script_error_is_a_500_with_the_traceback_logged() {
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/error.lua\" )",
        true,
    );
    assert_eq!(b.ask(&get_req("/broken", &[]), &[]).status, 500);
    assert_eq!(b.ask(&get_req("/a.txt", &[]), &[]).status, 200);
    let log = b.glint_log();
    assert!(
        log.contains("error.lua:4:") && log.contains("attempt to index"),
        "{log}"
    );
    assert!(log.contains("stack traceback"), "{log}");
}

#[test]
fn a_runaway_script_costs_its_own_request_only() {
    // lighttpd has no bound on a script: glint only.
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/runaway.lua\" )",
        false,
    );
    let port = b.glint.port;
    for path in ["/spin", "/hog", "/co"] {
        let spinner = std::thread::spawn(move || {
            let t = Instant::now();
            (send(port, &get_req(path, &[])).status, t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(20));
        // Other clients meanwhile: answered, each within one time slice.
        let mut worst = Duration::ZERO;
        for _ in 0..5 {
            let t = Instant::now();
            assert_eq!(send(port, &get_req("/a.txt", &[])).status, 200);
            worst = worst.max(t.elapsed());
        }
        let (status, took) = spinner.join().expect("spinner");
        assert_eq!(status, 500, "{path}");
        assert!(took < Duration::from_secs(3), "{path} took {took:?}");
        assert!(
            worst < Duration::from_secs(1),
            "{path}: others waited {worst:?}"
        );
    }
    let log = b.glint_log();
    assert!(
        log.contains("runaway.lua:") && log.contains("ran longer than"),
        "{log}"
    );
    assert!(
        log.contains("not enough memory") || log.contains("memory"),
        "{log}"
    );
    // The script's state still serves, coroutines too.
    assert_eq!(send(port, &get_req("/a.txt", &[])).status, 200);
    let r = send(port, &get_req("/co-ok", &[]));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-yielded"), Some("7"));
}

#[test]
fn no_magnet_option_means_no_lua() {
    // mod_magnet loaded without any script: plain answers.
    let b = start("", true);
    let r = b.ask(&get_req("/a.txt", &[]), &["Content-Type", "Last-Modified"]);
    assert_eq!(r.status, 200);
    // A script that does not exist: 500, and logged.
    let b = start(
        "magnet.attract-raw-url-to = ( \"@DIR@/scripts/none.lua\" )",
        true,
    );
    assert_eq!(b.ask(&get_req("/a.txt", &[]), &[]).status, 500);
    assert!(b.glint_log().contains("none.lua"), "{}", b.glint_log());
}

#[test]
fn a_changed_script_is_loaded_again_and_options_follow_conditionals() {
    let b = start(
        "$HTTP[\"url\"] =~ \"^/dyn\" {\n  magnet.attract-raw-url-to = ( \"@DIR@/scripts/dyn.lua\" )\n}",
        true,
    );
    let script = b.dir.join("scripts/dyn.lua");
    std::fs::write(&script, "lighty.r.resp_body.set(\"one\\n\")\nreturn 200\n").expect("v1");
    let r = b.ask(&get_req("/dyn", &[]), &[]);
    assert_eq!((r.status, show(&r.body).as_str()), (200, "one\n"));
    // Outside the block no script runs.
    assert_eq!(show(&b.ask(&get_req("/a.txt", &[]), &[]).body), "file a\n");
    std::fs::write(
        &script,
        "lighty.r.resp_body.set(\"two, changed\\n\")\nreturn 201\n",
    )
    .expect("v2");
    let r = b.ask(&get_req("/dyn", &[]), &[]);
    assert_eq!((r.status, show(&r.body).as_str()), (201, "two, changed\n"));
    // Replaced as editors save: a new file renamed over the old one.
    let tmp = b.dir.join("scripts/dyn.lua.new");
    std::fs::write(&tmp, "lighty.r.resp_body.set(\"three\\n\")\nreturn 202\n").expect("v3");
    std::fs::rename(&tmp, &script).expect("rename");
    let r = b.ask(&get_req("/dyn", &[]), &[]);
    assert_eq!((r.status, show(&r.body).as_str()), (202, "three\n"));
    // And changed again in place after that.
    std::fs::write(&script, "return 204\n").expect("v4");
    assert_eq!(b.ask(&get_req("/dyn", &[]), &[]).status, 204);
}

/// Every line of `want` is a whole line of the body.
fn has_lines(body: &[u8], want: &[&str]) {
    let body = String::from_utf8_lossy(body);
    for w in want {
        assert!(body.lines().any(|l| l == *w), "{w} in {body}");
    }
}

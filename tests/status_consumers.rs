//! mod_status and glint's metrics read by the programs that consume them,
//! each started by the test on 127.0.0.1 (Debian packages `.ci/run`
//! installs): `promtool check metrics` on `glint.metrics-url`; a
//! Prometheus server scraping it every second, asked through its HTTP API
//! for glint's series; collectd's apache plugin reading `?auto` into CSV
//! files; headless Chromium rendering the HTML page of a server under
//! load (the screenshot is kept in target/status-page.png).

mod common;

use common::*;
use std::io::Write as _;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn start(d: &Docroot) -> Server {
    let conf = format!(
        "server.document-root = \"{}\"\n\
         server.max-connections = 128\n\
         server.modules = ( \"mod_status\" )\n\
         status.status-url = \"/server-status\"\n\
         glint.metrics-url = \"/metrics\"\n",
        d.root.display()
    );
    Launch::new()
        .config(&conf)
        .args(&["--bind", "127.0.0.1", "--port", "0"])
        .start()
}

fn docroot() -> Docroot {
    let d = Docroot::new();
    d.file("index.html", b"hello\n");
    d
}

fn body(s: &Server, path: &str) -> String {
    let r = s.get(path).unwrap_or_else(|e| panic!("GET {path}: {e}"));
    assert_eq!(r.status, 200, "{}", r.describe());
    String::from_utf8_lossy(&r.body).into_owned()
}

/// The value of the sample line starting with `series` (name and labels).
fn sample(page: &str, series: &str) -> f64 {
    page.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{page}"))
}

fn tool(name: &str) -> &str {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "no {name}: .ci/run installs it (apt-get install prometheus collectd-core chromium)"
    );
    name
}

#[test]
fn promtool_accepts_the_metrics_and_counters_count() {
    let d = docroot();
    let s = start(&d);
    body(&s, "/index.html");
    let r = s.get("/missing").unwrap();
    assert_eq!(r.status, 404);
    let page = body(&s, "/metrics");
    let mut check = Command::new(tool("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool: {}{}\n{page}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        sample(
            &page,
            "glint_requests_total{protocol=\"http1\",code=\"2xx\"}"
        ),
        1.0
    );
    assert_eq!(
        sample(
            &page,
            "glint_requests_total{protocol=\"http1\",code=\"4xx\"}"
        ),
        1.0
    );
    assert!(sample(&page, "glint_received_bytes_total") > 0.0);
    assert_eq!(sample(&page, "glint_connection_limit"), 128.0);
    assert!(sample(&page, "process_resident_memory_bytes") > 1e5);
    assert!(sample(&page, "process_open_fds") >= 3.0);
    assert!(
        page.contains("# TYPE glint_requests_total counter\n"),
        "{page}"
    );
    // The next scrape has counted the first.
    let again = body(&s, "/metrics");
    assert_eq!(
        sample(
            &again,
            "glint_requests_total{protocol=\"http1\",code=\"2xx\"}"
        ),
        2.0
    );
}

/// GET `path` from `port` on 127.0.0.1 with a bare HTTP/1.0 request.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = Vec::new();
    std::io::Read::read_to_end(&mut c, &mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

#[test]
fn prometheus_scrapes_the_series_every_second() {
    let d = docroot();
    let s = start(&d);
    body(&s, "/index.html");
    let dir = TempDir::new("prometheus");
    let conf = dir.join("prometheus.yml");
    std::fs::write(
        &conf,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: glint\n    metrics_path: /metrics\n\
             \x20   static_configs:\n      - targets: ['127.0.0.1:{}']\n",
            s.port
        ),
    )
    .unwrap();
    let port = free_port();
    let mut prom = Command::new(tool("prometheus"))
        .arg(format!("--config.file={}", conf.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus");
    let query =
        "/api/v1/query?query=glint_requests_total%7Bprotocol%3D%22http1%22%2Ccode%3D%222xx%22%7D";
    let mut answer = String::new();
    let found = wait_for(Duration::from_secs(15), || {
        answer = http_get(port, query).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&answer).unwrap_or_default();
        v["data"]["result"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    });
    let _ = prom.kill();
    let _ = prom.wait();
    assert!(found, "Prometheus has no glint series: {answer}");
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let r = &v["data"]["result"][0];
    assert_eq!(r["metric"]["job"], "glint", "{answer}");
    let n: f64 = r["value"][1]
        .as_str()
        .and_then(|x| x.parse().ok())
        .unwrap_or(-1.0);
    assert!(n >= 1.0, "{answer}");
}

#[test]
fn collectd_apache_plugin_reads_auto() {
    let d = docroot();
    let s = start(&d);
    for _ in 0..5 {
        body(&s, "/index.html");
    }
    let dir = TempDir::new("collectd");
    let conf = dir.join("collectd.conf");
    let base = dir.path().display().to_string();
    std::fs::write(
        &conf,
        format!(
            "Hostname \"glinttest\"\nFQDNLookup false\nInterval 1\n\
             BaseDir \"{base}\"\nPIDFile \"{base}/collectd.pid\"\n\
             PluginDir \"/usr/lib/collectd\"\nTypesDB \"/usr/share/collectd/types.db\"\n\
             LoadPlugin apache\nLoadPlugin csv\n\
             <Plugin apache>\n  <Instance \"glint\">\n    URL \"http://127.0.0.1:{}/server-status?auto\"\n\
             \x20   Server \"lighttpd\"\n  </Instance>\n</Plugin>\n\
             <Plugin csv>\n  DataDir \"{base}/csv\"\n  StoreRates false\n</Plugin>\n",
            s.port
        ),
    )
    .unwrap();
    let mut cd = Command::new(tool("collectd"))
        .args(["-f", "-C"])
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("collectd");
    let csv = dir.join("csv/glinttest/apache-glint");
    let values = |prefix: &str| -> Vec<f64> {
        let Ok(entries) = std::fs::read_dir(&csv) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .flat_map(|e| {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                text.lines()
                    .skip(1)
                    .filter_map(|l| l.split(',').nth(1)?.parse().ok())
                    .collect::<Vec<f64>>()
            })
            .collect()
    };
    let ok = wait_for(Duration::from_secs(10), || {
        values("apache_requests-").iter().any(|&n| n >= 5.0)
            && !values("apache_idle_workers-").is_empty()
            && !values("apache_scoreboard-handle_request-").is_empty()
    });
    let _ = cd.kill();
    let out = cd.wait_with_output().map(|o| o.stderr).unwrap_or_default();
    assert!(
        ok,
        "collectd wrote {:?} / {:?}; stderr {}",
        values("apache_requests-"),
        values("apache_idle_workers-"),
        String::from_utf8_lossy(&out)
    );
    // BusyServers + IdleServers = server.max-connections.
    let idle = values("apache_idle_workers-");
    assert!(
        idle.iter().all(|&n| (120.0..128.0).contains(&n)),
        "{idle:?}"
    );
    // The connection asking is handling its request on every read.
    let handling = values("apache_scoreboard-handle_request-");
    assert!(handling.iter().all(|&n| n >= 1.0), "{handling:?}");
}

#[test]
fn chromium_renders_the_page_of_a_server_under_load() {
    let browser = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("no chromium: .ci/run installs it");
    let d = docroot();
    d.file("big.bin", &vec![b'x'; 4 << 20]);
    let s = start(&d);
    // Load: connections mid-request, kept alive, and slow readers of a
    // large file, while the page is rendered.
    let mut held = Vec::new();
    for i in 0..6 {
        let mut c = s.connect();
        match i % 3 {
            0 => c
                .send(b"GET /index.html HTTP/1.1\r\nHost: loaded.example\r\n")
                .unwrap(),
            1 => {
                c.send(b"GET /index.html HTTP/1.1\r\nHost: loaded.example\r\n\r\n")
                    .unwrap();
                c.read_response(false).unwrap();
            }
            _ => c
                .send(b"GET /big.bin HTTP/1.1\r\nHost: loaded.example\r\n\r\n")
                .unwrap(),
        }
        held.push(c);
    }
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
    let _ = std::fs::remove_file(&shot);
    let profile = TempDir::new("chromium");
    let started = Instant::now();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            // No calls home: on a closed network they are refused and
            // slow the start.
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1200,1100",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("http://127.0.0.1:{}/server-status", s.port))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let why = format!(
        "after {:?}: {}\n{dom}",
        started.elapsed(),
        String::from_utf8_lossy(&out.stderr)
    );
    // The browser's parsed page has the table with every connection.
    assert!(dom.contains("<h2>Connections</h2>"), "{why}");
    assert!(dom.matches("loaded.example").count() >= 4, "{why}");
    assert!(
        dom.contains(">read</td>") && dom.contains(">keep-alive</td>"),
        "{why}"
    );
    let _ = std::fs::remove_dir_all(profile.path());
    drop(held);
}

//! glint's own ACME client against a real ACME server: Debian's `pebble`
//! (with `pebble-challtestsrv` as its DNS, answering 127.0.0.1 for every
//! name), started here on loopback with `PEBBLE_VA_NOSLEEP=1` and its
//! validation ports set to glint's. The certificates glint serves are
//! checked against pebble's root with curl and Python's `ssl`. Also:
//! certificate files replaced under a running glint (certbot's way).

mod common;

use common::*;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a first certificate may take: pebble validates at once
/// (PEBBLE_VA_NOSLEEP); the rest is a dozen requests on loopback.
const ISSUE_LIMIT: Duration = Duration::from_secs(30);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn sh(dir: &Path, script: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .expect("sh");
    assert!(
        ok.success(),
        "script failed in {}:\n{script}",
        dir.display()
    );
}

/// A test CA and a certificate signed by it for `names` (`DNS:x,IP:y`),
/// as `<leaf>.crt` / `<leaf>.key`; the CA as `<ca>.pem`.
fn make_ca_and_leaf(dir: &Path, ca: &str, leaf: &str, san: &str) {
    sh(
        dir,
        &format!(
            "set -e
[ -f {ca}.pem ] || openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3 \
  -subj /CN={ca} -keyout {ca}.key -out {ca}.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN={leaf} \
  -keyout {leaf}.key -out {leaf}.csr 2>/dev/null
printf 'subjectAltName={san}\\n' > {leaf}.ext
openssl x509 -req -in {leaf}.csr -CA {ca}.pem -CAkey {ca}.key -CAcreateserial -days 3 \
  -extfile {leaf}.ext -out {leaf}.crt 2>/dev/null"
        ),
    );
}

/// A process killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tool(name: &str) -> Command {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{name} is not installed (apt-get install pebble; .ci/run does)"
    );
    Command::new(name)
}

/// pebble and its DNS, on loopback.
struct Pebble {
    ca: Option<Proc>,
    _dns: Proc,
    conf: PathBuf,
    dns_port: u16,
    port: u16,
    /// The ACME directory URL.
    url: String,
    mgmt: u16,
    /// The CA file for pebble's own HTTPS (for glint.acme.ca-file).
    tls_ca: PathBuf,
}

impl Pebble {
    /// Starts pebble validating http-01 on `http_port` and tls-alpn-01 on
    /// `tls_port`, issuing certificates valid for `validity` seconds
    /// (pebble's default, five years, with `None`).
    fn start(dir: &Path, http_port: u16, tls_port: u16, validity: Option<u64>) -> Pebble {
        make_ca_and_leaf(dir, "pebble-ca", "pebble", "DNS:localhost,IP:127.0.0.1");
        let (port, mgmt, dns) = (free_port(), free_port(), free_port());
        let mut conf = serde_like_json(&[
            ("listenAddress", format!("\"127.0.0.1:{port}\"")),
            ("managementListenAddress", format!("\"127.0.0.1:{mgmt}\"")),
            (
                "certificate",
                format!("\"{}\"", dir.join("pebble.crt").display()),
            ),
            (
                "privateKey",
                format!("\"{}\"", dir.join("pebble.key").display()),
            ),
            ("httpPort", http_port.to_string()),
            ("tlsPort", tls_port.to_string()),
            ("ocspResponderURL", "\"\"".into()),
            ("externalAccountBindingRequired", "false".into()),
        ]);
        if let Some(v) = validity {
            conf = conf.replace("}}", &format!(", \"certificateValidityPeriod\": {v} }}}}"));
        }
        let conf_path = dir.join("pebble.json");
        std::fs::write(&conf_path, conf).unwrap();
        let dns_proc = tool("pebble-challtestsrv")
            .args([
                "-dns01",
                &format!("127.0.0.1:{dns}"),
                "-http01",
                "",
                "-https01",
                "",
            ])
            .args([
                "-tlsalpn01",
                "",
                "-defaultIPv6",
                "",
                "-defaultIPv4",
                "127.0.0.1",
            ])
            .args(["-management", &format!("127.0.0.1:{}", free_port())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pebble-challtestsrv");
        let mut p = Pebble {
            ca: None,
            _dns: Proc(dns_proc),
            conf: conf_path,
            dns_port: dns,
            port,
            url: format!("https://127.0.0.1:{port}/dir"),
            mgmt,
            tls_ca: dir.join("pebble-ca.pem"),
        };
        p.up();
        p
    }

    /// Starts the CA (again, on the same ports: a new root, no accounts).
    fn up(&mut self) {
        let ca = tool("pebble")
            .arg("-config")
            .arg(&self.conf)
            .args([
                "-dnsserver",
                &format!("127.0.0.1:{}", self.dns_port),
                "-strict",
            ])
            .env("PEBBLE_VA_NOSLEEP", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pebble");
        self.ca = Some(Proc(ca));
        let (port, mgmt) = (self.port, self.mgmt);
        let up = wait_for(TIMEOUT, || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
                && TcpStream::connect(("127.0.0.1", mgmt)).is_ok()
        });
        assert!(up, "pebble did not start listening on {port}/{mgmt}");
    }

    /// Stops the CA: the ACME server is down.
    fn down(&mut self) {
        self.ca = None;
    }

    /// pebble's root for the certificates it issues (made anew at each start).
    fn root(&self, dir: &Path) -> PathBuf {
        let path = dir.join(format!("root-{}.pem", self.mgmt));
        let o = Command::new("curl")
            .args(["-sS", "--max-time", "10", "--cacert"])
            .arg(&self.tls_ca)
            .arg("-o")
            .arg(&path)
            .arg(format!("https://127.0.0.1:{}/roots/0", self.mgmt))
            .output()
            .expect("curl");
        assert!(o.status.success(), "pebble's root: {}", text(&o.stderr));
        path
    }
}

/// A one-level JSON object `{"pebble": {...}}` from pairs of raw values.
fn serde_like_json(pairs: &[(&str, String)]) -> String {
    let body: Vec<String> = pairs.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
    format!("{{\"pebble\": {{ {} }}}}", body.join(", "))
}

/// glint's configuration: a plain listener (when `http` is some), a TLS
/// one, the host names, and the ACME options with `extra`.
fn glint_conf(
    root: &Path,
    http: Option<u16>,
    tls: u16,
    pebble: &Pebble,
    store: &Path,
    extra: &str,
) -> String {
    let plain = match http {
        Some(p) => format!("server.port = {p}\n"),
        None => format!("server.port = {tls}\nssl.engine = \"enable\"\n"),
    };
    let tls_block = match http {
        Some(_) => {
            format!("$SERVER[\"socket\"] == \"127.0.0.1:{tls}\" {{ ssl.engine = \"enable\" }}\n")
        }
        None => String::new(),
    };
    format!(
        "server.document-root = \"{root}\"\nserver.bind = \"127.0.0.1\"\n{plain}{tls_block}\
         status.statistics-url = \"/stats\"\n\
         $HTTP[\"host\"] == \"a.glint.test\" {{ }}\n$HTTP[\"host\"] == \"b.glint.test\" {{ }}\n\
         glint.acme.activate = \"enable\"\nglint.acme.directory = \"{url}\"\n\
         glint.acme.ca-file = \"{ca}\"\nglint.acme.contact = \"admin@glint.test\"\n\
         glint.acme.agree-tos = \"enable\"\nglint.acme.storage = \"{store}\"\n{extra}\n",
        root = root.display(),
        url = pebble.url,
        ca = pebble.tls_ca.display(),
        store = store.display(),
    )
}

/// curl to `https://host:port/path` trusting only `root`.
fn curl(root: &Path, host: &str, port: u16, path: &str) -> Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(root)
        .arg("--resolve")
        .arg(format!("{host}:{port}:127.0.0.1"))
        .arg(format!("https://{host}:{port}{path}"))
        .output()
        .expect("curl")
}

/// Waits until curl gets `want` from `host`, trusting `root`.
fn wait_served(
    root: &Path,
    host: &str,
    port: u16,
    want: &str,
    limit: Duration,
) -> Result<(), String> {
    let mut last = String::new();
    let ok = wait_for(limit, || {
        let o = curl(root, host, port, "/index.html");
        last = format!("{}{}", text(&o.stdout), text(&o.stderr));
        o.status.success() && text(&o.stdout) == want
    });
    if ok {
        Ok(())
    } else {
        Err(format!("{host}: {last}"))
    }
}

/// Python's ssl, verifying against `root`: the names of the certificate
/// served for `host`, and the page.
fn python_get(root: &Path, host: &str, port: u16) -> String {
    let script = format!(
        "import socket, ssl\n\
         ctx = ssl.create_default_context(cafile={root:?})\n\
         with socket.create_connection(('127.0.0.1', {port}), timeout=10) as s:\n\
         \x20   with ctx.wrap_socket(s, server_hostname={host:?}) as t:\n\
         \x20       names = [v for k, v in t.getpeercert()['subjectAltName']]\n\
         \x20       t.sendall(b'GET /index.html HTTP/1.0\\r\\nHost: {host}\\r\\n\\r\\n')\n\
         \x20       body = b''\n\
         \x20       while True:\n\
         \x20           b = t.recv(4096)\n\
         \x20           if not b: break\n\
         \x20           body += b\n\
         print(','.join(names), body.split(b'\\r\\n\\r\\n', 1)[1].decode())\n",
        root = root.display().to_string(),
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .expect("python3");
    assert!(
        o.status.success(),
        "python ssl to {host}: {}",
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// The serial of the certificate glint serves for `host` (SNI).
fn served_serial(host: &str, port: u16) -> String {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl s_client -connect 127.0.0.1:{port} -servername {host} </dev/null 2>/dev/null \
             | openssl x509 -noout -serial"
        ))
        .output()
        .expect("openssl");
    text(&o.stdout).trim().to_string()
}

fn site() -> Docroot {
    let d = Docroot::new();
    d.file("index.html", b"hello acme\n");
    d
}

#[test]
fn two_names_get_certificates_by_http01_within_seconds() {
    let work = TempDir::new("acme-h01");
    let d = site();
    let (http, tls) = (free_port(), free_port());
    let pebble = Pebble::start(work.path(), http, tls, None);
    let store = work.join("acme");
    let conf = glint_conf(
        &d.root,
        Some(http),
        tls,
        &pebble,
        &store,
        "glint.acme.challenges = ( \"http-01\" )",
    );
    let started = Instant::now();
    let s = Launch::new().config(&conf).listeners(2).start();
    let root = pebble.root(work.path());
    for host in ["a.glint.test", "b.glint.test"] {
        wait_served(&root, host, tls, "hello acme\n", ISSUE_LIMIT)
            .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    }
    eprintln!(
        "both names served with pebble's certificates {:?} after start",
        started.elapsed()
    );
    let py = python_get(&root, "b.glint.test", tls);
    assert_eq!(py, "b.glint.test hello acme\n\n", "python ssl");
    // The storage directory is private; its files are what ssl.pemfile takes.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    for f in [
        "a.glint.test.crt.pem",
        "a.glint.test.key.pem",
        "account.key.pem",
        "account.json",
    ] {
        assert!(store.join(f).is_file(), "{f} in the storage directory");
    }
    // Nothing is left of the challenges.
    assert_eq!(std::fs::read_dir(store.join("http-01")).unwrap().count(), 0);
}

#[test]
fn a_443_only_server_gets_certificates_by_tls_alpn01() {
    let work = TempDir::new("acme-alpn");
    let d = site();
    let tls = free_port();
    // No plain listener: http-01 is not offered to the CA's choice.
    let pebble = Pebble::start(work.path(), free_port(), tls, None);
    let store = work.join("acme");
    let conf = glint_conf(&d.root, None, tls, &pebble, &store, "");
    let s = Launch::new().config(&conf).start();
    let root = pebble.root(work.path());
    for host in ["a.glint.test", "b.glint.test"] {
        wait_served(&root, host, tls, "hello acme\n", ISSUE_LIMIT)
            .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    }
    assert_eq!(
        python_get(&root, "a.glint.test", tls),
        "a.glint.test hello acme\n\n"
    );
    assert!(s.log().contains("answering tls-alpn-01"), "{}", s.log());
    assert_eq!(
        std::fs::read_dir(store.join("tls-alpn-01"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn a_restart_reuses_the_stored_account_and_certificates() {
    let work = TempDir::new("acme-restart");
    let d = site();
    let (http, tls) = (free_port(), free_port());
    let pebble = Pebble::start(work.path(), http, tls, None);
    let store = work.join("acme");
    let conf = glint_conf(&d.root, Some(http), tls, &pebble, &store, "");
    let root = pebble.root(work.path());
    let mut s = Launch::new().config(&conf).listeners(2).start();
    for host in ["a.glint.test", "b.glint.test"] {
        wait_served(&root, host, tls, "hello acme\n", ISSUE_LIMIT)
            .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    }
    s.stop();
    let files = [
        "account.json",
        "account.key.pem",
        "a.glint.test.crt.pem",
        "b.glint.test.key.pem",
    ];
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(store.join(f)).unwrap())
        .collect();
    let serial = served_serial_of(&store.join("a.glint.test.crt.pem"));
    let s = Launch::new().config(&conf).listeners(2).start();
    // Served from the first handshake on, from the stored files.
    let o = curl(&root, "a.glint.test", tls, "/index.html");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(served_serial("a.glint.test", tls), serial);
    // The thread looked and found nothing to do: no new account, no order.
    assert!(
        wait_for(TIMEOUT, || s.log().contains("acme: looking after")),
        "{}",
        s.log()
    );
    std::thread::sleep(Duration::from_millis(500));
    let after: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(store.join(f)).unwrap())
        .collect();
    assert!(
        before == after,
        "the stored account and certificates changed"
    );
    assert!(!s.log().contains("new order"), "{}", s.log());
}

/// The serial of a PEM certificate file, as `openssl x509 -serial` says it.
fn served_serial_of(path: &Path) -> String {
    let o = Command::new("openssl")
        .args(["x509", "-noout", "-serial", "-in"])
        .arg(path)
        .output()
        .expect("openssl");
    text(&o.stdout).trim().to_string()
}

/// `ab -k` over HTTPS for `secs` seconds (at most 2000000 requests; `-t`
/// before `-n`, which it would otherwise cap at 50000): (complete,
/// failed, non-2xx).
fn ab_https(port: u16, secs: u32) -> std::thread::JoinHandle<(u64, u64, u64, String)> {
    let mut cmd = tool("ab");
    cmd.args([
        "-k",
        "-c",
        "4",
        "-t",
        &secs.to_string(),
        "-n",
        "2000000",
        "-s",
        "10",
    ])
    .arg(format!("https://127.0.0.1:{port}/index.html"));
    std::thread::spawn(move || {
        let o = cmd.output().expect("ab");
        let out = text(&o.stdout);
        let field = |name: &str| {
            out.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().last())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let complete = field("Complete requests:");
        let failed = out
            .lines()
            .find(|l| l.starts_with("Failed requests:"))
            .and_then(|l| l.split_whitespace().nth(2))
            .and_then(|v| v.parse().ok())
            .unwrap_or(u64::MAX);
        (
            complete,
            failed,
            field("Non-2xx responses:"),
            out + &text(&o.stderr),
        )
    })
}

/// A statistics counter from `status.statistics-url` on the plain port.
fn stat(port: u16, name: &str) -> u64 {
    let r = get_at(format!("127.0.0.1:{port}").parse().unwrap(), "/stats").expect("stats");
    let body = text(&r.body);
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in {body}"))
}

#[test]
fn short_lived_certificates_renew_under_load_and_survive_the_ca_being_down() {
    let work = TempDir::new("acme-renew");
    let d = site();
    let (http, tls) = (free_port(), free_port());
    // 30 s certificates: renewed 20 s after issue. (With 20 s ones the
    // next renewal, due 13 s after the first, could land between the
    // end of the load and the CA going down on a loaded machine.)
    let mut pebble = Pebble::start(work.path(), http, tls, Some(30));
    let store = work.join("acme");
    let conf = glint_conf(
        &d.root,
        Some(http),
        tls,
        &pebble,
        &store,
        "glint.acme.challenges = ( \"http-01\" )",
    );
    let root = pebble.root(work.path());
    let s = Launch::new().config(&conf).listeners(2).start();
    wait_served(&root, "a.glint.test", tls, "hello acme\n", ISSUE_LIMIT)
        .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    let first = served_serial("a.glint.test", tls);
    // Renewal happens while ab keeps four keep-alive connections busy.
    let load_started = Instant::now();
    let load = ab_https(tls, 30);
    let renewed = wait_for(Duration::from_secs(45), || {
        let now = served_serial("a.glint.test", tls);
        !now.is_empty() && now != first
    });
    let renewed_after = load_started.elapsed();
    let (complete, failed, non2xx, out) = load.join().unwrap();
    assert!(renewed, "no renewal within 45 s:\n{}", s.log());
    let took: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("Time taken for tests:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    assert!(
        renewed_after.as_secs_f64() < took,
        "the renewal ({renewed_after:?}) came after ab's {took} s of load"
    );
    assert!(
        complete > 0 && failed == 0 && non2xx == 0,
        "ab across the renewal: {out}"
    );
    eprintln!("renewed {renewed_after:?} into the load: {complete} requests, 0 failed");
    let second = served_serial("a.glint.test", tls);
    // The CA goes away: the next renewal fails, loudly, and the
    // certificate in use stays.
    pebble.down();
    let loud = wait_for(Duration::from_secs(40), || {
        s.log().contains("a.glint.test: RENEWAL FAILING")
    });
    assert!(loud, "no loud renewal failure:\n{}", s.log());
    assert_eq!(
        served_serial("a.glint.test", tls),
        second,
        "the old certificate serves on"
    );
    assert!(stat(http, "glint.acme-failures") >= 1);
    assert!(stat(http, "glint.acme-certificates-at-risk") >= 1);
    // The CA comes back (a new pebble: new root, no account): glint
    // registers again and renews within its back-off.
    pebble.up();
    let root2 = pebble.root(work.path());
    wait_served(
        &root2,
        "a.glint.test",
        tls,
        "hello acme\n",
        Duration::from_secs(40),
    )
    .unwrap_or_else(|e| panic!("after the CA came back: {e}\n{}", s.log()));
    assert!(wait_for(TIMEOUT, || stat(
        http,
        "glint.acme-certificates-at-risk"
    ) == 0));
}

/// certbot's and dehydrated's way of renewing: new files renamed over the
/// old ones, no signal. glint serves the new certificate within seconds
/// (checked every second, read once the files have settled for a second;
/// lighttpd looks every 64 s); a file that does not parse keeps the old one.
#[test]
fn certificate_files_replaced_on_disk_are_served_within_seconds() {
    let work = TempDir::new("refresh");
    let dir = work.path();
    make_ca_and_leaf(dir, "ca", "one", "DNS:site.test");
    make_ca_and_leaf(dir, "ca", "two", "DNS:site.test");
    let live = dir.join("live");
    std::fs::create_dir(&live).unwrap();
    for ext in ["crt", "key"] {
        std::fs::copy(
            dir.join(format!("one.{ext}")),
            live.join(format!("site.{ext}")),
        )
        .unwrap();
    }
    let d = site();
    let tls = free_port();
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {tls}\n\
         ssl.engine = \"enable\"\nssl.pemfile = \"{l}/site.crt\"\nssl.privkey = \"{l}/site.key\"\n",
        d.root.display(),
        l = live.display()
    );
    let s = Launch::new().config(&conf).start();
    let one = served_serial_of(&dir.join("one.crt"));
    let two = served_serial_of(&dir.join("two.crt"));
    assert_eq!(served_serial("site.test", tls), one);
    // A broken certificate first: logged, the old one serves on.
    std::fs::write(
        dir.join("broken"),
        "-----BEGIN CERTIFICATE-----\nnot base64\n",
    )
    .unwrap();
    std::fs::rename(dir.join("broken"), live.join("site.crt")).unwrap();
    let logged = wait_for(Duration::from_secs(15), || {
        s.log().contains("keeping the certificate in use")
    });
    // The check that logged it ran within the last 20 ms: the next is due
    // about a second from now.
    let checked = Instant::now();
    assert!(logged, "no log line about the broken file:\n{}", s.log());
    assert_eq!(
        served_serial("site.test", tls),
        one,
        "the old certificate serves on"
    );
    // Then the renewal, the way certbot writes it: the certificate renamed
    // into place first, its key a moment later (700 ms here, far more than
    // certbot takes), timed so that a check falls between the two.
    if let Some(rest) = Duration::from_millis(600).checked_sub(checked.elapsed()) {
        std::thread::sleep(rest);
    }
    let started = Instant::now();
    for ext in ["crt", "key"] {
        std::fs::copy(
            dir.join(format!("two.{ext}")),
            dir.join(format!("new.{ext}")),
        )
        .unwrap();
        std::fs::rename(
            dir.join(format!("new.{ext}")),
            live.join(format!("site.{ext}")),
        )
        .unwrap();
        if ext == "crt" {
            std::thread::sleep(Duration::from_millis(700));
        }
    }
    let picked = wait_for(Duration::from_secs(15), || {
        served_serial("site.test", tls) == two
    });
    assert!(
        picked,
        "the new certificate was not served within 15 s:\n{}",
        s.log()
    );
    eprintln!(
        "new certificate served {:?} after the files changed",
        started.elapsed()
    );
    // The new certificate was never read without its key.
    assert_eq!(
        s.log().matches("keeping the certificate in use").count(),
        1,
        "only the broken file was refused:\n{}",
        s.log()
    );
    let o = curl(&dir.join("ca.pem"), "site.test", tls, "/index.html");
    assert_eq!(text(&o.stdout), "hello acme\n", "{}", text(&o.stderr));
}

/// Fails closed: ACME without the terms accepted, without names, or
/// without a listener for any allowed challenge does not start.
#[test]
fn acme_options_that_cannot_work_stop_the_start() {
    let d = site();
    let work = TempDir::new("acme-bad");
    let base = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {}\n\
         glint.acme.activate = \"enable\"\nglint.acme.storage = \"{}\"\n",
        d.root.display(),
        free_port(),
        work.join("acme").display()
    );
    let tls_host = "ssl.engine = \"enable\"\n$HTTP[\"host\"] == \"a.glint.test\" { }\n";
    for (extra, want) in [
        (tls_host.to_string(), "glint.acme.agree-tos"),
        ("glint.acme.agree-tos = \"enable\"\n".to_string(), "no names"),
        (
            format!("{tls_host}glint.acme.agree-tos = \"enable\"\nglint.acme.challenges = ( \"http-01\" )\n"),
            "no listener",
        ),
        ("glint.acme.names = ( \"*.glint.test\" )\n".to_string(), "wildcards"),
    ] {
        let conf = work.join("glint.conf");
        std::fs::write(&conf, format!("{base}{extra}")).unwrap();
        let o = Command::new(glint_bin()).arg("-tt").arg("-f").arg(&conf).output().expect("glint");
        let err = text(&o.stderr);
        assert!(!o.status.success() && err.contains(want), "{extra}: {err}");
    }
}

/// An order left under way by a glint that stopped (its account key, the
/// order's URL and key in the storage directory) is taken up by the next
/// one instead of a new order.
#[test]
fn an_order_under_way_is_taken_up_after_a_restart() {
    use glint::acme::{client::Client, jws::AccountKey, order, store::Store};
    let work = TempDir::new("acme-resume");
    let d = site();
    let (http, tls) = (free_port(), free_port());
    let pebble = Pebble::start(work.path(), http, tls, None);
    let storage = work.join("acme");
    // What a run that stopped after placing its order leaves behind.
    let store = Store::open(&storage).unwrap();
    let key = AccountKey::generate().unwrap();
    store
        .write("account.key.pem", key.to_pem().as_bytes(), true)
        .unwrap();
    let mut c = Client::connect(&pebble.url, Some(&pebble.tls_ca), key).unwrap();
    c.account(&["mailto:admin@glint.test".into()], true)
        .unwrap();
    let ask = order::Ask {
        name: "a.glint.test",
        key_type: glint::config::KeyType::EcdsaP256,
        challenges: &[glint::config::Challenge::Http01],
        replaces: None,
    };
    let url = order::place(&mut c, &store, &ask).unwrap();
    let conf = glint_conf(
        &d.root,
        Some(http),
        tls,
        &pebble,
        &storage,
        "glint.acme.names = ( \"a.glint.test\" )",
    );
    let s = Launch::new().config(&conf).listeners(2).start();
    let root = pebble.root(work.path());
    wait_served(&root, "a.glint.test", tls, "hello acme\n", ISSUE_LIMIT)
        .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert!(
        s.log()
            .contains(&format!("a.glint.test: taking up the order {url}")),
        "{}",
        s.log()
    );
    assert!(!s.log().contains("new order"), "{}", s.log());
    assert!(!storage.join("a.glint.test.order.json").exists());
}

/// With server.max-worker, every worker serves the certificate, and one
/// of them (the storage directory's lock holder) obtained it, once.
#[test]
fn workers_share_one_acme_client_through_the_lock() {
    let work = TempDir::new("acme-workers");
    let d = site();
    let (http, tls) = (free_port(), free_port());
    let pebble = Pebble::start(work.path(), http, tls, None);
    let store = work.join("acme");
    let conf = glint_conf(
        &d.root,
        Some(http),
        tls,
        &pebble,
        &store,
        "server.max-worker = 3",
    );
    let s = Launch::new().config(&conf).listeners(2).start();
    let root = pebble.root(work.path());
    wait_served(&root, "a.glint.test", tls, "hello acme\n", ISSUE_LIMIT)
        .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    // Each request is a new connection, which any worker may accept.
    let all = wait_for(Duration::from_secs(10), || {
        (0..12).all(|_| {
            curl(&root, "b.glint.test", tls, "/index.html")
                .status
                .success()
        })
    });
    assert!(all, "not every worker serves the certificate:\n{}", s.log());
    let log = s.log();
    assert_eq!(log.matches("acme: looking after").count(), 3, "{log}");
    assert_eq!(
        log.matches("a.glint.test: new certificate").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("b.glint.test: new certificate").count(),
        1,
        "{log}"
    );
    assert_eq!(log.matches("acme: account ").count(), 1, "{log}");
}

//! mod_maxminddb: a MaxMind DB file written by a real writer (PyPI's
//! `mmdb-writer`) with IPv4 and IPv6 networks, served to a real CGI script
//! and an SSI page by glint and by lighttpd 1.4.69 (Debian's
//! `lighttpd-mod-maxminddb`) from the same configuration, their answers
//! compared: the variables and their values for 127.0.0.1 and ::1, none
//! for an address the database lacks or where the module is off, the
//! address mod_extforward found looked up, a database that cannot be
//! opened refusing the start at its line on both.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::*;

/// Writes `geo.mmdb` into `dir` with mmdb-writer: 127.0.0.0/24 (a city
/// record with every kind of value) and ::1 (another country).
fn make_db(dir: &Path) {
    make_db_as(&dir.join("geo.mmdb"), "NZ");
}

/// The database of [`make_db`] at `path`, 127.0.0.0/24 in country `cc`.
fn make_db_as(path: &Path, cc: &str) {
    let script = r#"
import sys
from netaddr import IPSet
from mmdb_writer import MMDBWriter, MmdbU128, MmdbI32, MmdbU16, MmdbF32
w = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type="GeoIP2-City",
               languages=["en"], description="glint test")
w.insert_network(IPSet(["127.0.0.0/24"]), {
    "country": {"iso_code": sys.argv[2], "names": {"en": "New Zealand", "de": "Neuseeland"}},
    "city": {"names": {"en": "Wellington"}},
    "location": {"latitude": -41.28664, "longitude": 174.77557,
                 "accuracy_radius": MmdbU16(50), "f32": MmdbF32(1.5)},
    "subdivisions": [{"iso_code": "WGN"}, {"iso_code": "LAST"}],
    "traits": {"is_anycast": True, "big": MmdbU128(1), "neg": MmdbI32(-7)},
})
w.insert_network(IPSet(["::1/128"]), {
    "country": {"iso_code": "IS", "names": {"en": "Iceland"}},
    "city": {"names": {"en": "Reykjavik"}},
})
w.to_db_file(sys.argv[1])
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(path)
        .arg(cc)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "mmdb-writer failed (pip install mmdb-writer): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const ENV_PY: &str = r#"import os
print("Content-Type: text/plain\n")
for k in sorted(os.environ):
    if k.startswith(("GEO", "FROM_")) or k == "REMOTE_ADDR":
        print(f"{k}={os.environ[k]}")
"#;

/// A mod_magnet script that answers with what `req_env` holds.
const GEO_LUA: &str = r#"if lighty.r.req_attr["uri.path"] == "/magnet" then
  local e = lighty.r.req_env
  lighty.r.resp_body:set({ (e["GEOIP_COUNTRY_CODE"] or "none") .. " " .. (e["geo-sub.last"] or "none") .. " " .. (e["GEO_SUB_LAST"] or "none") .. "\n" })
  lighty.r.resp_header["Content-Type"] = "text/plain"
  return 200
end
"#;

/// The configuration both servers read; `db` is the `maxminddb.db` line
/// (and what else is to follow it).
fn conf_text(d: &str, port: u16, port6: u16, log: &str, db: &str) -> String {
    format!(
        r#"server.document-root = "{d}/www"
server.bind = "127.0.0.1"
server.port = {port}
server.errorlog = "{d}/{log}"
$SERVER["socket"] == "[::1]:{port6}" {{ }}
server.modules = ( "mod_extforward", "mod_setenv", "mod_cgi", "mod_fastcgi", "mod_ssi", "mod_maxminddb" )
server.stat-cache-engine = "disable"
cgi.assign = ( ".py" => "/usr/bin/python3" )
ssi.extension = ( ".shtml" )
extforward.forwarder = ( "127.0.0.1" => "trust" )
setenv.set-environment = ( "FROM_SETENV" => "yes" )
maxminddb.activate = "enable"
{db}
maxminddb.env = (
    "GEOIP_COUNTRY_CODE" => "country/iso_code",
    "GEOIP_COUNTRY_NAME" => "country/names/en",
    "GEOIP_CITY_NAME" => "city/names/en",
    "GEOIP_CITY_LATITUDE" => "location/latitude",
    "GEOIP_CITY_LONGITUDE" => "location/longitude",
    "GEO_RADIUS" => "location/accuracy_radius",
    "GEO_F32" => "location/f32",
    "geo-sub.last" => "subdivisions/-1/iso_code",
    "GEO_SUB0" => "subdivisions/0/iso_code",
    "GEO_ANYCAST" => "traits/is_anycast",
    "GEO_BIG" => "traits/big",
    "GEO_NEG" => "traits/neg",
    "GEO_MAP" => "country",
    "GEO_MISSING" => "no/such/path",
)
$HTTP["url"] =^ "/off/" {{ maxminddb.activate = "disable" }}
"#
    )
}

/// glint and lighttpd on the same files, each on 127.0.0.1 and [::1].
struct Both {
    dir: TempDir,
    glint: Server,
    g6: u16,
    lighttpd: Child,
    l4: u16,
    l6: u16,
}

impl Drop for Both {
    fn drop(&mut self) {
        let _ = self.lighttpd.kill();
        let _ = self.lighttpd.wait();
    }
}

fn free_port6() -> u16 {
    std::net::TcpListener::bind("[::1]:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on ::1")
}

fn start() -> Both {
    start_with("")
}

/// [`start`], with `extra` after the database's line (`{dir}`: the test's directory).
fn start_with(extra: &str) -> Both {
    let dir = TempDir::new("geo");
    let d = dir.path().display().to_string();
    make_db(dir.path());
    std::fs::create_dir_all(dir.join("www/off")).expect("mkdir");
    std::fs::write(dir.join("www/env.py"), ENV_PY).expect("env.py");
    std::fs::write(dir.join("geo.lua"), GEO_LUA).expect("geo.lua");
    std::fs::write(dir.join("www/off/env.py"), ENV_PY).expect("off/env.py");
    std::fs::write(
        dir.join("www/page.shtml"),
        "cc=<!--#echo var=\"GEOIP_COUNTRY_CODE\" --> city=<!--#echo var=\"GEOIP_CITY_NAME\" -->\n",
    )
    .expect("page.shtml");
    let db = format!(
        "maxminddb.db = \"{d}/geo.mmdb\"\n{}",
        extra.replace("{dir}", &d)
    );
    let g6 = free_port6();
    let conf = dir.join("glint.conf");
    std::fs::write(&conf, conf_text(&d, 0, g6, "glint-error.log", &db)).expect("conf");
    let glint = Launch::new().config_file(&conf).listeners(2).start();
    let (l4, l6) = (free_port(), free_port6());
    let lconf = dir.join("lighttpd.conf");
    std::fs::write(&lconf, conf_text(&d, l4, l6, "lighttpd-error.log", &db)).expect("conf");
    let lighttpd = start_lighttpd(&lconf, l4)
        .unwrap_or_else(|e| panic!("{e} (apt-get install lighttpd lighttpd-mod-maxminddb)"));
    Both {
        dir,
        glint,
        g6,
        lighttpd,
        l4,
        l6,
    }
}

fn send(addr: SocketAddr, request: &[u8]) -> Response {
    let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    let mut c = Conn::wrap(s);
    c.send(request).expect("send");
    c.read_response(false)
        .unwrap_or_else(|e| panic!("{e}: {}", show(request)))
}

impl Both {
    /// `request` to both over IPv4 (or IPv6): the same status and body.
    fn ask(&self, request: &[u8], v6: bool) -> String {
        let (g, l): (SocketAddr, SocketAddr) = if v6 {
            (
                format!("[::1]:{}", self.g6).parse().expect("addr"),
                format!("[::1]:{}", self.l6).parse().expect("addr"),
            )
        } else {
            (self.glint.addr(), ([127, 0, 0, 1], self.l4).into())
        };
        let gr = send(g, request);
        let lr = send(l, request);
        let what = show(request);
        assert_eq!(gr.status, 200, "glint: {what}\n{}", gr.describe());
        assert_eq!(lr.status, 200, "lighttpd: {what}\n{}", lr.describe());
        assert_eq!(show(&gr.body), show(&lr.body), "body of {what}");
        String::from_utf8_lossy(&gr.body).into_owned()
    }
}

#[test]
fn the_record_of_the_client_reaches_cgi_and_ssi_as_on_lighttpd() {
    let b = start();
    let v4 = b.ask(
        b"GET /env.py HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        false,
    );
    for want in [
        "GEOIP_COUNTRY_CODE=NZ",
        "GEOIP_COUNTRY_NAME=New Zealand",
        "GEOIP_CITY_NAME=Wellington",
        "GEOIP_CITY_LATITUDE=-41.28664",
        "GEOIP_CITY_LONGITUDE=174.77557",
        "GEO_RADIUS=50",
        "GEO_F32=1.50000",
        "GEO_SUB_LAST=LAST",
        "GEO_SUB0=WGN",
        "GEO_ANYCAST=1",
        "GEO_BIG=0x01000000000000000000000000000000",
        "GEO_NEG=-7",
        "FROM_SETENV=yes",
        "REMOTE_ADDR=127.0.0.1",
    ] {
        assert!(v4.contains(want), "{want} missing:\n{v4}");
    }
    assert!(
        !v4.contains("GEO_MAP") && !v4.contains("GEO_MISSING"),
        "{v4}"
    );

    // IPv6, and HTTP/1.0: the answer whole, ended by the close.
    let v6 = b.ask(b"GET /env.py HTTP/1.0\r\n\r\n", true);
    assert!(
        v6.contains("GEOIP_COUNTRY_CODE=IS") && v6.contains("GEOIP_CITY_NAME=Reykjavik"),
        "{v6}"
    );
    assert!(
        !v6.contains("GEOIP_CITY_LATITUDE"),
        "not in its record:\n{v6}"
    );

    // Behind the trusted forwarder, the address it names is looked up.
    let fwd = b.ask(
        b"GET /env.py HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: ::1\r\nConnection: close\r\n\r\n",
        false,
    );
    assert!(fwd.contains("GEOIP_COUNTRY_CODE=IS"), "{fwd}");
    // An address the database does not hold: no variable at all.
    let none = b.ask(
        b"GET /env.py HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 10.9.8.7\r\nConnection: close\r\n\r\n",
        false,
    );
    assert!(
        !none.contains("GEO") && none.contains("REMOTE_ADDR=10.9.8.7"),
        "{none}"
    );
    // Where the module is off.
    let off = b.ask(
        b"GET /off/env.py HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        false,
    );
    assert!(
        !off.contains("GEO") && off.contains("FROM_SETENV=yes"),
        "{off}"
    );
    // SSI's variables.
    let page = b.ask(
        b"GET /page.shtml HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        false,
    );
    assert_eq!(page, "cc=NZ city=Wellington\n");
    // A POST whose body the script never reads, still being sent: the
    // answer arrives whole all the same.
    let mut c = Conn::wrap(TcpStream::connect(b.glint.addr()).expect("connect"));
    c.send(b"POST /env.py HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\npart of it")
        .expect("send");
    let r = c
        .read_response(false)
        .expect("answer before the whole body");
    assert!(
        show(&r.body).contains("GEOIP_COUNTRY_CODE=NZ"),
        "{}",
        r.describe()
    );
}

#[test]
fn the_answer_kept_for_a_connection_follows_its_client() {
    let b = start();
    let mut c = Conn::wrap(TcpStream::connect(b.glint.addr()).expect("connect"));
    let mut ask = |extra: &str| {
        let req = format!("GET /env.py HTTP/1.1\r\nHost: t\r\n{extra}\r\n");
        c.send(req.as_bytes()).expect("send");
        let r = c.read_response(false).expect("answer");
        show(&r.body)
    };
    assert!(ask("").contains("GEOIP_COUNTRY_CODE=NZ"));
    assert!(ask("").contains("GEOIP_COUNTRY_CODE=NZ"), "kept");
    // The forwarder's next client on the same connection is another one
    // (lighttpd would give it the first one's record).
    let other = ask("X-Forwarded-For: 10.9.8.7\r\n");
    assert!(!other.contains("GEO"), "{other}");
    assert!(ask("X-Forwarded-For: ::1\r\n").contains("GEOIP_COUNTRY_CODE=IS"));
}

/// `glint -t` and `lighttpd -tt` on a configuration.
fn check_both(dir: &TempDir, db: &str) -> (bool, String, bool) {
    let d = dir.path().display().to_string();
    let text = conf_text(&d, 8080, 8081, "error.log", db);
    let conf = dir.join("check.conf");
    std::fs::write(&conf, &text).expect("conf");
    let g = Command::new(glint_bin())
        .arg("-t")
        .arg("-f")
        .arg(&conf)
        .output()
        .expect("glint -t");
    let l = Command::new("lighttpd")
        .arg("-tt")
        .arg("-f")
        .arg(&conf)
        .output()
        .expect("lighttpd (apt-get install lighttpd lighttpd-mod-maxminddb)");
    let said = String::from_utf8_lossy(&g.stderr).into_owned();
    (g.status.success(), said, l.status.success())
}

#[test]
fn a_database_that_cannot_be_opened_stops_the_start_at_its_line() {
    let dir = TempDir::new("geo-bad");
    let d = dir.path().display().to_string();
    std::fs::create_dir_all(dir.join("www")).expect("www");
    std::fs::write(dir.join("junk.mmdb"), "not a MaxMind DB\n").expect("junk");
    std::fs::write(dir.join("geo.dat"), "").expect("dat");
    // (Line 13 of the configuration is the `maxminddb.db` line.)
    for (db, why) in [
        (
            format!("maxminddb.db = \"{d}/missing.mmdb\""),
            "a missing file",
        ),
        (
            format!("maxminddb.db = \"{d}/junk.mmdb\""),
            "not a database",
        ),
        (format!("maxminddb.db = \"{d}/geo.dat\""), "not named .mmdb"),
        (
            format!("$HTTP[\"host\"] == \"x\" {{ maxminddb.db = \"{d}/missing.mmdb\" }}"),
            "in a conditional block",
        ),
    ] {
        let (glint_ok, said, lighttpd_ok) = check_both(&dir, &db);
        assert!(!lighttpd_ok, "lighttpd started with {why}");
        assert!(!glint_ok, "glint started with {why}");
        assert!(
            said.contains("check.conf:13:"),
            "{why}: no file:line in {said}"
        );
        assert!(said.contains("maxminddb.db"), "{why}: {said}");
    }
    // Without mod_maxminddb, lighttpd ignores the options (with a
    // warning): so does glint, without opening the file.
    let db = format!("maxminddb.db = \"{d}/missing.mmdb\"");
    let d2 = dir.path().display().to_string();
    let text = conf_text(&d2, 8080, 8081, "error.log", &db).replace(", \"mod_maxminddb\"", "");
    let conf = dir.join("unloaded.conf");
    std::fs::write(&conf, text).expect("conf");
    let g = Command::new(glint_bin())
        .args(["-t", "-f"])
        .arg(&conf)
        .output()
        .expect("glint -t");
    let l = Command::new("lighttpd")
        .args(["-tt", "-f"])
        .arg(&conf)
        .output()
        .expect("lighttpd");
    assert!(
        l.status.success(),
        "lighttpd refused an unloaded module's options"
    );
    let said = String::from_utf8_lossy(&g.stderr);
    assert!(g.status.success(), "{said}");
    assert!(
        said.contains("mod_maxminddb is not in server.modules"),
        "{said}"
    );
}

/// The `GEO*` lines of a backend's answer.
fn geo_lines(body: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(body)
        .lines()
        .filter(|l| l.starts_with("GEO"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_fastcgi_backend_gets_the_same_variables() {
    let b = start_with(
        "fastcgi.server = ( \"/fcgi\" => (( \"socket\" => \"{dir}/fcgi.sock\", \"check-local\" => \"disable\" )) )\n",
    );
    let sock = b.dir.join("fcgi.sock");
    // (Killed on drop.)
    let _flup = Backend::of(
        Command::new("python3")
            .arg(backends_dir().join("fcgi_app.py"))
            .arg(&sock)
            .stdout(Stdio::null())
            .spawn()
            .expect("python3 with flup (pip install flup)"),
    );
    let up = wait_for(TIMEOUT, || {
        std::os::unix::net::UnixStream::connect(&sock).is_ok()
    });
    assert!(up, "flup did not listen on {}", sock.display());
    let req = b"GET /fcgi/env HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let g = send(b.glint.addr(), req);
    let l = send(([127, 0, 0, 1], b.l4).into(), req);
    assert_eq!(
        (g.status, l.status),
        (200, 200),
        "{}\n{}",
        g.describe(),
        l.describe()
    );
    let (gl, ll) = (geo_lines(&g.body), geo_lines(&l.body));
    assert_eq!(gl, ll, "glint vs lighttpd");
    assert!(gl.contains(&"GEOIP_COUNTRY_CODE=NZ".to_string()), "{gl:?}");
}

#[test]
fn a_reload_maps_the_database_again() {
    let b = start();
    let cc = || {
        let r = send(
            b.glint.addr(),
            b"GET /env.py HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        );
        geo_lines(&r.body)
            .into_iter()
            .find_map(|l| l.strip_prefix("GEOIP_COUNTRY_CODE=").map(str::to_string))
    };
    assert_eq!(cc().as_deref(), Some("NZ"));
    // A new database renamed over the old one (as geoipupdate does): the
    // running server keeps the file it mapped until it is told.
    let db = b.dir.join("geo.mmdb");
    make_db_as(&b.dir.join("new.mmdb"), "AU");
    std::fs::rename(b.dir.join("new.mmdb"), &db).expect("rename");
    assert_eq!(cc().as_deref(), Some("NZ"), "before the reload");
    b.glint.signal(SIGUSR1);
    assert!(
        wait_for(TIMEOUT, || cc().as_deref() == Some("AU")),
        "the reload did not map the new file"
    );
    // A broken file at the next reload: refused, the running one stays.
    let log = b.dir.join("glint-error.log");
    std::fs::write(b.dir.join("junk.mmdb"), "junk").expect("junk");
    std::fs::rename(b.dir.join("junk.mmdb"), &db).expect("rename");
    b.glint.signal(SIGUSR1);
    let refused = wait_for(TIMEOUT, || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("keeping the running configuration"))
    });
    assert!(
        refused,
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(cc().as_deref(), Some("AU"), "after the refused reload");
}

#[test]
fn mod_magnet_sees_the_variables_in_req_env() {
    let b = start_with(
        "server.modules += ( \"mod_magnet\" )\nmagnet.attract-physical-path-to = ( \"{dir}/geo.lua\" )\n",
    );
    let body = b.ask(
        b"GET /magnet HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        false,
    );
    // (Under the name as written: only a backend's environment has it
    // as GEO_SUB_LAST, on both.)
    assert_eq!(body, "NZ LAST none\n");
    let body = b.ask(b"GET /magnet HTTP/1.0\r\n\r\n", true);
    assert_eq!(body, "IS none none\n");
}

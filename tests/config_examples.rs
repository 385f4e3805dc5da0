//! The configurations shipped in conf/ load and mean what they say.

use glint::config::{Config, ListenAddr, Value};
use std::path::{Path, PathBuf};

fn conf(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("conf").join(rel)
}

fn load(rel: &str) -> Config {
    match Config::load(&conf(rel)) {
        Ok(c) => c,
        Err(e) => panic!("{rel}: {e}"),
    }
}

fn s(x: &str) -> Value {
    Value::Str(x.into())
}

#[test]
fn default_configuration() {
    let c = load("glint.conf");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.listeners.len(), 1);
    assert_eq!(
        c.listeners[0].addr,
        ListenAddr::Tcp {
            host: "127.0.0.1".into(),
            port: 8080
        }
    );
    let cwd = std::env::current_dir().unwrap_or_default();
    assert_eq!(c.global.paths.document_root, Some(cwd.join("www")));
}

#[test]
fn freebsd_fastcgi_seed() {
    let c = load("examples/seed004-freebsd.conf");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(
        c.global.paths.document_root.as_deref(),
        Some(Path::new("/usr/local/www/data"))
    );
    let specs: Vec<&str> = c.listeners.iter().map(|l| l.spec.as_str()).collect();
    assert_eq!(specs, [":80", "192.168.159.254:80"]);
    let php = c
        .global
        .backends
        .fastcgi_server
        .as_ref()
        .and_then(|v| v.get(".php"));
    let Some(Value::Array(hosts)) = php else {
        panic!(
            "fastcgi.server has no .php entry: {:?}",
            c.global.backends.fastcgi_server
        );
    };
    let host = &hosts[0].1;
    assert_eq!(host.get("bin-path"), Some(&s("/usr/local/bin/php-cgi")));
    assert_eq!(host.get("socket"), Some(&s("/tmp/php.socket")));
    assert_eq!(host.get("max-procs"), Some(&Value::Int(2)));
    assert_eq!(
        host.get("bin-environment")
            .and_then(|e| e.get("PHP_FCGI_MAX_REQUESTS")),
        Some(&s("10000"))
    );
    assert_eq!(host.get("broken-scriptfilename"), Some(&s("enable")));
}

#[test]
fn scgi_seed() {
    let c = load("examples/seed000-scgi.conf");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let scgi = c.global.backends.scgi_server.as_ref();
    let tcp = scgi
        .and_then(|v| v.get("/scgi-test"))
        .and_then(|v| v.get("localhost"));
    assert_eq!(tcp.and_then(|v| v.get("port")), Some(&Value::Int(3000)));
    assert_eq!(tcp.and_then(|v| v.get("host")), Some(&s("127.0.0.1")));
    assert_eq!(tcp.and_then(|v| v.get("check-local")), Some(&s("disable")));
    let unix = scgi
        .and_then(|v| v.get("/scgi-unix"))
        .and_then(|v| v.get("localhost"));
    assert_eq!(
        unix.and_then(|v| v.get("socket")),
        Some(&s("/tmp/scgi.socket"))
    );
}

#[test]
fn uwsgi_example() {
    let c = load("examples/uwsgi.conf");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(
        glint::upstream::Protocol::of_scgi_server(&c.global),
        glint::upstream::Protocol::Uwsgi
    );
    let g = match glint::upstream::Gateways::from_config(&c) {
        Ok(g) => g,
        Err(e) => panic!("examples/uwsgi.conf: {e}"),
    };
    let addrs: Vec<String> = g.hosts.iter().map(|h| h.spec.addr.to_string()).collect();
    assert_eq!(addrs, ["127.0.0.1:3031", "unix:/run/uwsgi/app.socket"]);
}

#[test]
fn shipped_configurations_round_trip_through_dump() {
    for rel in [
        "glint.conf",
        "examples/seed004-freebsd.conf",
        "examples/seed000-scgi.conf",
        "examples/uwsgi.conf",
    ] {
        let c = load(rel);
        let text = c.dump();
        let again = match Config::parse_str(&text, "dump", Path::new("/")) {
            Ok(a) => a,
            Err(e) => panic!("{rel}: dump does not parse: {e}\n{text}"),
        };
        assert_eq!(again.listeners, c.listeners, "{rel}");
        assert_eq!(again.dump(), text, "{rel}");
    }
}

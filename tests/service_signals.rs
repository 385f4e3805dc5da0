//! Signals, as lighttpd's: SIGHUP reopens the logs, SIGUSR1 re-reads the
//! configuration without dropping a request, SIGINT stops gracefully.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

#[test]
fn sighup_reopens_the_access_and_error_logs() {
    let dir = TempDir::new("sighup");
    let root = docroot(&dir, "www", "x\n");
    let access = dir.join("access.log");
    let errors = dir.join("error.log");
    let conf = write_conf(
        &dir,
        &root,
        free_port(),
        &format!(
            "accesslog.filename = \"{}\"\nserver.errorlog = \"{}\"",
            access.display(),
            errors.display()
        ),
    );
    let mut g = Launch::new().config_file(&conf).start();
    const N: usize = 30;
    for i in 0..N {
        assert_eq!(
            get_at(g.addr(), &format!("/?before={i}")).unwrap().status,
            200
        );
    }
    std::fs::rename(&access, dir.join("access.log.1")).unwrap();
    std::fs::rename(&errors, dir.join("error.log.1")).unwrap();
    g.signal(SIGHUP);
    for i in 0..N {
        assert_eq!(
            get_at(g.addr(), &format!("/?after={i}")).unwrap().status,
            200
        );
    }
    g.signal_and_exit_cleanly(SIGTERM, Duration::from_secs(10));

    let old = std::fs::read_to_string(dir.join("access.log.1")).unwrap();
    let new = std::fs::read_to_string(&access).unwrap();
    let lines = |text: &str, tag: &str| text.lines().filter(|l| l.contains(tag)).count();
    assert_eq!(lines(&old, "?before="), N, "old file:\n{old}");
    assert_eq!(lines(&old, "?after="), 0, "old file:\n{old}");
    assert_eq!(lines(&new, "?after="), N, "new file:\n{new}");
    assert_eq!(lines(&new, "?before="), 0, "new file:\n{new}");
    for i in 0..N {
        assert_eq!(lines(&old, &format!("?before={i} ")), 1);
        assert_eq!(lines(&new, &format!("?after={i} ")), 1);
    }

    let old_err = std::fs::read_to_string(dir.join("error.log.1")).unwrap();
    let new_err = std::fs::read_to_string(&errors).unwrap();
    assert!(old_err.contains("reopening log files"), "{old_err}");
    assert!(new_err.contains("stopped after"), "{new_err}");
    assert!(!old_err.contains("stopped after"), "{old_err}");
    // lighttpd's line format: "YYYY-MM-DD HH:MM:SS: (module) message".
    let line = new_err.lines().next().unwrap();
    let b = line.as_bytes();
    assert!(
        b.len() > 22 && b[4] == b'-' && b[10] == b' ' && &b[19..22] == b": (",
        "{line}"
    );
}

#[test]
fn sigusr1_reloads_without_a_failed_request() {
    let dir = TempDir::new("sigusr1");
    let a = docroot(&dir, "a", "A");
    let b = docroot(&dir, "b", "B");
    let port = free_port();
    let port2 = free_port();
    let conf = write_conf(&dir, &a, port, "");
    let mut g = Launch::new().config_file(&conf).start();
    let addr = g.addr();

    let client = client_loop(addr);
    std::thread::sleep(Duration::from_millis(300));
    // New docroot, and one more listener.
    write_conf(
        &dir,
        &b,
        port,
        &format!("$SERVER[\"socket\"] == \"127.0.0.1:{port2}\" {{ }}"),
    );
    g.signal(SIGUSR1);
    let addr2 = format!("127.0.0.1:{port2}").parse().unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || get_at(addr2, "/")
            .is_ok_and(|r| r.body == b"B")),
        "the new listener does not serve the new docroot"
    );
    std::thread::sleep(Duration::from_millis(300));

    // A configuration that does not load changes nothing.
    std::fs::write(&conf, "server.document-root = \n").unwrap();
    g.signal(SIGUSR1);
    std::thread::sleep(Duration::from_millis(300));
    let seen = client.finish_without_failures();
    assert_eq!(seen, vec![b"A".to_vec(), b"B".to_vec()]);
    assert_eq!(get_at(addr, "/").unwrap().body, b"B");
    assert_eq!(get_at(addr2, "/").unwrap().body, b"B");

    // Back to one listener: the second is closed, the first stays.
    write_conf(&dir, &a, port, "");
    g.signal(SIGUSR1);
    assert!(wait_for(Duration::from_secs(5), || get_at(addr2, "/").is_err()));
    assert_eq!(get_at(addr, "/").unwrap().body, b"A");
    g.signal_and_exit_cleanly(SIGTERM, Duration::from_secs(10));
}

/// glint serving `data` as /big.bin with a 60 s graceful-shutdown timeout,
/// and a client connected to it. The directory lives as long as the first value.
fn serve_big_file(name: &str, data: &[u8]) -> (TempDir, Server, TcpStream) {
    let dir = TempDir::new(name);
    let root = docroot(&dir, "www", "x");
    std::fs::write(root.join("big.bin"), data).unwrap();
    let conf = write_conf(
        &dir,
        &root,
        free_port(),
        "server.graceful-shutdown-timeout = 60",
    );
    let g = Launch::new().config_file(&conf).start();
    let s = TcpStream::connect(g.addr()).unwrap();
    (dir, g, s)
}

#[test]
fn sigint_finishes_a_slow_download_then_exits() {
    const SIZE: usize = 20 * 1024 * 1024;
    let data: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    let (_dir, mut g, mut s) = serve_big_file("sigint", &data);
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::with_capacity(SIZE + 1024);
    let mut buf = vec![0u8; 64 * 1024];
    let n = s.read(&mut buf).unwrap();
    got.extend_from_slice(&buf[..n]);

    g.signal(SIGINT);
    // Stops accepting: new connections are refused once the listener closes.
    assert!(wait_for(Duration::from_secs(5), || TcpStream::connect(
        g.addr()
    )
    .is_err()));
    // About 2 s of reading at ~10 MB/s.
    let start = Instant::now();
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "download stalled"
        );
    }
    let r = parse_whole(&got).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), SIZE);
    assert!(r.body == data, "the body differs");
    let head_len = got.len() - SIZE;
    let head = String::from_utf8_lossy(&got[..head_len]).to_lowercase();
    assert!(head.contains(&format!("content-length: {SIZE}")), "{head}");
    let st = g.wait_exit(Duration::from_secs(10)).expect("glint exited");
    assert!(st.success(), "{st:?}");
}

#[test]
fn a_second_sigint_stops_at_once() {
    let (_dir, mut g, mut s) = serve_big_file("sigint2", &vec![7u8; 8 * 1024 * 1024]);
    s.write_all(b"GET /big.bin HTTP/1.0\r\n\r\n").unwrap();
    let mut buf = [0u8; 1024];
    let _ = s.read(&mut buf).unwrap();
    g.signal(SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    assert!(g.is_running(), "stopped before the download ended");
    g.signal_and_exit_cleanly(SIGINT, Duration::from_secs(5));
}

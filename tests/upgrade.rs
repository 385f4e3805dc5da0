//! A binary upgrade (SIGUSR2): the binary on disk is replaced, glint
//! starts it on the same listening sockets, and hands over once it is
//! ready; under `ab -k` load no request fails, a `wrk` connection and a
//! download in progress run on across it. A new binary that fails its
//! configuration check, or dies, leaves the old glint serving.

mod common;

use common::*;
use nix::sys::signal::Signal;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn tool(name: &str) -> Command {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "{name} is not installed (.ci/run installs it)");
    Command::new(name)
}

/// Kills the glint a pid file names, at the end of a test.
struct PidGuard(PathBuf);

impl Drop for PidGuard {
    fn drop(&mut self) {
        if let Some(pid) = read_pid(&self.0) {
            signal(pid, Signal::SIGTERM);
        }
    }
}

fn read_pid(p: &Path) -> Option<i32> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// A copy of the glint binary at `dir/bin/glint`, written the way a
/// package manager does (a new file renamed over the old one).
fn install_binary(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tmp = bin.join("glint.new");
    // cp writes it, not this process: a child another test thread forks
    // meanwhile would inherit a write descriptor of ours until its exec,
    // and exec'ing the file then fails with ETXTBSY.
    let ok = Command::new("cp")
        .arg(glint_bin())
        .arg(&tmp)
        .status()
        .expect("cp");
    assert!(ok.success(), "cp {}", glint_bin());
    let path = bin.join("glint");
    std::fs::rename(&tmp, &path).unwrap();
    path
}

fn conf(d: &Docroot, port: u16, pid: &Path) -> String {
    format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {port}\n\
         server.pid-file = \"{}\"\n",
        d.root.display(),
        pid.display()
    )
}

#[test]
fn sigusr2_starts_the_new_binary_and_hands_over_without_a_failed_request() {
    upgrade_under_load("");
}

/// With workers, the supervisor starts the new glint (a supervisor with
/// workers of its own) and its workers finish as in a handover.
#[test]
fn a_supervisor_with_workers_hands_over_too() {
    upgrade_under_load("server.max-worker = 2\n");
}

fn site() -> Docroot {
    let d = Docroot::new();
    d.file("index.html", b"hello upgrade\n");
    d.file("big.bin", &pseudo_random(16 << 20, 7));
    d
}

/// `ab -k -c 8` for `secs` seconds (at most 500000 requests; `-t` before
/// `-n`, which it would otherwise cap at 50000): (complete, failed,
/// non-2xx, output).
fn ab(port: u16, secs: u32) -> std::thread::JoinHandle<(u64, u64, u64, String)> {
    let mut cmd = tool("ab");
    cmd.args([
        "-k",
        "-c",
        "8",
        "-t",
        &secs.to_string(),
        "-n",
        "500000",
        "-s",
        "10",
    ])
    .arg(format!("http://127.0.0.1:{port}/index.html"));
    std::thread::spawn(move || {
        let o = cmd.output().expect("ab");
        let out = text(&o.stdout);
        let num = |name: &str, nth: usize| {
            out.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(nth))
                .and_then(|v| v.parse().ok())
        };
        (
            num("Complete requests:", 2).unwrap_or(0),
            num("Failed requests:", 2).unwrap_or(u64::MAX),
            num("Non-2xx responses:", 2).unwrap_or(0),
            out + &text(&o.stderr),
        )
    })
}

/// `wrk` with one connection for `secs` seconds: its report.
fn wrk(port: u16, secs: u32) -> std::thread::JoinHandle<String> {
    let mut cmd = tool("wrk");
    cmd.args(["-t1", "-c1", &format!("-d{secs}s"), "--timeout", "5s"])
        .arg(format!("http://127.0.0.1:{port}/index.html"));
    std::thread::spawn(move || {
        let o = cmd.output().expect("wrk");
        text(&o.stdout) + &text(&o.stderr)
    })
}

/// Downloads big.bin at about 4 MiB/s: a response in flight across the
/// upgrade. Returns the bytes of the body received.
fn slow_download(port: u16) -> std::thread::JoinHandle<Result<usize, String>> {
    std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok();
        s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .map_err(|e| e.to_string())?;
        let mut got = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => return Err(format!("after {} bytes: {e}", got.len())),
            }
            // 64 KiB every 16 ms: 4 MiB/s, 16 MiB in about 4 s.
            std::thread::sleep(Duration::from_millis(16));
        }
        let body = find(&got, b"\r\n\r\n").map_or(0, |i| got.len() - i - 4);
        Ok(body)
    })
}

fn upgrade_under_load(extra: &str) {
    let work = TempDir::new("upgrade");
    let d = site();
    let bin = install_binary(work.path());
    let pid_file = work.join("glint.pid");
    let port = free_port();
    let _guard = PidGuard(pid_file.clone());
    let mut old = Launch::command({
        let mut c = Command::new(&bin);
        c.arg("-D");
        c
    })
    .config(&(conf(&d, port, &pid_file) + extra))
    .start();
    let old_pid = old.pid();
    assert!(wait_for(TIMEOUT, || read_pid(&pid_file) == Some(old_pid)));
    let load = ab(port, 8);
    let one = wrk(port, 8);
    let download = slow_download(port);
    std::thread::sleep(Duration::from_millis(1500));
    // A new binary arrives, then the signal.
    install_binary(work.path());
    old.signal(Signal::SIGUSR2);
    let started = Instant::now();
    let moved = wait_for(Duration::from_secs(20), || {
        read_pid(&pid_file).is_some_and(|p| p != old_pid)
    });
    assert!(
        moved,
        "the pid file still names the old glint:\n{}",
        old.log()
    );
    let exited = old.wait_exit(Duration::from_secs(20));
    assert!(
        exited.is_some_and(|st| st.success()),
        "the old glint did not finish cleanly ({exited:?}):\n{}",
        old.log()
    );
    eprintln!(
        "handed over and the old glint exited {:?} after SIGUSR2",
        started.elapsed()
    );
    let (complete, failed, non2xx, out) = load.join().unwrap();
    assert!(
        complete > 0 && failed == 0 && non2xx == 0,
        "ab -k across the upgrade:\n{out}"
    );
    let report = one.join().unwrap();
    assert!(
        report.contains("requests in")
            && !report.contains("Socket errors")
            && !report.contains("Non-2xx"),
        "wrk across the upgrade:\n{report}"
    );
    let body = download
        .join()
        .unwrap()
        .expect("the download across the upgrade");
    assert_eq!(body, 16 << 20, "the whole file arrived");
    eprintln!(
        "ab -k: {complete} requests, 0 failed; wrk: {}",
        report
            .lines()
            .find(|l| l.contains("requests in"))
            .unwrap_or("")
    );
    // The new glint serves on the same socket.
    let r = get_at(format!("127.0.0.1:{port}").parse().unwrap(), "/index.html").expect("new glint");
    assert_eq!(r.body, b"hello upgrade\n");
    assert!(old.log().contains("the new glint serves"), "{}", old.log());
}

#[test]
fn a_new_binary_that_fails_leaves_the_old_one_serving() {
    let work = TempDir::new("upgrade-fail");
    let d = site();
    let bin = install_binary(work.path());
    let pid_file = work.join("glint.pid");
    let port = free_port();
    let _guard = PidGuard(pid_file.clone());
    let conf_path = work.join("glint.conf");
    std::fs::write(&conf_path, conf(&d, port, &pid_file)).unwrap();
    let mut old = Launch::command({
        let mut c = Command::new(&bin);
        c.arg("-D");
        c
    })
    .config_file(&conf_path)
    .start();
    let pid = old.pid();
    let serves = || {
        get_at(format!("127.0.0.1:{port}").parse().unwrap(), "/index.html")
            .is_ok_and(|r| r.body == b"hello upgrade\n")
    };
    // 1. The configuration no longer loads: the new glint's check fails.
    std::fs::write(&conf_path, "server.port = \"broken\n").unwrap();
    old.signal(Signal::SIGUSR2);
    assert!(
        wait_for(TIMEOUT, || old
            .log()
            .matches("binary upgrade failed")
            .count()
            == 1),
        "{}",
        old.log()
    );
    assert!(serves() && old.is_running() && read_pid(&pid_file) == Some(pid));
    // 2. A binary that dies at once.
    std::fs::write(&conf_path, conf(&d, port, &pid_file)).unwrap();
    let tmp = work.join("bin/glint.new");
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf '#!/bin/sh\\nexit 3\\n' > {0} && chmod 755 {0}",
            tmp.display()
        ))
        .status()
        .expect("sh");
    assert!(ok.success());
    std::fs::rename(&tmp, &bin).unwrap();
    old.signal(Signal::SIGUSR2);
    assert!(
        wait_for(TIMEOUT, || old
            .log()
            .matches("binary upgrade failed")
            .count()
            == 2),
        "{}",
        old.log()
    );
    assert!(old.log().contains("exit status: 3"), "{}", old.log());
    assert!(serves() && old.is_running() && read_pid(&pid_file) == Some(pid));
}

/// systemd's view (Type=notify, NotifyAccess=all): READY=1 with MAINPID=
/// from the first glint, then from the new one after SIGUSR2, so that
/// systemd follows the new process when the old one exits.
#[test]
fn systemd_is_told_the_new_main_pid() {
    use std::os::unix::net::UnixDatagram;
    let work = TempDir::new("upgrade-notify");
    let d = site();
    let bin = install_binary(work.path());
    let pid_file = work.join("glint.pid");
    let _guard = PidGuard(pid_file.clone());
    let sock_path = work.join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut cmd = Command::new(&bin);
    cmd.arg("-D").env("NOTIFY_SOCKET", &sock_path);
    let mut old = Launch::command(cmd)
        .config(&conf(&d, free_port(), &pid_file))
        .start();
    let mut buf = [0u8; 256];
    let mut next = || {
        let n = sock.recv(&mut buf).expect("a notification");
        text(&buf[..n])
    };
    assert_eq!(next(), format!("READY=1\nMAINPID={}\n", old.pid()));
    old.signal(Signal::SIGUSR2);
    let msg = next();
    let new_pid: i32 = msg
        .strip_prefix("READY=1\nMAINPID=")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{msg:?}"));
    assert_ne!(new_pid, old.pid());
    assert!(old
        .wait_exit(Duration::from_secs(20))
        .is_some_and(|s| s.success()));
    assert_eq!(read_pid(&pid_file), Some(new_pid));
}

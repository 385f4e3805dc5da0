//! Start-up as a service: detaching, the pid file, privileges, systemd
//! socket activation, worker supervision, and the packaging files.

mod common;

use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

/// Runs `glint -f conf` (no -D) to completion of the starting process.
fn start_daemon(conf: &std::path::Path) -> std::process::Output {
    let mut child = Command::new(glint_bin())
        .arg("-f")
        .arg(conf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let done = wait_for(Duration::from_secs(10), || {
        child.try_wait().ok().flatten().is_some()
    });
    if !done {
        let _ = child.kill();
    }
    child.wait_with_output().unwrap()
}

fn read_pid(path: &std::path::Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn daemon_detaches_writes_and_removes_its_pid_file() {
    let dir = TempDir::new("daemon");
    let root = docroot(&dir, "www", "daemon\n");
    let port = free_port();
    let pid_path = dir.join("glint.pid");
    // A stale pid file (a process that has exited) is replaced.
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    std::fs::write(&pid_path, format!("{gone_pid}\n")).unwrap();
    let conf = write_conf(
        &dir,
        &root,
        port,
        &format!("server.pid-file = \"{}\"", pid_path.display()),
    );

    let out = start_daemon(&conf);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "start failed: {stderr}");
    assert!(
        stderr.contains(&format!("glint: listening on 127.0.0.1:{port}")),
        "{stderr}"
    );
    let pid = read_pid(&pid_path);
    assert_ne!(pid as u32, gone_pid);
    assert!(alive(pid));
    // Detached: its own session, and the starting process has exited.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_ne!(
        fields[1],
        std::process::id().to_string(),
        "parent is the test"
    );
    assert_eq!(fields[3], fields[2], "session id is its process group"); // setsid, then a fork
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let r = get_at(addr, "/").unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"daemon\n"[..]));

    // A second start is refused while the first runs, and changes nothing.
    let out2 = start_daemon(&conf);
    let stderr2 = String::from_utf8_lossy(&out2.stderr);
    assert!(!out2.status.success());
    assert!(
        stderr2.contains(&format!("running with pid {pid}")),
        "{stderr2}"
    );
    assert_eq!(read_pid(&pid_path), pid);

    signal(pid, SIGTERM);
    assert!(wait_for(Duration::from_secs(10), || !alive(pid)));
    assert!(
        wait_for(Duration::from_secs(2), || !pid_path.exists()),
        "pid file left behind"
    );
}

#[test]
fn start_up_errors_reach_the_terminal_before_detaching() {
    let dir = TempDir::new("daemon-err");
    let conf = write_conf(&dir, &dir.join("missing"), free_port(), "");
    let out = start_daemon(&conf);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("server.document-root"), "{stderr}");

    // A port in use: the bind error, with the address, and status 1.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let root = docroot(&dir, "www", "x");
    let conf = write_conf(&dir, &root, port, "");
    let out = start_daemon(&conf);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
}

#[test]
fn drops_privileges_to_nobody() {
    if !is_root() {
        eprintln!("note: not root; the privilege drop test is skipped");
        return;
    }
    let dir = TempDir::new("privs");
    let root = docroot(&dir, "www", "public index\n");
    std::fs::write(root.join("public.txt"), "for everyone\n").unwrap();
    set_mode(&root.join("public.txt"), 0o644);
    std::fs::write(root.join("secret.txt"), "root only\n").unwrap();
    set_mode(&root.join("secret.txt"), 0o600);
    let conf = write_conf(
        &dir,
        &root,
        free_port(),
        "server.username = \"nobody\"\nserver.max-worker = 0",
    );
    let g = Launch::new().config_file(&conf).start();
    let status = std::fs::read_to_string(format!("/proc/{}/status", g.pid())).unwrap();
    let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    let uids: Vec<&str> = uid_line.split_whitespace().skip(1).collect();
    assert!(uids.iter().all(|u| *u != "0"), "{uid_line}");
    let r = get_at(g.addr(), "/public.txt").unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"for everyone\n"[..]));
    assert_eq!(get_at(g.addr(), "/secret.txt").unwrap().status, 403);
}

#[test]
fn serves_from_inside_a_chroot() {
    if !is_root() {
        eprintln!("note: not root; the chroot test is skipped");
        return;
    }
    let dir = TempDir::new("chroot");
    // The document root is a path inside the chroot.
    let jail = dir.join("jail");
    std::fs::create_dir_all(jail.join("htdocs")).unwrap();
    set_mode(&jail, 0o755);
    set_mode(&jail.join("htdocs"), 0o755);
    std::fs::write(jail.join("htdocs/index.html"), "jailed\n").unwrap();
    let conf = write_conf(
        &dir,
        std::path::Path::new("/htdocs"),
        free_port(),
        &format!(
            "server.chroot = \"{}\"\nserver.username = \"nobody\"",
            jail.display()
        ),
    );
    let g = Launch::new().config_file(&conf).start();
    let root = std::fs::read_link(format!("/proc/{}/root", g.pid())).unwrap();
    assert_eq!(root, jail);
    let r = get_at(g.addr(), "/").unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"jailed\n"[..]));
    assert_eq!(
        get_at(g.addr(), "/../../etc/passwd").unwrap().status / 100,
        4
    );
}

#[test]
fn refuses_an_unknown_user() {
    let dir = TempDir::new("privs-unknown");
    let root = docroot(&dir, "www", "x");
    let conf = write_conf(
        &dir,
        &root,
        free_port(),
        "server.username = \"no-such-user-glint\"",
    );
    let out = Command::new(glint_bin())
        .arg("-D")
        .arg("-f")
        .arg(&conf)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such user"));
}

/// Starts `glint -D -f conf` with `listener` as descriptor 3 and
/// LISTEN_FDS=1, as systemd does; waits for `listeners` listeners.
fn start_activated(
    conf: &std::path::Path,
    listener: &std::net::TcpListener,
    listeners: usize,
) -> Server {
    let fd = listener.as_raw_fd();
    // sh sets LISTEN_PID to its own pid, which `exec` hands to glint.
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("LISTEN_PID=$$ LISTEN_FDS=1 exec \"$0\" -D -f \"$1\"")
        .arg(glint_bin())
        .arg(conf);
    // SAFETY: dup2 and fcntl are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if fd == 3 {
                if nix::libc::fcntl(3, nix::libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if nix::libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Launch::command(cmd).listeners(listeners).start()
}

#[test]
fn uses_a_socket_handed_down_by_systemd() {
    let dir = TempDir::new("activation");
    let root = docroot(&dir, "www", "activated\n");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let conf = write_conf(
        &dir,
        &root,
        port,
        "server.systemd-socket-activation = \"enable\"",
    );
    // The test still holds the socket: glint could not bind the port anew.
    let g = start_activated(&conf, &listener, 1);
    drop(listener);
    assert_eq!(g.addrs, vec![format!("127.0.0.1:{port}")]);
    let r = get_at(g.addr(), "/").unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"activated\n"[..]));
}

#[test]
fn serves_an_inherited_socket_no_listener_names() {
    let dir = TempDir::new("activation-extra");
    let root = docroot(&dir, "www", "both\n");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let inherited = listener.local_addr().unwrap();
    let port = free_port();
    let conf = write_conf(
        &dir,
        &root,
        port,
        "server.systemd-socket-activation = \"enable\"",
    );
    let g = start_activated(&conf, &listener, 2);
    drop(listener);
    assert_eq!(
        g.addrs,
        vec![format!("127.0.0.1:{port}"), inherited.to_string()]
    );
    for a in &g.addrs {
        let r = get_at(a.parse().unwrap(), "/").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"both\n"[..]));
    }
}

/// The worker processes of `pid`.
fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let rest: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if rest.len() > 2 && rest[1] == pid.to_string() && rest[0] != "Z" {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn a_killed_worker_is_replaced() {
    let dir = TempDir::new("workers");
    let root = docroot(&dir, "www", "worker\n");
    let conf = write_conf(&dir, &root, free_port(), "server.max-worker = 2");
    let mut g = Launch::new().config_file(&conf).start();
    let sup = g.pid();
    assert!(
        wait_for(Duration::from_secs(5), || children(sup).len() == 2),
        "workers: {:?}",
        children(sup)
    );
    let before = children(sup);
    for _ in 0..10 {
        assert_eq!(get_at(g.addr(), "/").unwrap().status, 200);
    }
    signal(before[0], SIGKILL);
    assert!(
        wait_for(Duration::from_secs(8), || {
            let now = children(sup);
            now.len() == 2 && !now.contains(&before[0])
        }),
        "not replaced: {:?}",
        children(sup)
    );
    for _ in 0..10 {
        assert_eq!(get_at(g.addr(), "/").unwrap().status, 200);
    }
    let workers = children(sup);
    g.signal_and_exit_cleanly(SIGTERM, Duration::from_secs(10));
    for w in workers {
        assert!(wait_for(Duration::from_secs(5), || !alive(w)));
    }
}

#[test]
fn packaging_files_are_well_formed() {
    let root = env!("CARGO_MANIFEST_DIR");
    let rc = format!("{root}/conf/rc.d/glint");
    let st = Command::new("sh").arg("-n").arg(&rc).status().unwrap();
    assert!(st.success(), "sh -n {rc}");
    for f in [
        "conf/systemd/glint.service",
        "conf/systemd/glint.socket",
        "conf/logrotate.d/glint",
    ] {
        assert!(std::path::Path::new(root).join(f).is_file(), "{f}");
    }
    // systemd-analyze checks the units when it is installed; the service
    // names /usr/sbin/glint, replaced here by the binary under test.
    let Ok(probe) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("note: no systemd-analyze; the units are not verified");
        return;
    };
    if !probe.status.success() {
        eprintln!("note: systemd-analyze does not run here; the units are not verified");
        return;
    }
    let dir = TempDir::new("units");
    for f in ["glint.service", "glint.socket"] {
        let text = std::fs::read_to_string(format!("{root}/conf/systemd/{f}")).unwrap();
        std::fs::write(dir.join(f), text.replace("/usr/sbin/glint", &glint_bin())).unwrap();
    }
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(dir.join("glint.service"))
        .arg(dir.join("glint.socket"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    // Only complaints about the units themselves count, not about the host.
    let ours: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("glint.service") || l.contains("glint.socket"))
        .collect();
    assert!(ours.is_empty(), "systemd-analyze verify:\n{text}");
}

#[test]
fn workers_take_a_new_configuration_on_sigusr1() {
    let dir = TempDir::new("workers-reload");
    let a = docroot(&dir, "a", "A");
    let b = docroot(&dir, "b", "B");
    let port = free_port();
    let conf = write_conf(&dir, &a, port, "server.max-worker = 2");
    let mut g = Launch::new().config_file(&conf).start();
    let sup = g.pid();
    assert!(wait_for(Duration::from_secs(5), || children(sup).len() == 2));
    let old = children(sup);
    assert_eq!(get_at(g.addr(), "/").unwrap().body, b"A");
    let client = client_loop(g.addr());
    std::thread::sleep(Duration::from_millis(200));
    write_conf(&dir, &b, port, "server.max-worker = 2");
    g.signal(SIGUSR1);
    // The old workers finish and go, two new ones serve the new docroot.
    assert!(
        wait_for(Duration::from_secs(8), || {
            let now = children(sup);
            now.len() == 2 && now.iter().all(|p| !old.contains(p))
        }),
        "workers: {:?} (old {old:?})",
        children(sup)
    );
    for _ in 0..10 {
        let r = get_at(g.addr(), "/").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"B"[..]));
    }
    let seen = client.finish_without_failures();
    assert_eq!(seen.last().map(Vec::as_slice), Some(&b"B"[..]));
    g.signal_and_exit_cleanly(SIGINT, Duration::from_secs(10));
}

/// `(command name, process group)` of a live process.
fn comm_and_group(pid: i32) -> Option<(String, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let name = head.split_once('(')?.1.to_string();
    let f: Vec<&str> = rest.split_whitespace().collect();
    if f.first().is_some_and(|s| *s == "Z" || *s == "X") {
        return None;
    }
    Some((name, f.get(2)?.parse().ok()?))
}

/// Live processes in process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|&p| comm_and_group(p).is_some_and(|(_, g)| g == pgid))
        .collect()
}

/// The supervisor's children, split into (glint workers, php-cgi processes).
fn workers_and_php(sup: i32) -> (Vec<i32>, Vec<i32>) {
    let mut w = Vec::new();
    let mut php = Vec::new();
    for p in children(sup) {
        match comm_and_group(p) {
            Some((name, _)) if name.starts_with("php") => php.push(p),
            Some(_) => w.push(p),
            None => {}
        }
    }
    (w, php)
}

/// `n` GETs of `/hello.php?x=i` from four clients at once: each must be 200
/// with the script's answer.
fn php_requests(addr: std::net::SocketAddr, n: usize) {
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in (t..n).step_by(4) {
                    let r = get_at(addr, &format!("/hello.php?x={i}"))
                        .unwrap_or_else(|e| panic!("request {i}: {e}"));
                    assert_eq!(r.status, 200, "request {i}: {}", r.describe());
                    assert_eq!(r.body, format!("php {i}\n").into_bytes());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
}

/// A document root with `hello.php` (echoes `x`) and `slow.php` (sleeps 2 s).
fn php_docroot(dir: &TempDir) -> std::path::PathBuf {
    let root = docroot(dir, "www", "x");
    std::fs::write(
        root.join("hello.php"),
        "<?php echo 'php ', $_GET['x'] ?? '', \"\\n\";",
    )
    .unwrap();
    // Says whether it was cut short (php-cgi's sleep ends early on a signal).
    std::fs::write(
        root.join("slow.php"),
        "<?php $t = microtime(true); sleep(2); echo microtime(true) - $t >= 1.9 ? \"slow\\n\" : \"cut short\\n\";",
    )
    .unwrap();
    root
}

/// Two workers, and php-cgi spawned with `bin-path` on `sock` with `children`.
fn php_workers_conf(sock: &std::path::Path, children: u32) -> String {
    let php = ["/usr/bin/php-cgi", "/usr/local/bin/php-cgi"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("php-cgi (apt-get install php-cgi)");
    format!(
        "server.max-worker = 2\n\
         fastcgi.server = ( \".php\" => (( \"bin-path\" => \"{php}\", \"socket\" => \"{sock}\", \"max-procs\" => 1,\n\
           \"bin-environment\" => ( \"PHP_FCGI_CHILDREN\" => \"{children}\", \"PHP_FCGI_MAX_REQUESTS\" => \"10000\" ),\n\
           \"bin-copy-environment\" => ( \"PATH\" ), \"broken-scriptfilename\" => \"enable\" )))",
        sock = sock.display()
    )
}

/// Starts glint with two workers and php-cgi (two children) on `sock`, and
/// waits until the supervisor has the two workers and its one php-cgi.
fn start_php_workers(
    dir: &TempDir,
    root: &std::path::Path,
    port: u16,
    sock: &std::path::Path,
) -> Server {
    let conf = write_conf(dir, root, port, &php_workers_conf(sock, 2));
    let g = Launch::new().config_file(&conf).start();
    let sup = g.pid();
    assert!(
        wait_for(Duration::from_secs(10), || {
            let (w, php) = workers_and_php(sup);
            w.len() == 2 && php.len() == 1
        }),
        "children of the supervisor: {:?}\n{}",
        workers_and_php(sup),
        g.stderr_tail()
    );
    g
}

#[test]
fn workers_share_the_backends_their_supervisor_spawns() {
    let dir = TempDir::new("workers-php");
    let root = php_docroot(&dir);
    let sock = dir.join("php.socket");
    // One php-cgi, the supervisor's: the workers start none.
    let mut g = start_php_workers(&dir, &root, free_port(), &sock);
    let sup = g.pid();
    let (workers, first) = workers_and_php(sup);
    for w in &workers {
        assert_eq!(children(*w), Vec::<i32>::new(), "children of worker {w}");
    }
    php_requests(g.addr(), 40);

    // Killed: the supervisor reaps it, ends its group and starts another.
    let old = first[0];
    signal(old, SIGKILL);
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let (_, php) = workers_and_php(sup);
        let served = php.len() == 1
            && php[0] != old
            && get_at(g.addr(), "/hello.php?x=1").is_ok_and(|r| r.status == 200);
        if served {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "php-cgi was not restarted: {php:?}\n{}",
            g.stderr_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        wait_for(Duration::from_secs(5), || group_members(old).is_empty()),
        "the old php-cgi group lives on: {:?}",
        group_members(old)
    );
    let (workers, php) = workers_and_php(sup);
    assert_eq!(workers.len(), 2);
    for w in &workers {
        assert_eq!(children(*w), Vec::<i32>::new(), "children of worker {w}");
    }
    php_requests(g.addr(), 40);

    // SIGTERM: the workers go, then the backend, its whole group.
    let group = php[0];
    assert!(!group_members(group).is_empty());
    g.signal_and_exit_cleanly(SIGTERM, Duration::from_secs(10));
    assert!(
        wait_for(Duration::from_secs(5), || group_members(group).is_empty()),
        "php-cgi left behind: {:?}",
        group_members(group)
    );
    for w in workers {
        assert!(wait_for(Duration::from_secs(5), || !alive(w)));
    }
    let sock0 = format!("{}-0", sock.display());
    assert!(
        !std::path::Path::new(&sock0).exists(),
        "{sock0} left behind"
    );
}

#[test]
fn workers_sigusr1_keeps_retired_backends_until_the_old_workers_exit() {
    let dir = TempDir::new("workers-php-reload");
    let root = php_docroot(&dir);
    let sock = dir.join("php.socket");
    let port = free_port();
    let mut g = start_php_workers(&dir, &root, port, &sock);
    let sup = g.pid();
    let (old_workers, first) = workers_and_php(sup);
    let old_php = first[0];
    php_requests(g.addr(), 8);

    // Unchanged options: the same php-cgi serves the new workers.
    g.signal(SIGUSR1);
    assert!(
        wait_for(Duration::from_secs(10), || {
            let (w, php) = workers_and_php(sup);
            w.len() == 2 && w.iter().all(|p| !old_workers.contains(p)) && php == [old_php]
        }),
        "after the first SIGUSR1: {:?} (old workers {old_workers:?}, php {old_php})\n{}",
        workers_and_php(sup),
        g.stderr_tail()
    );
    php_requests(g.addr(), 8);

    // Changed options: a new php-cgi; the old one finishes the old workers'
    // request under way before it is stopped.
    let (old_workers, _) = workers_and_php(sup);
    let addr = g.addr();
    let slow = std::thread::spawn(move || get_at(addr, "/slow.php"));
    std::thread::sleep(Duration::from_millis(500));
    write_conf(&dir, &root, port, &php_workers_conf(&sock, 1));
    g.signal(SIGUSR1);
    let r = slow.join().expect("slow client").expect("slow request");
    let body = String::from_utf8_lossy(&r.body);
    assert_eq!((r.status, body.as_ref()), (200, "slow\n"));
    assert!(
        wait_for(Duration::from_secs(10), || {
            let (w, php) = workers_and_php(sup);
            w.len() == 2
                && w.iter().all(|p| !old_workers.contains(p))
                && php.len() == 1
                && php[0] != old_php
                && group_members(old_php).is_empty()
        }),
        "after the second SIGUSR1: {:?} (old php {old_php}: {:?})\n{}",
        workers_and_php(sup),
        group_members(old_php),
        g.stderr_tail()
    );
    php_requests(g.addr(), 8);
    let (_, php) = workers_and_php(sup);
    g.signal_and_exit_cleanly(SIGTERM, Duration::from_secs(10));
    assert!(
        wait_for(Duration::from_secs(5), || group_members(php[0]).is_empty()),
        "php-cgi left behind"
    );
}

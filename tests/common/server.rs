//! The server under test: started from flags and/or a configuration text,
//! ready once it has printed `glint: listening on ADDR`, stopped on drop.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::resource::{getrlimit, setrlimit, Resource};
pub use nix::sys::signal::Signal::{self, SIGHUP, SIGINT, SIGKILL, SIGTERM, SIGUSR1};
use nix::unistd::Pid;

use super::{connect_tcp, wait_for, Conn, Docroot, Response, TempDir, TIMEOUT};

/// Longest wait for a server to report its listeners.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The glint binary under test: `GLINT_BIN` (e.g. /work/main's), else the
/// one built with the tests.
pub fn glint_bin() -> String {
    std::env::var("GLINT_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_glint").to_string())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Glint,
    Lighttpd,
}

/// Which server [`Server::start`] runs: glint, or with
/// `GLINT_BLACKBOX_SERVER=lighttpd` lighttpd with a generated minimal
/// config, to sanity-check the expectations against a reference.
pub fn server_kind() -> Kind {
    match std::env::var("GLINT_BLACKBOX_SERVER").as_deref() {
        Ok("lighttpd") => Kind::Lighttpd,
        _ => Kind::Glint,
    }
}

/// How to start glint: `glint -D`, plus what the methods add.
pub struct Launch {
    cmd: Command,
    listeners: usize,
    conf_dir: Option<TempDir>,
}

impl Launch {
    pub fn new() -> Launch {
        let mut cmd = Command::new(glint_bin());
        cmd.arg("-D");
        Launch::command(cmd)
    }

    /// Any command that ends up exec'ing glint (e.g. through a shell that
    /// sets up its environment).
    pub fn command(cmd: Command) -> Launch {
        Launch {
            cmd,
            listeners: 1,
            conf_dir: None,
        }
    }

    /// The configuration (lighttpd syntax), written to a file of its own and
    /// given with `-f`.
    pub fn config(mut self, text: &str) -> Launch {
        let dir = TempDir::new("conf");
        let path = dir.join("glint.conf");
        std::fs::write(&path, text).expect("write config");
        self.cmd.arg("-f").arg(&path);
        self.conf_dir = Some(dir);
        self
    }

    /// `-f path`: a configuration file the test writes (and may rewrite).
    pub fn config_file(mut self, path: &Path) -> Launch {
        self.cmd.arg("-f").arg(path);
        self
    }

    /// Serves `root` on 127.0.0.1, port 0 (overriding the configuration).
    pub fn docroot(mut self, root: &Path) -> Launch {
        self.cmd
            .arg("--document-root")
            .arg(root)
            .args(["--bind", "127.0.0.1", "--port", "0"]);
        self
    }

    pub fn args(mut self, args: &[&str]) -> Launch {
        self.cmd.args(args);
        self
    }

    /// RLIMIT_NOFILE (soft and hard) for the server process.
    pub fn nofile(mut self, n: u64) -> Launch {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            self.cmd.pre_exec(move || {
                setrlimit(Resource::RLIMIT_NOFILE, n, n).map_err(std::io::Error::from)
            });
        }
        self
    }

    /// How many `listening on` lines to wait for (1 unless set).
    pub fn listeners(mut self, n: usize) -> Launch {
        self.listeners = n;
        self
    }

    /// Starts the process and waits until it has reported its listeners;
    /// panics with its stderr if it does not within [`START_TIMEOUT`].
    pub fn start(mut self) -> Server {
        let what = format!("{:?}", self.cmd.get_program());
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let (tx, rx) = mpsc::channel::<String>();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("piped stderr");
        let log2 = Arc::clone(&log);
        // Drains stderr for the whole life of the process, so that it never
        // blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                log2.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(line.clone());
                let _ = tx.send(line);
            }
        });
        const MARK: &str = "glint: listening on ";
        let deadline = Instant::now() + START_TIMEOUT;
        let mut addrs = Vec::new();
        while addrs.len() < self.listeners {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                // Tolerate a log prefix before the contract text.
                Ok(line) => {
                    if let Some(i) = line.find(MARK) {
                        addrs.push(line[i + MARK.len()..].trim().to_string());
                    }
                }
                Err(e) => {
                    let _ = child.kill();
                    let st = child.wait();
                    let why = match e {
                        mpsc::RecvTimeoutError::Timeout => format!("within {START_TIMEOUT:?}"),
                        mpsc::RecvTimeoutError::Disconnected => {
                            format!("before closing stderr (exit: {st:?})")
                        }
                    };
                    panic!(
                        "{what} did not print {} `{MARK}ADDR` line(s) {why} (got {addrs:?}); stderr:\n{}",
                        self.listeners,
                        log.lock().unwrap_or_else(|e| e.into_inner()).join("\n")
                    );
                }
            }
        }
        let first = match addrs[0].parse::<SocketAddr>() {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("bad listening address {:?}", addrs[0]);
            }
        };
        Server {
            child,
            port: first.port(),
            first,
            addrs,
            kind: Kind::Glint,
            stderr: log,
            _conf_dir: self.conf_dir,
        }
    }
}

/// A running server, stopped on drop (see [`Server::stop`]).
pub struct Server {
    child: Child,
    first: SocketAddr,
    /// The port of the first listener.
    pub port: u16,
    /// Every listener reported, in order.
    pub addrs: Vec<String>,
    pub kind: Kind,
    /// Everything the server wrote on stderr so far, line by line.
    pub stderr: Arc<Mutex<Vec<String>>>,
    _conf_dir: Option<TempDir>,
}

impl Server {
    /// The server of [`server_kind`] serving `root.root` on 127.0.0.1.
    pub fn start(root: &Docroot) -> Server {
        Server::start_with(root, &[])
    }

    /// `extra`: additional glint flags, e.g. `["--max-connections", "10"]`
    /// (for lighttpd only `--max-connections` is translated).
    pub fn start_with(root: &Docroot, extra: &[&str]) -> Server {
        match server_kind() {
            Kind::Glint => Launch::new().docroot(&root.root).args(extra).start(),
            Kind::Lighttpd => Server::start_lighttpd(root, extra),
        }
    }

    fn start_lighttpd(root: &Docroot, extra: &[&str]) -> Server {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let confdir = TempDir::new("lighttpd");
        let mut conf = String::new();
        let _ = writeln!(conf, "server.document-root = \"{}\"", root.root.display());
        let _ = writeln!(conf, "server.bind = \"127.0.0.1\"");
        let _ = writeln!(conf, "server.port = {port}");
        let _ = writeln!(
            conf,
            "server.errorlog = \"{}\"",
            confdir.join("error.log").display()
        );
        let _ = writeln!(
            conf,
            "server.modules += ( \"mod_indexfile\", \"mod_staticfile\" )"
        );
        let _ = writeln!(conf, "index-file.names = ( \"index.html\", \"index.htm\" )");
        let _ = writeln!(conf, "server.range-requests = \"enable\"");
        let _ = writeln!(conf, "static-file.etags = \"enable\"");
        let _ = writeln!(conf, "etag.use-inode = \"enable\"");
        let _ = writeln!(conf, "etag.use-mtime = \"enable\"");
        let _ = writeln!(conf, "etag.use-size = \"enable\"");
        let _ = writeln!(
            conf,
            "mimetype.assign = ( \".html\" => \"text/html; charset=utf-8\", \".htm\" => \"text/html; charset=utf-8\", \
             \".css\" => \"text/css; charset=utf-8\", \".js\" => \"text/javascript\", \".jpg\" => \"image/jpeg\", \
             \".jpeg\" => \"image/jpeg\", \".txt\" => \"text/plain; charset=utf-8\" )"
        );
        let mut it = extra.iter();
        while let Some(a) = it.next() {
            if *a == "--max-connections" {
                let n = it.next().expect("--max-connections N");
                let _ = writeln!(conf, "server.max-connections = {n}");
            }
        }
        Server::run_lighttpd(&conf, port, confdir)
    }

    /// The server of [`server_kind`] from a whole configuration text in
    /// which `{port}` stands for the port and `{errorlog}` for an error
    /// log line: glint on port 0 (it reports the port it got) logging to
    /// stderr, lighttpd on a port free a moment ago, logging to a file.
    pub fn start_config(conf: &str) -> Server {
        match server_kind() {
            Kind::Glint => Launch::new()
                .config(&conf.replace("{port}", "0").replace("{errorlog}", ""))
                .start(),
            Kind::Lighttpd => {
                let port = free_port();
                let confdir = TempDir::new("lighttpd");
                let log = format!(
                    "server.errorlog = \"{}\"",
                    confdir.join("error.log").display()
                );
                let text = conf
                    .replace("{port}", &port.to_string())
                    .replace("{errorlog}", &log);
                Server::run_lighttpd(&text, port, confdir)
            }
        }
    }

    /// Runs `lighttpd -D` on `conf` (written into `confdir`, where its
    /// error log goes too) and waits until it accepts on `port`.
    fn run_lighttpd(conf: &str, port: u16, confdir: TempDir) -> Server {
        let conf_path = confdir.join("lighttpd.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let mut child = Command::new("lighttpd")
            .arg("-D")
            .arg("-f")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start lighttpd (apt-get install lighttpd)");
        // lighttpd says nothing when it listens: poll the port.
        let listening = wait_for(TIMEOUT, || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
                || matches!(child.try_wait(), Ok(Some(_)))
        });
        if let Ok(Some(st)) = child.try_wait() {
            panic!(
                "lighttpd exited early ({st}); error.log:\n{}",
                std::fs::read_to_string(confdir.join("error.log")).unwrap_or_default()
            );
        }
        if !listening {
            let _ = child.kill();
            let _ = child.wait();
            panic!("lighttpd did not accept on port {port} within {TIMEOUT:?}");
        }
        Server {
            child,
            port,
            first: SocketAddr::from(([127, 0, 0, 1], port)),
            addrs: vec![format!("127.0.0.1:{port}")],
            kind: Kind::Lighttpd,
            stderr: Arc::new(Mutex::new(Vec::new())),
            _conf_dir: Some(confdir),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The first listener.
    pub fn addr(&self) -> SocketAddr {
        self.first
    }

    /// `Server:` value prefix expected on every response.
    pub fn server_prefix(&self) -> &'static str {
        match self.kind {
            Kind::Glint => "glint/",
            Kind::Lighttpd => "lighttpd/",
        }
    }

    pub fn connect(&self) -> Conn {
        Conn::connect(self.port)
    }

    /// A plain TCP connection to the first listener (see [`connect_tcp`]).
    pub fn tcp(&self) -> TcpStream {
        connect_tcp(self.addr()).unwrap_or_else(|e| panic!("connect to {}: {e}", self.addr()))
    }

    /// A connection that has sent a request line and no more: glint holds
    /// it, a head in progress, until `server.max-read-idle`; one that has
    /// sent nothing may be closed for a client waiting at the connection limit.
    pub fn connect_started(&self) -> TcpStream {
        let mut s = self.tcp();
        s.write_all(b"GET /index.html HTTP/1.1\r\n")
            .expect("request line");
        s
    }

    /// One GET on a fresh connection (see [`super::get_at`]).
    pub fn get(&self, path: &str) -> Result<Response, String> {
        super::get_at(self.addr(), path)
    }

    pub fn signal(&self, sig: Signal) {
        signal(self.pid(), sig);
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let mut st = None;
        wait_for(timeout, || {
            st = self.child.try_wait().ok().flatten();
            st.is_some()
        });
        st
    }

    /// Sends `sig` and asserts that glint exits, with status 0, within `timeout`.
    #[track_caller]
    pub fn signal_and_exit_cleanly(&mut self, sig: Signal, timeout: Duration) {
        self.signal(sig);
        assert!(self.wait_exit(timeout).expect("glint exited").success());
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM (glint stops at once, and stops the backends it started),
    /// then SIGKILL if it is still there after 2 s. Nothing if it has exited.
    pub fn stop(&mut self) {
        if !self.is_running() {
            // Reaped: the pid may belong to another process by now.
            return;
        }
        let _ = nix::sys::signal::kill(Pid::from_raw(self.pid()), SIGTERM);
        if self.wait_exit(Duration::from_secs(2)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// All of stderr so far, one line after another.
    pub fn log(&self) -> String {
        let l = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        l.iter().map(|s| format!("{s}\n")).collect()
    }

    pub fn stderr_tail(&self) -> String {
        let l = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let start = l.len().saturating_sub(20);
        l[start..].join("\n")
    }

    fn proc_fds(&self) -> Vec<std::fs::DirEntry> {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.flatten().collect())
            .unwrap_or_default()
    }

    /// Open descriptors of the server process.
    pub fn fd_count(&self) -> usize {
        self.proc_fds().len()
    }

    /// Open sockets of the server process (listeners, clients, the waker's
    /// pair), leaving out files such as those in glint's open-file cache.
    pub fn socket_count(&self) -> usize {
        self.proc_fds()
            .iter()
            .filter(|e| {
                std::fs::read_link(e.path())
                    .is_ok_and(|t| t.to_string_lossy().starts_with("socket:"))
            })
            .count()
    }

    /// The numbers of the open descriptors of the server process.
    pub fn fd_numbers(&self) -> Vec<u32> {
        self.proc_fds()
            .iter()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect()
    }

    /// Resident memory in KiB.
    pub fn rss_kb(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// CPU time used so far (user + system), in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        let after = s.rsplit(')').next().unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        // Fields 14 and 15 of stat; `after` starts at field 3.
        let get = |i: usize| {
            f.get(i - 3)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        get(14) + get(15)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Writes `conf` (lighttpd syntax) into the fixture's base directory and
/// starts the server with `-f` on it, serving the fixture's document root.
pub fn start_conf(d: &Docroot, conf: &str) -> Server {
    let path = d.base.join("glint.conf");
    std::fs::write(&path, conf).unwrap();
    Server::start_with(d, &["-f", path.to_str().unwrap()])
}

pub fn signal(pid: i32, sig: Signal) {
    nix::sys::signal::kill(Pid::from_raw(pid), sig)
        .unwrap_or_else(|e| panic!("kill({pid}, {sig}): {e}"));
}

/// Whether `pid` is a live process (not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    // Ports from below the kernel's ephemeral range (32768-60999 here, where
    // port 0 and outgoing connections get theirs), each handed out once per
    // test binary: two tests of one binary running side by side never get
    // the same port (the kernel's port 0, bound and dropped, could give a
    // port just freed by one test to another, whose backend then answered
    // the first test's server).
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % SPAN,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..SPAN {
        let port = (LOW + NEXT.fetch_add(1, Ordering::SeqCst) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
            && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok()
        {
            return port;
        }
    }
    panic!("no free port in {LOW}..{}", LOW + SPAN)
}

/// A TCP port on 127.0.0.1 that refuses connections for as long as the
/// returned socket lives: bound, not listening, so nothing else can take
/// it meanwhile (a port merely found free could be). `listen` on the
/// socket brings it to life.
pub fn refusing_port() -> (std::os::fd::OwnedFd, u16) {
    use nix::sys::socket::{
        bind, getsockname, socket, AddressFamily, SockFlag, SockType, SockaddrIn,
    };
    use std::os::fd::AsRawFd;
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )
    .expect("socket");
    bind(fd.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, 0)).expect("bind");
    let at: SockaddrIn = getsockname(fd.as_raw_fd()).expect("getsockname");
    (fd, at.port())
}

/// Raises this process's soft descriptor limit towards `want`; returns the new soft limit.
pub fn raise_own_nofile(want: u64) -> u64 {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    if soft >= want {
        return soft;
    }
    let new = want.min(hard);
    match setrlimit(Resource::RLIMIT_NOFILE, new, hard) {
        Ok(()) => new,
        Err(_) => soft,
    }
}

/// lighttpd (Debian's) in the foreground with `conf`, once it accepts on
/// `port`; Err with why when it cannot run or exits first (the caller kills
/// the child it gets).
pub fn start_lighttpd(conf: &Path, port: u16) -> Result<Child, String> {
    let mut child = Command::new("lighttpd")
        .arg("-D")
        .arg("-f")
        .arg(conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start lighttpd: {e}"))?;
    let up = wait_for(TIMEOUT, || {
        TcpStream::connect(("127.0.0.1", port)).is_ok() || matches!(child.try_wait(), Ok(Some(_)))
    });
    if up && matches!(child.try_wait(), Ok(None)) {
        return Ok(child);
    }
    let _ = child.kill();
    let _ = child.wait();
    Err("lighttpd did not start".to_string())
}

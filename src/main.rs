//! The `glint` command: lighttpd's command line, configuration, start-up
//! checks, then the event loop.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

use clap::{ArgAction, Parser};

use glint::config::{Config, Settings};
use glint::server::Server;
use glint::signals;

#[derive(Parser, Debug)]
#[command(
    name = "glint",
    about = "A single-process web server that reads lighttpd's configuration",
    disable_version_flag = true
)]
struct Cli {
    /// Configuration file (lighttpd syntax; `-` reads standard input).
    #[arg(short = 'f', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Module directory (accepted for compatibility; glint has its modules built in).
    #[arg(short = 'm', value_name = "DIR")]
    module_dir: Option<PathBuf>,
    /// Print the resolved configuration and exit.
    #[arg(short = 'p')]
    print: bool,
    /// Test the configuration and exit; `-tt` also checks what start-up would.
    #[arg(short = 't', action = ArgAction::Count)]
    test: u8,
    /// Stay in the foreground.
    #[arg(short = 'D')]
    foreground: bool,
    /// Print the version.
    #[arg(short = 'v')]
    version: bool,
    /// Print the version and the features built in.
    #[arg(short = 'V')]
    features: bool,
    /// Serve this directory (overrides server.document-root).
    #[arg(long = "document-root", value_name = "DIR")]
    document_root: Option<PathBuf>,
    /// Listen on this address (overrides server.bind).
    #[arg(long = "bind", value_name = "ADDR")]
    bind: Option<String>,
    /// Listen on this port (overrides server.port; 0 picks a free one).
    #[arg(long = "port", value_name = "PORT")]
    port: Option<u16>,
    /// Most connections at once (overrides server.max-connections).
    #[arg(long = "max-connections", value_name = "N")]
    max_connections: Option<u32>,
}

const VERSION: &str = concat!("glint/", env!("CARGO_PKG_VERSION"));

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_target(false)
        .init();
    let cli = Cli::parse();
    if cli.version {
        println!("{VERSION} - a light and fast web server");
        return ExitCode::SUCCESS;
    }
    if cli.features {
        println!("{VERSION} - a light and fast web server\n\nEvent handler:\n\t+ epoll (mio)\n\nNetwork handler:\n\t+ sendfile\n\t+ writev\n\nFeatures:\n\t+ IPv6 support\n\t+ unix sockets\n\t- TLS");
        return ExitCode::SUCCESS;
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("glint: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let mut config = load_config(&cli)?;
    apply_overrides(&mut config, &cli);
    for w in &config.warnings {
        log::warn!("{w}");
    }
    if cli.print {
        print!("{}", config.dump());
        return Ok(());
    }
    if cli.test == 1 {
        println!("Syntax OK");
        return Ok(());
    }
    check_document_root(&config.global)?;
    raise_fd_limit(config.global.max_fds);
    let mut server = Server::bind(config).map_err(|e| e.to_string())?;
    server.open_logs().map_err(|e| e.to_string())?;
    if cli.test >= 2 {
        println!("Syntax OK");
        return Ok(());
    }
    signals::install().map_err(|e| format!("installing signal handlers: {e}"))?;
    for a in server.local_addrs() {
        eprintln!("glint: listening on {a}");
    }
    let mut server = server.with_signals();
    server.run().map_err(|e| format!("event loop: {e}"))?;
    let st = server.stats();
    log::info!(
        "stopped after {} connections, {} requests, {} bytes sent",
        st.connections,
        st.requests,
        st.bytes_out
    );
    Ok(())
}

/// Where glint looks for its configuration when `-f` is not given.
const DEFAULT_CONFIG: &str = "conf/glint.conf";

/// The configuration from `-f`, else `conf/glint.conf`, else the built-in
/// default: `www/` on 127.0.0.1:8080.
fn load_config(cli: &Cli) -> Result<Config, String> {
    let loaded = match &cli.config {
        Some(p) if p.as_os_str() == "-" => Config::load_stdin(),
        Some(p) => Config::load(p),
        None if Path::new(DEFAULT_CONFIG).is_file() => Config::load(Path::new(DEFAULT_CONFIG)),
        None => {
            let settings = Settings {
                document_root: Some(PathBuf::from("www")),
                bind: Some("127.0.0.1".into()),
                port: 8080,
                ..Settings::default()
            };
            return Ok(Config::from_settings(settings));
        }
    };
    loaded.map_err(|e| e.to_string())
}

/// Command-line options win over the file. Conditional blocks keep applying
/// on top of the changed global settings.
fn apply_overrides(config: &mut Config, cli: &Cli) {
    let s = Rc::make_mut(&mut config.global);
    if let Some(d) = &cli.document_root {
        s.document_root = Some(d.clone());
        s.document_root_origin = None;
    }
    if let Some(b) = &cli.bind {
        s.bind = Some(b.clone());
    }
    if let Some(p) = cli.port {
        s.port = p;
    }
    if let Some(n) = cli.max_connections {
        s.max_connections = n;
        s.max_fds = s.max_fds.max(n.saturating_mul(2).saturating_add(64));
    }
    if cli.bind.is_some() || cli.port.is_some() {
        let first = glint::config::listen_from_settings(s);
        match config.listeners.first_mut() {
            Some(l) => *l = first,
            None => config.listeners.push(first),
        }
    }
}

/// Fails at start, not at the first request, when the docroot is missing.
fn check_document_root(s: &Settings) -> Result<(), String> {
    let Some(root) = &s.document_root else {
        return Err("server.document-root is not set".into());
    };
    let at = s
        .document_root_origin
        .as_ref()
        .map(|o| format!(" (set at {o})"))
        .unwrap_or_default();
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "server.document-root {} is not a directory{at}",
            root.display()
        )),
        Err(e) => Err(format!(
            "server.document-root {} doesn't exist{at}: {e}",
            Path::new(root).display()
        )),
    }
}

/// Raises the soft RLIMIT_NOFILE towards `server.max-fds`.
fn raise_fd_limit(max_fds: u32) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let want = (max_fds as u64).min(hard);
        if want > soft {
            if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, want, hard) {
                log::warn!("cannot raise the file descriptor limit to {want}: {e}");
            }
        }
    }
}

//! systemd's readiness protocol (sd_notify(3)), for `Type=notify` units:
//! `READY=1` once glint serves, with `MAINPID=` naming this process, so
//! that after a binary upgrade (SIGUSR2) systemd follows the new glint
//! (the unit needs `NotifyAccess=all`: the new glint is the old one's
//! child). Nothing happens without `NOTIFY_SOCKET`.

use std::os::unix::net::UnixDatagram;

/// Sends `READY=1` and `MAINPID=<this pid>`, if systemd asked for it.
pub fn ready() {
    send(&format!("READY=1\nMAINPID={}\n", std::process::id()));
}

/// Sends `STOPPING=1`: this glint finishes its connections and exits.
pub fn stopping() {
    send("STOPPING=1\n");
}

fn send(msg: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sock) = UnixDatagram::unbound() else {
        return;
    };
    let bytes = path.as_encoded_bytes();
    let sent = match bytes.strip_prefix(b"@") {
        // An abstract socket (Linux): "@name" stands for "\0name".
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name)
                .and_then(|a| sock.send_to_addr(msg.as_bytes(), &a))
        }
        None => sock.send_to(msg.as_bytes(), &path),
    };
    if let Err(e) = sent {
        log::warn!("NOTIFY_SOCKET: {e}");
    }
}

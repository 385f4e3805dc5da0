//! The status page for scripts: `?auto` (what collectd's apache plugin,
//! Munin and Netdata read), `?json` (and `?jsonp=NAME`), and the
//! statistics page's `name: value` lines.

use std::fmt::Write as _;

use super::View;

/// `?auto`: lighttpd's lines, the scoreboard with a letter per open
/// connection and `_` per free slot.
pub fn auto(v: &View<'_>) -> String {
    let (busy, idle) = v.busy_idle();
    let mut b = String::with_capacity(128 + (busy + idle) as usize);
    let _ = write!(
        b,
        "Total Accesses: {}\nTotal kBytes: {}\nUptime: {}\nBusyServers: {busy}\nIdleServers: {idle}\nScoreboard: ",
        v.stats.requests,
        v.stats.bytes_out / 1024,
        v.uptime(),
    );
    b.extend(v.board.rows().map(|r| r.state().letter()));
    b.extend(std::iter::repeat_n('_', idle as usize));
    b.push('\n');
    b
}

/// `?json`, or with `rest` `p=NAME` a call of the function NAME (letters,
/// digits and `_`, starting with a letter; anything else answers plain
/// JSON). Returns the body and whether it is JSONP.
pub fn json(v: &View<'_>, rest: &str) -> (String, bool) {
    let name = rest.strip_prefix("p=").filter(|f| {
        f.starts_with(|c: char| c.is_ascii_alphabetic())
            && f.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
    });
    let (busy, idle) = v.busy_idle();
    let (req5, bytes5) = v.recent.per_second();
    let mut b = String::with_capacity(256);
    if let Some(f) = name {
        b.push_str(f);
        b.push('(');
    }
    let _ = write!(
        b,
        "{{\n\t\"RequestsTotal\": {},\n\t\"TrafficTotal\": {},\n\t\"Uptime\": {},\n\
         \t\"BusyServers\": {busy},\n\t\"IdleServers\": {idle},\n\
         \t\"RequestAverage5s\":{},\n\t\"TrafficAverage5s\":{}\n}}",
        v.stats.requests,
        v.stats.bytes_out / 1024,
        v.uptime(),
        req5 as u64,
        bytes5 as u64 / 1024,
    );
    if name.is_some() {
        b.push_str(");");
    }
    (b, name.is_some())
}

/// `status.statistics-url`: one `name: value` line per counter.
pub fn statistics(v: &View<'_>) -> String {
    let s = v.stats;
    format!(
        "glint.requests: {}\nglint.bytes-out: {}\nglint.connections: {}\nglint.connections-open: {}\nglint.uptime: {}\n\
         glint.backend-connections-opened: {}\nglint.backend-connections-reused: {}\n\
         glint.tls-connections: {}\nglint.tls-handshakes-open: {}\n\
         glint.h2-connections: {}\nglint.h2-connections-open: {}\n\
         glint.h2-streams: {}\nglint.h2-streams-open: {}\n\
         glint.acme-certificates-obtained: {}\nglint.acme-failures: {}\n\
         glint.acme-certificates-at-risk: {}\n",
        s.requests,
        s.bytes_out,
        s.connections,
        s.active,
        v.uptime(),
        s.backend_opened,
        s.backend_reused,
        s.tls_connections,
        s.tls_handshaking,
        s.h2_connections,
        s.h2_open,
        s.h2_streams,
        s.h2_streams_open,
        s.acme_obtained,
        s.acme_failures,
        s.acme_certs_at_risk
    )
}

//! mod_status: `status.status-url` (HTML for people, `?auto` text for
//! scripts), `status.statistics-url` and `status.config-url`.

use std::fmt::Write as _;

use crate::clock::Clock;
use crate::config::Config;
use crate::msg::Reply;
use crate::stats::Stats;

/// Answers when `path` is one of the configured status URLs; returns false otherwise.
pub fn serve(
    path: &str,
    query: &str,
    r: &mut Reply,
    stats: &Stats,
    clock: &Clock,
    config: &Config,
) -> bool {
    let settings = std::rc::Rc::clone(&r.settings);
    let s = &*settings;
    let is = |u: &Option<String>| u.as_deref() == Some(path);
    if is(&s.status.status_url) {
        let uptime = clock.mono_secs.max(1);
        if query == "auto" {
            send(r, b"text/plain; charset=utf-8", &status_auto(stats, uptime));
        } else {
            send(r, b"text/html; charset=utf-8", &status_html(stats, uptime));
        }
        return true;
    }
    if is(&s.status.statistics_url) {
        send(r, b"text/plain; charset=utf-8", &statistics(stats, clock));
        return true;
    }
    if is(&s.status.config_url) {
        send(r, b"text/plain; charset=utf-8", &config.dump());
        return true;
    }
    false
}

/// A status page: 200, never cached.
fn send(r: &mut Reply, content_type: &[u8], body: &str) {
    r.start(200);
    r.header("Cache-Control", b"no-cache");
    r.body_bytes(content_type, body.as_bytes());
}

/// `status.status-url?auto`: the text for scripts.
fn status_auto(stats: &Stats, uptime: u64) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "Total Accesses: {}\nTotal kBytes: {}\nUptime: {}\nBusyServers: {}\n\
         IdleServers: 0\nRequestsPerSecond: {:.2}\nBytesPerSecond: {:.2}\n",
        stats.requests,
        stats.bytes_out / 1024,
        uptime,
        stats.active,
        stats.requests as f64 / uptime as f64,
        stats.bytes_out as f64 / uptime as f64,
    );
    body
}

/// `status.status-url`: the page for people.
fn status_html(stats: &Stats, uptime: u64) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>glint status</title></head>\n<body>\n\
         <h1>glint status</h1>\n<table>\n\
         <tr><th align=\"left\">Uptime</th><td>{} s</td></tr>\n\
         <tr><th align=\"left\">Requests</th><td>{}</td></tr>\n\
         <tr><th align=\"left\">Bytes sent</th><td>{}</td></tr>\n\
         <tr><th align=\"left\">Connections accepted</th><td>{}</td></tr>\n\
         <tr><th align=\"left\">Connections open</th><td>{}</td></tr>\n\
         <tr><th align=\"left\">TLS connections accepted</th><td>{}</td></tr>\n\
         <tr><th align=\"left\">HTTP/2 connections (open)</th><td>{} ({})</td></tr>\n\
         <tr><th align=\"left\">HTTP/2 streams (open)</th><td>{} ({})</td></tr>\n\
         <tr><th align=\"left\">Requests per second (average)</th><td>{:.2}</td></tr>\n\
         </table>\n</body></html>\n",
        uptime,
        stats.requests,
        stats.bytes_out,
        stats.connections,
        stats.active,
        stats.tls_connections,
        stats.h2_connections,
        stats.h2_open,
        stats.h2_streams,
        stats.h2_streams_open,
        stats.requests as f64 / uptime as f64,
    );
    body
}

/// `status.statistics-url`: one `name: value` line per counter.
fn statistics(stats: &Stats, clock: &Clock) -> String {
    format!(
        "glint.requests: {}\nglint.bytes-out: {}\nglint.connections: {}\nglint.connections-open: {}\nglint.uptime: {}\n\
         glint.backend-connections-opened: {}\nglint.backend-connections-reused: {}\n\
         glint.tls-connections: {}\nglint.tls-handshakes-open: {}\n\
         glint.h2-connections: {}\nglint.h2-connections-open: {}\n\
         glint.h2-streams: {}\nglint.h2-streams-open: {}\n\
         glint.acme-certificates-obtained: {}\nglint.acme-failures: {}\n\
         glint.acme-certificates-at-risk: {}\n",
        stats.requests,
        stats.bytes_out,
        stats.connections,
        stats.active,
        clock.mono_secs,
        stats.backend_opened,
        stats.backend_reused,
        stats.tls_connections,
        stats.tls_handshaking,
        stats.h2_connections,
        stats.h2_open,
        stats.h2_streams,
        stats.h2_streams_open,
        stats.acme_obtained,
        stats.acme_failures,
        stats.acme_certs_at_risk
    )
}

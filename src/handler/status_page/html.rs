//! The status page for people, with the sections lighttpd's has: the
//! host, uptime and start, totals, averages since start and over the last
//! five seconds, the scoreboard with its legend, and a table of every
//! open connection and HTTP/2 stream (sortable by its headers unless
//! `status.enable-sort` is disabled).

use std::fmt::Write as _;

use super::{scaled, View};
use crate::handler::dirlisting::html_escape;
use crate::stats::board::{Request, Row, State};

const STYLE: &str = "  <style>\n\
    body { font-family: sans-serif; margin: 1em 2em; }\n\
    table.status { border: black solid thin; border-collapse: collapse; }\n\
    table.status td, table.status th { padding: 2px 8px; }\n\
    td { white-space: nowrap; }\n\
    td.int { background-color: #f0f0f0; text-align: right; }\n\
    td.string { background-color: #f0f0f0; text-align: left; }\n\
    th.status { background-color: black; color: white; font-weight: bold; }\n\
    a.sortheader { color: white; text-decoration: none; display: block; }\n\
    span.sortarrow { color: white; }\n\
  </style>\n";

/// Sorts the connection table by the column whose header was clicked
/// (numbers as numbers), the other way round on a second click.
const SORT_SCRIPT: &str = "<script>\n\
function resort(a) {\n\
  var th = a.parentNode, table = th.closest('table'), col = th.cellIndex;\n\
  var rows = Array.prototype.slice.call(table.rows, 1);\n\
  var down = a.getAttribute('data-dir') !== 'down';\n\
  var num = rows.length > 0 && rows[0].cells[col].className === 'int';\n\
  rows.sort(function (x, y) {\n\
    var p = x.cells[col].textContent, q = y.cells[col].textContent;\n\
    var c = num ? parseInt(p, 10) - parseInt(q, 10) : p.toLowerCase().localeCompare(q.toLowerCase());\n\
    return down ? c : -c;\n\
  });\n\
  table.querySelectorAll('span.sortarrow').forEach(function (s) { s.textContent = ''; });\n\
  a.setAttribute('data-dir', down ? 'down' : 'up');\n\
  a.querySelector('span.sortarrow').innerHTML = down ? '&darr;' : '&uarr;';\n\
  rows.forEach(function (r) { table.tBodies[0].appendChild(r); });\n\
}\n\
</script>\n";

const COLUMNS: [&str; 8] = [
    "Client IP",
    "Read",
    "Written",
    "State",
    "Time",
    "Host",
    "URI",
    "File",
];

/// The whole page; `refresh`: `?refresh=N` asks the browser to load it
/// again every N seconds (at most a week).
pub fn page(v: &View<'_>, sort: bool, refresh: Option<u64>, tag: &str) -> String {
    let mut b = String::with_capacity(8192);
    b.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\">\n <head>\n  <meta charset=\"utf-8\">\n  <title>Status</title>\n",
    );
    b.push_str(STYLE);
    if let Some(n) = refresh.filter(|&n| n > 0) {
        let _ = writeln!(
            b,
            "  <meta http-equiv=\"refresh\" content=\"{}\">",
            n.min(604_800)
        );
    }
    if sort {
        b.push_str(SORT_SCRIPT);
    }
    b.push_str(" </head>\n<body>\n<h1>Server-Status");
    if !tag.is_empty() {
        let _ = write!(b, " ({})", html_escape(tag));
    }
    b.push_str("</h1>\n");
    figures(&mut b, v);
    scoreboard(&mut b, v);
    connections(&mut b, v, sort);
    b.push_str("</body>\n</html>\n");
    b
}

/// The table of figures: host, times, totals and averages.
fn figures(b: &mut String, v: &View<'_>) {
    let up = v.uptime();
    let started = v.clock.unix - up as i64;
    let (y, mo, d, h, mi, s, _) = crate::date::utc_parts(started);
    let mut uptime = String::new();
    for (n, unit) in [
        (up / 86_400, "days"),
        (up / 3600 % 24, "hours"),
        (up / 60 % 60, "min"),
    ] {
        if n > 0 {
            let _ = write!(uptime, "{n} {unit} ");
        }
    }
    let _ = write!(uptime, "{} s", up % 60);
    let (req, bytes) = (v.stats.requests as f64, v.stats.bytes_out as f64);
    // Averages since start: none yet in the first second.
    let per = |x: f64| if up == 0 { 0.0 } else { x / up as f64 };
    let (req5, bytes5) = v.recent.per_second();
    let _ = write!(
        b,
        "<table class=\"status\">\n\
         <tr><td>Hostname</td><td class=\"string\">{}</td></tr>\n\
         <tr><td>Uptime</td><td class=\"string\">{uptime}</td></tr>\n\
         <tr><td>Started at</td><td class=\"string\">{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC</td></tr>\n\
         <tr><th colspan=\"2\">absolute (since start)</th></tr>\n\
         <tr><td>Requests</td><td class=\"string\">{}req</td></tr>\n\
         <tr><td>Traffic</td><td class=\"string\">{}byte</td></tr>\n\
         <tr><th colspan=\"2\">average (since start)</th></tr>\n\
         <tr><td>Requests</td><td class=\"string\">{}req/s</td></tr>\n\
         <tr><td>Traffic</td><td class=\"string\">{}byte/s</td></tr>\n\
         <tr><th colspan=\"2\">average (5s sliding average)</th></tr>\n\
         <tr><td>Requests</td><td class=\"string\">{}req/s</td></tr>\n\
         <tr><td>Traffic</td><td class=\"string\">{}byte/s</td></tr>\n\
         <tr><th colspan=\"2\">connections (since start)</th></tr>\n\
         <tr><td>Accepted</td><td class=\"string\">{}</td></tr>\n\
         <tr><td>TLS</td><td class=\"string\">{}</td></tr>\n\
         <tr><td>HTTP/2 (streams)</td><td class=\"string\">{} ({})</td></tr>\n\
         <tr><td>HTTP/3 (streams)</td><td class=\"string\">{} ({})</td></tr>\n\
         </table>\n",
        html_escape(v.host),
        scaled(req, 1000.0),
        scaled(bytes, 1024.0),
        scaled(per(req), 1000.0),
        scaled(per(bytes), 1024.0),
        scaled(req5, 1000.0),
        scaled(bytes5, 1024.0),
        v.stats.connections,
        v.stats.tls_connections,
        v.stats.h2_connections,
        v.stats.h2_streams,
        v.stats.h3_connections,
        v.stats.h3_streams,
    );
}

/// A letter per open connection (50 a line), then the legend with how
/// many connections are in each state.
fn scoreboard(b: &mut String, v: &View<'_>) {
    let mut counts = [0u64; State::LEGEND.len()];
    let mut letters = String::new();
    for (i, r) in v.board.rows().enumerate() {
        let st = r.state();
        if let Some(k) = State::LEGEND.iter().position(|&s| s == st) {
            counts[k] += 1;
        }
        if i > 0 && i % 50 == 0 {
            letters.push('\n');
        }
        letters.push(st.letter());
    }
    let _ = write!(
        b,
        "<hr>\n<pre>\n<b>{} connections</b>\n{letters}\n\n<table>\n",
        v.board.rows().count()
    );
    for (st, n) in State::LEGEND.iter().zip(counts) {
        let _ = writeln!(
            b,
            "<tr><td style=\"text-align:right\">{n}</td><td>&nbsp;&nbsp;{} = {}</td></tr>",
            st.letter(),
            st.name()
        );
    }
    b.push_str("</table>\n</pre>\n<hr>\n");
}

/// The table of connections, each followed by its HTTP/2 streams.
fn connections(b: &mut String, v: &View<'_>, sort: bool) {
    b.push_str("<h2>Connections</h2>\n<table class=\"status\">\n<thead><tr>");
    for c in COLUMNS {
        if sort {
            let _ = write!(
                b,
                "<th class=\"status\"><a href=\"#\" class=\"sortheader\" onclick=\"resort(this);return false;\">{c}<span class=\"sortarrow\"></span></a></th>"
            );
        } else {
            let _ = write!(b, "<th class=\"status\">{c}</th>");
        }
    }
    b.push_str("</tr></thead>\n<tbody>\n");
    let now = v.clock.mono_secs;
    for r in v.board.rows() {
        let written = r.written;
        row(b, r, &r.req, r.state(), r.read, written, now);
        for (_, s) in &r.streams {
            row(b, r, s, s.state, 0, s.answer_len, now);
        }
    }
    b.push_str("</tbody>\n</table>\n");
}

fn row(b: &mut String, c: &Row, q: &Request, st: State, read: u64, written: u64, now: u64) {
    let peer = c.peer.map_or_else(|| "unix".to_string(), |p| p.to_string());
    let _ = writeln!(
        b,
        "<tr><td class=\"string\">{peer}</td><td class=\"int\">{read}</td><td class=\"int\">{written}</td>\
         <td class=\"string\">{}</td><td class=\"int\">{}</td><td class=\"string\">{}</td>\
         <td class=\"string\">{}</td><td class=\"string\">{}</td></tr>",
        st.name(),
        now.saturating_sub(q.since),
        html_escape(&q.host),
        html_escape(&q.uri),
        html_escape(&q.file),
    );
}

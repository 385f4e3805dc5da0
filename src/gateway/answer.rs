//! Passing a backend's answer to the client: its CGI head becomes the HTTP
//! response head and its body follows; or the request is run again (an
//! authorizer's 200, a local redirect), a file is sent instead
//! (X-Sendfile), or the client gets an error page.

use std::rc::Rc;

use super::{cgi, GwClient, Rerun};
use crate::connection::Connection;
use crate::http::chunked;
use crate::http::response::Responder;

/// Passes CGI output to the client: collects the head in `head_buf` until it
/// is complete, writes the HTTP head, then the body (chunk-framed when needed).
/// A body the backend chunk-encoded is decoded through `dechunk`; `Ok(true)`
/// once its last chunk arrived.
pub(super) fn deliver(
    conn: &mut Connection,
    head_buf: &mut Vec<u8>,
    dechunk: &mut Option<chunked::Decoder>,
    data: &[u8],
    date: &[u8],
    x_sendfile: Option<&[String]>,
) -> Result<bool, String> {
    let Some(gw) = conn.gw.as_mut() else {
        return Ok(false);
    };
    if gw.rerun.is_some() {
        // The rest of an answer that is not passed on; it ends with the
        // backend's end of stream (or END_REQUEST).
        return Ok(false);
    }
    let head_only = gw.head_only;
    let body: &[u8];
    let owned;
    if !gw.head_sent {
        head_buf.extend_from_slice(data);
        if head_buf.len() > 64 * 1024 {
            return Err("header block over 64 KiB".into());
        }
        let Some((mut head, used)) =
            cgi::parse_head(head_buf).map_err(|e| format!("bad answer: {e}"))?
        else {
            return Ok(false);
        };
        if let Some(rerun) = rerun_for(gw, &head, head_buf.len() > used) {
            gw.rerun = Some(rerun);
            head_buf.clear();
            return Ok(false);
        }
        if let Some(roots) = x_sendfile {
            if let Some(path) = take_x_sendfile(&mut head) {
                send_file_instead(conn, &head, &path, roots, date);
                head_buf.clear();
                return Ok(false);
            }
        }
        let bodiless = matches!(head.status, 100..=199 | 204 | 304);
        if head.chunked && !bodiless && !head_only {
            // (A backend may leave out the body of a HEAD answer, chunks and all.)
            *dechunk = Some(chunked::Decoder::default());
        }
        write_head(conn, &head, date);
        owned = head_buf.split_off(used);
        head_buf.clear();
        body = &owned;
    } else {
        body = data;
    }
    let Some(gw) = conn.gw.as_mut() else {
        return Ok(false);
    };
    let mut body = body;
    let decoded: Vec<u8>;
    let mut last_chunk = false;
    if let Some(d) = dechunk.as_mut() {
        let mut plain = Vec::with_capacity(body.len());
        // Bytes after the last chunk (trailers aside) are not part of the answer.
        d.decode(body, &mut plain)
            .map_err(|e| format!("bad chunked answer: {e}"))?;
        last_chunk = d.is_done();
        decoded = plain;
        body = &decoded;
    }
    if let Some(rem) = gw.resp_remaining.as_mut() {
        let take = (body.len() as u64).min(*rem) as usize;
        body = &body[..take];
        *rem -= take as u64;
    }
    if body.is_empty() || gw.head_only {
        return Ok(last_chunk);
    }
    gw.body_sent += body.len() as u64;
    let m = &mut conn.out.mem;
    if gw.resp_chunked {
        m.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
        m.extend_from_slice(body);
        m.extend_from_slice(b"\r\n");
    } else {
        m.extend_from_slice(body);
    }
    Ok(last_chunk)
}

/// Whether an answer's head makes glint run the request again rather than
/// pass the answer on: an authorizer's 200, or a local redirect — a
/// `Location` that is a path (not `//host`), without `Status` and without a
/// body (`body_follows`: body bytes came with the head).
fn rerun_for(gw: &GwClient, head: &cgi::CgiHead, body_follows: bool) -> Option<Rerun> {
    if gw.authorizer {
        if head.status != 200 {
            return None;
        }
        let vars = head
            .headers
            .iter()
            .filter_map(|(k, v)| Some((cgi::authorizer_variable(k)?, v.clone())))
            .collect();
        return Some(Rerun::Authorized(vars));
    }
    let location = head.location.as_deref()?;
    let local = gw.local_redir
        && !head.explicit_status
        && location.starts_with(b"/")
        && !location.starts_with(b"//")
        && !body_follows
        && !head.chunked
        && head.content_length.unwrap_or(0) == 0;
    if !local {
        return None;
    }
    // Not text: not a path glint can serve; the client gets the 302.
    String::from_utf8(location.to_vec())
        .ok()
        .map(Rerun::Redirect)
}

/// The HTTP response head from a CGI head.
fn write_head(conn: &mut Connection, head: &cgi::CgiHead, date: &[u8]) {
    let Some(gw) = conn.gw.as_mut() else { return };
    let settings = Rc::clone(&gw.settings);
    let no_body = head.status == 204 || head.status == 304 || (100..200).contains(&head.status);
    let (len, chunked) = match head.content_length {
        _ if no_body => (None, false),
        Some(n) => (Some(n), false),
        None if gw.minor >= 1 => (None, true),
        None => {
            // HTTP/1.0 without a length: the body ends when the connection does.
            gw.keep_alive = false;
            (None, false)
        }
    };
    gw.resp_chunked = chunked && !gw.head_only;
    gw.resp_remaining = len;
    // An error handler's answer: the status lighttpd gives it.
    let status = match gw.carry.error.as_ref() {
        Some(run) => crate::handler::error_run_status(run, head.status),
        None => head.status,
    };
    gw.status = status;
    gw.head_sent = true;
    let (head_only, keep_alive, minor) = (gw.head_only, gw.keep_alive, gw.minor);
    let mut r = Responder::new(&mut conn.out, date, &settings, head_only, keep_alive, minor);
    r.start(status);
    for (k, v) in &head.headers {
        r.header(k, v);
    }
    if chunked {
        r.header("Transfer-Encoding", b"chunked");
    }
    r.end_head(len);
}

/// `X-Sendfile` (or lighttpd's `X-LIGHTTPD-send-file`) from a backend
/// allowed to use it: the header is removed and its path returned.
fn take_x_sendfile(head: &mut cgi::CgiHead) -> Option<String> {
    let i = head.headers.iter().position(|(k, _)| {
        k.eq_ignore_ascii_case("x-sendfile") || k.eq_ignore_ascii_case("x-lighttpd-send-file")
    })?;
    let (_, v) = head.headers.remove(i);
    String::from_utf8(v).ok()
}

/// Answers with a file named by the backend, sent by sendfile like a static
/// file; the backend's own body is ignored. The path must be absolute, free
/// of `..`, and under one of `x-sendfile-docroot` when that is set.
fn send_file_instead(
    conn: &mut Connection,
    head: &cgi::CgiHead,
    path: &str,
    roots: &[String],
    date: &[u8],
) {
    let allowed = path.starts_with('/')
        && !path.split('/').any(|seg| seg == "..")
        && (roots.is_empty()
            || roots.iter().any(|r| {
                let r = r.trim_end_matches('/');
                path.strip_prefix(r)
                    .is_some_and(|rest| rest.starts_with('/'))
            }));
    if !allowed {
        log::error!("backend asked to send {path:?}, outside x-sendfile-docroot; answering 403");
        return fail_client(conn, 403, date);
    }
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            log::error!("backend asked to send {path:?}: {e}");
            return fail_client(conn, 404, date);
        }
    };
    let len = match file.metadata() {
        Ok(m) if m.is_file() => m.len(),
        _ => return fail_client(conn, 404, date),
    };
    let Some(gw) = conn.gw.as_mut() else { return };
    let settings = Rc::clone(&gw.settings);
    gw.resp_chunked = false;
    // Whatever body the backend sends is not passed on.
    gw.resp_remaining = Some(0);
    gw.status = head.status;
    gw.head_sent = true;
    gw.body_sent = len;
    let (head_only, keep_alive, minor) = (gw.head_only, gw.keep_alive, gw.minor);
    let mut r = Responder::new(&mut conn.out, date, &settings, head_only, keep_alive, minor);
    r.start(head.status);
    for (k, v) in &head.headers {
        r.header(k, v);
    }
    r.body_file(Rc::new(file), 0, len);
}

/// Answers the client with an error page (when nothing was sent yet), or
/// closes it (when a response was already under way).
pub fn fail_client(conn: &mut Connection, status: u16, date: &[u8]) {
    let Some(gw) = conn.gw.as_mut() else { return };
    gw.backend = None;
    gw.waiting = false;
    gw.done = true;
    // A failure while the rest of an answer was being dropped ends the
    // request too: it is not run again.
    gw.rerun = None;
    if gw.head_sent {
        // The head promised a body that will not come: the client must see the cut.
        gw.keep_alive = false;
        return;
    }
    gw.status = status;
    gw.head_sent = true;
    let settings = Rc::clone(&gw.settings);
    let (head_only, keep_alive, minor) = (gw.head_only, gw.keep_alive, gw.minor);
    let mut r = Responder::new(&mut conn.out, date, &settings, head_only, keep_alive, minor);
    r.error(status);
    let sent = r.body_len;
    if let Some(gw) = conn.gw.as_mut() {
        gw.body_sent = sent;
    }
}

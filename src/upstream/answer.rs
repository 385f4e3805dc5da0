//! A backend's answer on its way to the client's [`Sink`]: its CGI head
//! becomes the response head and its body follows; or the request is to
//! run again (an authorizer's 200, a local redirect), or a file is sent
//! instead (X-Sendfile).

use std::rc::Rc;

use super::cgi;
use super::job::{Answer, Job};
use crate::msg::local::VHOST_DOCROOT;
use crate::msg::{AnswerHead, Rerun, Sink};
use crate::proto::h1::chunked;

/// Passes CGI output to the client: collects the head in `head_buf` until
/// it is complete, hands the head to `sink`, then the body. A body the
/// backend chunk-encoded is decoded through `dechunk`; `Ok(true)` once its
/// last chunk arrived.
pub(super) fn deliver(
    job: &mut Job,
    head_buf: &mut Vec<u8>,
    dechunk: &mut Option<chunked::Decoder>,
    data: &[u8],
    x_sendfile: Option<&[String]>,
    sink: &mut dyn Sink,
) -> Result<bool, String> {
    let owned;
    let mut body: &[u8] = match job.answer {
        // The rest of an answer that is not passed on; it ends with the
        // backend's end of stream (or END_REQUEST).
        Answer::Dropping | Answer::Done => return Ok(false),
        Answer::Holding(_) => {
            head_buf.extend_from_slice(data);
            if head_buf.len() > HOLD_MAX {
                release_held(job, head_buf, dechunk, sink, false)?;
            }
            return Ok(false);
        }
        Answer::Nothing => match take_head(job, head_buf, dechunk, data, x_sendfile, sink)? {
            Some(rest) => {
                owned = rest;
                &owned
            }
            None => return Ok(false),
        },
        Answer::Streaming => data,
    };
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
    if !body.is_empty() {
        sink.data(body);
    }
    Ok(last_chunk)
}

/// Collects the CGI head in `head_buf` and acts on it once it is complete:
/// a rerun, a file sent instead, or the answer's head passed on. The body
/// bytes that came after the head when the answer is passed on; `None`
/// while the head is incomplete, or when nothing more is passed on.
fn take_head(
    job: &mut Job,
    head_buf: &mut Vec<u8>,
    dechunk: &mut Option<chunked::Decoder>,
    data: &[u8],
    x_sendfile: Option<&[String]>,
    sink: &mut dyn Sink,
) -> Result<Option<Vec<u8>>, String> {
    head_buf.extend_from_slice(data);
    if job.cgi.is_some() && no_header_block(head_buf) {
        // A CGI program that writes its text with no header block at all:
        // served as the body of a 200, as lighttpd does.
        start_answer(job, &cgi::CgiHead::ok(), dechunk, sink)?;
        return Ok(Some(std::mem::take(head_buf)));
    }
    if head_buf.len() > 64 * 1024 {
        return Err("header block over 64 KiB".into());
    }
    let Some((mut head, used)) =
        cgi::parse_head(head_buf).map_err(|e| format!("bad answer: {e}"))?
    else {
        return Ok(None);
    };
    if let Some(rerun) = rerun_for(job, &head, head_buf.len() > used) {
        job.answer = Answer::Dropping;
        head_buf.clear();
        sink.rerun(rerun);
        return Ok(None);
    }
    if intercepts(job, head.status) {
        // server.error-intercept: glint's own error answer; the backend's
        // head and body are dropped (its end still ends the exchange).
        job.answer = Answer::Dropping;
        head_buf.clear();
        sink.rerun(intercepted(head.status, &head.headers));
        return Ok(None);
    }
    if let Some(roots) = x_sendfile {
        if let Some(path) = take_x_sendfile(&mut head) {
            send_file_instead(job, &head, &path, roots, sink);
            head_buf.clear();
            return Ok(None);
        }
    }
    if holds(job, &head) {
        // The body read so far stays in `head_buf` with the head.
        head_buf.drain(..used);
        job.answer = Answer::Holding(Box::new(head));
        if head_buf.len() > HOLD_MAX {
            release_held(job, head_buf, dechunk, sink, false)?;
        }
        return Ok(None);
    }
    start_answer(job, &head, dechunk, sink)?;
    let rest = head_buf.split_off(used);
    head_buf.clear();
    Ok(Some(rest))
}

/// `server.error-intercept` takes an answer with `status` from `job`'s backend.
pub(super) fn intercepts(job: &Job, status: u16) -> bool {
    job.intercept && (400..=599).contains(&status)
}

/// The rerun that replaces an intercepted answer: its status, and a 401's
/// challenge (the one header of the backend's kept, as lighttpd keeps it).
pub(super) fn intercepted(status: u16, headers: &[(String, Vec<u8>)]) -> Rerun {
    let challenge = (status == 401)
        .then(|| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
                .map(|(_, v)| v.clone())
        })
        .flatten();
    Rerun::Intercepted { status, challenge }
}

/// The headers of a backend's answer as the client gets them, as
/// lighttpd's `http_response_omit_header` has it: `X-Sendfile` and every
/// `X-LIGHTTPD-*` header stay between the backend and glint; with them
/// the limit `X-LIGHTTPD-KBytes-per-second` asks for, in bytes, if any.
pub(super) fn client_headers(headers: &[(String, Vec<u8>)]) -> (Fields<'_>, Option<u64>) {
    let internal = |k: &str| {
        k.eq_ignore_ascii_case("x-sendfile")
            || k.get(..11)
                .is_some_and(|p| p.eq_ignore_ascii_case("x-lighttpd-"))
    };
    if !headers.iter().any(|(k, _)| internal(k)) {
        return (std::borrow::Cow::Borrowed(headers), None);
    }
    let limit = headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("x-lighttpd-kbytes-per-second"))
        .filter_map(|(_, v)| leading_number(v))
        .filter(|&kb| kb > 0)
        .map(|kb| kb.saturating_mul(1024))
        .next_back();
    let kept = headers
        .iter()
        .filter(|(k, _)| !internal(k))
        .cloned()
        .collect();
    (std::borrow::Cow::Owned(kept), limit)
}

/// The decimal number a value starts with (as `strtol` reads it).
fn leading_number(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii_start();
    let digits = v.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&v[..digits]).ok()?.parse().ok()
}

/// A backend's header lines, borrowed as they came or filtered.
pub(super) type Fields<'a> = std::borrow::Cow<'a, [(String, Vec<u8>)]>;

/// Most body bytes held with a CGI head before it streams anyway.
const HOLD_MAX: usize = 64 * 1024;

/// A CGI program's head is held for its length when it has none and a
/// body may follow (see [`Answer::Holding`]).
fn holds(job: &Job, head: &cgi::CgiHead) -> bool {
    job.cgi.is_some()
        && !job.head_only
        && head.content_length.is_none()
        && !head.chunked
        && !matches!(head.status, 100..=199 | 204 | 304)
}

/// Sends a held head and the body held with it: `whole` when the output
/// has ended (the length is then known), else the answer streams on.
pub(super) fn release_held(
    job: &mut Job,
    head_buf: &mut Vec<u8>,
    dechunk: &mut Option<chunked::Decoder>,
    sink: &mut dyn Sink,
    whole: bool,
) -> Result<(), String> {
    let Answer::Holding(mut head) = std::mem::replace(&mut job.answer, Answer::Nothing) else {
        return Ok(());
    };
    if whole {
        head.content_length = Some(head_buf.len() as u64);
    }
    start_answer(job, &head, dechunk, sink)?;
    if !head_buf.is_empty() {
        sink.data(head_buf);
    }
    head_buf.clear();
    Ok(())
}

/// The output's first line is there and is neither a header (it has no
/// colon), nor a status line, nor the empty line of an empty head.
fn no_header_block(buf: &[u8]) -> bool {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        return false;
    };
    let line = &buf[..nl];
    !(line.is_empty() || line == b"\r" || buf.starts_with(b"HTTP/") || line.contains(&b':'))
}

/// Hands the answer's head to `sink`: the job streams from now on (a
/// chunked body through `dechunk`, an upgrade as a tunnel).
fn start_answer(
    job: &mut Job,
    head: &cgi::CgiHead,
    dechunk: &mut Option<chunked::Decoder>,
    sink: &mut dyn Sink,
) -> Result<(), String> {
    // A CGI program allowed to upgrade (`cgi.upgrade`) may answer
    // 101 and then talk to the client both ways.
    let upgrade = head.status == 101 && job.cgi.as_ref().is_some_and(|c| c.upgrade);
    if head.status == 101 && !upgrade {
        return Err("101 Switching Protocols without a requested upgrade".into());
    }
    if upgrade {
        job.upload.start_tunnel();
    }
    let bodiless = matches!(head.status, 100..=199 | 204 | 304) && !upgrade;
    if head.chunked && !bodiless && !job.head_only && !upgrade {
        // (A backend may leave out the body of a HEAD answer, chunks and all.)
        *dechunk = Some(chunked::Decoder::default());
    }
    job.answer = Answer::Streaming;
    let (kept, rate_limit) = client_headers(&head.headers);
    let headers = job.with_alt_svc(&kept);
    sink.head(&AnswerHead {
        status: head.status,
        headers: &headers,
        content_length: head.content_length.filter(|_| !upgrade),
        bodiless,
        upgrade,
        rate_limit,
    });
    Ok(())
}

/// Whether an answer's head makes glint run the request again rather than
/// pass the answer on: an authorizer's 200, or a local redirect — a
/// `Location` that is a path (not `//host`), without `Status` and without a
/// body (`body_follows`: body bytes came with the head).
fn rerun_for(job: &Job, head: &cgi::CgiHead, body_follows: bool) -> Option<Rerun> {
    if job.vhost_lookup {
        return Some(Rerun::Vhost(vhost_answer(head)));
    }
    if job.authorizer {
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
    let local = job.local_redir
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

/// What mod_vhostdb's lookup answered (see `handler::vhostdb`): a 200
/// with the document root in [`VHOST_DOCROOT`], a 200 without it (no such
/// host), or the status to answer.
fn vhost_answer(head: &cgi::CgiHead) -> Result<Option<String>, u16> {
    if head.status != 200 {
        return Err(head.status);
    }
    let root = head
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(VHOST_DOCROOT));
    match root {
        None => Ok(None),
        Some((_, v)) => String::from_utf8(v.clone()).map(Some).map_err(|_| 500),
    }
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
/// file; the backend's own body is dropped. The path must be absolute, free
/// of `..`, and under one of `x-sendfile-docroot` when that is set.
fn send_file_instead(
    job: &mut Job,
    head: &cgi::CgiHead,
    path: &str,
    roots: &[String],
    sink: &mut dyn Sink,
) {
    job.answer = Answer::Dropping;
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
        job.answer = Answer::Done;
        return sink.fail(403);
    }
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            log::error!("backend asked to send {path:?}: {e}");
            job.answer = Answer::Done;
            return sink.fail(404);
        }
    };
    let len = match file.metadata() {
        Ok(m) if m.is_file() => m.len(),
        _ => {
            job.answer = Answer::Done;
            return sink.fail(404);
        }
    };
    let (kept, rate_limit) = client_headers(&head.headers);
    let headers = job.with_alt_svc(&kept);
    let h = AnswerHead {
        status: head.status,
        headers: &headers,
        content_length: Some(len),
        bodiless: false,
        upgrade: false,
        rate_limit,
    };
    sink.file(&h, Rc::new(file), len);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(k: &str, v: &str) -> (String, Vec<u8>) {
        (k.to_string(), v.as_bytes().to_vec())
    }

    #[test]
    fn internal_headers_stay_and_a_lower_limit_is_read() {
        let plain = [h("Content-Type", "text/plain"), h("X-Lighttpd", "not ours")];
        let (kept, limit) = client_headers(&plain);
        assert!(matches!(kept, std::borrow::Cow::Borrowed(_)));
        assert_eq!((kept.len(), limit), (2, None));
        let mixed = [
            h("Content-Type", "text/plain"),
            h("X-Sendfile", "/etc/passwd"),
            h("x-lighttpd-kbytes-per-second", " 64 kB"),
            h("X-LIGHTTPD-whatever", "x"),
        ];
        let (kept, limit) = client_headers(&mixed);
        assert_eq!(&*kept, &[h("Content-Type", "text/plain")]);
        assert_eq!(limit, Some(64 * 1024));
        // Not a number, or 0: no limit (and still not passed on).
        for v in ["fast", "0", ""] {
            let one = [h("X-LIGHTTPD-KBytes-per-second", v)];
            let (kept, limit) = client_headers(&one);
            assert_eq!((kept.len(), limit), (0, None), "{v:?}");
        }
    }

    #[test]
    fn an_intercepted_401_keeps_its_challenge_alone() {
        let hs = [h("WWW-Authenticate", "Basic realm=\"x\""), h("X-App", "1")];
        assert_eq!(
            intercepted(401, &hs),
            Rerun::Intercepted {
                status: 401,
                challenge: Some(b"Basic realm=\"x\"".to_vec())
            }
        );
        assert_eq!(
            intercepted(403, &hs),
            Rerun::Intercepted {
                status: 403,
                challenge: None
            }
        );
    }
}

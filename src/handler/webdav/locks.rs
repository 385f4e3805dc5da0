//! Locks: the `If` header's lock tokens and entity tags checked against
//! the locks in force, LOCK (new, or a refresh), UNLOCK. The rules are
//! lighttpd 1.4.69's, shared locks' simplifications included: any
//! matching shared lock lets a request through.

use std::io;

use super::common::{collect, db_answer, drain, log_body, no_db, precondition, redirect_to_dir};
use super::out::{self, Answer, XML_DECL};
use super::request::Ctx;
use super::store::LockRow;
use super::xml;
use super::Start;
use crate::msg::local::LocalWork;

/// Most lock tokens one `If` header may submit (lighttpd's limit).
const MAX_TOKENS: usize = 16;
/// A lock's time-out when the request asks none, and the most it may ask.
const DEFAULT_TIMEOUT: i64 = 600;

/// The locks in force for `uri`: on it (not depth infinity: those come
/// next) and depth-infinity ones on it or a collection above it; with
/// `members`, also those below it.
pub fn active_locks(cx: &Ctx, uri: &str, members: bool) -> Result<Vec<LockRow>, Answer> {
    let Some(st) = cx.store.as_ref() else {
        return Ok(Vec::new());
    };
    let mut all: Vec<LockRow> = st
        .locks_on(uri)
        .map_err(db_answer)?
        .into_iter()
        .filter(|l| l.depth != -1)
        .collect();
    all.extend(st.locks_infinity_above(uri).map_err(db_answer)?);
    if members {
        all.extend(
            st.locks_below(uri)
                .map_err(db_answer)?
                .into_iter()
                .filter(|l| l.resource.len() != uri.len()),
        );
    }
    all.retain(|l| l.timeout > 0);
    Ok(all)
}

/// What an `If` header submits: lock tokens, after its entity tags and
/// `<DAV:no-lock>` were checked (`Err`: 412, or 400 for too many tokens).
fn if_tokens(cx: &Ctx) -> Result<Vec<String>, Answer> {
    let Some(h) = cx.header("if") else {
        return Ok(Vec::new());
    };
    let b = h.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // A list: "(" 1*Condition ")", after an optional resource tag.
        while i < b.len() && b[i] != b'(' {
            i += 1;
        }
        i += 1;
        let mut not = false;
        while i < b.len() && b[i] != b')' {
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            if b.len() >= i + 3 && b[i..i + 3].eq_ignore_ascii_case(b"not") {
                not = true;
                i += 3;
                continue;
            }
            match b.get(i) {
                Some(b'[') => {
                    let end = b[i..].iter().position(|&c| c == b']').map(|e| i + e);
                    let Some(end) = end else { return Ok(tokens) };
                    let tag = &h[i + 1..end];
                    i = end + 1;
                    if !tag.is_empty() && !not && cx.etags() && !etag_ok(cx, tag) {
                        return Err(Answer::error(412));
                    }
                }
                Some(b'<') if h[i..].starts_with("<DAV:no-lock>") => {
                    if !not {
                        return Err(Answer::error(412));
                    }
                    i += "<DAV:no-lock>".len();
                }
                Some(b'<') => {
                    let Some(end) = b[i..].iter().position(|&c| c == b'>').map(|e| i + e) else {
                        return Ok(tokens);
                    };
                    if tokens.len() == MAX_TOKENS {
                        return Err(Answer::error(400));
                    }
                    tokens.push(h[i + 1..end].to_string());
                    i = end + 1;
                }
                Some(b')') | None => break,
                Some(_) => return Ok(tokens),
            }
        }
        i += 1;
    }
    Ok(tokens)
}

/// An `If` entity tag against the request's own resource (a directory's
/// is not compared, as lighttpd).
fn etag_ok(cx: &Ctx, tag: &str) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(&cx.path) else {
        return false;
    };
    if meta.is_dir() {
        return true;
    }
    crate::handler::static_file::etag_of(&meta, &cx.settings).is_some_and(|e| e == tag)
}

/// Whether the request may change `uri`: every exclusive lock in force on
/// it is named by a submitted token of its owner, and some shared one is
/// when any is. `Err` is the answer (423 with the lock roots, 412, 400).
pub fn has_lock(cx: &Ctx, uri: &str, is_source: bool) -> Result<(), Answer> {
    let tokens = if_tokens(cx)?;
    let locks = active_locks(cx, uri, false)?;
    let (mut shared, mut shared_ok) = (0, 0);
    let mut hrefs = String::new();
    for l in &locks {
        let is_shared = l.scope != "exclusive";
        shared += usize::from(is_shared);
        let held = tokens.contains(&l.token) && (l.owner.is_empty() || l.owner == cx.owner());
        if held {
            shared_ok += usize::from(is_shared);
        } else if !is_shared {
            out::href(&l.resource, &mut hrefs);
        }
    }
    if !hrefs.is_empty() || (shared > 0 && shared_ok == 0) {
        return Err(out::locked("lock-token-submitted", &hrefs));
    }
    if locks.is_empty() && !tokens.is_empty() && is_source {
        return Err(Answer::error(412));
    }
    Ok(())
}

/// `<D:activelock>` of one lock.
pub fn activelock(l: &LockRow, out: &mut String) {
    out.push_str("<D:activelock>\n<D:lockscope><D:");
    out.push_str(if l.scope == "exclusive" {
        "exclusive"
    } else {
        "shared"
    });
    out.push_str("/></D:lockscope>\n<D:locktype><D:write/></D:locktype>\n<D:depth>");
    out.push_str(if l.depth == 0 { "0" } else { "infinity" });
    out.push_str("</D:depth>\n<D:timeout>Second-");
    out.push_str(&l.timeout.to_string());
    out.push_str("</D:timeout>\n<D:owner>");
    out.push_str(&l.ownerinfo);
    out.push_str("</D:owner>\n<D:locktoken>\n<D:href>");
    out.push_str(&l.token);
    out.push_str("</D:href>\n</D:locktoken>\n<D:lockroot>\n");
    out::href(&l.resource, out);
    out.push_str("</D:lockroot>\n</D:activelock>\n");
}

/// The answer to a LOCK that took or refreshed `l`.
fn lock_answer(status: u16, l: &LockRow) -> Answer {
    let mut b = String::from(XML_DECL);
    b.push_str("<D:prop xmlns:D=\"DAV:\">\n<D:lockdiscovery>\n");
    activelock(l, &mut b);
    b.push_str("</D:lockdiscovery>\n</D:prop>\n");
    Answer::xml(status, b).with("Timeout", format!("Second-{}", l.timeout).as_bytes())
}

/// `Timeout: Second-N`: at least 5 s, at most the 600 s default (as
/// lighttpd; "Infinite" gets the default).
fn timeout(cx: &Ctx) -> i64 {
    let Some(h) = cx.header("timeout") else {
        return DEFAULT_TIMEOUT;
    };
    for part in h.split(',') {
        let p = part.trim_start_matches([' ', '\t']);
        if p.len() >= 7 && p[..7].eq_ignore_ascii_case("second-") {
            let digits: String = p[7..].chars().take_while(char::is_ascii_digit).collect();
            let t: i64 = digits.parse().unwrap_or(0);
            if 0 < t && t < DEFAULT_TIMEOUT {
                return t.max(5);
            }
            if t > i64::from(i32::MAX) {
                return i64::from(i32::MAX);
            }
            return DEFAULT_TIMEOUT;
        }
    }
    DEFAULT_TIMEOUT
}

/// LOCK: a body asks for a new lock (collected, then [`LockWork`]); none
/// refreshes the lock its `If` header names.
pub fn lock_start(cx: Ctx) -> Start {
    if cx.store.is_none() {
        return Start::Answer(no_db());
    }
    if cx.body_len == Some(0) {
        return Start::Answer(refresh(&cx));
    }
    Start::Work(Box::new(LockWork {
        cx,
        body: Vec::new(),
        too_big: false,
        answer: Vec::new(),
        at: 0,
    }))
}

fn refresh(cx: &Ctx) -> Answer {
    let h = cx.header("if").unwrap_or("");
    let b = h.as_bytes();
    if b.len() < 5 || b[1] != b'<' || b[b.len() - 2] != b'>' {
        return Answer::error(400);
    }
    let token = &h[2..h.len() - 2];
    let l = LockRow {
        token: token.to_string(),
        resource: cx.rel.clone(),
        scope: "exclusive".into(),
        locktype: "write".into(),
        owner: cx.owner().to_string(),
        ownerinfo: String::new(),
        depth: 0,
        timeout: timeout(cx),
    };
    let Some(st) = cx.store.as_ref() else {
        return no_db();
    };
    match st.lock_refresh(token, l.timeout) {
        Ok(()) => lock_answer(200, &l),
        Err(e) => {
            log::error!("(mod_webdav) sqlite: {}", e.msg);
            Answer::error(412)
        }
    }
}

/// A LOCK with a body: collected (bounded), then the lock is taken.
struct LockWork {
    cx: Ctx,
    body: Vec<u8>,
    too_big: bool,
    answer: Vec<u8>,
    at: usize,
}

impl LocalWork for LockWork {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        collect(&mut self.body, &mut self.too_big, data);
        Ok(data.len())
    }

    fn finish(&mut self) {
        let a = if self.too_big {
            Answer::error(413)
        } else {
            lock_new(&self.cx, &self.body)
        };
        self.answer = a.to_cgi(&self.cx.settings);
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(drain(&self.answer, &mut self.at, buf))
    }
}

fn lock_new(cx: &Ctx, body: &[u8]) -> Answer {
    log_body(cx, body);
    let mut depth = i64::from(cx.depth());
    if depth == 1 {
        return Answer::error(400);
    }
    let Ok(root) = xml::parse(body) else {
        return Answer::error(400);
    };
    if root.name != "lockinfo" {
        return Answer::error(422);
    }
    let mut scope = None;
    let mut locktype = None;
    let mut ownerinfo = String::new();
    for e in root.elems() {
        match e.name.as_str() {
            "lockscope" => scope = one_of(e, &["exclusive", "shared"]),
            "locktype" => locktype = one_of(e, &["write"]),
            "owner" => ownerinfo = e.inner_xml(),
            _ => {}
        }
    }
    let (Some(scope), Some(locktype)) = (scope, locktype) else {
        return Answer::error(422);
    };
    let mut l = LockRow {
        token: String::new(),
        resource: cx.rel.clone(),
        scope: scope.into(),
        locktype: locktype.into(),
        owner: cx.owner().to_string(),
        ownerinfo,
        depth,
        timeout: timeout(cx),
    };
    if let Err(a) = no_conflict(cx, &l) {
        return a;
    }
    let (created, meta) = match target(cx) {
        Ok(v) => v,
        Err(a) => return a,
    };
    if !meta.is_dir() {
        depth = 0;
    }
    l.depth = depth;
    l.token = new_token();
    let Some(st) = cx.store.as_ref() else {
        return no_db();
    };
    if let Err(e) = st.lock_acquire(&l) {
        return db_answer(e);
    }
    let mut a = lock_answer(if created { 201 } else { 200 }, &l)
        .with("Lock-Token", format!("<{}>", l.token).as_bytes());
    if !meta.is_dir() {
        if let Some(tag) = crate::handler::static_file::etag_of(&meta, &cx.settings) {
            a = a.with("ETag", tag.as_bytes());
        }
    }
    a
}

/// The one element inside `e`, if it is one of `names`.
fn one_of(e: &xml::Elem, names: &[&'static str]) -> Option<&'static str> {
    let mut found = None;
    for c in e.elems() {
        found = Some(*names.iter().find(|n| **n == c.name)?);
    }
    found
}

/// No lock in the way of `l`: an exclusive one, or any when `l` is
/// exclusive (423 `no-conflicting-lock` with their roots).
fn no_conflict(cx: &Ctx, l: &LockRow) -> Result<(), Answer> {
    let members = l.depth != 0;
    let mut hrefs = String::new();
    for other in active_locks(cx, &l.resource, members)? {
        if other.scope == "exclusive" || l.scope == "exclusive" {
            out::href(&other.resource, &mut hrefs);
        }
    }
    if hrefs.is_empty() {
        Ok(())
    } else {
        Err(out::locked("no-conflicting-lock", &hrefs))
    }
}

/// The locked resource: made empty when missing (201, RFC 4918 9.10.4),
/// with its metadata; a directory named without its slash is redirected.
fn target(cx: &Ctx) -> Result<(bool, std::fs::Metadata), Answer> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Ok(m) = std::fs::symlink_metadata(&cx.path) {
        precondition(cx, Some(&m))?;
        if m.is_dir() && !cx.path.ends_with('/') {
            return Err(redirect_to_dir(cx));
        }
        if !m.is_dir() && cx.path.ends_with('/') {
            return Err(Answer::error(403));
        }
        return Ok((false, m));
    }
    if cx.path.ends_with('/') || cx.settings.webdav.is_readonly {
        // (lighttpd would make the file on a read-only share: glint
        // writes nothing there.)
        return Err(Answer::error(403));
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(&cx.path);
    match f.and_then(|f| f.metadata()) {
        Ok(m) => Ok((true, m)),
        Err(_) => Err(Answer::error(403)),
    }
}

/// A lock token: `urn:uuid:` and a random (version 4) UUID.
fn new_token() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // (The nonce source failed: time and address still make it unique.)
        let t = crate::clock::unix_now() as u64 ^ (&b as *const _ as u64);
        b[..8].copy_from_slice(&t.to_le_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = crate::syntax::hex_string(&b);
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// UNLOCK: the `Lock-Token` must name a lock on the request's resource
/// (or a depth-infinity one above it) that its user owns.
pub fn unlock(cx: &Ctx) -> Answer {
    if cx.store.is_none() {
        return no_db();
    }
    let h = cx.header("lock-token").unwrap_or("");
    if h.len() < 3 || !h.starts_with('<') || !h.ends_with('>') {
        return Answer::error(400);
    }
    let token = &h[1..h.len() - 1];
    let Some(st) = cx.store.as_ref() else {
        return no_db();
    };
    let mismatch = || out::error_doc(409, "lock-token-matches-request-uri");
    match st.lock_read(token) {
        Err(e) => db_answer(e),
        Ok(None) => mismatch(),
        Ok(Some((resource, owner, depth))) => {
            let in_scope =
                cx.rel.starts_with(&resource) && (resource.len() == cx.rel.len() || depth == -1);
            if !in_scope {
                return mismatch();
            }
            if !owner.is_empty() && owner != cx.owner() {
                return Answer::error(403);
            }
            match st.lock_release(token) {
                Ok(true) => Answer::status(204),
                Ok(false) => mismatch(),
                Err(e) => db_answer(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_v4_uuids() {
        let t = new_token();
        assert!(t.starts_with("urn:uuid:") && t.len() == 45, "{t}");
        assert_eq!(&t[23..24], "4");
        assert_ne!(t, new_token());
    }
}

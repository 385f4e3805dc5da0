//! PROPPATCH: the `set`s and `remove`s of a body applied in order, all or
//! nothing, in one transaction of the database.

use std::io;

use super::common::{
    collect, content_location, db_answer, drain, log_body, no_db, not_found_or_forbidden,
    precondition,
};
use super::out::{self, Answer};
use super::request::Ctx;
use super::xml::{self, Elem};
use super::Start;
use crate::msg::local::LocalWork;

/// Properties in `DAV:` PROPPATCH may not set.
const PROTECTED: &[&str] = &[
    "creationdate",
    "getcontentlength",
    "getcontenttype",
    "getetag",
    "getlastmodified",
    "lockdiscovery",
    "resourcetype",
    "supportedlock",
];

/// PROPPATCH: needs the database; the body is collected, then applied.
pub fn proppatch_start(cx: Ctx) -> Start {
    if cx.store.is_none() {
        return Start::Answer(no_db());
    }
    if cx.body_len == Some(0) {
        return Start::Answer(Answer::error(400));
    }
    Start::Work(Box::new(Proppatch {
        cx,
        body: Vec::new(),
        too_big: false,
        answer: Vec::new(),
        at: 0,
    }))
}

struct Proppatch {
    cx: Ctx,
    body: Vec<u8>,
    too_big: bool,
    answer: Vec<u8>,
    at: usize,
}

impl LocalWork for Proppatch {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        collect(&mut self.body, &mut self.too_big, data);
        Ok(data.len())
    }

    fn finish(&mut self) {
        let a = if self.too_big {
            Answer::error(413)
        } else {
            let body = std::mem::take(&mut self.body);
            proppatch(&mut self.cx, &body)
        };
        self.answer = a.to_cgi(&self.cx.settings);
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(drain(&self.answer, &mut self.at, buf))
    }
}

fn proppatch(cx: &mut Ctx, body: &[u8]) -> Answer {
    log_body(cx, body);
    if body.is_empty() {
        return Answer::error(400);
    }
    if !cx.body_is_xml() {
        return Answer::error(415);
    }
    let meta = match std::fs::symlink_metadata(&cx.path) {
        Ok(m) => m,
        Err(e) => return Answer::error(not_found_or_forbidden(&e)),
    };
    if let Err(a) = precondition(cx, Some(&meta)) {
        return a;
    }
    let mut location = None;
    if meta.is_dir() {
        if !cx.path.ends_with('/') {
            cx.path.push('/');
            cx.rel.push('/');
            location = Some(content_location(&cx.rel));
        }
    } else if cx.path.ends_with('/') {
        return Answer::error(403);
    }
    let Ok(root) = xml::parse(body) else {
        return Answer::error(400);
    };
    if root.name != "propertyupdate" {
        return Answer::error(422);
    }
    let Some(st) = cx.store.clone() else {
        return no_db();
    };
    if let Err(e) = st.begin_immediate() {
        return db_answer(e);
    }
    let (failed, errors) = apply_updates(cx, &st, &root);
    let done = if errors.is_empty() && failed.is_none() {
        st.commit()
    } else {
        st.rollback()
    };
    if let Some(e) = failed.or(done.err()) {
        let _ = st.rollback();
        return db_answer(e);
    }
    let mut a = if errors.is_empty() {
        let mini_redir = cx
            .header("user-agent")
            .is_some_and(|ua| ua.starts_with("Microsoft-WebDAV-MiniRedir/"));
        if mini_redir {
            // It reads 204 (and 200 without a body) as 507.
            let mut r = String::new();
            out::response_status(&cx.rel, 200, &mut r);
            out::multistatus(&r)
        } else {
            Answer::status(204)
        }
    } else {
        let mut r = String::from("<D:response>\n");
        out::href(&cx.rel, &mut r);
        r.push_str(&errors);
        r.push_str("</D:response>\n");
        out::multistatus(&r)
    };
    if let Some(l) = location {
        a = a.with("Content-Location", &l);
    }
    a
}

/// Applies the `set`s and `remove`s in order: the first database
/// failure, and the propstats of properties refused (422, 403).
fn apply_updates(
    cx: &Ctx,
    st: &super::store::Store,
    root: &Elem,
) -> (Option<super::store::DbError>, String) {
    let mut errors = String::new();
    for cmd in root.elems() {
        let set = match cmd.name.as_str() {
            "set" => true,
            "remove" => false,
            _ => continue,
        };
        for p in cmd
            .elems()
            .filter(|e| e.name == "prop")
            .flat_map(Elem::elems)
        {
            if p.bad_prefix {
                log::error!("(mod_webdav) no namespace for: {}", p.name);
                errors.push_str("<D:propstat>\n<D:prop><");
                errors.push_str(&p.name);
                errors.push_str("/></D:prop>\n");
                out::status_line(422, &mut errors);
                errors.push_str("</D:propstat>\n");
                continue;
            }
            if p.ns == "DAV:" && PROTECTED.contains(&p.name.as_str()) {
                errors.push_str("<D:propstat>\n<D:prop><DAV:");
                errors.push_str(&p.name);
                errors.push_str(
                    "/></D:prop>\n<D:error><DAV:cannot-modify-protected-property/></D:error>\n",
                );
                out::status_line(403, &mut errors);
                errors.push_str("</D:propstat>\n");
                continue;
            }
            let r = if set {
                st.prop_set(&cx.rel, &p.name, &p.ns, &p.inner_xml())
            } else {
                st.prop_remove(&cx.rel, &p.name, &p.ns)
            };
            if let Err(e) = r {
                return (Some(e), errors);
            }
        }
    }
    (None, errors)
}

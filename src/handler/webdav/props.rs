//! PROPFIND: live properties from the file system, dead ones from the
//! database, lock discovery; streamed one resource at a time.

use std::fs::Metadata;
use std::io;
use std::os::unix::fs::MetadataExt;

use super::common::{collect, content_location, drain, log_body, not_found_or_forbidden};
use super::locks::{self, active_locks};
use super::out::{self, Answer, XML_DECL};
use super::request::Ctx;
use super::xml::{self, Elem};
use super::Start;
use crate::msg::local::LocalWork;

/// Most properties one PROPFIND may name (lighttpd's limit).
const MAX_PROPS: usize = 32;
/// Deepest directory a `Depth: infinity` PROPFIND descends (lighttpd's
/// limit against symlink loops and runaway work).
const MAX_RECURSION: usize = 100;

/// The live properties glint computes, in the order lighttpd writes them.
const LIVE: &[&str] = &[
    "getcontentlength",
    "getcontenttype",
    "getetag",
    "getlastmodified",
    "resourcetype",
    "supportedlock",
];

const SUPPORTEDLOCK: &str = "<D:supportedlock><D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry><D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry></D:supportedlock>";

/// What a PROPFIND asks for.
#[derive(Default)]
struct Ask {
    allprop: bool,
    propname: bool,
    lockdiscovery: bool,
    /// Live properties by index in [`LIVE`], dead ones by (ns, name).
    props: Vec<Prop>,
}

enum Prop {
    Live(usize),
    Dead(String, String),
}

/// The PROPFIND body's question (`Err`: 400 or 422).
fn ask_of(body: &[u8]) -> Result<Ask, u16> {
    let mut ask = Ask::default();
    if !body.is_empty() {
        let root = xml::parse(body).map_err(|_| 400u16)?;
        if root.name == "propfind" {
            read_propfind(&root, &mut ask)?;
        }
    }
    if ask.props.is_empty() && !ask.propname {
        ask.allprop = true;
        ask.lockdiscovery = true;
    }
    Ok(ask)
}

fn read_propfind(root: &Elem, ask: &mut Ask) -> Result<(), u16> {
    for cmd in root.elems() {
        let include = match cmd.name.as_str() {
            "allprop" => {
                ask.allprop = true;
                ask.lockdiscovery = true;
                continue;
            }
            "propname" => {
                ask.propname = true;
                continue;
            }
            "prop" => false,
            "include" => true,
            _ => continue,
        };
        for p in cmd.elems() {
            if p.bad_prefix {
                return Err(422);
            }
            if ask.props.len() == MAX_PROPS {
                log::error!("(mod_webdav) too many properties in request (> {MAX_PROPS})");
                return Err(400);
            }
            if p.ns == "DAV:" {
                if p.name == "lockdiscovery" {
                    ask.lockdiscovery = true;
                    continue;
                }
                if let Some(i) = LIVE.iter().position(|l| *l == p.name) {
                    if !include {
                        ask.props.push(Prop::Live(i));
                    }
                    continue;
                }
                if include {
                    continue;
                }
            }
            ask.props.push(Prop::Dead(p.ns.clone(), p.name.clone()));
        }
    }
    Ok(())
}

/// PROPFIND: the body (if any) is collected, then [`Propfind`] streams.
pub fn propfind_start(cx: Ctx) -> Start {
    Start::Work(Box::new(Propfind {
        cx,
        body: Vec::new(),
        too_big: false,
        state: State::Answer(Vec::new(), 0),
    }))
}

struct Propfind {
    cx: Ctx,
    body: Vec<u8>,
    too_big: bool,
    state: State,
}

enum State {
    /// A whole answer (an error) being read out.
    Answer(Vec<u8>, usize),
    /// The multistatus: the part made but not yet read, and the walk.
    Walk(Box<Walk>),
}

/// A PROPFIND's walk through the tree.
struct Walk {
    ask: Ask,
    pending: Vec<u8>,
    at: usize,
    /// Open directories: their iterator and their (URL, file) paths.
    dirs: Vec<(std::fs::ReadDir, String, String)>,
    infinity: bool,
    follow: bool,
    ended: bool,
}

impl LocalWork for Propfind {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        collect(&mut self.body, &mut self.too_big, data);
        Ok(data.len())
    }

    fn finish(&mut self) {
        let body = std::mem::take(&mut self.body);
        self.state = match self.begin(&body) {
            Ok(w) => State::Walk(w),
            Err(a) => State::Answer(a.to_cgi(&self.cx.settings), 0),
        };
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.state {
            State::Answer(all, at) => Ok(drain(all, at, buf)),
            State::Walk(w) => {
                while w.pending.len() - w.at < buf.len() && !w.ended {
                    w.step(&self.cx);
                }
                let n = drain(&w.pending, &mut w.at, buf);
                if w.at == w.pending.len() {
                    w.pending.clear();
                    w.at = 0;
                }
                Ok(n)
            }
        }
    }
}

impl Propfind {
    /// The checks before the walk, in lighttpd's order; the answer's head
    /// and the first resource.
    fn begin(&mut self, body: &[u8]) -> Result<Box<Walk>, Answer> {
        let cx = &mut self.cx;
        if self.too_big {
            return Err(Answer::error(413));
        }
        if !body.is_empty() {
            log_body(cx, body);
            if !cx.body_is_xml() {
                return Err(Answer::error(415));
            }
        }
        let mut depth = cx.depth();
        if depth == -1 && !cx.settings.webdav.opts.depth_infinity {
            return Err(out::error_doc(403, "propfind-finite-depth"));
        }
        let w = &cx.settings.webdav;
        let follow = w.opts.propfind_follow_symlink && w.is_readonly;
        let meta = if follow {
            std::fs::metadata(&cx.path)
        } else {
            std::fs::symlink_metadata(&cx.path)
        };
        let meta = meta.map_err(|e| Answer::error(not_found_or_forbidden(&e)))?;
        let mut head = vec![(
            "Content-Type".to_string(),
            out::XML_TYPE.as_bytes().to_vec(),
        )];
        if meta.is_dir() {
            if !cx.path.ends_with('/') {
                cx.path.push('/');
                cx.rel.push('/');
                head.insert(0, ("Content-Location".into(), content_location(&cx.rel)));
            }
        } else if cx.path.ends_with('/') {
            return Err(Answer::error(403));
        } else {
            depth = 0;
        }
        let ask = ask_of(body).map_err(Answer::error)?;
        let mut pending = out::cgi_head(207, &head);
        pending.extend_from_slice(b"\r\n");
        pending.extend_from_slice(XML_DECL.as_bytes());
        pending.extend_from_slice(b"<D:multistatus xmlns:D=\"DAV:\" xmlns:ns0=\"urn:uuid:c2f41010-65b3-11d1-a29f-00aa00c14882/\">\n");
        let mut walk = Box::new(Walk {
            ask,
            pending,
            at: 0,
            dirs: Vec::new(),
            infinity: depth == -1,
            follow,
            ended: false,
        });
        let (rel, path) = (cx.rel.clone(), cx.path.clone());
        if depth != 0 {
            walk.enter(cx, rel, path, &meta, true);
        } else {
            walk.resource(cx, &rel, &path, &meta, true);
        }
        Ok(walk)
    }
}

impl Walk {
    /// The next resource (or the end of the document).
    fn step(&mut self, cx: &Ctx) {
        let Some((dir, rel, path)) = self.dirs.last_mut() else {
            self.pending.extend_from_slice(b"</D:multistatus>\n");
            self.ended = true;
            return;
        };
        let Some(entry) = dir.next() else {
            self.dirs.pop();
            return;
        };
        let Ok(entry) = entry else { return };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let mut child_rel = rel.clone();
        if cx.settings.files.force_lowercase_filenames {
            child_rel.push_str(&name.to_lowercase());
        } else {
            child_rel.push_str(&name);
        }
        let child_path = format!("{path}{name}");
        let meta = if self.follow {
            std::fs::metadata(&child_path)
        } else {
            std::fs::symlink_metadata(&child_path)
        };
        let Ok(meta) = meta else { return };
        if meta.is_dir() && self.infinity {
            self.enter(cx, child_rel + "/", child_path + "/", &meta, false);
        } else if meta.is_dir() {
            self.resource(cx, &(child_rel + "/"), &(child_path + "/"), &meta, false);
        } else {
            self.resource(cx, &child_rel, &child_path, &meta, false);
        }
    }

    /// A collection: its own response, then its members (403 when it
    /// cannot be read).
    fn enter(&mut self, cx: &Ctx, rel: String, path: String, meta: &Metadata, top: bool) {
        if self.dirs.len() >= MAX_RECURSION {
            return;
        }
        match std::fs::read_dir(&path) {
            Ok(rd) => {
                self.resource(cx, &rel, &path, meta, top);
                self.dirs.push((rd, rel, path));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) => {
                let mut s = String::from("<D:response>\n");
                out::href(&rel, &mut s);
                s.push_str("<D:propstat>\n");
                out::status_line(403, &mut s);
                s.push_str("</D:propstat>\n</D:response>\n");
                self.pending.extend_from_slice(s.as_bytes());
            }
        }
    }

    /// One `<D:response>`.
    fn resource(&mut self, cx: &Ctx, rel: &str, path: &str, meta: &Metadata, top: bool) {
        let mut ok = String::new();
        let mut missing = String::new();
        if self.ask.propname {
            for l in LIVE {
                ok.push_str("<D:");
                ok.push_str(l);
                ok.push_str("/>\n");
            }
            ok.push_str("<D:lockdiscovery/>\n");
            if let Some(st) = cx.store.as_ref() {
                for (name, ns) in st.propnames(rel).unwrap_or_else(db_logged) {
                    dead_prop(&name, &ns, "", &mut ok);
                }
            }
        } else {
            self.props(cx, rel, path, meta, &mut ok, &mut missing);
            if self.ask.lockdiscovery {
                ok.push_str("<D:lockdiscovery>");
                let found = if top {
                    active_locks(cx, rel, false).unwrap_or_default()
                } else {
                    on_only(cx, rel)
                };
                for l in &found {
                    locks::activelock(l, &mut ok);
                }
                ok.push_str("</D:lockdiscovery>");
            }
        }
        let mut s = String::with_capacity(ok.len() + missing.len() + 256);
        s.push_str("<D:response>\n");
        out::href(rel, &mut s);
        for (props, status) in [(&ok, 200), (&missing, 404)] {
            if !props.is_empty() {
                s.push_str("<D:propstat>\n<D:prop>\n");
                s.push_str(props);
                s.push_str("</D:prop>\n");
                out::status_line(status, &mut s);
                s.push_str("</D:propstat>\n");
            }
        }
        s.push_str("</D:response>\n");
        self.pending.extend_from_slice(s.as_bytes());
    }

    fn props(
        &self,
        cx: &Ctx,
        rel: &str,
        path: &str,
        meta: &Metadata,
        ok: &mut String,
        missing: &mut String,
    ) {
        for p in &self.ask.props {
            match p {
                Prop::Live(i) => {
                    if !live(cx, *i, path, meta, ok) {
                        missing.push_str("<D:");
                        missing.push_str(LIVE[*i]);
                        missing.push_str("/>");
                    }
                }
                Prop::Dead(ns, name) => {
                    let v = cx
                        .store
                        .as_ref()
                        .and_then(|st| st.prop(rel, name, ns).unwrap_or_else(db_logged));
                    match v {
                        Some(v) => dead_prop(name, ns, &v, ok),
                        None => dead_prop(name, ns, "", missing),
                    }
                }
            }
        }
        if self.ask.allprop {
            for i in 0..LIVE.len() {
                live(cx, i, path, meta, ok);
            }
            if let Some(st) = cx.store.as_ref() {
                for (name, ns, v) in st.props(rel).unwrap_or_else(db_logged) {
                    dead_prop(&name, &ns, &v, ok);
                }
            }
        }
    }
}

/// Locks on exactly this resource (the members of a collection listed
/// after it: locks above were shown with it).
fn on_only(cx: &Ctx, rel: &str) -> Vec<super::store::LockRow> {
    let Some(st) = cx.store.as_ref() else {
        return Vec::new();
    };
    let mut v = st.locks_on(rel).unwrap_or_else(db_logged);
    v.retain(|l| l.timeout > 0);
    v
}

/// A failed read of the database in a PROPFIND: logged, and the
/// properties it would have given are left out.
fn db_logged<T: Default>(e: super::store::DbError) -> T {
    log::error!("(mod_webdav) sqlite: {}", e.msg);
    T::default()
}

/// `<name xmlns="ns">value</name>`, or `<name xmlns="ns"/>` when empty.
fn dead_prop(name: &str, ns: &str, value: &str, out: &mut String) {
    out.push('<');
    out.push_str(name);
    out.push_str(" xmlns=\"");
    out.push_str(ns);
    if value.is_empty() {
        out.push_str("\"/>");
    } else {
        out.push_str("\">");
        out.push_str(value);
        out.push_str("</");
        out.push_str(name);
        out.push('>');
    }
}

/// Live property `LIVE[i]` of a resource; false when it has none.
fn live(cx: &Ctx, i: usize, path: &str, meta: &Metadata, out: &mut String) -> bool {
    match LIVE[i] {
        "getcontentlength" => {
            out.push_str("<D:getcontentlength>");
            out.push_str(&meta.size().to_string());
            out.push_str("</D:getcontentlength>");
        }
        "getcontenttype" if meta.is_dir() => {
            out.push_str("<D:getcontenttype>httpd/unix-directory</D:getcontenttype>")
        }
        "getcontenttype" => {
            // `mimetype.assign` alone, as lighttpd: no type, no property.
            let s = &cx.settings;
            let Some((_, t)) = s
                .files
                .mimetype_assign
                .iter()
                .filter(|(suffix, _)| path.ends_with(suffix.as_str()))
                .max_by_key(|(suffix, _)| suffix.len())
            else {
                return false;
            };
            out.push_str("<D:getcontenttype>");
            xml::escape_text(t, out);
            out.push_str("</D:getcontenttype>");
        }
        "getetag" => {
            let Some(tag) = cx
                .etags()
                .then(|| crate::handler::static_file::etag_of(meta, &cx.settings))
                .flatten()
            else {
                return false;
            };
            out.push_str("<D:getetag>");
            xml::escape_text(&tag, out);
            out.push_str("</D:getetag>");
        }
        "getlastmodified" => {
            out.push_str("<D:getlastmodified ns0:dt=\"dateTime.rfc1123\">");
            out.push_str(&String::from_utf8_lossy(&crate::date::format_http_date(
                meta.mtime(),
            )));
            out.push_str("</D:getlastmodified>");
        }
        "resourcetype" if meta.is_dir() => {
            out.push_str("<D:resourcetype><D:collection/></D:resourcetype>")
        }
        "resourcetype" => out.push_str("<D:resourcetype/>"),
        _ => out.push_str(SUPPORTEDLOCK),
    }
    true
}

//! One page being built: the text between directives, and each directive
//! as lighttpd 1.4.69 carries it out (the `#if` state machine included,
//! quirks and all, so that a page reads the same under both servers).

use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::rc::Rc;

use nix::libc;

use super::directive::{self, Next, MAX_DIRECTIVE};
use super::{exec, expr, paths, strftime, Doc, Page, MAX_DEPTH, MAX_OUTPUT};

/// A piece of the answer.
pub(super) enum Part {
    Mem(Vec<u8>),
    File(Rc<File>, u64),
}

pub(super) struct Run<'p> {
    page: &'p Page<'p>,
    /// `#set` variables.
    vars: Vec<(Vec<u8>, Vec<u8>)>,
    timefmt: Vec<u8>,
    abbrev: bool,
    if_level: i32,
    false_level: i32,
    is_false: bool,
    false_endif: bool,
    depth: u16,
    /// The newest modification time of the files included.
    pub newest_include: i64,
    pub parts: Vec<Part>,
    pub len: u64,
    /// The answer would be longer than [`MAX_OUTPUT`].
    pub over: bool,
}

impl<'p> Run<'p> {
    pub fn new(page: &'p Page<'p>) -> Run<'p> {
        Run {
            page,
            vars: Vec::new(),
            timefmt: Vec::new(),
            abbrev: false,
            if_level: 0,
            false_level: 0,
            is_false: false,
            false_endif: false,
            depth: 0,
            newest_include: 0,
            parts: Vec::new(),
            len: 0,
            over: false,
        }
    }

    fn room(&mut self, n: u64) -> bool {
        if self.over || self.len.saturating_add(n) > MAX_OUTPUT {
            self.over = true;
            return false;
        }
        self.len += n;
        true
    }

    fn text(&mut self, b: &[u8]) {
        if b.is_empty() || !self.room(b.len() as u64) {
            return;
        }
        match self.parts.last_mut() {
            Some(Part::Mem(m)) => m.extend_from_slice(b),
            _ => self.parts.push(Part::Mem(b.to_vec())),
        }
    }

    /// Parses the file `doc` (open as `file`) into the answer.
    pub fn process(&mut self, doc: &Doc, file: File) -> std::io::Result<()> {
        use std::io::Read;
        let mut bytes = Vec::new();
        // One more than the room left: a page that does not fit is over.
        let room = MAX_OUTPUT.saturating_sub(self.len).saturating_add(1);
        file.take(room).read_to_end(&mut bytes)?;
        if bytes.len() as u64 >= room {
            self.over = true;
            return Ok(());
        }
        let mut at = 0;
        while !self.over {
            match directive::next(&bytes, at) {
                Next::Directive { text_end, len } => {
                    if !self.is_false {
                        self.text(&bytes[at..text_end]);
                    }
                    self.directive(doc, &bytes[text_end..text_end + len]);
                    at = text_end + len;
                }
                Next::TooLong { text_end } => {
                    if !self.is_false {
                        self.text(&bytes[at..text_end]);
                    }
                    self.text(b"<!-- [an error occurred: directive too long] ");
                    let w = &bytes[text_end..text_end + MAX_DIRECTIVE];
                    if w.ends_with(b"--") {
                        self.text(b"--");
                    } else if w.ends_with(b"-") {
                        self.text(b"-");
                    }
                    at = text_end + MAX_DIRECTIVE;
                }
                Next::End => {
                    if !self.is_false {
                        self.text(&bytes[at..]);
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    fn directive(&mut self, doc: &Doc, s: &[u8]) {
        let Some(w) = directive::words(s) else {
            if !directive::is_loose_comment(s) {
                // Not well formed: sent as it is, in a false branch too.
                self.text(s);
            }
            return;
        };
        let attrs: Vec<(&[u8], &[u8])> = w[1..].chunks(2).map(|c| (c[0], c[1])).collect();
        let name = w[0];
        match name {
            b"echo" => self.echo(doc, &attrs),
            b"include" | b"flastmod" | b"fsize" => self.file_cmd(doc, name, &attrs),
            b"set" => self.set(&attrs),
            b"config" => self.config(&attrs),
            b"printenv" => self.printenv(),
            b"exec" => self.exec(&attrs),
            b"if" => self.if_(&attrs),
            b"elif" => self.elif(&attrs),
            b"else" => self.else_(),
            b"endif" => self.endif(),
            b"comment" => {}
            _ => log::error!("ssi: unknown ssi-command: {}", show(name)),
        }
    }

    /// The value of `name` from the request's CGI variables, else the
    /// page's `#set` ones (names compare without case).
    fn lookup(&self, name: &[u8]) -> Option<Vec<u8>> {
        let find = |l: &[(Vec<u8>, Vec<u8>)]| {
            l.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        find(&self.page.env).or_else(|| find(&self.vars))
    }

    fn echo(&mut self, doc: &Doc, attrs: &[(&[u8], &[u8])]) {
        let mut var = None;
        for &(k, v) in attrs {
            match k {
                b"var" => var = Some(v),
                b"encoding" => {}
                _ => unknown_attr(b"echo", k),
            }
        }
        if self.is_false {
            return;
        }
        let Some(var) = var else {
            log::error!("ssi: echo var is missing");
            return;
        };
        let p = self.page;
        let value: Vec<u8> = match var {
            b"DATE_GMT" => strftime::format(&self.timefmt, p.now, false),
            b"DATE_LOCAL" => strftime::format(&self.timefmt, p.now, true),
            b"LAST_MODIFIED" => strftime::format(&self.timefmt, doc.meta.mtime(), true),
            b"USER_NAME" => user_name(doc.meta.uid()),
            b"DOCUMENT_NAME" => doc.physical.rsplit('/').next().unwrap_or("").into(),
            b"DOCUMENT_URI" => doc.uri_path.as_bytes().to_vec(),
            b"SCRIPT_URI" if p.scheme.is_empty() || p.authority.is_empty() => Vec::new(),
            b"SCRIPT_URI" => {
                let mut v = format!("{}://{}", p.scheme, p.authority).into_bytes();
                v.extend_from_slice(&script_url(p));
                v
            }
            b"SCRIPT_URL" => script_url(p),
            _ => self.lookup(var).unwrap_or_else(|| b"(none)".to_vec()),
        };
        self.text(&value);
    }

    fn file_cmd(&mut self, doc: &Doc, cmd: &[u8], attrs: &[(&[u8], &[u8])]) {
        let (mut file, mut virt) = (None, None);
        for &(k, v) in attrs {
            match k {
                b"file" => file = Some(v),
                b"virtual" => virt = Some(v),
                _ => unknown_attr(cmd, k),
            }
        }
        let target = match (file, virt) {
            (None, None) => {
                return log::error!("ssi: {} file or virtual is missing", show(cmd));
            }
            (Some(_), Some(_)) => {
                return log::error!(
                    "ssi: {} only one of file and virtual is allowed here",
                    show(cmd)
                );
            }
            (Some(f), None) => paths::Target::File(f),
            (None, Some(v)) => paths::Target::Virtual(v),
        };
        if self.is_false {
            return;
        }
        let Some(found) = paths::resolve(self.page, doc, &target) else {
            return;
        };
        if !(self.page.allowed)(&found.uri_path) || !(self.page.allowed)(&found.physical) {
            log::error!(
                "ssi: {} of {} refused by url.access-deny/-allow",
                show(cmd),
                found.uri_path
            );
            return;
        }
        let Some((f, meta)) = open(&found.physical, self.page.settings.files.follow_symlink) else {
            return;
        };
        match cmd {
            b"fsize" => {
                let v = fsize(meta.size(), self.abbrev);
                self.text(v.as_bytes());
            }
            b"flastmod" => {
                let v = strftime::format(&self.timefmt, meta.mtime(), true);
                self.text(&v);
            }
            _ => self.include(doc, found, f, meta, file.is_some()),
        }
    }

    fn include(&mut self, doc: &Doc, found: paths::Found, f: File, meta: Metadata, by_file: bool) {
        self.newest_include = self.newest_include.max(meta.mtime());
        let max = self.page.settings.ssi.recursion_max;
        if by_file || max == 0 {
            if self.room(meta.size()) {
                self.parts.push(Part::File(Rc::new(f), meta.size()));
            }
            return;
        }
        if self.depth >= max || self.depth >= MAX_DEPTH {
            return self.text(
                b"(error: include directives recurse deeper than pre-defined ssi.recursion-max)",
            );
        }
        if found.physical == doc.physical {
            return self.text(b"(error: include directives create an infinite loop)");
        }
        let inner = Doc {
            uri_path: found.uri_path,
            physical: found.physical,
            meta,
        };
        self.depth += 1;
        if let Err(e) = self.process(&inner, f) {
            log::error!("ssi: read(): {}: {e}", inner.physical);
        }
        self.depth -= 1;
    }

    fn set(&mut self, attrs: &[(&[u8], &[u8])]) {
        let (mut key, mut val) = (None, None);
        for &(k, v) in attrs {
            match k {
                b"var" => key = Some(v),
                b"value" => val = Some(v),
                _ => unknown_attr(b"set", k),
            }
        }
        if self.is_false {
            return;
        }
        let (Some(k), Some(v)) = (key, val) else {
            return log::error!(
                "ssi: var and value have to be set in <!--#set var=... value=... -->"
            );
        };
        match self
            .vars
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
        {
            Some(slot) => slot.1 = v.to_vec(),
            None => self.vars.push((k.to_vec(), v.to_vec())),
        }
    }

    fn config(&mut self, attrs: &[(&[u8], &[u8])]) {
        if self.is_false {
            return;
        }
        for &(k, v) in attrs {
            match (k, v) {
                (b"timefmt", _) => self.timefmt = v.to_vec(),
                (b"sizefmt", b"abbrev") => self.abbrev = true,
                (b"sizefmt", b"bytes") => self.abbrev = false,
                (b"sizefmt", _) => log::error!(
                    "ssi: unknown value for attribute 'sizefmt' for config {}",
                    show(v)
                ),
                // `errmsg` among them: lighttpd 1.4.69 does not know it either.
                _ => unknown_attr(b"config", k),
            }
        }
    }

    fn printenv(&mut self) {
        if self.is_false {
            return;
        }
        let mut out = Vec::new();
        for list in [&self.vars, &self.page.env] {
            let mut sorted: Vec<&(Vec<u8>, Vec<u8>)> = list.iter().collect();
            sorted.sort_by(|a, b| {
                (a.0.len(), a.0.to_ascii_lowercase()).cmp(&(b.0.len(), b.0.to_ascii_lowercase()))
            });
            for (k, v) in sorted {
                out.extend_from_slice(k);
                out.push(b'=');
                minimal_xml(v, &mut out);
                out.push(b'\n');
            }
        }
        self.text(&out);
    }

    fn exec(&mut self, attrs: &[(&[u8], &[u8])]) {
        if !self.page.settings.ssi.exec {
            return;
        }
        let mut cmd = None;
        for &(k, v) in attrs {
            match k {
                b"cmd" => cmd = Some(v),
                _ => unknown_attr(b"exec", k),
            }
        }
        if self.is_false {
            return;
        }
        let Some(cmd) = cmd else { return };
        let room = MAX_OUTPUT.saturating_sub(self.len);
        if let Some(out) = exec::run(cmd, usize::try_from(room).unwrap_or(usize::MAX)) {
            self.text(&out);
        }
    }

    fn expr_of(&self, cmd: &[u8], attrs: &[(&[u8], &[u8])]) -> Option<Vec<u8>> {
        let mut e = None;
        for &(k, v) in attrs {
            match k {
                b"expr" => e = Some(v.to_vec()),
                _ => unknown_attr(cmd, k),
            }
        }
        if e.is_none() {
            log::error!("ssi: {} expr missing", show(cmd));
        }
        e
    }

    fn eval(&self, e: &[u8]) -> bool {
        let lookup = |n: &[u8]| self.lookup(n);
        expr::eval(e, &lookup).unwrap_or(false)
    }

    fn if_(&mut self, attrs: &[(&[u8], &[u8])]) {
        let Some(e) = self.expr_of(b"if", attrs) else {
            return;
        };
        if !self.is_false && (self.false_level == 0 || self.if_level < self.false_level) {
            if self.eval(&e) {
                self.is_false = false;
            } else {
                self.is_false = true;
                self.false_level = self.if_level;
            }
        }
        self.if_level += 1;
    }

    fn elif(&mut self, attrs: &[(&[u8], &[u8])]) {
        let Some(e) = self.expr_of(b"elif", attrs) else {
            return;
        };
        self.if_level -= 1;
        if self.if_level == self.false_level {
            if self.is_false && !self.false_endif {
                if self.eval(&e) {
                    self.is_false = false;
                } else {
                    self.false_level = self.if_level;
                }
            } else {
                self.is_false = true;
                self.false_level = self.if_level;
                self.false_endif = true;
            }
        }
        self.if_level += 1;
    }

    fn else_(&mut self) {
        self.if_level -= 1;
        if self.is_false {
            if self.if_level == self.false_level && !self.false_endif {
                self.is_false = false;
            }
        } else {
            self.is_false = true;
            self.false_level = self.if_level;
        }
        self.if_level += 1;
    }

    fn endif(&mut self) {
        self.if_level -= 1;
        if self.if_level == self.false_level {
            self.is_false = false;
            self.false_endif = false;
        }
    }
}

fn show(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn unknown_attr(cmd: &[u8], attr: &[u8]) {
    log::error!("ssi: unknown attribute for {} {}", show(cmd), show(attr));
}

/// SCRIPT_URL: the request target and its query (which lighttpd 1.4.69
/// adds a second time: the target has it already).
fn script_url(p: &Page<'_>) -> Vec<u8> {
    let mut v = p.target_path.as_bytes().to_vec();
    if !p.query.is_empty() {
        v.push(b'?');
        v.extend_from_slice(p.query.as_bytes());
    }
    v
}

/// The owner's name, or the number when the system has no name for it.
fn user_name(uid: u32) -> Vec<u8> {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => u.name.into_bytes(),
        _ => uid.to_string().into_bytes(),
    }
}

/// `#fsize`: bytes, or with `sizefmt="abbrev"` in whole units of 1024.
fn fsize(size: u64, abbrev: bool) -> String {
    if !abbrev {
        return size.to_string();
    }
    const UNITS: [&str; 5] = [" B", " kB", " MB", " GB", " TB"];
    let (mut s, mut j) = (size, 0);
    while s > 1024 && j + 1 < UNITS.len() {
        s /= 1024;
        j += 1;
    }
    format!("{s}{}", UNITS[j])
}

/// `#printenv`'s values: control characters, `"`, `&`, `'`, `<`, `>`,
/// `` ` `` and DEL as `&#xHH;`.
fn minimal_xml(v: &[u8], out: &mut Vec<u8>) {
    for &b in v {
        if b < 0x20 || b == 0x7f || b"\"&'<>`".contains(&b) {
            out.extend_from_slice(b"&#x");
            out.extend_from_slice(&crate::syntax::hex_pair(b, crate::syntax::HEX_UPPER));
            out.push(b';');
        } else {
            out.push(b);
        }
    }
}

/// Opens an included file under the symlink rule: a regular file, or
/// `None` (logged).
fn open(path: &str, follow_symlink: bool) -> Option<(File, Metadata)> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow_symlink {
        flags |= libc::O_NOFOLLOW;
    }
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .and_then(|f| f.metadata().map(|m| (f, m)));
    match opened {
        Ok((f, m)) if m.is_file() => Some((f, m)),
        Ok(_) => {
            log::error!("ssi: stating {path} failed: not a regular file");
            None
        }
        Err(e) => {
            log::error!("ssi: stating {path} failed: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_escapes() {
        assert_eq!(fsize(1024, true), "1024 B");
        assert_eq!(fsize(1025, true), "1 kB");
        assert_eq!(fsize(5 * 1024 * 1024, true), "5 MB");
        assert_eq!(fsize(5 * 1024 * 1024, false), "5242880");
        let mut o = Vec::new();
        minimal_xml(b"a<b>&\"'`\n", &mut o);
        assert_eq!(o, b"a&#x3C;b&#x3E;&#x26;&#x22;&#x27;&#x60;&#x0A;");
    }
}

//! What a script sees of its request and changes in it, read back after
//! the run. The Lua side reaches it as the state's app data while the
//! script runs (see `prims`).
//!
//! The request is lent, not copied: [`Ctx::lend`] and its kin record
//! where each attribute and the headers are in the request being served,
//! and a read takes them from there (so a script that reads one attribute
//! pays for one, as in lighttpd, which reads them from its request when
//! asked). What a script sets is kept in the context, over the loan. A
//! run that outlives the request's turn (one that is parked) first copies
//! what is still lent ([`Ctx::detach`]).

use std::net::IpAddr;

use httparse::Header;

/// The point of the request a script runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stage {
    /// `magnet.attract-raw-url-to`.
    #[default]
    RawUrl,
    /// `magnet.attract-physical-path-to`.
    Physical,
    /// `magnet.attract-response-start-to`.
    ResponseStart,
}

/// The keys of `lighty.r.req_attr` (lighttpd 1.4.69's), in index order.
pub const ATTRS: &[&str] = &[
    "physical.path",
    "physical.rel-path",
    "physical.doc-root",
    "physical.basedir",
    "uri.path",
    "uri.path-raw",
    "uri.scheme",
    "uri.authority",
    "uri.query",
    "request.method",
    "request.uri",
    "request.orig-uri",
    "request.path-info",
    "request.remote-addr",
    "request.remote-port",
    "request.server-addr",
    "request.server-port",
    "request.protocol",
    "request.server-name",
    "request.stage",
];

/// Index of each key in [`ATTRS`].
pub mod attr {
    pub const PHYSICAL_PATH: usize = 0;
    pub const PHYSICAL_REL_PATH: usize = 1;
    pub const PHYSICAL_DOC_ROOT: usize = 2;
    pub const PHYSICAL_BASEDIR: usize = 3;
    pub const URI_PATH: usize = 4;
    pub const URI_PATH_RAW: usize = 5;
    pub const URI_SCHEME: usize = 6;
    pub const URI_AUTHORITY: usize = 7;
    pub const URI_QUERY: usize = 8;
    pub const REQUEST_METHOD: usize = 9;
    pub const REQUEST_URI: usize = 10;
    pub const REQUEST_ORIG_URI: usize = 11;
    pub const REQUEST_PATH_INFO: usize = 12;
    pub const REMOTE_ADDR: usize = 13;
    pub const REMOTE_PORT: usize = 14;
    pub const SERVER_ADDR: usize = 15;
    pub const SERVER_PORT: usize = 16;
    pub const PROTOCOL: usize = 17;
    pub const SERVER_NAME: usize = 18;
    pub const STAGE: usize = 19;
}

/// The index of a `req_attr` key (`request.remote-ip` is `remote-addr`).
pub fn attr_id(key: &[u8]) -> Option<usize> {
    if key == b"request.remote-ip" {
        return Some(attr::REMOTE_ADDR);
    }
    ATTRS.iter().position(|k| k.as_bytes() == key)
}

/// One piece of a body a script set: bytes, or (part of) a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Mem(Vec<u8>),
    File {
        path: String,
        offset: u64,
        /// `None`: to the end of the file.
        len: Option<u64>,
    },
}

/// Where the parts of the request a script has not asked for yet are:
/// the text of each lent attribute, the headers, the addresses (formatted
/// when read).
#[derive(Debug, Clone, Copy)]
struct Loan {
    /// Attribute `i`'s text, while its bit is in `Ctx::lent`.
    texts: [*const str; N_ATTRS],
    /// The request's headers (empty when not lent).
    headers: *const [Header<'static>],
    /// The client's and the server's address and port.
    ends: [(Option<IpAddr>, u16); 2],
    /// `request.server-name` of the text lent for it (the authority
    /// without its port).
    server_name: fn(&str) -> &str,
}

const N_ATTRS: usize = 20;

impl Default for Loan {
    fn default() -> Loan {
        let empty: &'static [Header<'static>] = &[];
        Loan {
            texts: ["" as *const str; N_ATTRS],
            headers: empty,
            ends: [(None, 0); 2],
            server_name: |s| s,
        }
    }
}

/// One request as a script sees it: boxed, since it goes from the
/// exchange to mod_magnet to the Lua state and back on every request
/// (moved as a pointer, not copied).
pub type Ctx = Box<CtxData>;

impl CtxData {
    /// A context for `stage`, every attribute nil.
    pub fn new(stage: Stage) -> Ctx {
        let mut c = Ctx::default();
        c.reset(stage);
        c
    }
}

/// What a [`Ctx`] holds.
#[derive(Debug, Default)]
pub struct CtxData {
    pub stage: Stage,
    /// The request's headers, in order, once copied out of the loan (see
    /// [`Ctx::headers_mut`]).
    headers: Vec<(String, Vec<u8>)>,
    /// Buffers of earlier requests' headers, for the next request's.
    spare_headers: Vec<(String, Vec<u8>)>,
    pub headers_changed: bool,
    /// `req_attr`'s values by [`ATTRS`] index, each meaningful only
    /// while its bit is in `present` (nil otherwise): the strings keep
    /// their buffers from one request to the next (see [`Ctx::reset`]).
    attrs: Vec<String>,
    /// Bit `1 << i` for each attribute that is not nil.
    present: u32,
    /// Bit `1 << i` for each attribute the script set.
    pub changed: u32,
    /// Bit `1 << i` for each attribute still in the loan (its `attrs`
    /// entry and `present` bit mean nothing then).
    lent: u32,
    /// The request's headers are in the loan, not in `headers`.
    headers_lent: bool,
    loan: Loan,
    /// The text of the client's and the server's address as read last:
    /// formatted again only when the address differs (a keep-alive
    /// client's every request).
    ip_texts: [AddrText; 2],
    /// `req_env`: the request's environment for backends.
    pub env: Vec<(String, String)>,
    pub env_changed: bool,
    /// The response's headers (at response start, those it has; before,
    /// those a script set for the answer to come).
    pub resp_headers: Vec<(String, String)>,
    pub resp_changed: bool,
    /// The response body a script set or added to.
    pub body: Vec<Part>,
    pub body_set: bool,
    /// The response body as it is when it is known (response start).
    pub body_known: Option<Vec<u8>>,
    /// The response status (0 before one is decided).
    pub status: u16,
    /// The client offers to keep the connection open.
    pub keep_alive: bool,
}

impl CtxData {
    /// Made a context for `stage` again, every attribute nil, keeping the
    /// buffers of the last request: a script on every request then costs
    /// no allocation for what it may read.
    pub fn reset(&mut self, stage: Stage) {
        self.stage = stage;
        // Header buffers go back to the spares, at most 64 of them.
        while let Some(h) = self.headers.pop() {
            if self.spare_headers.len() < 64 {
                self.spare_headers.push(h);
            }
        }
        self.headers_changed = false;
        self.attrs.resize_with(ATTRS.len(), String::new);
        self.present = 0;
        self.changed = 0;
        self.forget_loan();
        self.env.clear();
        self.env_changed = false;
        self.resp_headers.clear();
        self.resp_changed = false;
        self.body.clear();
        self.body_set = false;
        self.body_known = None;
        self.status = 0;
        self.keep_alive = false;
    }

    /// The loan ends without a copy (the request is done with).
    pub fn forget_loan(&mut self) {
        // (The addresses in `loan` are not looked at without these.)
        self.lent = 0;
        self.headers_lent = false;
    }

    /// Attribute `id` is the request's text `v`, read from there when
    /// the script asks.
    ///
    /// # Safety
    /// `v` stays where it is, unchanged, until the context is given back
    /// to mod_magnet (`Magnet::put_ctx`) or [`Ctx::detach`]ed: the caller
    /// holds the request for as long (a run that is parked detaches).
    pub unsafe fn lend(&mut self, id: usize, v: &str) {
        if let Some(t) = self.loan.texts.get_mut(id) {
            *t = v;
            self.lent |= 1 << id;
        }
    }

    /// `request.server-name` is `name_of(host)` (`host` lent as by
    /// [`Ctx::lend`], `name_of` applied when it is read).
    ///
    /// # Safety
    /// As [`Ctx::lend`].
    pub unsafe fn lend_server_name(&mut self, host: &str, name_of: fn(&str) -> &str) {
        self.loan.server_name = name_of;
        // SAFETY: as the caller's.
        unsafe { self.lend(attr::SERVER_NAME, host) };
    }

    /// The text lent for attribute `id` (not an address or a port).
    ///
    /// # Safety
    /// `id`'s bit is in `lent`.
    unsafe fn lent_text(&self, id: usize) -> &str {
        // SAFETY: lent by `lend`, whose caller keeps it while its bit is
        // set.
        let v = unsafe { &*self.loan.texts[id] };
        if id == attr::SERVER_NAME {
            (self.loan.server_name)(v)
        } else {
            v
        }
    }

    /// The request's headers, read from there when the script asks.
    ///
    /// # Safety
    /// As [`Ctx::lend`].
    pub unsafe fn lend_headers(&mut self, h: &[Header<'_>]) {
        // SAFETY: only the lifetime changes; the caller keeps `h` (and
        // what it points to) alive while it is lent.
        let h: &[Header<'static>] = unsafe { std::mem::transmute(h) };
        self.loan.headers = h;
        self.headers_lent = true;
    }

    /// The client's (`server` false) or the server's address and port:
    /// `request.remote-addr` and `-port`, or `request.server-addr` and
    /// `-port`, formatted when read.
    pub fn set_end(&mut self, server: bool, ip: Option<IpAddr>, port: u16) {
        let (addr, port_id) = if server {
            (attr::SERVER_ADDR, attr::SERVER_PORT)
        } else {
            (attr::REMOTE_ADDR, attr::REMOTE_PORT)
        };
        self.loan.ends[usize::from(server)] = (ip, port);
        self.lent |= 1 << addr | 1 << port_id;
    }

    /// The lent headers.
    fn lent_headers(&self) -> &[Header<'_>] {
        if !self.headers_lent {
            return &[];
        }
        // SAFETY: lent by `lend_headers`, whose caller keeps them alive
        // while `headers_lent` is set.
        unsafe { &*self.loan.headers }
    }

    /// Copies what is still lent: the context no longer needs the
    /// request (a run about to be parked).
    pub fn detach(&mut self) {
        for id in 0..N_ATTRS {
            self.fill(id);
        }
        self.copy_headers();
        self.forget_loan();
    }

    /// Attribute `id` copied out of the loan, when it is lent.
    fn fill(&mut self, id: usize) {
        if self.lent & (1 << id) == 0 {
            return;
        }
        self.lent &= !(1 << id);
        if !is_end(id) {
            // SAFETY: its bit was set (`attr_buf` changes `attrs`, not
            // the request the text is in).
            let v: *const str = unsafe { self.lent_text(id) };
            self.attr_buf(id).push_str(unsafe { &*v });
            return;
        }
        let e = usize::from(matches!(id, attr::SERVER_ADDR | attr::SERVER_PORT));
        let (ip, port) = self.loan.ends[e];
        if id == attr::REMOTE_PORT || id == attr::SERVER_PORT {
            let mut n = itoa::Buffer::new();
            self.attr_buf(id).push_str(n.format(port));
            return;
        }
        let last = &mut self.ip_texts[e];
        if last.0 != ip || last.1.is_empty() {
            last.1.clear();
            format_ip(&mut last.1, ip);
            last.0 = ip;
        }
        let text = std::mem::take(&mut self.ip_texts[e].1);
        self.attr_buf(id).push_str(&text);
        self.ip_texts[e].1 = text;
    }

    /// The headers copied out of the loan (into the buffers of earlier
    /// requests' where there are some), when they are lent.
    fn copy_headers(&mut self) {
        if !self.headers_lent {
            return;
        }
        // SAFETY: as `lent_headers`; `headers` is not in the loan.
        let lent: &[Header<'_>] = unsafe { &*self.loan.headers };
        for h in lent {
            match self.spare_headers.pop() {
                Some((mut k, mut v)) => {
                    k.clear();
                    k.push_str(h.name);
                    v.clear();
                    v.extend_from_slice(h.value);
                    self.headers.push((k, v));
                }
                None => self.headers.push((h.name.to_string(), h.value.to_vec())),
            }
        }
        self.headers_lent = false;
        self.loan.headers = Loan::default().headers;
    }

    /// The request's headers, in order, to change.
    pub fn headers_mut(&mut self) -> &mut Vec<(String, Vec<u8>)> {
        self.copy_headers();
        &mut self.headers
    }

    /// The request's headers, in order (name, value).
    pub fn header_fields(&self) -> impl Iterator<Item = (&str, &[u8])> {
        let lent = self.lent_headers().iter().map(|h| (h.name, h.value));
        let own = self.headers.iter().map(|(k, v)| (k.as_str(), v.as_slice()));
        lent.chain(own)
    }

    /// The attribute `id` (empty when nil).
    pub fn attr(&mut self, id: usize) -> &str {
        self.attr_opt(id).unwrap_or("")
    }

    /// The attribute `id`, `None` when nil.
    pub fn attr_opt(&mut self, id: usize) -> Option<&str> {
        if self.lent & (1 << id) != 0 {
            if !is_end(id) {
                // SAFETY: its bit is set.
                return Some(unsafe { self.lent_text(id) });
            }
            self.fill(id);
        }
        if self.present & (1 << id) == 0 {
            return None;
        }
        self.attrs.get(id).map(String::as_str)
    }

    pub fn set_attr(&mut self, id: usize, v: &str) {
        self.attr_buf(id).push_str(v);
    }

    /// Attribute `id` set to empty (not nil), for the caller to write into.
    pub fn attr_buf(&mut self, id: usize) -> &mut String {
        if id >= self.attrs.len() {
            self.attrs.resize_with(id + 1, String::new);
        }
        self.present |= 1 << id;
        self.lent &= !(1 << id);
        let a = &mut self.attrs[id];
        a.clear();
        a
    }

    /// The script set attribute `id`.
    pub fn was_changed(&self, id: usize) -> bool {
        self.changed & (1 << id) != 0
    }

    /// The first request header named `name`, with later ones of the
    /// same name joined by ", ".
    pub fn header(&self, name: &str) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        for (k, v) in self.header_fields() {
            if k.eq_ignore_ascii_case(name) {
                match out.as_mut() {
                    Some(o) => {
                        o.extend_from_slice(b", ");
                        o.extend_from_slice(v);
                    }
                    None => out = Some(v.to_vec()),
                }
            }
        }
        out
    }

    /// The response header named `name`.
    pub fn resp_header(&self, name: &str) -> Option<&str> {
        self.resp_headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An address or a port attribute (formatted when read, not lent text).
fn is_end(id: usize) -> bool {
    matches!(
        id,
        attr::REMOTE_ADDR | attr::REMOTE_PORT | attr::SERVER_ADDR | attr::SERVER_PORT
    )
}

/// An address and its text form.
pub type AddrText = (Option<IpAddr>, String);

/// `ip` in its usual text form onto `out` (nothing when there is none);
/// IPv4 without the formatting machinery.
fn format_ip(out: &mut String, ip: Option<IpAddr>) {
    use std::fmt::Write as _;
    match ip {
        Some(IpAddr::V4(v4)) => {
            let mut n = itoa::Buffer::new();
            for (i, o) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                out.push_str(n.format(o));
            }
        }
        Some(v6) => {
            let _ = write!(out, "{v6}");
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{attr, CtxData, Stage};

    #[test]
    fn server_name_without_the_port() {
        let mut c = CtxData::new(Stage::RawUrl);
        // SAFETY: a static string.
        unsafe { c.lend_server_name("example.org:8080", |h| h.split(':').next().unwrap_or(h)) };
        assert_eq!(c.attr(attr::SERVER_NAME), "example.org");
        c.detach();
        assert_eq!(c.attr_opt(attr::SERVER_NAME), Some("example.org"));
    }

    #[test]
    fn addresses_as_text() {
        // One kept text across them all: each differs from the last.
        let mut c = CtxData::new(Stage::RawUrl);
        for ip in [
            "127.0.0.1",
            "0.0.0.0",
            "255.10.0.99",
            "255.10.0.99",
            "::1",
            "2001:db8::8:1",
            "127.0.0.1",
        ] {
            c.reset(Stage::RawUrl);
            c.set_end(false, ip.parse().ok(), 80);
            assert_eq!(c.attr(attr::REMOTE_ADDR), ip);
            assert_eq!(c.attr(attr::REMOTE_PORT), "80");
        }
        c.reset(Stage::RawUrl);
        c.set_end(true, None, 8080);
        assert_eq!(c.attr(attr::SERVER_ADDR), "");
        assert_eq!(c.attr_opt(attr::SERVER_PORT), Some("8080"));
    }

    #[test]
    fn lent_then_set_then_detached() {
        let target = String::from("/a?b");
        let mut c = CtxData::new(Stage::RawUrl);
        let hs = [httparse::Header {
            name: "Host",
            value: b"x",
        }];
        // SAFETY: `target` and `hs` outlive `c`'s use below.
        unsafe {
            c.lend(attr::REQUEST_URI, &target);
            c.lend(attr::URI_QUERY, "b");
            c.lend_headers(&hs);
        }
        assert_eq!(c.attr_opt(attr::URI_PATH), None);
        assert_eq!(c.attr(attr::REQUEST_URI), "/a?b");
        c.set_attr(attr::REQUEST_URI, "/c");
        assert_eq!(c.header("host").as_deref(), Some(&b"x"[..]));
        c.detach();
        drop(target);
        assert_eq!(c.attr(attr::REQUEST_URI), "/c");
        assert_eq!(c.attr(attr::URI_QUERY), "b");
        assert_eq!(c.headers_mut().len(), 1);
        assert_eq!(c.header("HOST").as_deref(), Some(&b"x"[..]));
    }
}

//! `proxy.header` `map-urlpath`, `map-host-request`, `map-host-response`
//! and `https-remap`: rewriting URLs and hosts on the way up and back, as
//! lighttpd's `http_header_remap_*` in `src/mod_proxy.c`.
//!
//! The request side records which mapping it used (the first host mapped,
//! the first URL prefix mapped); the answer side prefers undoing exactly
//! that one, so a `Location` the upstream builds from the request it saw
//! leads the client back to the URL it asked for.

use super::options::HeaderOptions;

/// What the request's remapping leaves for its answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Remap {
    /// The client's Host (lighttpd `r->http_host`): what the key `"-"`
    /// stands for in `map-host-request`, and a value `"-"` in both maps.
    pub client_host: Option<String>,
    /// The host the request's first host mapping produced: what the key
    /// `"-"` stands for in `map-host-response`.
    pub forwarded_host: Option<String>,
    /// The index in `map-urlpath` of the prefix the request was mapped with.
    pub forwarded_urlpath: Option<usize>,
    /// `https-remap` is on and the client came over https.
    pub https_remap: bool,
}

/// A direction: the request (client to upstream) or its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Request,
    Response,
}

enum HostMatch {
    None,
    /// A match whose value says "leave the authority as is".
    Keep,
    Replace(String),
}

impl Remap {
    /// lighttpd `http_header_remap_host_match`: the first entry whose key
    /// equals `authority` (case-insensitive) decides.
    fn host_match(&mut self, h: &HeaderOptions, authority: &[u8], dir: Dir) -> HostMatch {
        let hosts = match dir {
            Dir::Request => &h.map_host_request,
            Dir::Response => &h.map_host_response,
        };
        for (k, v) in hosts {
            let key = if k == "-" {
                let stand_in = match dir {
                    Dir::Request => self.client_host.as_deref(),
                    Dir::Response => self.forwarded_host.as_deref(),
                };
                match stand_in {
                    Some(s) => s,
                    None => continue,
                }
            } else {
                k.as_str()
            };
            if !key.as_bytes().eq_ignore_ascii_case(authority) {
                continue;
            }
            if v == "-" {
                return match &self.client_host {
                    Some(c) => HostMatch::Replace(c.clone()),
                    None => HostMatch::Keep,
                };
            }
            if v.is_empty() {
                return HostMatch::Keep;
            }
            if dir == Dir::Request && self.forwarded_host.is_none() {
                self.forwarded_host = Some(v.clone());
            }
            return HostMatch::Replace(v.clone());
        }
        HostMatch::None
    }

    /// Remaps the whole of `b` as an authority (the Host header, a cookie's
    /// Domain); the length of what now stands there.
    pub fn remap_host(
        &mut self,
        h: &HeaderOptions,
        b: &mut Vec<u8>,
        off: usize,
        len: usize,
        dir: Dir,
    ) -> usize {
        match self.host_match(h, &b[off..off + len], dir) {
            HostMatch::Replace(m) => {
                b.splice(off..off + len, m.bytes());
                m.len()
            }
            HostMatch::None | HostMatch::Keep => len,
        }
    }

    /// lighttpd `http_header_remap_urlpath`: a prefix of `b[off..]` mapped
    /// by `map-urlpath` (forwards on requests, backwards on answers); the
    /// length of the replacement, 0 when nothing matched.
    pub fn remap_urlpath(
        &mut self,
        h: &HeaderOptions,
        b: &mut Vec<u8>,
        off: usize,
        dir: Dir,
    ) -> usize {
        let paths = &h.map_urlpath;
        let rest = &b[off..];
        let hit = match dir {
            Dir::Request => paths
                .iter()
                .position(|(k, _)| rest.starts_with(k.as_bytes()))
                .inspect(|&i| {
                    self.forwarded_urlpath.get_or_insert(i);
                })
                .map(|i| (paths[i].0.len(), &paths[i].1)),
            Dir::Response => self
                .forwarded_urlpath
                .and_then(|i| paths.get(i))
                .filter(|(_, v)| rest.starts_with(v.as_bytes()))
                .or_else(|| paths.iter().find(|(_, v)| rest.starts_with(v.as_bytes())))
                .map(|(k, v)| (v.len(), k)),
        };
        match hit {
            Some((old, new)) => {
                b.splice(off..off + old, new.bytes());
                new.len()
            }
            None => 0,
        }
    }

    /// lighttpd `http_header_remap_uri`: `b` is a URL, absolute
    /// (`scheme://authority/path`) or a path; its authority goes through the
    /// host map, its path through `map-urlpath`.
    pub fn remap_uri(&mut self, h: &HeaderOptions, b: &mut Vec<u8>, dir: Dir) {
        let mut off = 0;
        if b.first() != Some(&b'/') {
            let Some(colon) = b.iter().position(|&c| c == b':') else {
                return;
            };
            if !b[colon..].starts_with(b"://") {
                return;
            }
            let scheme_len = colon;
            let mut auth = colon + 3;
            let mut alen = match b[auth..].iter().position(|&c| c == b'/') {
                Some(0) => return, // "http:///": no authority
                Some(n) => n,
                None => {
                    let n = b.len() - auth;
                    if n == 0 {
                        return;
                    }
                    b.push(b'/');
                    n
                }
            };
            let m = self.host_match(h, &b[auth..auth + alen], dir);
            if let HostMatch::Replace(m) = m {
                if self.https_remap {
                    if dir == Dir::Request && scheme_len == 5 && b.starts_with(b"https") {
                        b.remove(4);
                        auth -= 1;
                    } else if dir == Dir::Response && scheme_len == 4 && b.starts_with(b"http") {
                        b.insert(4, b's');
                        auth += 1;
                    }
                }
                b.splice(auth..auth + alen, m.bytes());
                alen = m.len();
            }
            off = auth + alen;
        }
        self.remap_urlpath(h, b, off, dir);
    }

    /// lighttpd `http_header_remap_setcookie`: the `Path` and `Domain`
    /// attributes of one `Set-Cookie` value, mapped back for the client.
    pub fn remap_setcookie(&mut self, h: &HeaderOptions, b: &mut Vec<u8>) {
        let mut s = 0;
        loop {
            // The first `name=value` and every attribute up to the next ';'.
            while s < b.len() && b[s] != b';' {
                s += 1;
            }
            s += 1;
            while s < b.len() && (b[s] == b' ' || b[s] == b'\t') {
                s += 1;
            }
            if s >= b.len() {
                return;
            }
            if b[s] == b'=' {
                s += 1;
                continue;
            }
            // lighttpd looks for the '=' across ';', so a flag attribute
            // (`Secure; Path=/a`) hides the next one; glint stops at ';'.
            let Some(eq) = b[s..].iter().position(|&c| c == b'=' || c == b';') else {
                return;
            };
            if b[s + eq] == b';' {
                s += eq;
                continue;
            }
            let name = &b[s..s + eq];
            let mut e = s + eq + 1;
            if name.eq_ignore_ascii_case(b"path") {
                if b.get(e) == Some(&b'"') {
                    e += 1;
                }
                if b.get(e) == Some(&b'/') {
                    e += self.remap_urlpath(h, b, e, Dir::Response);
                }
            } else if name.eq_ignore_ascii_case(b"domain") {
                if b.get(e) == Some(&b'"') {
                    e += 1;
                }
                if b.get(e) == Some(&b'.') {
                    e += 1;
                }
                let len = b[e..]
                    .iter()
                    .position(|&c| matches!(c, b';' | b' ' | b'\t' | b'\r'))
                    .unwrap_or(b.len() - e);
                if len > 0 {
                    e += self.remap_host(h, b, e, len, Dir::Response);
                }
            }
            s = e;
        }
    }
}

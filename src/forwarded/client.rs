//! The client's address, scheme and host from a trusted forwarder's
//! headers (lighttpd `src/mod_extforward.c` `mod_extforward_uri_handler`,
//! `mod_extforward_X_Forwarded_For`, `mod_extforward_Forwarded`).
//!
//! Nothing changes unless the connecting peer is a trusted forwarder: a
//! client talking to glint directly can write any `X-Forwarded-For` it
//! likes and still be seen as the address it connects from.

use std::net::IpAddr;

use super::options::ExtForward;
use crate::syntax::trim_ows;

/// The request's scheme after a trusted `X-Forwarded-Proto` or `proto=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// What the headers changed; all `None` when nothing did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The client's address: `$HTTP["remoteip"]`, mod_access, the access
    /// log, REMOTE_ADDR. The caller keeps the connection's own address for
    /// mod_proxy's `X-Forwarded-For` (lighttpd `_L_EXTFORWARD_ACTUAL_FOR`).
    pub addr: Option<IpAddr>,
    /// A port given with the address in `Forwarded: for="[::1]:4711"`
    /// (lighttpd drops it and reports port 0).
    pub port: Option<u16>,
    pub scheme: Option<Scheme>,
    /// `Forwarded: host=` with `extforward.params` `host`: the new Host,
    /// lower-case and checked as a Host header is.
    pub host: Option<String>,
    /// `Forwarded: remote_user=` with `extforward.params` `remote_user`.
    pub remote_user: Option<String>,
}

/// Why the request gets 400 (lighttpd `mod_extforward_bad_request`): a
/// trusted forwarder's `Forwarded` header that cannot be read safely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadForwarded(pub &'static str);

/// The request's view for [`resolve`].
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The connecting peer (after the PROXY protocol, if any); `None` for
    /// a unix socket.
    pub peer: Option<IpAddr>,
    /// `"http"` or `"https"` as the connection is.
    pub scheme: &'a str,
    pub headers: &'a [(&'a str, &'a [u8])],
}

/// lighttpd's budget for `Forwarded`: a table of 256 offsets, four per
/// parameter and one per comma; a header needing more is refused rather
/// than half read.
const MAX_SLOTS: usize = 252;

/// Applies mod_extforward to one request.
pub fn resolve(cfg: &ExtForward, req: &Request) -> Result<Resolved, BadForwarded> {
    if cfg.trust.is_empty() || !cfg.trust.trusts_peer(req.peer) {
        return Ok(Resolved::default());
    }
    // The first configured header the request has; its lines joined as one
    // list, as lighttpd's request parser joins repeated fields.
    let Some((name, value)) = cfg
        .headers
        .iter()
        .find_map(|h| joined(req.headers, h).map(|v| (h, v)))
    else {
        return Ok(Resolved::default());
    };
    if name.eq_ignore_ascii_case("forwarded") {
        forwarded(cfg, req, &value)
    } else {
        Ok(x_forwarded_for(cfg, req, &value))
    }
}

fn joined(headers: &[(&str, &[u8])], name: &str) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    for (_, v) in headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)) {
        let o = out.get_or_insert_with(Vec::new);
        if !o.is_empty() {
            o.extend_from_slice(b", ");
        }
        o.extend_from_slice(v);
    }
    out
}

/// A new scheme from a forwarded `proto` (lighttpd
/// `mod_extforward_set_proto`): only `http` and `https`, case-insensitive,
/// and only when it differs.
fn proto(value: &[u8], current: &str) -> Option<Scheme> {
    if value.is_empty() || value.eq_ignore_ascii_case(current.as_bytes()) {
        return None;
    }
    if value.eq_ignore_ascii_case(b"https") {
        Some(Scheme::Https)
    } else if value.eq_ignore_ascii_case(b"http") {
        Some(Scheme::Http)
    } else {
        None
    }
}

/// lighttpd `extract_forward_array`: runs of hex digits, ':' and '.'
/// (starting with a hex digit or ':'); everything else separates.
fn tokens(v: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, &c) in v.iter().enumerate() {
        let hex_or_colon = c.is_ascii_hexdigit() || c == b':';
        match start {
            Some(s) if !hex_or_colon && c != b'.' => {
                out.push(&v[s..i]);
                start = None;
            }
            None if hex_or_colon => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(&v[s..]);
    }
    out
}

fn x_forwarded_for(cfg: &ExtForward, req: &Request, value: &[u8]) -> Resolved {
    // From the right, past the proxies glint trusts: the first one it does
    // not trust is the client (or the furthest hop it can vouch for).
    let Some(client) = tokens(value)
        .into_iter()
        .rev()
        .find(|t| !cfg.trust.trusts(t))
    else {
        return Resolved::default();
    };
    let Some(addr) = std::str::from_utf8(client)
        .ok()
        .and_then(|s| s.parse::<IpAddr>().ok())
    else {
        return Resolved::default();
    };
    // lighttpd reads X-Forwarded-Proto only beside X-Forwarded-For, and only
    // when it is one value (a list of hops' schemes is not walked).
    let scheme =
        joined(req.headers, "x-forwarded-proto").and_then(|p| proto(trim_ows(&p), req.scheme));
    Resolved {
        addr: Some(addr),
        scheme,
        ..Resolved::default()
    }
}

/// One `key=value` of a `Forwarded` element, as written (quotes kept).
type Param<'a> = (&'a [u8], &'a [u8]);

/// The index after a quoted-string starting at `i` (a `"`), or `None` when
/// it does not end (lighttpd `find_end_quoted_string`).
fn end_quoted(s: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    while i < s.len() {
        match s[i] {
            b'"' => return Some(i),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    None
}

/// The index of the first of `stops` at or after `i`, outside quotes; the
/// end of `s` when none; `None` for an unterminated quoted-string.
fn find_stop(s: &[u8], mut i: usize, stops: &[u8]) -> Option<usize> {
    while i < s.len() && !stops.contains(&s[i]) {
        if s[i] == b'"' {
            i = end_quoted(s, i)?;
        }
        i += 1;
    }
    Some(i.min(s.len()))
}

/// `Forwarded` split into elements (one per hop) of parameters, as lighttpd
/// reads it: a token without `=` and an empty key are skipped.
fn elements(s: &[u8]) -> Result<Vec<Vec<Param<'_>>>, BadForwarded> {
    let bad_quote = BadForwarded("invalid quoted-string in Forwarded header");
    let mut groups: Vec<Vec<Param>> = vec![Vec::new()];
    let mut slots = 0;
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b' ' | b'\t' | b';' => i += 1,
            b',' => {
                slots += 1;
                groups.push(Vec::new());
                i += 1;
            }
            _ => {
                let k = i;
                i = find_stop(s, i, b"=;,").ok_or(bad_quote)?;
                if i >= s.len() || s[i] != b'=' {
                    continue;
                }
                let key = &s[k..i];
                let v = i + 1;
                i = find_stop(s, v, b";,").ok_or(bad_quote)?;
                if !key.is_empty() {
                    slots += 4;
                    if let Some(g) = groups.last_mut() {
                        g.push((key, &s[v..i]));
                    }
                }
            }
        }
        if slots > MAX_SLOTS {
            return Err(BadForwarded("Too many params in Forwarded header"));
        }
    }
    Ok(groups)
}

fn last<'a>(group: &[Param<'a>], key: &str) -> Option<&'a [u8]> {
    group
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(key.as_bytes()))
        .map(|(_, v)| *v)
}

/// The value without surrounding whitespace and quotes (escapes kept),
/// and whether it was quoted.
fn unquote(v: &[u8]) -> (&[u8], bool) {
    let v = trim_ows(v);
    if v.len() > 1 && v[0] == b'"' && v[v.len() - 1] == b'"' {
        (&v[1..v.len() - 1], true)
    } else {
        (v, false)
    }
}

fn unescape(v: &[u8]) -> Result<Vec<u8>, ()> {
    let mut out = Vec::with_capacity(v.len());
    let mut it = v.iter();
    while let Some(&c) = it.next() {
        if c == b'\\' {
            out.push(*it.next().ok_or(())?);
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// A `for=` value: the node name without quotes, brackets and port, and the
/// port when one was given (lighttpd strips it from quoted values only).
fn node(v: &[u8]) -> Result<(&[u8], Option<u16>), BadForwarded> {
    let (inner, quoted) = unquote(v);
    if !quoted {
        return Ok((inner, None));
    }
    let port = |rest: &[u8]| {
        rest.strip_prefix(b":")
            .and_then(|p| std::str::from_utf8(p).ok()?.parse().ok())
    };
    if let Some(r) = inner.strip_prefix(b"[") {
        let close = r.iter().rposition(|&c| c == b']').filter(|&c| c > 0);
        let close = close.ok_or(BadForwarded("Invalid IPv6 addr in Forwarded header"))?;
        return Ok((&r[..close], port(&r[close + 1..])));
    }
    if matches!(inner.first(), Some(b'_' | b'/' | b'u')) {
        return Ok((inner, None));
    }
    match inner.iter().position(|&c| c == b':') {
        Some(c) => Ok((&inner[..c], port(&inner[c..]))),
        None => Ok((inner, None)),
    }
}

fn forwarded(cfg: &ExtForward, req: &Request, value: &[u8]) -> Result<Resolved, BadForwarded> {
    let groups = elements(value)?;
    // From the right: each element's last `for`; an element without one is
    // skipped; trust ends at the first node not trusted. The client is the
    // last real address seen (obfuscated names and "unknown" are passed
    // over, so a chain ending in one yields the hop behind it).
    let mut found: Option<(usize, &[u8], Option<u16>)> = None;
    for (gi, g) in groups.iter().enumerate().rev() {
        let Some(v) = last(g, "for") else {
            continue;
        };
        let (n, port) = node(v)?;
        if n.is_empty() {
            continue;
        }
        if !matches!(n[0], b'_' | b'/') && n != b"unknown" {
            found = Some((gi, n, port));
        }
        if !cfg.trust.trusts(n) {
            break;
        }
    }
    let Some((gi, n, port)) = found else {
        return Ok(Resolved::default());
    };
    let Some(addr) = std::str::from_utf8(n)
        .ok()
        .and_then(|s| s.parse::<IpAddr>().ok())
    else {
        return Ok(Resolved::default());
    };
    let mut out = Resolved {
        addr: Some(addr),
        port,
        ..Resolved::default()
    };
    let own = &groups[gi];
    out.scheme = last(own, "proto").and_then(|p| proto(unquote(p).0, req.scheme));
    let later = &groups[gi + 1..];
    if cfg.params.host {
        // The client's element, else the nearest hop after it that said.
        let h = last(own, "host").or_else(|| {
            later.iter().find_map(|g| {
                g.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(b"host"))
                    .map(|(_, v)| *v)
            })
        });
        if let Some(h) = h {
            let bad = BadForwarded("invalid host= value in Forwarded header");
            let (v, quoted) = unquote(h);
            let v = if quoted {
                unescape(v).map_err(|()| bad)?
            } else {
                v.to_vec()
            };
            out.host = Some(normalized_host(&v).ok_or(bad)?);
        }
    }
    if cfg.params.remote_user {
        // The hop nearest glint that authenticated the user wins.
        let u = later
            .iter()
            .rev()
            .find_map(|g| last(g, "remote_user"))
            .or_else(|| last(own, "remote_user"));
        if let Some(u) = u {
            let (v, quoted) = unquote(u);
            let v = if quoted {
                unescape(v)
                    .map_err(|()| BadForwarded("invalid remote_user= value in Forwarded header"))?
            } else {
                v.to_vec()
            };
            out.remote_user = Some(String::from_utf8_lossy(&v).into_owned());
        }
    }
    Ok(out)
}

/// A `host=` value: the check a request's own Host passes
/// ([`crate::syntax::valid_host`]), then lower-cased and without a trailing
/// dot of the name, as lighttpd normalizes it.
pub fn normalized_host(h: &[u8]) -> Option<String> {
    if !crate::syntax::valid_host(h) {
        return None;
    }
    let h = h.to_ascii_lowercase();
    let (name, port) = match h.iter().rposition(|&c| c == b':' || c == b']') {
        Some(i) if h[i] == b':' => h.split_at(i),
        _ => (&h[..], &b""[..]),
    };
    let name = name.strip_suffix(b".").unwrap_or(name);
    let mut out = String::from_utf8(name.to_vec()).ok()?;
    if port.len() > 1 {
        out.push_str(std::str::from_utf8(port).ok()?);
    }
    Some(out)
}

//! `lighty.c`: the helpers lighttpd 1.4.69 gives scripts (digests, HMAC,
//! base64, hex, URL and XML escaping, cookie and header tokens, `stat`,
//! `readdir`, time). Every one takes bad input without failing the
//! request: it answers nil (or the empty string, as lighttpd does).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use mlua::{Lua, MultiValue, Result, Table, Value};
use sha2::Digest;

use super::set_fn;
use crate::syntax::{hex_decode as hex_dec, hex_upper_string as hex_uc, hex_value};
use crate::syntax::{percent_decode_lenient, percent_encode};
use crate::syntax::{push_hex, KeptEscapes, Unescaped, HEX_LOWER, HEX_UPPER};

type Bytes = Option<mlua::LuaString>;

fn b(s: &Bytes) -> Vec<u8> {
    s.as_ref()
        .map(|s| s.as_bytes().to_vec())
        .unwrap_or_default()
}

/// A byte-string transform: nil or "" give "" / the input back.
fn put_map(lua: &Lua, t: &Table, name: &str, f: fn(&[u8]) -> Option<Vec<u8>>) -> Result<()> {
    set_fn(lua, t, name, move |lua, s: Bytes| {
        let input = b(&s);
        if input.is_empty() {
            return Ok(Some(lua.create_string("")?));
        }
        f(&input).map(|o| lua.create_string(o)).transpose()
    })
}

/// The `lighty.c` table.
pub fn table(lua: &Lua) -> Result<Table> {
    let t = lua.create_table()?;
    set_fn(lua, &t, "stat", |lua, p: Bytes| stat(lua, &b(&p)))?;
    set_fn(lua, &t, "time", |_, ()| Ok(now().as_secs() as i64))?;
    set_fn(lua, &t, "hrtime", |_, ()| {
        let n = now();
        Ok((n.as_secs() as i64, i64::from(n.subsec_nanos())))
    })?;
    set_fn(lua, &t, "rand", |_, ()| {
        let mut x = [0u8; 4];
        getrandom::fill(&mut x).map_err(|e| mlua::Error::runtime(e.to_string()))?;
        Ok(i64::from(u32::from_ne_bytes(x) >> 1))
    })?;
    set_fn(lua, &t, "md", |_, (algo, msg): (String, Bytes)| {
        Ok(md(&algo, &b(&msg)))
    })?;
    set_fn(
        lua,
        &t,
        "hmac",
        |_, (algo, key, msg): (String, Bytes, Bytes)| {
            Ok(hmac(&algo, &b(&key), &b(&msg)).map(|d| hex_uc(&d)))
        },
    )?;
    set_fn(lua, &t, "digest_eq", |_, (a, c): (Bytes, Bytes)| {
        let (a, c) = (hex_dec(&b(&a)), hex_dec(&b(&c)));
        Ok(matches!((a, c), (Some(a), Some(c)) if a.len() == c.len() && ct_eq(&a, &c)))
    })?;
    set_fn(lua, &t, "secret_eq", |_, (a, c): (Bytes, Bytes)| {
        Ok(ct_eq(&b(&a), &b(&c)))
    })?;
    put_map(lua, &t, "b64enc", |s| {
        Some(STANDARD_NO_PAD.encode(s).into_bytes())
    })?;
    put_map(lua, &t, "b64urlenc", |s| {
        Some(URL_SAFE_NO_PAD.encode(s).into_bytes())
    })?;
    put_map(lua, &t, "b64dec", |s| {
        b64dec(s, &base64::alphabet::STANDARD)
    })?;
    put_map(lua, &t, "b64urldec", |s| {
        b64dec(s, &base64::alphabet::URL_SAFE)
    })?;
    put_map(lua, &t, "hexenc", |s| Some(hex_uc(s).into_bytes()))?;
    put_map(lua, &t, "hexdec", hex_dec)?;
    put_map(lua, &t, "xmlenc", |s| Some(xmlenc(s)))?;
    put_map(lua, &t, "urlenc", |s| Some(urlenc(s)))?;
    put_map(lua, &t, "urldec", |s| Some(urldec(s, false)))?;
    put_map(lua, &t, "urlenc_normalize", |s| Some(normalize(s)))?;
    put_map(lua, &t, "fspath_simplify", |s| Some(simplify(s)))?;
    put_map(lua, &t, "quotedenc", |s| Some(quotedenc(s)))?;
    put_map(lua, &t, "quoteddec", quoteddec)?;
    put_map(lua, &t, "bsenc", |s| Some(bsenc(s, false)))?;
    put_map(lua, &t, "bsenc_json", |s| Some(bsenc(s, true)))?;
    put_map(lua, &t, "bsdec", |s| Some(bsdec(s)))?;
    set_fn(lua, &t, "urldec_query", |lua, s: Bytes| {
        urldec_query(lua, &b(&s))
    })?;
    set_fn(lua, &t, "urlenc_query", |_, t: Value| urlenc_query(t))?;
    set_fn(lua, &t, "cookie_tokens", |lua, s: Bytes| {
        cookie_tokens(lua, &b(&s))
    })?;
    set_fn(lua, &t, "header_tokens", |lua, s: Bytes| {
        header_tokens(lua, &b(&s))
    })?;
    set_fn(lua, &t, "readdir", |lua, p: String| readdir(lua, &p))?;
    Ok(t)
}

fn now() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn ct_eq(a: &[u8], c: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == c.len() && bool::from(a.ct_eq(c))
}

fn digest<D: Digest>(msg: &[u8]) -> Vec<u8> {
    D::digest(msg).to_vec()
}

fn md(algo: &str, msg: &[u8]) -> Option<String> {
    let d = match algo {
        "md5" => digest::<md5::Md5>(msg),
        "sha1" => digest::<sha1::Sha1>(msg),
        "sha256" => digest::<sha2::Sha256>(msg),
        "sha512" => digest::<sha2::Sha512>(msg),
        _ => return None,
    };
    Some(hex_uc(&d))
}

type DigestFn = fn(&[u8]) -> Vec<u8>;

/// RFC 2104 HMAC over one of the digests (block of 64 bytes, 128 for SHA-512).
fn hmac(algo: &str, key: &[u8], msg: &[u8]) -> Option<Vec<u8>> {
    let (f, block): (DigestFn, usize) = match algo {
        "md5" => (digest::<md5::Md5>, 64),
        "sha1" => (digest::<sha1::Sha1>, 64),
        "sha256" => (digest::<sha2::Sha256>, 64),
        "sha512" => (digest::<sha2::Sha512>, 128),
        _ => return None,
    };
    let mut k = if key.len() > block {
        f(key)
    } else {
        key.to_vec()
    };
    k.resize(block, 0);
    let pad = |x: u8| k.iter().map(|b| b ^ x).collect::<Vec<u8>>();
    let inner = f(&[pad(0x36), msg.to_vec()].concat());
    Some(f(&[pad(0x5c), inner].concat()))
}

fn b64dec(s: &[u8], alphabet: &base64::alphabet::Alphabet) -> Option<Vec<u8>> {
    let config = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    GeneralPurpose::new(alphabet, config).decode(s).ok()
}

/// lighttpd's minimal XML escaping: `"&'<>`, backquote, controls and DEL
/// as `&#xHH;`.
fn xmlenc(s: &[u8]) -> Vec<u8> {
    let mut o = Vec::with_capacity(s.len());
    for &c in s {
        if c < 0x20 || c == 0x7f || b"\"&'<>`".contains(&c) {
            o.extend_from_slice(b"&#x");
            push_hex(&mut o, &[c], HEX_UPPER);
            o.push(b';');
        } else {
            o.push(c);
        }
    }
    o
}

/// A path's escaping: unreserved and `/` as they are.
const PATH: Unescaped = Unescaped::new(b"/", KeptEscapes::None);

fn urlenc(s: &[u8]) -> Vec<u8> {
    let mut o = Vec::with_capacity(s.len());
    percent_encode(s, &PATH, &mut o);
    o
}

/// Percent-decoding as lighttpd's path decoding: a bad escape stays as
/// it is, control characters become `_`; `plus`: `+` is a space (an
/// encoded `%2B` stays a plus).
fn urldec(s: &[u8], plus: bool) -> Vec<u8> {
    let mut o = Vec::with_capacity(s.len());
    if plus && s.contains(&b'+') {
        let spaced: Vec<u8> = s
            .iter()
            .map(|&c| if c == b'+' { b' ' } else { c })
            .collect();
        percent_decode_lenient(&spaced, &mut o);
    } else {
        percent_decode_lenient(s, &mut o);
    }
    for c in &mut o {
        if *c < 0x20 || *c == 0x7f {
            *c = b'_';
        }
    }
    o
}

/// Escapes normalised: unreserved characters decoded, the rest upper-case
/// `%XX`, dot segments removed from the path.
fn normalize(s: &[u8]) -> Vec<u8> {
    let (path, query) = match s.iter().position(|&c| c == b'?') {
        Some(q) => (&s[..q], Some(&s[q..])),
        None => (s, None),
    };
    let keep = Unescaped::new(b"/!$&'()*+,;=:@", KeptEscapes::None);
    let mut decoded = Vec::new();
    let _ = crate::syntax::percent_decode(path, &mut decoded, |d| !keep.contains(d) || d == b'/');
    let mut o = Vec::new();
    percent_encode(
        &simplify(&decoded),
        &Unescaped::new(b"/!$&'()*+,;=:@", KeptEscapes::All),
        &mut o,
    );
    if let Some(q) = query {
        o.extend_from_slice(q);
    }
    o
}

/// `.` and `..` segments and doubled slashes removed.
fn simplify(s: &[u8]) -> Vec<u8> {
    let abs = s.first() == Some(&b'/');
    let mut segs: Vec<&[u8]> = Vec::new();
    for seg in s.split(|&c| c == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => {
                segs.pop();
            }
            seg => segs.push(seg),
        }
    }
    let mut o = if abs { b"/".to_vec() } else { Vec::new() };
    o.extend_from_slice(&segs.join(&b'/'));
    if s.len() > 1
        && (s.ends_with(b"/") || s.ends_with(b"/.") || s.ends_with(b"/.."))
        && !segs.is_empty()
    {
        o.push(b'/');
    }
    o
}

fn quotedenc(s: &[u8]) -> Vec<u8> {
    let mut o = vec![b'"'];
    for &c in s {
        if c == b'"' || c == b'\\' {
            o.push(b'\\');
        }
        o.push(c);
    }
    o.push(b'"');
    o
}

fn quoteddec(s: &[u8]) -> Option<Vec<u8>> {
    if s[0] != b'"' {
        return Some(s.to_vec());
    }
    let mut o = Vec::new();
    let mut i = 1;
    while i < s.len() && s[i] != b'"' {
        if s[i] == b'\\' {
            if i + 2 >= s.len() {
                break;
            }
            i += 1;
        }
        o.push(s[i]);
        i += 1;
    }
    (i == s.len() - 1 && s[i] == b'"').then_some(o)
}

fn bsenc(s: &[u8], json: bool) -> Vec<u8> {
    let mut o = Vec::with_capacity(s.len());
    for &c in s {
        match c {
            b'"' | b'\\' => o.extend_from_slice(&[b'\\', c]),
            b'\n' => o.extend_from_slice(b"\\n"),
            b'\r' => o.extend_from_slice(b"\\r"),
            b'\t' => o.extend_from_slice(b"\\t"),
            c if c < 0x20 || c == 0x7f || (!json && c >= 0x80) => {
                let prefix: &[u8] = if json { b"\\u00" } else { b"\\x" };
                o.extend_from_slice(prefix);
                push_hex(&mut o, &[c], HEX_LOWER);
            }
            c => o.push(c),
        }
    }
    o
}

fn bsdec(s: &[u8]) -> Vec<u8> {
    let s = match s {
        [b'"', inner @ .., b'"'] => inner,
        s => s,
    };
    let mut o = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' || i + 1 == s.len() {
            o.push(s[i]);
            i += 1;
            continue;
        }
        let c = s[i + 1];
        i += 2;
        let hex = |at: usize, n: usize| -> Option<u32> {
            let d = s.get(at..at + n)?;
            d.iter()
                .try_fold(0u32, |a, &h| Some(a << 4 | u32::from(hex_value(h)?)))
        };
        match c {
            b'n' => o.push(b'\n'),
            b'r' => o.push(b'\r'),
            b't' => o.push(b'\t'),
            b'a' => o.push(7),
            b'b' => o.push(8),
            b'v' => o.push(11),
            b'f' => o.push(12),
            b'x' => match hex(i, 2) {
                Some(v) => {
                    o.push(v as u8);
                    i += 2;
                }
                None => o.push(b'x'),
            },
            b'u' => match hex(i, 4).and_then(char::from_u32) {
                Some(ch) => {
                    o.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                    i += 4;
                }
                None => o.push(b'u'),
            },
            b'0' => o.push(0),
            c => o.push(c),
        }
    }
    o
}

fn urldec_query(lua: &Lua, s: &[u8]) -> Result<Table> {
    let t = lua.create_table()?;
    for part in s.split(|&c| c == b'&').filter(|p| !p.is_empty()) {
        let (k, v) = match part.iter().position(|&c| c == b'=') {
            Some(e) => (&part[..e], &part[e + 1..]),
            None => (part, &b""[..]),
        };
        t.raw_set(
            lua.create_string(urldec(k, true))?,
            lua.create_string(urldec(v, true))?,
        )?;
    }
    Ok(t)
}

/// A query's key: unreserved and `!$()*,/:?@` as they are.
const QUERY_KEY: Unescaped = Unescaped::new(b"!$()*,/:?@", KeptEscapes::None);
/// A query's value: as a key, and `=`.
const QUERY_VALUE: Unescaped = Unescaped::new(b"!$()*,/:?@=", KeptEscapes::None);

/// `s` encoded as a query's key or value, a space as `+`.
fn query_part(s: &[u8], key: bool, o: &mut Vec<u8>) {
    let set = if key { &QUERY_KEY } else { &QUERY_VALUE };
    for (i, run) in s.split(|&c| c == b' ').enumerate() {
        if i > 0 {
            o.push(b'+');
        }
        percent_encode(run, set, o);
    }
}

fn urlenc_query(t: Value) -> Result<mlua::BString> {
    let Value::Table(t) = t else {
        return Ok(Vec::new().into());
    };
    let mut o = Vec::new();
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair?;
        let key = match &k {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Integer(i) => i.to_string().into_bytes(),
            _ => continue,
        };
        if !o.is_empty() {
            o.push(b'&');
        }
        query_part(&key, true, &mut o);
        match &v {
            Value::String(s) => {
                o.push(b'=');
                query_part(&s.as_bytes(), false, &mut o);
            }
            Value::Integer(i) => {
                o.push(b'=');
                query_part(i.to_string().as_bytes(), false, &mut o);
            }
            _ => {}
        }
    }
    Ok(o.into())
}

/// A quoted-string from `s[at] == '"'`: its bytes as they are (closed
/// with `"` when the input ended first) and where it ends.
fn quoted(s: &[u8], at: usize) -> (Vec<u8>, usize) {
    let mut i = at + 1;
    while i < s.len() && s[i] != b'"' {
        if s[i] == b'\\' && i + 1 < s.len() {
            i += 1;
        }
        i += 1;
    }
    if i < s.len() {
        (s[at..=i].to_vec(), i + 1)
    } else {
        ([&s[at..], b"\""].concat(), i)
    }
}

fn cookie_tokens(lua: &Lua, s: &[u8]) -> Result<Table> {
    let t = lua.create_table()?;
    let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let mut i = 0;
    while i < s.len() {
        while i < s.len() && (s[i] == b';' || ws(s[i])) {
            i += 1;
        }
        if i == s.len() {
            break;
        }
        let start = i;
        while i < s.len() && !matches!(s[i], b'=' | b';') && !ws(s[i]) {
            i += 1;
        }
        let name = &s[start..i];
        while i < s.len() && ws(s[i]) {
            i += 1;
        }
        let mut value = Vec::new();
        if i < s.len() && s[i] == b'=' {
            i += 1;
            while i < s.len() && ws(s[i]) {
                i += 1;
            }
            if i < s.len() && s[i] == b'"' {
                (value, i) = quoted(s, i);
            } else {
                let vs = i;
                while i < s.len() && s[i] != b';' && !ws(s[i]) {
                    i += 1;
                }
                value = s[vs..i].to_vec();
            }
        }
        t.raw_set(lua.create_string(name)?, lua.create_string(value)?)?;
        while i < s.len() && s[i] != b';' {
            i += 1;
        }
    }
    Ok(t)
}

fn header_tokens(lua: &Lua, s: &[u8]) -> Result<Table> {
    let t = lua.create_table()?;
    let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let (mut i, mut n) = (0, 0);
    loop {
        while i < s.len() && ws(s[i]) {
            i += 1;
        }
        if i == s.len() {
            break;
        }
        let tok = match s[i] {
            b',' | b';' | b'=' => {
                i += 1;
                s[i - 1..i].to_vec()
            }
            b'"' => {
                let (q, end) = quoted(s, i);
                i = end;
                q
            }
            _ => {
                let st = i;
                while i < s.len() && !ws(s[i]) && !matches!(s[i], b',' | b';' | b'=') {
                    i += 1;
                }
                s[st..i].to_vec()
            }
        };
        n += 1;
        t.raw_set(n, lua.create_string(tok)?)?;
    }
    Ok(t)
}

/// An iterator over a directory's entry names (`.` and `..` left out);
/// nil when it cannot be read.
fn readdir(lua: &Lua, path: &str) -> Result<Option<mlua::Function>> {
    let Ok(dir) = std::fs::read_dir(path) else {
        return Ok(None);
    };
    let mut names: Vec<Vec<u8>> = dir
        .filter_map(|e| e.ok())
        .map(|e| std::os::unix::ffi::OsStrExt::as_bytes(e.file_name().as_os_str()).to_vec())
        .collect();
    names.reverse();
    let f = lua.create_function_mut(move |lua, _: MultiValue| {
        names.pop().map(|n| lua.create_string(n)).transpose()
    })?;
    Ok(Some(f))
}

/// A file's attributes as lighty.c.stat gives them; nil when it does not exist.
fn stat(lua: &Lua, path: &[u8]) -> Result<Option<Table>> {
    if path.is_empty() {
        return Ok(None);
    }
    let p = std::path::Path::new(std::ffi::OsStr::from_bytes_compat(path));
    let Ok(m) = std::fs::metadata(p) else {
        return Ok(None);
    };
    let ft = m.file_type();
    let link = std::fs::symlink_metadata(p).is_ok_and(|l| l.file_type().is_symlink());
    use std::os::unix::fs::FileTypeExt;
    let t = lua.create_table()?;
    t.raw_set("is_file", ft.is_file())?;
    t.raw_set("is_dir", ft.is_dir())?;
    t.raw_set("is_char", ft.is_char_device())?;
    t.raw_set("is_block", ft.is_block_device())?;
    t.raw_set("is_socket", ft.is_socket())?;
    t.raw_set("is_link", link)?;
    t.raw_set("is_fifo", ft.is_fifo())?;
    t.raw_set("st_mtime", m.mtime())?;
    t.raw_set("st_ctime", m.ctime())?;
    t.raw_set("st_atime", m.atime())?;
    t.raw_set("st_uid", i64::from(m.uid()))?;
    t.raw_set("st_gid", i64::from(m.gid()))?;
    t.raw_set("st_size", m.size() as i64)?;
    t.raw_set("st_ino", m.ino() as i64)?;
    t.raw_set("st_mode", i64::from(m.permissions().mode()))?;
    let name = String::from_utf8_lossy(path);
    let ct = mime_guess::from_path(&*name)
        .first()
        .map(|m| m.essence_str().to_string());
    t.raw_set("content-type", ct)?;
    Ok(Some(t))
}

/// Bytes as an `OsStr` (file names are bytes on unix).
trait FromBytesCompat {
    fn from_bytes_compat(b: &[u8]) -> &Self;
}

impl FromBytesCompat for std::ffi::OsStr {
    fn from_bytes_compat(b: &[u8]) -> &Self {
        std::os::unix::ffi::OsStrExt::from_bytes(b)
    }
}

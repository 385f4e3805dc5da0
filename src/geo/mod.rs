//! mod_maxminddb's database and lookups: a MaxMind DB file (`.mmdb`)
//! memory-mapped once when the configuration is loaded (the `maxminddb`
//! crate), and a client's address turned into environment variables by
//! `maxminddb.env`'s names and record paths, with lighttpd 1.4.69's
//! formatting of every MaxMind DB type.
//!
//! A path is walked as libmaxminddb's `MMDB_aget_value` walks it: a map
//! by key, an array by a decimal index (negative counts from the end, as
//! `strtol` reads it); a path that ends on a map or an array, or runs into
//! a value before its end, sets nothing.

mod node;

use std::net::IpAddr;

use maxminddb::{Mmap, Reader};

use node::{Leaf, Node};

/// An open MaxMind DB file.
pub struct GeoDb {
    /// The file as named in `maxminddb.db`.
    pub path: String,
    reader: Reader<Mmap>,
}

impl std::fmt::Debug for GeoDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeoDb").field("path", &self.path).finish()
    }
}

/// Two settings with the same file open share one database.
impl PartialEq for GeoDb {
    fn eq(&self, o: &GeoDb) -> bool {
        self.path == o.path
    }
}

impl GeoDb {
    /// Opens and maps `path`, checking its metadata and search tree. As
    /// lighttpd, only a name ending in `.mmdb` is taken.
    pub fn open(path: &str) -> Result<GeoDb, String> {
        if !path.ends_with(".mmdb") {
            return Err(format!("GeoIP database is of unsupported type {path}"));
        }
        // SAFETY: the map is read-only and lives as long as the reader. A
        // file truncated in place while mapped would fault a read; a
        // database is replaced by renaming a new file over it (what
        // geoipupdate does), which leaves this mapping whole, and glint
        // maps the new file at the next reload (docs/mod_maxminddb.md).
        let reader = unsafe { Reader::open_mmap(path) }
            .map_err(|e| format!("failed to open GeoIP2 database ({path}): {e}"))?;
        Ok(GeoDb {
            path: path.to_string(),
            reader,
        })
    }

    /// The variables `vars` names for `addr`: each one the address's
    /// record has a value for, in `vars`' order. Nothing for an address
    /// the database does not hold, or a record that cannot be read
    /// (logged).
    pub fn lookup(&self, addr: IpAddr, vars: &[GeoVar]) -> Vec<GeoValue> {
        let found = match self.reader.lookup(addr) {
            Ok(found) => found,
            // (An IPv6 client against an IPv4-only database, as libmaxminddb.)
            Err(_) => return Vec::new(),
        };
        let record = match found.decode::<Node<'_>>() {
            Ok(Some(record)) => record,
            Ok(None) => return Vec::new(),
            Err(e) => {
                log::warn!("(mod_maxminddb) {}: record of {addr}: {e}", self.path);
                return Vec::new();
            }
        };
        vars.iter()
            .filter(|v| !v.cgi_name.is_empty())
            .filter_map(|v| {
                let leaf = record.at(&v.path)?;
                Some(GeoValue {
                    name: v.name.clone(),
                    cgi_name: v.cgi_name.clone(),
                    value: format(leaf),
                })
            })
            .collect()
    }
}

/// One variable found for a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeoValue {
    /// As `maxminddb.env` names it (mod_magnet's `req_env` key).
    pub name: String,
    /// As a backend's environment names it.
    pub cgi_name: String,
    pub value: Vec<u8>,
}

/// One entry of `maxminddb.env`: the variable's name, as written and as
/// a backend's environment has it (upper case, every byte but letters and
/// digits as `_`, as lighttpd writes it there), and the path of its value
/// in the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeoVar {
    pub name: String,
    pub cgi_name: String,
    pub path: Vec<String>,
}

impl GeoVar {
    /// `name => "a/b/c"`. The path must not be empty, nor begin or end
    /// with `/` (lighttpd's check).
    pub fn parse(name: &str, path: &str) -> Result<GeoVar, String> {
        if path.is_empty() || path.starts_with('/') || path.ends_with('/') {
            return Err("maxminddb.env must be a list of non-empty strings \
                        and must not begin or end with '/'"
                .to_string());
        }
        Ok(GeoVar {
            name: name.to_string(),
            cgi_name: cgi_name(name),
            path: path.split('/').map(str::to_string).collect(),
        })
    }
}

/// `name` as lighttpd writes an environment variable's name for a
/// backend: letters upper-cased, digits kept, anything else `_`.
pub fn cgi_name(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'a'..=b'z' => (b - 32) as char,
            b'A'..=b'Z' | b'0'..=b'9' => b as char,
            _ => '_',
        })
        .collect()
}

/// A value as lighttpd 1.4.69 writes it: strings and bytes as they are
/// (up to a NUL, which no environment can hold), booleans `1`/`0`,
/// integers in decimal, floats with five decimals (`%.5f`), a uint128 as
/// `0x` and the hex of its 16 bytes in memory order (little-endian).
fn format(leaf: &Leaf<'_>) -> Vec<u8> {
    let upto_nul = |b: &[u8]| b.split(|&c| c == 0).next().unwrap_or_default().to_vec();
    match leaf {
        Leaf::Str(s) => upto_nul(s.as_bytes()),
        Leaf::Bytes(b) => upto_nul(b),
        Leaf::Bool(b) => vec![if *b { b'1' } else { b'0' }],
        Leaf::Int(i) => i.to_string().into_bytes(),
        Leaf::UInt(u) => u.to_string().into_bytes(),
        Leaf::Float(f) if f.is_nan() => {
            if f.is_sign_negative() {
                b"-nan".to_vec()
            } else {
                b"nan".to_vec()
            }
        }
        Leaf::Float(f) => format!("{f:.5}").into_bytes(),
        Leaf::U128(u) => {
            let mut s = String::with_capacity(34);
            s.push_str("0x");
            crate::syntax::push_hex(&mut s, &u.to_le_bytes(), crate::syntax::HEX_UPPER);
            s.into_bytes()
        }
    }
}

#[cfg(test)]
mod tests;

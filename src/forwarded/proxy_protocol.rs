//! HAProxy's PROXY protocol, versions 1 and 2, over the first bytes of a
//! connection (`extforward.hap-PROXY`; lighttpd `src/mod_extforward.c`
//! `hap_PROXY_recv`, `mod_extforward_hap_PROXY_v1`, `_v2`; the
//! specification is HAProxy's `doc/proxy-protocol.txt`).
//!
//! Only a trusted forwarder's connection is read this way, and then the
//! header is required (the specification forbids guessing whether it is
//! there). lighttpd peeks once and gives up on a partial header; glint
//! asks for more bytes instead (the caller bounds the wait: the
//! specification suggests at least 3 s to cover a TCP retransmit).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A version 1 line, CRLF included, is at most 107 bytes (specification 2.1).
pub const V1_MAX: usize = 107;

/// The longest version 2 header accepted, its 16 fixed bytes included.
/// lighttpd reads at most 256 bytes (`union hap_PROXY_hdr`), too few for a
/// unix address block (216) with TLVs or for HAProxy's TLS details with a
/// 128-byte unique ID; 2 KiB is what lighttpd's comment there intends.
pub const V2_MAX: usize = 2048;

const V2_SIG: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";

/// The connection's endpoints as the header gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoints {
    /// Keep the connection's own addresses: v1 `UNKNOWN`, v2 `LOCAL` (the
    /// forwarder's health checks), or a v2 family or transport glint does
    /// not take over (AF_UNSPEC, UDP), as lighttpd keeps them.
    Keep,
    Tcp {
        src: SocketAddr,
        dst: SocketAddr,
    },
    /// AF_UNIX stream: the source and destination paths.
    Unix {
        src: Vec<u8>,
        dst: Vec<u8>,
    },
}

/// `PP2_TYPE_SSL`: the client's TLS connection to the forwarder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ssl {
    /// `PP2_CLIENT_SSL`: the client used TLS; the request's scheme is https.
    pub client_ssl: bool,
    /// `PP2_CLIENT_CERT_CONN` / `PP2_CLIENT_CERT_SESS`: a client
    /// certificate on this connection / in this TLS session.
    pub cert_conn: bool,
    pub cert_sess: bool,
    /// 0 when the client certificate was verified.
    pub verify: u32,
    /// Sub-TLVs: SSL_PROTOCOL, SSL_CLIENT_S_DN_CN, SSL_CIPHER,
    /// SSL_SERVER_A_SIG, SSL_SERVER_A_KEY in lighttpd's environment.
    pub version: Option<Vec<u8>>,
    pub cn: Option<Vec<u8>>,
    pub cipher: Option<Vec<u8>>,
    pub sig_alg: Option<Vec<u8>>,
    pub key_alg: Option<Vec<u8>>,
}

impl Ssl {
    /// A client certificate was presented and verified (lighttpd's
    /// `ssl_client_verify`).
    pub fn client_verified(&self) -> bool {
        (self.cert_conn || self.cert_sess) && self.verify == 0
    }
}

/// A parsed header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    /// Bytes of the header: the connection's data starts after them.
    pub len: usize,
    pub endpoints: Endpoints,
    /// `PP2_TYPE_ALPN`, `PP2_TYPE_AUTHORITY` (the TLS SNI), `PP2_TYPE_UNIQUE_ID`.
    pub alpn: Option<Vec<u8>>,
    pub authority: Option<String>,
    pub unique_id: Option<Vec<u8>>,
    pub ssl: Option<Ssl>,
}

impl Header {
    fn keep(version: u8, len: usize) -> Header {
        Header {
            version,
            len,
            endpoints: Endpoints::Keep,
            alpn: None,
            authority: None,
            unique_id: None,
            ssl: None,
        }
    }

    /// The environment lighttpd sets for every request on the connection
    /// (`mod_extforward_handle_request_env`); with `ssl_client_verify`
    /// (`extforward.hap-PROXY-ssl-client-verify`) also SSL_CLIENT_VERIFY and,
    /// for a verified certificate, REMOTE_USER and AUTH_TYPE.
    pub fn env(&self, ssl_client_verify: bool) -> Vec<(&'static str, Vec<u8>)> {
        let mut env = Vec::new();
        let ssl = self.ssl.as_ref();
        if let Some(s) = ssl {
            for (k, v) in [
                ("SSL_PROTOCOL", &s.version),
                ("SSL_CLIENT_S_DN_CN", &s.cn),
                ("SSL_CIPHER", &s.cipher),
                ("SSL_SERVER_A_SIG", &s.sig_alg),
                ("SSL_SERVER_A_KEY", &s.key_alg),
            ] {
                if let Some(v) = v {
                    env.push((k, v.clone()));
                }
            }
        }
        if let Some(u) = &self.unique_id {
            env.push(("PP2_UNIQUE_ID", u.clone()));
        }
        if ssl_client_verify {
            match ssl
                .filter(|s| s.client_verified())
                .and_then(|s| s.cn.clone())
            {
                Some(cn) => {
                    env.push(("SSL_CLIENT_VERIFY", b"SUCCESS".to_vec()));
                    env.push(("REMOTE_USER", cn));
                    env.push(("AUTH_TYPE", b"SSL_CLIENT_VERIFY".to_vec()));
                }
                None => env.push(("SSL_CLIENT_VERIFY", b"NONE".to_vec())),
            }
        }
        env
    }

    /// The client came over TLS (the request's scheme becomes https).
    pub fn client_tls(&self) -> bool {
        self.ssl.as_ref().is_some_and(|s| s.client_ssl)
    }
}

/// A header that is not the PROXY protocol or breaks it: close the
/// connection (specification 2.1: "must be discarded and cause the
/// receiver to abort the connection").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyError(pub &'static str);

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PROXY protocol: {}", self.0)
    }
}

impl std::error::Error for ProxyError {}

/// Parses the PROXY header at the start of `buf`: `Ok(None)` when more
/// bytes are needed.
pub fn parse(buf: &[u8]) -> Result<Option<Header>, ProxyError> {
    let n = buf.len().min(V2_SIG.len());
    if buf[..n] == V2_SIG[..n] {
        return if buf.len() < 16 { Ok(None) } else { v2(buf) };
    }
    let n = buf.len().min(5);
    if buf[..n] == b"PROXY"[..n] {
        return if buf.len() < 5 { Ok(None) } else { v1(buf) };
    }
    Err(ProxyError("not a PROXY protocol header"))
}

fn v1(buf: &[u8]) -> Result<Option<Header>, ProxyError> {
    let scan = &buf[..buf.len().min(V1_MAX)];
    // The line must end in CRLF; a lone CR or LF is not an end (2.1).
    let Some(cr) = scan.iter().position(|&c| c == b'\r' || c == b'\n') else {
        return if buf.len() >= V1_MAX {
            Err(ProxyError("v1 line longer than 107 bytes"))
        } else {
            Ok(None)
        };
    };
    if scan[cr] == b'\n' {
        return Err(ProxyError("v1 line ends in LF without CR"));
    }
    match scan.get(cr + 1) {
        None if buf.len() >= V1_MAX => return Err(ProxyError("v1 line longer than 107 bytes")),
        None => return Ok(None),
        Some(b'\n') => {}
        Some(_) => return Err(ProxyError("v1 line has CR without LF")),
    }
    let line = &scan[..cr];
    let mut h = Header::keep(1, cr + 2);
    let Some(rest) = line.strip_prefix(b"PROXY ") else {
        return Err(ProxyError("v1 line does not start with \"PROXY \""));
    };
    if rest == b"UNKNOWN" || rest.starts_with(b"UNKNOWN ") {
        // The rest of an UNKNOWN line is ignored (2.1).
        return Ok(Some(h));
    }
    let (v6, rest) = match (rest.strip_prefix(b"TCP4 "), rest.strip_prefix(b"TCP6 ")) {
        (Some(r), _) => (false, r),
        (_, Some(r)) => (true, r),
        _ => return Err(ProxyError("v1 protocol is not TCP4, TCP6 or UNKNOWN")),
    };
    let parts: Vec<&[u8]> = rest.split(|&c| c == b' ').collect();
    let [src, dst, sport, dport] = parts[..] else {
        return Err(ProxyError(
            "v1 line needs exactly four fields after the protocol",
        ));
    };
    let ip = |b: &[u8]| -> Result<IpAddr, ProxyError> {
        let s = std::str::from_utf8(b).map_err(|_| ProxyError("v1 address is not text"))?;
        let a = if v6 {
            s.parse::<Ipv6Addr>().map(IpAddr::V6)
        } else {
            s.parse::<Ipv4Addr>().map(IpAddr::V4)
        };
        a.map_err(|_| ProxyError("v1 address does not match its family"))
    };
    let src = SocketAddr::new(ip(src)?, port(sport)?);
    let dst = SocketAddr::new(ip(dst)?, port(dport)?);
    h.endpoints = Endpoints::Tcp { src, dst };
    Ok(Some(h))
}

/// A v1 port: 0 to 65535 in decimal, without leading zeros (2.1).
fn port(b: &[u8]) -> Result<u16, ProxyError> {
    let e = ProxyError("v1 port is not a number from 0 to 65535");
    if b.is_empty()
        || b.len() > 5
        || !b.iter().all(u8::is_ascii_digit)
        || (b.len() > 1 && b[0] == b'0')
    {
        return Err(e);
    }
    let n = b.iter().fold(0u32, |a, &d| a * 10 + u32::from(d - b'0'));
    u16::try_from(n).map_err(|_| e)
}

fn v2(buf: &[u8]) -> Result<Option<Header>, ProxyError> {
    let ver_cmd = buf[12];
    if ver_cmd >> 4 != 2 {
        return Err(ProxyError("v2 version is not 2"));
    }
    let local = match ver_cmd & 0x0f {
        0 => true,
        1 => false,
        _ => return Err(ProxyError("v2 command is neither LOCAL nor PROXY")),
    };
    let fam = buf[13];
    // Family and transport pairs of 2.2; others must be rejected.
    let addr_len = match fam {
        0x00 => 0,
        0x11 | 0x12 => 12,
        0x21 | 0x22 => 36,
        0x31 | 0x32 => 216,
        _ => return Err(ProxyError("v2 address family or transport is not defined")),
    };
    let len = 16 + usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    if len > V2_MAX {
        return Err(ProxyError("v2 header longer than glint accepts"));
    }
    if buf.len() < len {
        return Ok(None);
    }
    let block = &buf[16..len];
    let mut h = Header::keep(2, len);
    // LOCAL: the real endpoints, the block skipped unread (2.2).
    if local {
        return Ok(Some(h));
    }
    if block.len() < addr_len {
        return Err(ProxyError("v2 address block shorter than its family needs"));
    }
    let a = &block[..addr_len];
    let be16 = |i: usize| u16::from_be_bytes([a[i], a[i + 1]]);
    h.endpoints = match fam {
        0x11 => {
            let ip = |i: usize| IpAddr::V4(Ipv4Addr::new(a[i], a[i + 1], a[i + 2], a[i + 3]));
            Endpoints::Tcp {
                src: SocketAddr::new(ip(0), be16(8)),
                dst: SocketAddr::new(ip(4), be16(10)),
            }
        }
        0x21 => {
            let ip = |i: usize| {
                let mut o = [0u8; 16];
                o.copy_from_slice(&a[i..i + 16]);
                IpAddr::V6(Ipv6Addr::from(o))
            };
            Endpoints::Tcp {
                src: SocketAddr::new(ip(0), be16(32)),
                dst: SocketAddr::new(ip(16), be16(34)),
            }
        }
        0x31 => {
            let path = |p: &[u8]| -> Result<Vec<u8>, ProxyError> {
                let end = p
                    .iter()
                    .position(|&c| c == 0)
                    .ok_or(ProxyError("v2 unix path without NUL"))?;
                Ok(p[..end].to_vec())
            };
            Endpoints::Unix {
                src: path(&a[..108])?,
                dst: path(&a[108..])?,
            }
        }
        _ => return Ok(Some(h)),
    };
    tlvs(buf, len, 16 + addr_len, &mut h)?;
    Ok(Some(h))
}

/// Calls `f(type, offset of the value in b, value)` for each TLV in `b`.
fn each_tlv(
    b: &[u8],
    mut f: impl FnMut(u8, usize, &[u8]) -> Result<(), ProxyError>,
) -> Result<(), ProxyError> {
    let mut i = 0;
    while i < b.len() {
        let Some(&[t, hi, lo]) = b.get(i..i + 3) else {
            return Err(ProxyError("v2 TLV shorter than its 3-byte header"));
        };
        let n = usize::from(u16::from_be_bytes([hi, lo]));
        let value = b
            .get(i + 3..i + 3 + n)
            .ok_or(ProxyError("v2 TLV longer than the header"))?;
        f(t, i + 3, value)?;
        i += 3 + n;
    }
    Ok(())
}

fn tlvs(buf: &[u8], len: usize, start: usize, h: &mut Header) -> Result<(), ProxyError> {
    let mut crc_at = None;
    each_tlv(&buf[start..len], |t, at, v| {
        match t {
            0x01 => h.alpn = Some(v.to_vec()),
            0x02 => {
                let s =
                    std::str::from_utf8(v).map_err(|_| ProxyError("v2 authority is not UTF-8"))?;
                h.authority = Some(s.to_string());
            }
            0x03 => {
                if v.len() != 4 {
                    return Err(ProxyError("v2 CRC32C TLV is not 4 bytes"));
                }
                crc_at = Some(start + at);
            }
            // Up to 128 bytes (2.2.5).
            0x05 if v.len() > 128 => return Err(ProxyError("v2 unique ID longer than 128 bytes")),
            0x05 => h.unique_id = Some(v.to_vec()),
            0x20 => h.ssl = Some(ssl(v)?),
            // NOOP, NETNS, the custom and experimental ranges: skipped.
            _ => {}
        }
        Ok(())
    })?;
    if let Some(at) = crc_at {
        let want = u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
        // Over the whole header with the checksum's own bytes as zeros (2.2.3).
        let c = crc32c_update(
            crc32c_update(crc32c_update(!0, &buf[..at]), &[0; 4]),
            &buf[at + 4..len],
        );
        if !c != want {
            return Err(ProxyError("v2 CRC32C does not match"));
        }
    }
    Ok(())
}

fn ssl(v: &[u8]) -> Result<Ssl, ProxyError> {
    if v.len() < 5 {
        return Err(ProxyError("v2 SSL TLV shorter than 5 bytes"));
    }
    let mut s = Ssl {
        client_ssl: v[0] & 0x01 != 0,
        cert_conn: v[0] & 0x02 != 0,
        cert_sess: v[0] & 0x04 != 0,
        verify: u32::from_be_bytes([v[1], v[2], v[3], v[4]]),
        ..Ssl::default()
    };
    each_tlv(&v[5..], |t, _, sub| {
        let slot = match t {
            0x21 => &mut s.version,
            0x22 => &mut s.cn,
            0x23 => &mut s.cipher,
            0x24 => &mut s.sig_alg,
            0x25 => &mut s.key_alg,
            _ => return Ok(()),
        };
        *slot = Some(sub.to_vec());
        Ok(())
    })?;
    Ok(s)
}

/// CRC-32C (Castagnoli, RFC 4960 appendix B): reflected polynomial
/// 0x82F63B78, initial and final value all ones.
const CRC32C_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

fn crc32c_update(c: u32, data: &[u8]) -> u32 {
    data.iter().fold(c, |c, &b| {
        CRC32C_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

pub fn crc32c(data: &[u8]) -> u32 {
    !crc32c_update(!0, data)
}

//! HTTP Digest clients for the dbi tests: curl's `--digest`, and requests
//! signed here from a server's own challenge (to replay one, or to sign
//! for another realm or with a nonce of our own making).

use std::net::SocketAddr;

use sha2::{Digest as _, Sha256};

use crate::common::*;

/// The status curl ends with for `user`/`pw` on `path` (it answers the
/// server's challenge itself).
pub fn curl_digest(addr: SocketAddr, path: &str, user: &str, pw: &str) -> u16 {
    let creds = format!("{user}:{pw}");
    let url = format!("http://{addr}{path}");
    curl_status(&["--digest", "-u", &creds, &url], 20)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn h(algo: &str, text: &str) -> String {
    match algo {
        "SHA-256" => hex(&Sha256::digest(text.as_bytes())),
        _ => hex(&md5::Md5::digest(text.as_bytes())),
    }
}

/// The `nonce` of the server's first challenge for `path`.
pub fn nonce_of(addr: SocketAddr, path: &str) -> String {
    let r = get_at(addr, path).expect("challenge");
    assert_eq!(r.status, 401, "{}", r.describe());
    let v = r.header("www-authenticate").expect("WWW-Authenticate");
    let start = v.find("nonce=\"").expect("nonce") + 7;
    let len = v[start..].find('"').expect("nonce end");
    v[start..start + len].to_string()
}

/// An `Authorization: Digest` header for `user` signed for `realm` with
/// `nonce` (qop=auth) from the HA1 of `owner`/`pw` (`owner` not `user`:
/// a name that would find `owner`'s row if it broke out of the query).
pub fn signed(
    path: &str,
    (user, owner, pw): (&str, &str, &str),
    realm: &str,
    nonce: &str,
    algo: &str,
) -> String {
    let (nc, cnonce) = ("00000001", "0a4f113b");
    let ha1 = h(algo, &format!("{owner}:{realm}:{pw}"));
    let ha2 = h(algo, &format!("GET:{path}"));
    let response = h(algo, &format!("{ha1}:{nonce}:{nc}:{cnonce}:auth:{ha2}"));
    format!(
        "Authorization: Digest username=\"{user}\", realm=\"{realm}\", nonce=\"{nonce}\", uri=\"{path}\", algorithm={algo}, qop=auth, nc={nc}, cnonce=\"{cnonce}\", response=\"{response}\""
    )
}

/// The status and challenge headers for `header` on `path`.
pub fn send_signed(addr: SocketAddr, path: &str, header: &str) -> (u16, Vec<String>) {
    let mut c = Conn::open(addr).expect("connect");
    c.send(&get(path, &[header])).expect("send");
    let r = c.read_response(false).expect("response");
    let ch = r
        .headers_named("www-authenticate")
        .into_iter()
        .map(str::to_string)
        .collect();
    (r.status, ch)
}

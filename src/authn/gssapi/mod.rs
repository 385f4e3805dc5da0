//! mod_authn_gssapi (Kerberos) as lighttpd 1.4.69 has it: the
//! `"method" => "gssapi"` scheme (SPNEGO, `Authorization: Negotiate`,
//! [`negotiate`]) and the `auth.backend = "gssapi"` back end for Basic
//! ([`password`]), with the options `auth.backend.gssapi.keytab`,
//! `auth.backend.gssapi.principal` and `auth.backend.gssapi.store-creds`
//! ([`GssOptions`]). Both talk to the KDC or read the keytab, so both run
//! on [`super::blocking`]'s threads; the libraries are loaded at
//! configuration time ([`ffi::lib`]).
//!
//! What each answers, as lighttpd does:
//!
//! | request | answer |
//! |---|---|
//! | gssapi rule, no `Authorization` | 401 `WWW-Authenticate: Negotiate` |
//! | gssapi rule, another scheme | 400 |
//! | gssapi rule, token not base64 | 400 |
//! | gssapi rule, token refused, user not in the rule, nothing delegated under `store-creds` | 401 `WWW-Authenticate: Negotiate` |
//! | gssapi rule, delegated credentials not storable | 500 |
//! | gssapi rule, accepted | on, `REMOTE_USER` = `user@REALM`, `AUTH_TYPE` = `GSSAPI` |
//! | basic rule over gssapi, no or other header | 401 `Basic realm="<rule's realm>", charset="UTF-8"` (mod_auth's) |
//! | basic rule over gssapi, empty or wrong password, KDC down, user not in the rule | 401 `WWW-Authenticate: Basic realm="Kerberos"`, connection kept |
//! | basic rule over gssapi, accepted | on, `REMOTE_USER` = the name as sent, `AUTH_TYPE` = `Basic` |

pub mod ccache;
pub mod ffi;
pub mod negotiate;
pub mod password;

pub use ccache::Ccache;

use super::ask::{Ask, Verdict};
use super::{strip_scheme, Outcome};

/// One scope's `auth.backend.gssapi.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssOptions {
    /// `auth.backend.gssapi.keytab` (blank is unset).
    pub keytab: Option<String>,
    /// `auth.backend.gssapi.principal`: the service principal, completed
    /// by [`service_principal`].
    pub principal: Option<String>,
    /// `auth.backend.gssapi.store-creds` (default enable).
    pub store_creds: bool,
}

impl Default for GssOptions {
    fn default() -> Self {
        GssOptions {
            keytab: None,
            principal: None,
            store_creds: true,
        }
    }
}

/// The service principal lighttpd asks for: `principal`, then `/` and
/// the request's Host up to its first `:` when it has no `/` (and there
/// is a Host), then (Negotiate only) `@realm` when it has no `@`.
pub fn service_principal(principal: Option<&str>, host: &str, realm: Option<&str>) -> String {
    let mut s = principal.unwrap_or("").to_string();
    if !s.contains('/') && !host.is_empty() {
        s.push('/');
        s.push_str(host.split(':').next().unwrap_or(""));
    }
    if let Some(r) = realm {
        if !s.contains('@') {
            s.push('@');
            s.push_str(r);
        }
    }
    s
}

/// What a gssapi rule's `Authorization` header comes to before the check
/// itself: the decoded token, or the answer.
pub fn negotiate_token(authorization: Option<&[u8]>) -> Result<Vec<u8>, Outcome> {
    let Some(h) = authorization else {
        return Err(Outcome::Unauthorized {
            www_authenticate: vec!["Negotiate".into()],
            close: false,
            log: None,
        });
    };
    let Some(b64) = strip_scheme(h, b"Negotiate ") else {
        return Err(Outcome::BadRequest {
            log: "Authorization is not Negotiate for a gssapi rule".into(),
        });
    };
    decode_base64(b64).ok_or_else(|| Outcome::BadRequest {
        log: format!(
            "decoding GSSAPI authentication header failed {}",
            String::from_utf8_lossy(b64)
        ),
    })
}

/// lighttpd's base64 decoding of the token: control characters and
/// spaces skipped, the text read up to its first other non-base64
/// character or `=`, and `None` when that leaves a lone sextet or
/// nothing from a non-empty text.
pub fn decode_base64(text: &[u8]) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 3);
    let (mut acc, mut n) = (0u32, 0usize);
    for &c in text {
        match value(c) {
            Some(v) => {
                acc = (acc << 6) | v;
                n += 1;
                if n % 4 == 0 {
                    out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
                    acc = 0;
                }
            }
            None if (1..=0x20).contains(&c) => continue,
            None => break,
        }
    }
    match n % 4 {
        0 => {}
        1 => return None,
        2 => out.push((acc >> 4) as u8),
        _ => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
    }
    (!out.is_empty() || text.is_empty()).then_some(out)
}

/// Negotiate's refusal: 401 with `WWW-Authenticate: Negotiate`, the
/// connection kept.
pub fn negotiate_unauthorized(why: String) -> Outcome {
    Outcome::Unauthorized {
        www_authenticate: vec!["Negotiate".into()],
        close: false,
        log: Some(format!("(mod_authn_gssapi) {why}")),
    }
}

/// The same as a worker's verdict.
pub(crate) fn negotiate_refused(why: String) -> Verdict {
    Verdict::Answer(negotiate_unauthorized(why), None)
}

/// The gssapi back end's Basic refusal: its own 401 (realm `Kerberos`,
/// the connection kept), whatever the rule's realm.
pub(crate) fn basic_refused(ask: &Ask, why: String) -> Verdict {
    Verdict::Answer(
        Outcome::Unauthorized {
            www_authenticate: vec!["Basic realm=\"Kerberos\"".into()],
            close: false,
            log: Some(format!(
                "password doesn't match for {} username: {} ({why})",
                ask.path, ask.user
            )),
        },
        None,
    )
}

/// The check for `ask` (a Negotiate token or Basic credentials) under
/// `o`, on a worker thread.
pub fn verify(o: &GssOptions, ask: &Ask) -> Verdict {
    let lib = match ffi::lib() {
        Ok(l) => l,
        Err(e) => {
            return match ask.token {
                Some(_) => negotiate_refused(e),
                None => basic_refused(ask, e),
            }
        }
    };
    match &ask.token {
        Some(t) => negotiate::verify(lib, o, ask, t),
        None => password::verify(lib, o, ask),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principal_as_lighttpd_completes_it() {
        let p = service_principal;
        assert_eq!(p(None, "www.example:8080", Some("R")), "/www.example@R");
        assert_eq!(p(Some("HTTP"), "h:1", Some("R")), "HTTP/h@R");
        assert_eq!(p(Some("HTTP"), "h", None), "HTTP/h");
        assert_eq!(p(Some("HTTP/x@S"), "h", Some("R")), "HTTP/x@S");
        assert_eq!(p(Some("HTTP"), "", Some("R")), "HTTP@R");
        assert_eq!(p(Some("HTTP"), "[::1]:80", None), "HTTP/[");
    }

    #[test]
    fn base64_as_lighttpd_decodes_it() {
        assert_eq!(decode_base64(b"Zm9v"), Some(b"foo".to_vec()));
        assert_eq!(decode_base64(b"Zm9vYg=="), Some(b"foob".to_vec()));
        assert_eq!(decode_base64(b"Zm9vYg"), Some(b"foob".to_vec()));
        assert_eq!(decode_base64(b"Zm 9v\r\n"), Some(b"foo".to_vec()));
        assert_eq!(decode_base64(b"Zm9v!!!"), Some(b"foo".to_vec()));
        assert_eq!(decode_base64(b""), Some(Vec::new()));
        assert_eq!(decode_base64(b"!!!"), None);
        assert_eq!(decode_base64(b"Z"), None);
        assert_eq!(decode_base64(b"Zm9vY"), None);
    }

    #[test]
    fn negotiate_header_answers() {
        let st = |h: Option<&[u8]>| match negotiate_token(h) {
            Ok(t) => Ok(t),
            Err(o) => Err(o.status()),
        };
        assert_eq!(st(None), Err(Some(401)));
        assert_eq!(st(Some(b"Basic Zm9v")), Err(Some(400)));
        assert_eq!(st(Some(b"Negotiate")), Err(Some(400)));
        assert_eq!(st(Some(b"negotiate Zm9v")), Ok(b"foo".to_vec()));
        assert_eq!(st(Some(b"Negotiate ***")), Err(Some(400)));
    }
}

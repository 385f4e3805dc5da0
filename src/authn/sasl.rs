//! mod_authn_sasl with `pwcheck_method` `saslauthd` (lighttpd's
//! default): the question libsasl2's `sasl_checkpass` puts to saslauthd,
//! asked directly on its unix socket (`/var/run/saslauthd/mux`, the path
//! Debian's libsasl2 is built with). The request is four strings, each a
//! 16-bit big-endian length and its bytes: user, password, service
//! (`"service"`, default `http`) and realm (the rule's realm, which
//! lighttpd hands libsasl2 as the user realm); the answer one such string,
//! `OK...` or `NO...`. Then the rule (`valid-user` or `user=`).
//!
//! `pwcheck_method` `auxprop` and `sasldb` (lighttpd turns `sasldb` into
//! `auxprop`) read libsasl2's own database file (`sasldb_path`, default
//! libsasl2's `/etc/sasldb2`): glint asks libsasl2 itself
//! ([`super::sasl_lib`]), as lighttpd does.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::ask::{Ask, Verdict};

/// Where libsasl2 (as Debian builds it) finds saslauthd.
pub const SASLAUTHD_MUX: &str = "/var/run/saslauthd/mux";

/// How long saslauthd may take to answer: its own back ends (PAM, LDAP,
/// IMAP) have time-outs of their own; this bounds a saslauthd that hangs.
const TIMEOUT: Duration = Duration::from_secs(10);

/// One scope's `auth.backend.sasl.opts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSpec {
    /// `"service"` (default `http`).
    pub service: String,
    /// saslauthd's socket ([`SASLAUTHD_MUX`]).
    pub socket: String,
    pub method: PwCheck,
    /// `"fqdn"` (default: the host name, as lighttpd's uname()).
    pub fqdn: String,
}

/// `pwcheck_method`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PwCheck {
    /// Ask saslauthd (the default).
    Saslauthd,
    /// libsasl2's auxprop (sasldb) check; `sasldb_path` when set and not
    /// blank.
    Auxprop { sasldb_path: Option<String> },
}

/// Checks `opts` (`auth.backend.sasl.opts`) as lighttpd does when it
/// reads them; `Err` for what glint refuses to start with.
pub fn parse_opts(opts: &[(String, String)]) -> Result<SaslSpec, String> {
    let get = |k: &str| {
        opts.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let method = match get("pwcheck_method") {
        None | Some("saslauthd") => PwCheck::Saslauthd,
        Some("auxprop" | "sasldb") => PwCheck::Auxprop {
            sasldb_path: get("sasldb_path")
                .filter(|p| !p.trim().is_empty())
                .map(str::to_string),
        },
        Some(m) => {
            return Err(format!(
                "sasl pwcheck_method must be one of saslauthd, sasldb, or auxprop, not: {m}"
            ))
        }
    };
    let fqdn = match get("fqdn") {
        Some(f) => f.to_string(),
        None => nix::unistd::gethostname()
            .map_err(|e| format!("sasl: uname(): {e}"))?
            .to_string_lossy()
            .into_owned(),
    };
    Ok(SaslSpec {
        service: get("service").unwrap_or("http").to_string(),
        socket: SASLAUTHD_MUX.to_string(),
        method,
        fqdn,
    })
}

fn put(out: &mut Vec<u8>, s: &[u8]) -> Result<(), String> {
    let n = u16::try_from(s.len()).map_err(|_| "saslauthd: a field longer than 65535 bytes")?;
    out.extend_from_slice(&n.to_be_bytes());
    out.extend_from_slice(s);
    Ok(())
}

/// The request saslauthd reads.
pub fn request(user: &str, password: &[u8], service: &str, realm: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    put(&mut out, user.as_bytes())?;
    put(&mut out, password)?;
    put(&mut out, service.as_bytes())?;
    put(&mut out, realm.as_bytes())?;
    Ok(out)
}

/// Asks saslauthd; `Ok(true)` for its `OK`.
fn ask_saslauthd(s: &SaslSpec, req: &[u8]) -> Result<bool, String> {
    let io = |e: std::io::Error| format!("saslauthd {}: {e}", s.socket);
    let mut c = UnixStream::connect(&s.socket).map_err(io)?;
    c.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
    c.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
    c.write_all(req).map_err(io)?;
    let mut len = [0u8; 2];
    c.read_exact(&mut len).map_err(io)?;
    let n = u16::from_be_bytes(len) as usize;
    let mut answer = vec![0u8; n];
    c.read_exact(&mut answer).map_err(io)?;
    Ok(answer.starts_with(b"OK"))
}

/// Checks `ask` with saslauthd or libsasl2's auxprop; `realm` is the rule's.
pub fn verify(s: &SaslSpec, ask: &Ask, realm: &str) -> Verdict {
    if let PwCheck::Auxprop { sasldb_path } = &s.method {
        let check = super::sasl_lib::AuxpropCheck {
            service: &s.service,
            fqdn: &s.fqdn,
            realm,
            sasldb_path: sasldb_path.as_deref(),
            user: &ask.user,
            password: &ask.password,
        };
        if let Err(e) = super::sasl_lib::checkpass(&check) {
            return Verdict::Denied(e);
        }
        return allowed(ask);
    }
    let req = match request(&ask.user, &ask.password, &s.service, realm) {
        Ok(r) => r,
        Err(e) => return Verdict::Denied(e),
    };
    match ask_saslauthd(s, &req) {
        Ok(true) => {}
        Ok(false) => return Verdict::Denied("sasl: saslauthd said no".into()),
        Err(e) => return Verdict::Denied(e),
    }
    allowed(ask)
}

fn allowed(ask: &Ask) -> Verdict {
    if ask.rule.valid_user || ask.rule.users.contains(&ask.user) {
        Verdict::Granted
    } else {
        Verdict::Denied("not allowed by auth.require".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_is_four_counted_strings() {
        assert_eq!(
            request("bob", b"pw", "http", "r"),
            Ok(b"\x00\x03bob\x00\x02pw\x00\x04http\x00\x01r".to_vec())
        );
        assert!(request(&"x".repeat(70000), b"", "", "").is_err());
    }

    #[test]
    fn options_as_lighttpd_reads_them() {
        let o = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert_eq!(parse_opts(&[]).map(|s| s.service), Ok("http".into()));
        assert_eq!(
            parse_opts(&o("service", "web")).map(|s| s.service),
            Ok("web".into())
        );
        assert!(parse_opts(&o("pwcheck_method", "saslauthd")).is_ok());
        let db = |m: &str, p: &str| {
            let mut v = o("pwcheck_method", m);
            v.extend(o("sasldb_path", p));
            parse_opts(&v).map(|s| s.method)
        };
        assert_eq!(
            db("sasldb", "/x/db"),
            Ok(PwCheck::Auxprop {
                sasldb_path: Some("/x/db".into())
            })
        );
        assert_eq!(
            db("auxprop", " "),
            Ok(PwCheck::Auxprop { sasldb_path: None })
        );
        assert_eq!(
            parse_opts(&o("fqdn", "h.test")).map(|s| s.fqdn),
            Ok("h.test".into())
        );
        assert!(parse_opts(&o("pwcheck_method", "kerberos")).is_err());
    }
}

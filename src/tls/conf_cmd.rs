//! `ssl.openssl.ssl-conf-cmd`, `ssl.cipher-list` and `ssl.honor-cipher-order`
//! mapped to rustls settings. lighttpd hands each pair to OpenSSL's
//! `SSL_CONF_cmd()`; here each key and value either has a rustls meaning
//! or is an error naming both (glint fails closed rather than run with a
//! setting it silently dropped). Keys compare without case, as
//! `SSL_CONF_FLAG_FILE` does.

use rustls::{CipherSuite, NamedGroup};

use super::ciphers;

/// OpenSSL's default TLS 1.3 ticket count (`SSL_CTX_set_num_tickets`).
pub(super) const OPENSSL_NUM_TICKETS: usize = 2;

/// The socket-wide protocol settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub tls12: bool,
    pub tls13: bool,
    /// TLS 1.2 suites, most preferred first.
    pub tls12_suites: Vec<CipherSuite>,
    /// TLS 1.3 suites, most preferred first.
    pub tls13_suites: Vec<CipherSuite>,
    /// Key-exchange groups in order; `None`: the provider's defaults.
    pub groups: Option<Vec<NamedGroup>>,
    /// Choose the suite by the server's order (`ServerPreference`).
    pub server_preference: bool,
    /// Session tickets (`Options -SessionTicket` turns them off).
    pub session_tickets: bool,
    /// TLS 1.3 tickets sent after a handshake (`NumTickets`).
    pub num_tickets: usize,
    /// Largest plaintext per record (`MaxSendFragment`).
    pub max_fragment: Option<usize>,
    /// `Options KTLS` was asked for: kernel TLS, when the kernel has it.
    pub ktls: bool,
}

/// Applies command `k` (`key` lowercased) but the protocol bounds to `s`;
/// its warnings.
pub(super) fn command(
    s: &mut Settings,
    k: &str,
    key: &str,
    value: &str,
) -> Result<Vec<String>, String> {
    let err = |why: &str| format!("ssl.openssl.ssl-conf-cmd \"{key}\" => \"{value}\": {why}");
    let v = value.trim();
    let mut warnings = Vec::new();
    match k {
        "protocol" => {
            let (t12, t13) = protocol_list(v).map_err(|e| err(&e))?;
            s.tls12 = t12;
            s.tls13 = t13;
        }
        "cipherstring" => {
            // lighttpd: an empty CipherString means "HIGH".
            let cs = if v.is_empty() { "HIGH" } else { v };
            s.tls12_suites =
                ciphers::tls12_suites(cs, "ssl.openssl.ssl-conf-cmd \"CipherString\"")?;
        }
        "ciphersuites" => {
            let (suites, mut w) = ciphers::tls13_suites(v)?;
            warnings.append(&mut w);
            if suites.is_empty() {
                // OpenSSL: an empty list turns TLS 1.3 off.
                s.tls13 = false;
            }
            s.tls13_suites = suites;
        }
        "curves" | "groups" => s.groups = Some(groups(v).map_err(|e| err(&e))?),
        "ecdhparameters" => {
            if !v.eq_ignore_ascii_case("auto") {
                s.groups = Some(groups(v).map_err(|e| err(&e))?);
            }
        }
        "options" => options(v, s).map_err(|e| err(&e))?,
        "securitylevel" => ciphers::seclevel(v).map_err(|e| err(&e))?,
        "numtickets" => {
            s.num_tickets = v
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= 16)
                .ok_or_else(|| err("expected a count from 0 to 16"))?;
        }
        "maxsendfragment" => {
            // OpenSSL accepts 512 to 16384; rustls wants 32 to 16389.
            let n = v
                .parse::<usize>()
                .ok()
                .filter(|n| (512..=16384).contains(n))
                .ok_or_else(|| err("expected 512 to 16384"))?;
            s.max_fragment = Some(n);
        }
        "dhparameters" if v.is_empty() => {}
        "dhparameters" => return Err(err("rustls has no finite-field DHE suites for TLS 1.2")),
        _ => return Err(err("this command has no rustls meaning")),
    }
    Ok(warnings)
}

/// `MinProtocol` and `MaxProtocol` on top of `Protocol`; glint needs a
/// version left, and no suites of a version that is off.
pub(super) fn versions(s: &mut Settings, min: Option<u8>, max: Option<u8>) -> Result<(), String> {
    if let Some(min) = min {
        s.tls12 &= min <= 2;
        s.tls13 &= min <= 3;
    }
    if let Some(max) = max {
        s.tls13 &= max >= 3;
        s.tls12 &= max >= 2;
    }
    // A version without suites is off (mod_wolfssl's and mod_nss's cipher
    // strings can leave TLS 1.3 none).
    s.tls13 &= !s.tls13_suites.is_empty();
    s.tls12 &= !s.tls12_suites.is_empty();
    if !s.tls12 && !s.tls13 {
        return Err(
            "ssl.openssl.ssl-conf-cmd leaves no protocol version: rustls has TLS 1.2 and 1.3 only"
                .to_string(),
        );
    }
    if !s.tls13 {
        s.tls13_suites.clear();
    }
    if !s.tls12 {
        s.tls12_suites.clear();
    }
    Ok(())
}

/// "TLSv1.2" -> 2, "TLSv1.3" -> 3; "None" means no limit. A minimum below
/// 1.2 asks for versions rustls does not have (glint would serve fewer
/// than the administrator asked for): an error, as is a maximum below 1.2.
pub(super) fn protocol(v: &str, is_max: bool) -> Result<u8, String> {
    let l = v.to_ascii_lowercase();
    match l.as_str() {
        "none" => Ok(if is_max { 3 } else { 2 }),
        "tlsv1.2" => Ok(2),
        "tlsv1.3" => Ok(3),
        "sslv3" | "tlsv1" | "tlsv1.0" | "tlsv1.1" => Err(format!(
            "{v} is older than rustls goes (TLS 1.2 and 1.3 only)"
        )),
        _ => Err("not a TLS protocol version".to_string()),
    }
}

/// The deprecated "Protocol" list: "-ALL,TLSv1.2,TLSv1.3" style.
fn protocol_list(v: &str) -> Result<(bool, bool), String> {
    let (mut t12, mut t13) = (true, true);
    for item in v.split([',', ' ']).filter(|i| !i.is_empty()) {
        let (on, name) = match item.as_bytes()[0] {
            b'-' => (false, &item[1..]),
            b'+' => (true, &item[1..]),
            _ => (true, item),
        };
        match name.to_ascii_lowercase().as_str() {
            "all" => (t12, t13) = (on, on),
            "tlsv1.2" => t12 = on,
            "tlsv1.3" => t13 = on,
            "sslv2" | "sslv3" | "tlsv1" | "tlsv1.1" if !on => {}
            "sslv2" | "sslv3" | "tlsv1" | "tlsv1.1" => {
                return Err(format!("{name} is older than rustls goes"))
            }
            _ => return Err(format!("{name} is not a protocol")),
        }
    }
    Ok((t12, t13))
}

/// OpenSSL group names -> rustls's. `?name` (OpenSSL 3: ignore if unknown)
/// is left out when the provider lacks it; a plain name it lacks is an error.
fn groups(v: &str) -> Result<Vec<NamedGroup>, String> {
    let provided: Vec<NamedGroup> = super::provider::ALL_KX_GROUPS
        .iter()
        .map(|g| g.name())
        .collect();
    let mut out = Vec::new();
    for item in v.split(':').map(str::trim).filter(|i| !i.is_empty()) {
        let (optional, name) = match item.strip_prefix('?') {
            Some(n) => (true, n),
            None => (false, item),
        };
        let g = match name.to_ascii_lowercase().as_str() {
            "x25519" => Some(NamedGroup::X25519),
            "p-256" | "prime256v1" | "secp256r1" => Some(NamedGroup::secp256r1),
            "p-384" | "secp384r1" => Some(NamedGroup::secp384r1),
            "p-521" | "secp521r1" => Some(NamedGroup::secp521r1),
            "x448" => Some(NamedGroup::X448),
            "ffdhe2048" => Some(NamedGroup::FFDHE2048),
            "ffdhe3072" => Some(NamedGroup::FFDHE3072),
            "ffdhe4096" => Some(NamedGroup::FFDHE4096),
            "x25519mlkem768" => Some(NamedGroup::X25519MLKEM768),
            "secp256r1mlkem768" => Some(NamedGroup::secp256r1MLKEM768),
            "mlkem768" => Some(NamedGroup::MLKEM768),
            "mlkem1024" => Some(NamedGroup::MLKEM1024),
            _ => None,
        };
        match g {
            Some(g) if provided.contains(&g) => {
                if !out.contains(&g) {
                    out.push(g)
                }
            }
            _ if optional => {}
            Some(_) => {
                return Err(format!(
                    "{name} is not offered by the {} provider",
                    super::provider::NAME
                ))
            }
            None => return Err(format!("{name} is not a key-exchange group")),
        }
    }
    if out.is_empty() {
        return Err("no key-exchange group left".to_string());
    }
    Ok(out)
}

/// "Options": `[+|-]Name` items. Each either maps to a rustls setting or
/// asks for what rustls always does; the opposite of a fixed rustls
/// behaviour is an error.
fn options(v: &str, s: &mut Settings) -> Result<(), String> {
    for item in v.split([',', ' ', '\t']).filter(|i| !i.is_empty()) {
        let (on, name) = match item.as_bytes()[0] {
            b'-' => (false, &item[1..]),
            b'+' => (true, &item[1..]),
            _ => (true, item),
        };
        // (name, what rustls always does, if fixed)
        let fixed = match name.to_ascii_lowercase().as_str() {
            "sessionticket" => {
                s.session_tickets = on;
                continue;
            }
            "serverpreference" => {
                s.server_preference = on;
                continue;
            }
            "ktls" => {
                s.ktls = on;
                continue;
            }
            // rustls has no TLS compression, never renegotiates, has no
            // CBC suites (so no encrypt-then-MAC choice), always offers
            // middlebox compatibility and only does (EC)DHE for PSKs.
            "compression" => false,
            "norenegotiation" | "noresumptiononrenegotiation" => true,
            "unsafelegacyrenegotiation" | "allownodhekex" | "prioritizechacha" => false,
            "encryptthenmac" | "middleboxcompat" | "antireplay" | "bugs" => {
                // Meaningless either way for rustls's suites and defaults:
                // encrypt-then-MAC is CBC-only, 0-RTT is off, rustls always
                // sends middlebox-compatible handshakes.
                if matches!(name.to_ascii_lowercase().as_str(), "middleboxcompat") && !on {
                    return Err(format!(
                        "-{name}: rustls always does middlebox compatibility"
                    ));
                }
                continue;
            }
            _ => return Err(format!("option {name} has no rustls meaning")),
        };
        if on != fixed {
            let sign = if on { '+' } else { '-' };
            return Err(format!("{sign}{name} is not possible with rustls"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::module_conf::settings;
    use super::*;

    fn run(pairs: &[(&str, &str)]) -> Result<Settings, String> {
        let cmds: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        settings(None, None, &cmds).map(|(s, _)| s)
    }

    #[test]
    fn defaults_are_lighttpds() {
        let s = run(&[]).unwrap();
        assert!(s.tls12 && s.tls13 && s.session_tickets && !s.server_preference);
        assert_eq!(s.tls12_suites.len(), 6);
        assert_eq!(s.tls13_suites, ciphers::TLS13_DEFAULT.to_vec());
        assert_eq!(s.num_tickets, 2);
    }

    /// Each key/value pair and what it gives: (description, pairs, check).
    #[test]
    fn table() {
        type Check = fn(&Settings) -> bool;
        type Pairs = &'static [(&'static str, &'static str)];
        let ok: &[(&str, Pairs, Check)] = &[
            (
                "MinProtocol TLSv1.3 leaves 1.3",
                &[("MinProtocol", "TLSv1.3")],
                |s| !s.tls12 && s.tls13 && s.tls12_suites.is_empty(),
            ),
            (
                "MinProtocol TLSv1.2 is the default",
                &[("MinProtocol", "TLSv1.2")],
                |s| s.tls12 && s.tls13,
            ),
            ("keys ignore case", &[("minprotocol", "tlsv1.3")], |s| {
                !s.tls12
            }),
            (
                "MaxProtocol TLSv1.2 leaves 1.2",
                &[("MaxProtocol", "TLSv1.2")],
                |s| s.tls12 && !s.tls13 && s.tls13_suites.is_empty(),
            ),
            ("MaxProtocol None", &[("MaxProtocol", "None")], |s| {
                s.tls12 && s.tls13
            }),
            (
                "Protocol -ALL,TLSv1.3",
                &[("Protocol", "-ALL,TLSv1.3")],
                |s| !s.tls12 && s.tls13,
            ),
            (
                "Protocol -TLSv1.1 is already so",
                &[("Protocol", "-TLSv1,-TLSv1.1")],
                |s| s.tls12 && s.tls13,
            ),
            (
                "CipherString picks TLS 1.2 suites",
                &[("CipherString", "ECDHE-RSA-AES128-GCM-SHA256")],
                |s| s.tls12_suites == vec![CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256],
            ),
            (
                "empty CipherString means HIGH",
                &[("CipherString", "")],
                |s| s.tls12_suites.len() == 6,
            ),
            (
                "Ciphersuites picks TLS 1.3 suites",
                &[("Ciphersuites", "TLS_CHACHA20_POLY1305_SHA256")],
                |s| s.tls13_suites == vec![CipherSuite::TLS13_CHACHA20_POLY1305_SHA256],
            ),
            (
                "empty Ciphersuites turns TLS 1.3 off",
                &[("Ciphersuites", "")],
                |s| !s.tls13 && s.tls12,
            ),
            ("Curves", &[("Curves", "P-384:X25519")], |s| {
                s.groups == Some(vec![NamedGroup::secp384r1, NamedGroup::X25519])
            }),
            (
                "Groups with an optional unknown",
                &[("Groups", "?X448:prime256v1")],
                |s| s.groups == Some(vec![NamedGroup::secp256r1]),
            ),
            ("ECDHParameters auto", &[("ECDHParameters", "auto")], |s| {
                s.groups.is_none()
            }),
            (
                "Options -SessionTicket",
                &[("Options", "-SessionTicket")],
                |s| !s.session_tickets,
            ),
            (
                "Options ServerPreference",
                &[("Options", "ServerPreference")],
                |s| s.server_preference,
            ),
            (
                "Options list",
                &[(
                    "Options",
                    "+ServerPreference,-Compression,NoRenegotiation,KTLS",
                )],
                |s| s.server_preference && s.ktls,
            ),
            ("SecurityLevel 2 is met", &[("SecurityLevel", "2")], |_| {
                true
            }),
            ("NumTickets", &[("NumTickets", "0")], |s| s.num_tickets == 0),
            ("MaxSendFragment", &[("MaxSendFragment", "4096")], |s| {
                s.max_fragment == Some(4096)
            }),
            ("blank DHParameters", &[("DHParameters", "")], |_| true),
        ];
        for (what, pairs, check) in ok {
            match run(pairs) {
                Ok(s) => assert!(check(&s), "{what}: {s:?}"),
                Err(e) => panic!("{what}: {e}"),
            }
        }
        let bad: &[(&str, Pairs, &str)] = &[
            (
                "MinProtocol TLSv1 asks for what rustls lacks",
                &[("MinProtocol", "TLSv1")],
                "\"MinProtocol\" => \"TLSv1\"",
            ),
            (
                "MaxProtocol TLSv1.1 leaves nothing",
                &[("MaxProtocol", "TLSv1.1")],
                "MaxProtocol",
            ),
            (
                "MinProtocol DTLSv1",
                &[("MinProtocol", "DTLSv1")],
                "not a TLS protocol",
            ),
            (
                "Min above Max",
                &[("MinProtocol", "TLSv1.3"), ("MaxProtocol", "TLSv1.2")],
                "no protocol version",
            ),
            ("Protocol +TLSv1", &[("Protocol", "TLSv1")], "older"),
            (
                "CipherString of CBC suites",
                &[("CipherString", "AES256-SHA")],
                "selects none",
            ),
            (
                "Ciphersuites typo",
                &[("Ciphersuites", "TLS_AES_128_GCM")],
                "not a TLS 1.3 suite",
            ),
            (
                "Curves X448 is not in rustls",
                &[("Curves", "X448")],
                "X448",
            ),
            (
                "Curves nonsense",
                &[("Curves", "brainpoolP256r1")],
                "not a key-exchange group",
            ),
            ("ECDHParameters X448", &[("ECDHParameters", "X448")], "X448"),
            (
                "Options +Compression",
                &[("Options", "Compression")],
                "+Compression",
            ),
            (
                "Options -NoRenegotiation",
                &[("Options", "-NoRenegotiation")],
                "-NoRenegotiation",
            ),
            (
                "Options UnsafeLegacyRenegotiation",
                &[("Options", "UnsafeLegacyRenegotiation")],
                "UnsafeLegacyRenegotiation",
            ),
            (
                "Options PrioritizeChaCha",
                &[("Options", "PrioritizeChaCha")],
                "PrioritizeChaCha",
            ),
            (
                "Options -MiddleboxCompat",
                &[("Options", "-MiddleboxCompat")],
                "MiddleboxCompat",
            ),
            (
                "Options unknown",
                &[("Options", "NoTicketsPlease")],
                "no rustls meaning",
            ),
            (
                "SecurityLevel 3",
                &[("SecurityLevel", "3")],
                "security level 3",
            ),
            ("NumTickets junk", &[("NumTickets", "many")], "NumTickets"),
            (
                "MaxSendFragment too small",
                &[("MaxSendFragment", "100")],
                "512",
            ),
            (
                "DHParameters file",
                &[("DHParameters", "/etc/dh.pem")],
                "DHE",
            ),
            (
                "SignatureAlgorithms",
                &[("SignatureAlgorithms", "RSA+SHA256")],
                "\"SignatureAlgorithms\" => \"RSA+SHA256\": this command has no rustls meaning",
            ),
            (
                "VerifyCAFile",
                &[("VerifyCAFile", "/ca.pem")],
                "no rustls meaning",
            ),
        ];
        for (what, pairs, needle) in bad {
            match run(pairs) {
                Ok(s) => panic!("{what}: accepted as {s:?}"),
                Err(e) => assert!(e.contains(needle), "{what}: {e}"),
            }
        }
    }

    #[test]
    fn cipher_list_and_honor_cipher_order() {
        let (s, _) = settings(Some("AES128+aRSA"), None, &[]).unwrap();
        assert!(s.server_preference);
        assert_eq!(
            s.tls12_suites,
            vec![CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
        );
        let (s, _) = settings(Some("HIGH"), Some(false), &[]).unwrap();
        assert!(!s.server_preference, "an explicit honor-cipher-order wins");
        let cmds = vec![("Options".to_string(), "-ServerPreference".to_string())];
        let (s, _) = settings(Some("HIGH"), None, &cmds).unwrap();
        assert!(!s.server_preference, "Options comes after, as in lighttpd");
    }
}

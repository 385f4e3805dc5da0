//! The TLS options as each TLS module reads them: `ssl.cipher-list`,
//! `ssl.honor-cipher-order` and `ssl.openssl.ssl-conf-cmd` under
//! mod_openssl (the keys of [`conf_cmd`]) or under mod_gnutls,
//! mod_mbedtls, mod_wolfssl and mod_nss (their cipher strings in
//! [`modules`], their keys here).

use rustls::CipherSuite;

use super::ciphers;
use super::conf_cmd::{self, Settings};
use super::modules::{self, TlsModule};

/// Parses the three options into [`Settings`] plus warnings, as
/// `mod_openssl` reads them.
pub fn settings(
    cipher_list: Option<&str>,
    honor_cipher_order: Option<bool>,
    cmds: &[(String, String)],
) -> Result<(Settings, Vec<String>), String> {
    module_settings(TlsModule::OpenSsl, cipher_list, honor_cipher_order, cmds)
}

/// The TLS 1.2 and 1.3 suites a cipher string selects, as `module`
/// reads it.
fn cipher_string(
    module: TlsModule,
    cs: &str,
    key: &str,
    explicit: bool,
    prior: Option<u8>,
    warnings: &mut Vec<String>,
) -> Result<(Vec<CipherSuite>, Vec<CipherSuite>), String> {
    if module == TlsModule::Nss && explicit && !cs.contains(':') {
        // Apache mod_nss's parser (lighttpd's mod_nss): a list with a
        // comma and no colon is NSS's "+name,-name" form; one with
        // neither is tried as OpenSSL's first.
        let openssl = ciphers::tls12_suites(cs, key);
        if cs.contains(',') || openssl.is_err() {
            return modules::nss_native(cs, key);
        }
    }
    if module == TlsModule::WolfSsl && explicit && !modules::wolfssl_takes(cs) {
        return Err(format!(
            "{key} \"{cs}\": wolfSSL matches none of it (it takes full suite \
             names and ALL, HIGH or DEFAULT, not aliases such as AES256 or \
             EECDH+AESGCM); lighttpd 1.4.69's mod_wolfssl refuses to start with it"
        ));
    }
    let wolf;
    let cs = if module == TlsModule::WolfSsl && explicit {
        wolf = modules::wolfssl_string(cs);
        wolf.as_str()
    } else {
        cs
    };
    if module.openssl_cipher_strings() {
        // mod_wolfssl and mod_nss apply an explicit string to TLS 1.3 too.
        let tls13 = if module == TlsModule::OpenSsl || !explicit {
            ciphers::TLS13_DEFAULT.to_vec()
        } else {
            modules::tls13_of_cipher_string(module, cs)
        };
        return Ok((ciphers::tls12_suites(cs, key)?, tls13));
    }
    let (set, mut w) = modules::keyword_ciphers(cs, module, key, prior)?;
    warnings.append(&mut w);
    let all12 = ciphers::tls12_suites("ALL", key)?;
    Ok((
        modules::filter(&all12, set),
        modules::filter(&ciphers::TLS13_DEFAULT, set),
    ))
}

/// [`settings`] for the TLS module `module` (see [`super::modules`]).
pub fn module_settings(
    module: TlsModule,
    cipher_list: Option<&str>,
    honor_cipher_order: Option<bool>,
    cmds: &[(String, String)],
) -> Result<(Settings, Vec<String>), String> {
    let mut warnings = Vec::new();
    let cipher_list = cipher_list.filter(|c| !c.trim().is_empty());
    let (tls12_suites, tls13_suites) = cipher_string(
        module,
        cipher_list.unwrap_or(ciphers::LIGHTTPD_DEFAULT_CIPHER_LIST),
        "ssl.cipher-list",
        cipher_list.is_some(),
        None,
        &mut warnings,
    )?;
    let mut s = Settings {
        tls12: true,
        tls13: true,
        tls12_suites,
        tls13_suites,
        groups: None,
        // lighttpd sets server preference whenever ssl.cipher-list is set
        // ("historical use might list non-PFS ciphers").
        server_preference: honor_cipher_order.unwrap_or(cipher_list.is_some()),
        session_tickets: true,
        num_tickets: conf_cmd::OPENSSL_NUM_TICKETS,
        max_fragment: None,
        ktls: false,
    };
    let mut min: Option<u8> = None;
    let mut max: Option<u8> = None;
    for (key, value) in cmds {
        let err = |why: &str| format!("ssl.openssl.ssl-conf-cmd \"{key}\" => \"{value}\": {why}");
        let v = value.trim();
        match key.to_ascii_lowercase().as_str() {
            "minprotocol" => min = Some(conf_cmd::protocol(v, false).map_err(|e| err(&e))?),
            "maxprotocol" => max = Some(conf_cmd::protocol(v, true).map_err(|e| err(&e))?),
            k if module != TlsModule::OpenSsl => {
                warnings.append(&mut module_command(module, &mut s, k, key, value)?)
            }
            k => warnings.append(&mut conf_cmd::command(&mut s, k, key, value)?),
        }
    }
    conf_cmd::versions(&mut s, min, max)?;
    Ok((s, warnings))
}

/// Command `k` as lighttpd's mod_gnutls, mod_mbedtls, mod_wolfssl and
/// mod_nss read it: they map `CipherString`, `Ciphersuites`,
/// `Curves`/`Groups`, `DHParameters` and the `Options` `SessionTicket`,
/// `ServerPreference` and `Compression` themselves, and log and ignore
/// every other key (`Protocol` included), as glint does.
fn module_command(
    module: TlsModule,
    s: &mut Settings,
    k: &str,
    key: &str,
    value: &str,
) -> Result<Vec<String>, String> {
    let who = module.name();
    let err = |why: &str| format!("ssl.openssl.ssl-conf-cmd \"{key}\" => \"{value}\": {why}");
    let v = value.trim();
    let mut warnings = Vec::new();
    match k {
        "cipherstring" if v.is_empty() => {}
        "cipherstring" => {
            let (t12, t13) = cipher_string(
                module,
                v,
                "ssl.openssl.ssl-conf-cmd \"CipherString\"",
                true,
                Some(modules::bits(&s.tls12_suites) | modules::bits(&s.tls13_suites)),
                &mut warnings,
            )?;
            s.tls12_suites = t12;
            s.tls13_suites = t13;
        }
        "ciphersuites" if module == TlsModule::OpenSsl => {
            return conf_cmd::command(s, k, key, value);
        }
        // mod_gnutls adds these to NORMAL (or ahead of a CipherString
        // that removes them again): no change to what rustls offers.
        "ciphersuites" if module == TlsModule::GnuTls => {}
        // Not read by lighttpd 1.4.69's mod_wolfssl (compiled out) nor
        // mod_nss (not implemented): applying it could turn TLS 1.3 suites
        // back on that their cipher string left off.
        "ciphersuites" if matches!(module, TlsModule::Nss | TlsModule::WolfSsl) => {
            warnings.push(format!("{who}: ssl.openssl.ssl-conf-cmd \"{key}\" ignored (not implemented in lighttpd's {who})"));
        }
        "ciphersuites" => {
            return Err(err(&format!(
                "{who} takes mbedTLS suite names here; glint does not map them"
            )))
        }
        // GnuTLS 3.6+ and NSS have no DHParameters key in lighttpd: ignored.
        "dhparameters" if matches!(module, TlsModule::GnuTls | TlsModule::Nss) => {
            warnings.push(format!(
                "{who}: ssl.openssl.ssl-conf-cmd \"{key}\" ignored (as lighttpd's {who} ignores it)"
            ));
        }
        "curves" | "groups" | "dhparameters" => return conf_cmd::command(s, k, key, value),
        "options" => module_options(v, s, who, &mut warnings),
        "gnutls-override" if module == TlsModule::GnuTls => {
            return Err(err(
                "a raw GnuTLS priority string; glint cannot evaluate GnuTLS \
                 priority strings (security levels, signature and curve \
                 profiles) over rustls, so it refuses rather than guess",
            ))
        }
        _ => warnings.push(format!(
            "{who}: ssl.openssl.ssl-conf-cmd \"{key}\" ignored (as lighttpd's {who} ignores it)"
        )),
    }
    Ok(warnings)
}

/// `Options` as the non-OpenSSL modules read it.
fn module_options(v: &str, s: &mut Settings, who: &str, warnings: &mut Vec<String>) {
    for item in v.split([',', ' ', '\t']).filter(|i| !i.is_empty()) {
        let (on, name) = match item.as_bytes()[0] {
            b'-' => (false, &item[1..]),
            b'+' => (true, &item[1..]),
            _ => (true, item),
        };
        match name.to_ascii_lowercase().as_str() {
            "sessionticket" => s.session_tickets = on,
            "serverpreference" => s.server_preference = on,
            "compression" if !on => {}
            _ => warnings.push(format!(
                "{who}: ssl.openssl.ssl-conf-cmd Options {item} ignored"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use modules::{AES256, CHACHA};

    #[test]
    fn wolfssl_and_nss_lists_as_the_modules_read_them() {
        assert!(module_settings(TlsModule::WolfSsl, Some("AES256"), None, &[]).is_err());
        let (st, _) = module_settings(
            TlsModule::WolfSsl,
            Some("AES256:ECDHE-ECDSA-AES256-GCM-SHA384"),
            None,
            &[],
        )
        .unwrap();
        assert_eq!(
            st.tls12_suites,
            vec![CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]
        );
        // lighttpd's default list is not handed to wolfSSL that way.
        assert!(module_settings(TlsModule::WolfSsl, None, None, &[]).is_ok());
        // Through the module's reading: a comma and no colon is NSS form.
        let (s, _) = module_settings(
            TlsModule::Nss,
            Some("+ecdhe_ecdsa_chacha20_poly1305_sha_256"),
            None,
            &[],
        )
        .unwrap();
        assert_eq!(s.tls12_suites.len(), 1);
        assert!(!s.tls13);
    }

    fn run(m: TlsModule, cmds: &[(&str, &str)]) -> Result<(Settings, Vec<String>), String> {
        let cmds: Vec<(String, String)> = cmds
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        module_settings(m, None, None, &cmds)
    }

    #[test]
    fn conf_cmd_as_the_other_modules_read_it() {
        // Protocol and unknown keys: ignored with a warning, as lighttpd does.
        let (s, w) = run(
            TlsModule::GnuTls,
            &[
                ("Protocol", "-ALL,TLSv1.3"),
                ("NumTickets", "0"),
                ("DHParameters", "x.pem"),
            ],
        )
        .unwrap();
        assert!(s.tls12 && s.tls13, "Protocol is ignored");
        assert_eq!(w.len(), 3, "{w:?}");
        // Options: SessionTicket and ServerPreference read; others ignored.
        let (s, w) = run(
            TlsModule::MbedTls,
            &[("Options", "-SessionTicket,ServerPreference,KTLS")],
        )
        .unwrap();
        assert!(!s.session_tickets && s.server_preference && !s.ktls);
        assert_eq!(w.len(), 1, "{w:?}");
        // mod_wolfssl does not read Ciphersuites: TLS 1.3 stays as the
        // cipher string left it.
        let cmds = vec![(
            "Ciphersuites".to_string(),
            "TLS_AES_128_GCM_SHA256".to_string(),
        )];
        let (s, w) = module_settings(
            TlsModule::WolfSsl,
            Some("ECDHE-ECDSA-AES256-GCM-SHA384"),
            None,
            &cmds,
        )
        .unwrap();
        assert!(!s.tls13 && w.len() == 1, "{w:?}");
        // MinProtocol as under mod_openssl.
        let (s, _) = run(TlsModule::WolfSsl, &[("MinProtocol", "TLSv1.3")]).unwrap();
        assert!(!s.tls12 && s.tls13);
        // Refused: a raw GnuTLS priority string; mbedTLS suite names.
        assert!(run(TlsModule::GnuTls, &[("gnutls-override", "NORMAL")]).is_err());
        assert!(run(
            TlsModule::MbedTls,
            &[("Ciphersuites", "TLS-AES-128-GCM-SHA256")]
        )
        .is_err());
        // mod_gnutls: CipherString adds to the cipher list's "-ALL" result.
        let cmds = vec![("CipherString".to_string(), "CHACHA20".to_string())];
        let (s, _) = module_settings(TlsModule::GnuTls, Some("-ALL:AES256"), None, &cmds).unwrap();
        assert_eq!(modules::bits(&s.tls12_suites), AES256 | CHACHA);
        assert_eq!(modules::bits(&s.tls13_suites), AES256 | CHACHA);
        // mod_wolfssl: an explicit TLS 1.2 list leaves TLS 1.3 off.
        let (s, _) = module_settings(
            TlsModule::WolfSsl,
            Some("ECDHE-ECDSA-AES256-GCM-SHA384"),
            None,
            &[],
        )
        .unwrap();
        assert!(s.tls12 && !s.tls13);
    }
}

//! lighttpd's TLS modules. lighttpd 1.4.69 has five (`mod_openssl`,
//! `mod_gnutls`, `mod_mbedtls`, `mod_wolfssl`, `mod_nss`); each reads the
//! same `ssl.*` options but gives `ssl.cipher-list` and some
//! `ssl.openssl.ssl-conf-cmd` keys its own meaning. glint serves all of
//! them with rustls and reads each option as the module named in
//! `server.modules` reads it.
//!
//! - `mod_openssl`, `mod_wolfssl`, `mod_nss`: OpenSSL cipher strings
//!   (wolfSSL's `SSL_CTX_set_cipher_list`, NSS through Apache mod_nss's
//!   OpenSSL-style parser), evaluated by [`super::ciphers`].
//! - `mod_gnutls`, `mod_mbedtls`: lighttpd translates a fixed set of
//!   OpenSSL-style keywords ([`keyword_ciphers`]); anything else stops
//!   lighttpd, and glint. mod_gnutls starts from GnuTLS's `NORMAL`
//!   priority and only adds ciphers, unless the string starts with `!ALL`,
//!   `-ALL`, `!DEFAULT` or `-DEFAULT`; mod_mbedtls uses the keywords' list.

use rustls::CipherSuite;

/// The TLS module a configuration loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsModule {
    #[default]
    OpenSsl,
    GnuTls,
    MbedTls,
    WolfSsl,
    Nss,
}

/// The module names, as in `server.modules`.
pub const NAMES: [(&str, TlsModule); 5] = [
    ("mod_openssl", TlsModule::OpenSsl),
    ("mod_gnutls", TlsModule::GnuTls),
    ("mod_mbedtls", TlsModule::MbedTls),
    ("mod_wolfssl", TlsModule::WolfSsl),
    ("mod_nss", TlsModule::Nss),
];

impl TlsModule {
    /// The module of that `server.modules` name, if it is a TLS module.
    pub fn from_name(name: &str) -> Option<TlsModule> {
        NAMES.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("mod_openssl", |(n, _)| n)
    }

    /// Does this module read `ssl.cipher-list` / `"CipherString"` as an
    /// OpenSSL cipher string (rather than lighttpd's keyword list)?
    pub fn openssl_cipher_strings(self) -> bool {
        matches!(
            self,
            TlsModule::OpenSsl | TlsModule::WolfSsl | TlsModule::Nss
        )
    }
}

/// Bulk ciphers rustls has, as a bit set.
const AES128: u8 = 1;
pub(super) const AES256: u8 = 2;
pub(super) const CHACHA: u8 = 4;
const ALL: u8 = AES128 | AES256 | CHACHA;

fn cipher_of(s: CipherSuite) -> u8 {
    use CipherSuite as C;
    match s {
        C::TLS13_AES_128_GCM_SHA256
        | C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        | C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => AES128,
        C::TLS13_AES_256_GCM_SHA384
        | C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        | C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => AES256,
        _ => CHACHA,
    }
}

/// The bulk ciphers of `suites`.
pub fn bits(suites: &[CipherSuite]) -> u8 {
    suites.iter().fold(0, |b, s| b | cipher_of(*s))
}

/// Keeps the suites whose bulk cipher is in `set`, in their order.
pub fn filter(suites: &[CipherSuite], set: u8) -> Vec<CipherSuite> {
    suites
        .iter()
        .copied()
        .filter(|s| cipher_of(*s) & set != 0)
        .collect()
}

/// The ciphers one keyword adds (those rustls has; CBC, CCM, CAMELLIA,
/// ARIA, 3DES, RC4, NULL and PSK suites add none); `None`: not a keyword
/// lighttpd's module knows (lighttpd then refuses to start).
fn keyword(n: &str, module: TlsModule) -> Option<u8> {
    let k = n.to_ascii_uppercase();
    let v = match k.as_str() {
        "TLSV1.3" | "TLSV1.2" | "HIGH" => ALL,
        "ECDHE+AESGCM" | "EECDH+AESGCM" | "DHE+AESGCM" | "EDH+AESGCM" | "AES" => AES128 | AES256,
        "AES256+EECDH" | "AES256+EDH" | "AES256" => AES256,
        "AES128" => AES128,
        "CHACHA20" => CHACHA,
        "TLSV1.0" | "CAMELLIA" | "CAMELLIA128" | "CAMELLIA256" | "3DES" | "NULL" | "ENULL" => 0,
        "TLSV1.1" | "ARIA" | "ARIA128" | "ARIA256" | "RC4" | "PSK"
            if module == TlsModule::MbedTls =>
        {
            0
        }
        _ => return None,
    };
    Some(v)
}

/// The TLS 1.3 suites an explicit OpenSSL-style cipher string leaves on
/// under mod_wolfssl and mod_nss (mod_openssl keeps TLS 1.3 suites apart,
/// in `"Ciphersuites"`). Measured against Debian's lighttpd 1.4.69:
/// wolfSSL keeps them for `ALL`, `HIGH` or `DEFAULT` (or TLS 1.3 suite
/// names) only; NSS matches them by bulk cipher (`AES256`, `CHACHA20`,
/// `HIGH`), never by a key-exchange or authentication alias.
pub fn tls13_of_cipher_string(module: TlsModule, s: &str) -> Vec<CipherSuite> {
    let mut on = 0u8;
    let mut off = 0u8;
    for tok in s.split([':', ' ', ',', ';']).filter(|t| !t.is_empty()) {
        let (neg, body) = match tok.as_bytes()[0] {
            b'!' | b'-' => (true, &tok[1..]),
            b'+' => continue,
            _ => (false, tok),
        };
        let mut bits = ALL;
        for part in body.split('+') {
            bits &= match (module, part) {
                (_, "ALL" | "HIGH" | "DEFAULT") => ALL,
                (_, "TLS13-AES128-GCM-SHA256" | "TLS_AES_128_GCM_SHA256") => AES128,
                (_, "TLS13-AES256-GCM-SHA384" | "TLS_AES_256_GCM_SHA384") => AES256,
                (_, "TLS13-CHACHA20-POLY1305-SHA256" | "TLS_CHACHA20_POLY1305_SHA256") => CHACHA,
                (TlsModule::Nss, "AES" | "AESGCM") => AES128 | AES256,
                (TlsModule::Nss, "AES128") => AES128,
                (TlsModule::Nss, "AES256") => AES256,
                (TlsModule::Nss, "CHACHA20") => CHACHA,
                _ => 0,
            };
        }
        if neg {
            off |= bits;
        } else {
            on |= bits & !off;
        }
    }
    filter(&super::ciphers::TLS13_DEFAULT, on & !off)
}

/// Does wolfSSL's `SSL_CTX_set_cipher_list` match anything in `s`? It
/// takes full suite names and `ALL`, `HIGH`, `DEFAULT`, skips `!`/`-`/`+`
/// items, and fails (so lighttpd fails to start) when nothing matched.
/// Measured against Debian's lighttpd 1.4.69: `AES256` and
/// `EECDH+AESGCM:CHACHA20` fail, `HIGH:!aNULL` and full names work.
pub fn wolfssl_takes(s: &str) -> bool {
    s.split(':').map(str::trim).any(wolfssl_item)
}

fn wolfssl_item(t: &str) -> bool {
    matches!(t, "ALL" | "HIGH" | "DEFAULT")
        || (t.contains('-')
            && !t.starts_with(['!', '-', '+'])
            && t.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-' || b == b'_'))
}

/// `s` without the positive items wolfSSL skips (aliases such as `AES256`),
/// so that glint offers no suite lighttpd's mod_wolfssl would not; the
/// `!`/`-`/`+` items stay (glint honours exclusions wolfSSL skips).
pub fn wolfssl_string(s: &str) -> String {
    s.split(':')
        .map(str::trim)
        .filter(|t| wolfssl_item(t) || t.starts_with(['!', '-', '+']))
        .collect::<Vec<_>>()
        .join(":")
}

/// NSS's names of the suites rustls has (lighttpd's mod_nss table).
const NSS_NAMES: [(&str, CipherSuite); 9] = [
    (
        "ecdhe_ecdsa_aes_128_gcm_sha_256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ecdhe_ecdsa_aes_256_gcm_sha_384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ecdhe_rsa_aes_256_gcm_sha_384",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ecdhe_rsa_aes_128_gcm_sha_256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ecdhe_rsa_chacha20_poly1305_sha_256",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ecdhe_ecdsa_chacha20_poly1305_sha_256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    ("aes_128_gcm_sha_256", CipherSuite::TLS13_AES_128_GCM_SHA256),
    ("aes_256_gcm_sha_384", CipherSuite::TLS13_AES_256_GCM_SHA384),
    (
        "chacha20_poly1305_sha_256",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
];

/// NSS's own cipher list form, `+name,-name` (each item must start with
/// `+` or `-`, as in lighttpd's mod_nss): the TLS 1.2 and 1.3 suites
/// enabled, in rustls's order. A name glint does not know is refused.
pub fn nss_native(s: &str, key: &str) -> Result<(Vec<CipherSuite>, Vec<CipherSuite>), String> {
    let mut on: Vec<CipherSuite> = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (enable, name) = match item.as_bytes()[0] {
            b'+' => (true, &item[1..]),
            b'-' => (false, &item[1..]),
            _ => {
                return Err(format!(
                    "{key} \"{s}\": \"{item}\": mod_nss's format is +cipher1,-cipher2"
                ))
            }
        };
        let Some((_, suite)) = NSS_NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) else {
            return Err(format!(
                "{key} \"{s}\": NSS cipher \"{name}\" is none of the suites rustls has ({})",
                NSS_NAMES.map(|(n, _)| n).join(", ")
            ));
        };
        on.retain(|x| x != suite);
        if enable {
            on.push(*suite);
        }
    }
    let all12 = super::ciphers::tls12_suites("ALL", key)?;
    let t12: Vec<CipherSuite> = all12.into_iter().filter(|x| on.contains(x)).collect();
    let t13: Vec<CipherSuite> = super::ciphers::TLS13_DEFAULT
        .into_iter()
        .filter(|x| on.contains(x))
        .collect();
    if t12.is_empty() && t13.is_empty() {
        return Err(format!("{key} \"{s}\" enables no suite"));
    }
    Ok((t12, t13))
}

/// lighttpd's default cipher list, which both modules special-case.
const DEFAULT_LISTS: [&str; 2] = [
    "ECDHE+AESGCM:ECDHE+AES256:CHACHA20:!SHA1:!SHA256:!SHA384",
    super::ciphers::LIGHTTPD_DEFAULT_CIPHER_LIST,
];

/// Evaluates a cipher string as mod_gnutls / mod_mbedtls do: the bulk
/// ciphers (of those rustls has) the socket may use, and warnings for what
/// lighttpd ignores. `key` names the option in errors. mod_gnutls appends
/// each string to one GnuTLS priority string, so a second string
/// (`"CipherString"` after `ssl.cipher-list`) adds to `prior`, the
/// ciphers the first left.
pub fn keyword_ciphers(
    s: &str,
    module: TlsModule,
    key: &str,
    prior: Option<u8>,
) -> Result<(u8, Vec<String>), String> {
    let who = module.name();
    let mut warnings = Vec::new();
    let mut rest = s;
    let mut set = 0u8;
    // mod_gnutls adds to GnuTLS's NORMAL (every cipher rustls has) unless
    // the string starts by removing all ciphers.
    let mut base = if module == TlsModule::GnuTls {
        prior.unwrap_or(ALL)
    } else {
        0
    };
    let first: [(&str, Option<u8>); 6] = [
        ("!ALL", Some(0)),
        ("-ALL", Some(0)),
        ("!DEFAULT", Some(0)),
        ("-DEFAULT", Some(0)),
        ("ALL:!COMPLEMENTOFDEFAULT:!eNULL", None),
        ("DEFAULT", None),
    ];
    if s.starts_with("SUITEB") {
        return Err(format!(
            "{key} \"{s}\": {who} reads Suite B as its own profile (certificate \
             and curve rules) that glint does not provide"
        ));
    }
    if let Some(d) = DEFAULT_LISTS.iter().find(|d| s.starts_with(*d)) {
        set = ALL;
        rest = &s[d.len()..];
    } else if let Some((p, v)) = first.iter().find(|(p, _)| s.starts_with(p)) {
        match v {
            // "-ALL" etc.: mod_gnutls empties the list; mod_mbedtls ignores it.
            Some(_) if module == TlsModule::GnuTls => base = 0,
            Some(_) => {}
            None => set = ALL,
        }
        rest = &s[p.len()..];
    }
    if rest.len() != s.len() && !(rest.is_empty() || rest.starts_with(':')) {
        return Err(format!(
            "{key} \"{s}\": {who} does not support this cipher list (lighttpd \
             1.4.69 refuses to start with it too)"
        ));
    }
    set |= keyword_tokens(s, rest, module, key, &mut warnings)?;
    let set = set | base;
    if set == 0 {
        return Err(format!(
            "{key} \"{s}\": leaves none of the ciphers rustls has \
             (AES-128-GCM, AES-256-GCM, CHACHA20-POLY1305)"
        ));
    }
    Ok((set, warnings))
}

/// The keywords of a cipher list after its leading default: the ciphers
/// they name (`s` is the whole list, for messages).
fn keyword_tokens(
    s: &str,
    rest: &str,
    module: TlsModule,
    key: &str,
    warnings: &mut Vec<String>,
) -> Result<u8, String> {
    let who = module.name();
    let mut set = 0u8;
    for tok in rest.split(':').filter(|t| !t.is_empty()) {
        if matches!(tok.as_bytes()[0], b'!' | b'-' | b'+') {
            return Err(format!(
                "{key} \"{s}\": {who} does not support \"{tok}\" (lighttpd 1.4.69 \
                 reads it as adding \"{}\"; glint will not serve ciphers the \
                 configuration meant to exclude)",
                &tok[1..]
            ));
        }
        let name = match tok.split_once('@') {
            Some((n, at)) => {
                warnings.push(format!("{key}: {who} ignores @{at} in {tok}"));
                n
            }
            None => tok,
        };
        match keyword(name, module) {
            Some(v) => set |= v,
            None => {
                return Err(format!(
                    "{key} \"{s}\": {who} does not know \"{name}\" (lighttpd 1.4.69 \
                     refuses to start with it too)"
                ))
            }
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str, m: TlsModule) -> Result<u8, String> {
        keyword_ciphers(s, m, "ssl.cipher-list", None).map(|(v, _)| v)
    }

    #[test]
    fn names() {
        for (n, m) in NAMES {
            assert_eq!(TlsModule::from_name(n), Some(m));
            assert_eq!(m.name(), n);
        }
        assert_eq!(TlsModule::from_name("mod_auth"), None);
    }

    #[test]
    fn gnutls_adds_to_normal_unless_all_is_removed_first() {
        assert_eq!(set("AES256", TlsModule::GnuTls), Ok(ALL));
        assert_eq!(set("-ALL:AES256", TlsModule::GnuTls), Ok(AES256));
        assert_eq!(set("!ALL:CHACHA20", TlsModule::GnuTls), Ok(CHACHA));
        assert!(set("!ALL:3DES", TlsModule::GnuTls).is_err());
        assert_eq!(
            set(
                super::super::ciphers::LIGHTTPD_DEFAULT_CIPHER_LIST,
                TlsModule::GnuTls
            ),
            Ok(ALL)
        );
    }

    #[test]
    fn gnutls_cipherstring_adds_to_the_cipher_list() {
        let k = |s, prior| keyword_ciphers(s, TlsModule::GnuTls, "x", prior).map(|(v, _)| v);
        assert_eq!(k("CHACHA20", Some(AES256)), Ok(AES256 | CHACHA));
        assert_eq!(k("-ALL:CHACHA20", Some(AES256)), Ok(CHACHA));
    }

    #[test]
    fn mbedtls_uses_the_keywords_list() {
        assert_eq!(set("AES256", TlsModule::MbedTls), Ok(AES256));
        assert_eq!(set("-ALL:AES128", TlsModule::MbedTls), Ok(AES128));
        assert_eq!(
            set("EECDH+AESGCM:CHACHA20@STRENGTH", TlsModule::MbedTls),
            Ok(ALL)
        );
        assert!(set("RC4", TlsModule::MbedTls).is_err(), "no suite left");
        assert!(
            set("RC4", TlsModule::GnuTls).is_err(),
            "not a mod_gnutls keyword"
        );
        assert!(set("3DES", TlsModule::GnuTls).is_ok(), "NORMAL stays");
        assert!(set("3DES", TlsModule::MbedTls).is_err(), "no suite left");
    }

    #[test]
    fn tls13_under_wolfssl_and_nss() {
        let n = |m, s| tls13_of_cipher_string(m, s).len();
        // (Debian's lighttpd 1.4.69, measured with openssl s_client.)
        assert_eq!(n(TlsModule::WolfSsl, "HIGH"), 3);
        assert_eq!(n(TlsModule::WolfSsl, "ALL"), 3);
        assert_eq!(n(TlsModule::WolfSsl, "EECDH+AESGCM:CHACHA20"), 0);
        assert_eq!(n(TlsModule::WolfSsl, "AES256"), 0);
        assert_eq!(n(TlsModule::Nss, "HIGH"), 3);
        assert_eq!(
            tls13_of_cipher_string(TlsModule::Nss, "EECDH+AESGCM:CHACHA20"),
            vec![CipherSuite::TLS13_CHACHA20_POLY1305_SHA256]
        );
        assert_eq!(
            tls13_of_cipher_string(TlsModule::Nss, "AES256"),
            vec![CipherSuite::TLS13_AES_256_GCM_SHA384]
        );
        assert_eq!(n(TlsModule::Nss, "!CHACHA20:HIGH"), 2);
    }

    #[test]
    fn wolfssl_cipher_lists() {
        assert!(wolfssl_takes("HIGH:!aNULL"));
        assert!(wolfssl_takes("ECDHE-ECDSA-AES256-GCM-SHA384"));
        assert!(wolfssl_takes("TLS13-AES128-GCM-SHA256:ALL"));
        assert!(!wolfssl_takes("AES256"));
        assert!(!wolfssl_takes("EECDH+AESGCM:CHACHA20"));
        assert!(!wolfssl_takes("!ECDHE-RSA-AES128-GCM-SHA256"));
        // Aliases beside a name wolfSSL takes add nothing there, nor here.
        assert_eq!(
            wolfssl_string("AES256:ECDHE-ECDSA-AES256-GCM-SHA384:!aNULL"),
            "ECDHE-ECDSA-AES256-GCM-SHA384:!aNULL"
        );
    }

    #[test]
    fn nss_native_lists() {
        let (t12, t13) =
            nss_native("+ecdhe_ecdsa_aes_256_gcm_sha_384,+aes_256_gcm_sha_384", "x").unwrap();
        assert_eq!(
            t12,
            vec![CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]
        );
        assert_eq!(t13, vec![CipherSuite::TLS13_AES_256_GCM_SHA384]);
        assert!(
            nss_native("ecdhe_rsa_aes_128_gcm_sha_256", "x").is_err(),
            "no sign"
        );
        assert!(nss_native("+rsa_3des_sha", "x").is_err(), "not in rustls");
        assert!(nss_native("+aes_128_gcm_sha_256,-aes_128_gcm_sha_256", "x").is_err());
    }

    #[test]
    fn refusals() {
        for s in [
            "HIGH:!aNULL",
            "AES256:!CHACHA20",
            "kRSA",
            "SUITEB128",
            "DEFAULTX",
        ] {
            assert!(set(s, TlsModule::GnuTls).is_err(), "{s}");
            assert!(set(s, TlsModule::MbedTls).is_err(), "{s}");
        }
    }
}

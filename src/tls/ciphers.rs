//! OpenSSL cipher strings (`ssl.cipher-list`, `"CipherString"`) and
//! TLS 1.3 suite lists (`"Ciphersuites"`) evaluated over the suites rustls
//! has, so a lighttpd configuration selects, in the same order, the subset
//! of what OpenSSL would have selected that rustls can offer.
//!
//! rustls offers six TLS 1.2 suites (ECDHE with RSA or ECDSA, AES-GCM or
//! ChaCha20-Poly1305); every other OpenSSL suite (CBC, RSA key exchange,
//! DHE, PSK, CAMELLIA, ...) matches nothing here, as a name OpenSSL does not
//! know matches nothing there. A string that selects none of the six is an
//! error. The evaluation follows ssl/ssl_ciph.c: the list starts in
//! OpenSSL's default order with every suite inactive; `X` appends the
//! matching inactive suites, `+X` moves the matching active ones to the end,
//! `-X` deactivates them (they keep their place for a later `X`), `!X`
//! removes them for good, `@STRENGTH` sorts by key bits; `A+B` matches
//! suites matching both.

use rustls::CipherSuite;

/// lighttpd's LIGHTTPD_DEFAULT_CIPHER_LIST, used when no cipher list is set.
pub const LIGHTTPD_DEFAULT_CIPHER_LIST: &str =
    "EECDH+AESGCM:AES256+EECDH:CHACHA20:!SHA1:!SHA256:!SHA384";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Auth {
    Rsa,
    Ecdsa,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Enc {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20,
}

struct Tls12 {
    suite: CipherSuite,
    name: &'static str,
    auth: Auth,
    enc: Enc,
}

/// The six in OpenSSL 3.0's own order (`openssl ciphers -tls1_2 ALL`).
const TLS12: [Tls12; 6] = [
    Tls12 {
        suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        name: "ECDHE-ECDSA-AES256-GCM-SHA384",
        auth: Auth::Ecdsa,
        enc: Enc::Aes256Gcm,
    },
    Tls12 {
        suite: CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        name: "ECDHE-RSA-AES256-GCM-SHA384",
        auth: Auth::Rsa,
        enc: Enc::Aes256Gcm,
    },
    Tls12 {
        suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        name: "ECDHE-ECDSA-CHACHA20-POLY1305",
        auth: Auth::Ecdsa,
        enc: Enc::Chacha20,
    },
    Tls12 {
        suite: CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        name: "ECDHE-RSA-CHACHA20-POLY1305",
        auth: Auth::Rsa,
        enc: Enc::Chacha20,
    },
    Tls12 {
        suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        name: "ECDHE-ECDSA-AES128-GCM-SHA256",
        auth: Auth::Ecdsa,
        enc: Enc::Aes128Gcm,
    },
    Tls12 {
        suite: CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        name: "ECDHE-RSA-AES128-GCM-SHA256",
        auth: Auth::Rsa,
        enc: Enc::Aes128Gcm,
    },
];

/// TLS 1.3 suites by their (OpenSSL = IANA) names, in OpenSSL's default
/// order "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256".
pub const TLS13_DEFAULT: [CipherSuite; 3] = [
    CipherSuite::TLS13_AES_256_GCM_SHA384,
    CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    CipherSuite::TLS13_AES_128_GCM_SHA256,
];
const TLS13_NAMES: [(&str, CipherSuite); 3] = [
    (
        "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ),
];
/// TLS 1.3 suites OpenSSL knows and rustls does not implement.
const TLS13_NOT_IN_RUSTLS: [&str; 2] = ["TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"];

/// The name OpenSSL (and so lighttpd's `SSL_CIPHER`) gives a suite, and its
/// key bits (`SSL_CIPHER_USEKEYSIZE`).
pub fn openssl_name(suite: CipherSuite) -> (String, u16) {
    if let Some(s) = TLS12.iter().find(|s| s.suite == suite) {
        return (s.name.to_string(), bits(s.enc));
    }
    match TLS13_NAMES.iter().find(|(_, s)| *s == suite) {
        Some((name, s)) => {
            let b = if *s == CipherSuite::TLS13_AES_128_GCM_SHA256 {
                128
            } else {
                256
            };
            (name.to_string(), b)
        }
        None => (format!("{suite:?}"), 0),
    }
}

fn bits(e: Enc) -> u16 {
    match e {
        Enc::Aes128Gcm => 128,
        Enc::Aes256Gcm | Enc::Chacha20 => 256,
    }
}

/// Does OpenSSL alias (or full suite name) `a` take in suite `s`?
fn alias_matches(a: &str, s: &Tls12) -> bool {
    match a {
        "ALL" | "HIGH" | "TLSv1.2" | "kECDHE" | "kEECDH" | "ECDHE" | "EECDH" | "ECDH" => true,
        "aRSA" => s.auth == Auth::Rsa,
        "aECDSA" | "ECDSA" => s.auth == Auth::Ecdsa,
        "AES" | "AESGCM" | "FIPS" => s.enc != Enc::Chacha20,
        "AES128" => s.enc == Enc::Aes128Gcm,
        "AES256" => s.enc == Enc::Aes256Gcm,
        "CHACHA20" => s.enc == Enc::Chacha20,
        name => name == s.name,
    }
}

/// (index into TLS12, active), in preference order; killed suites leave.
type List = Vec<(usize, bool)>;

#[derive(Clone, Copy)]
enum Op {
    Add,
    Order,
    Del,
    Kill,
}

/// Evaluates an OpenSSL cipher string to the TLS 1.2 suites rustls offers,
/// most preferred first. `key` names the option in error messages.
pub fn tls12_suites(cipher_string: &str, key: &str) -> Result<Vec<CipherSuite>, String> {
    let mut list: List = (0..TLS12.len()).map(|i| (i, false)).collect();
    let mut rest = cipher_string.trim();
    if let Some(r) = rest.strip_prefix("DEFAULT") {
        // OpenSSL expands a leading DEFAULT to "ALL:!COMPLEMENTOFDEFAULT:!eNULL".
        for e in &mut list {
            e.1 = true;
        }
        rest = r;
    }
    let items = rest.split([':', ' ', ',', ';']).filter(|i| !i.is_empty());
    for item in items {
        let (op, body) = match item.as_bytes()[0] {
            b'!' => (Op::Kill, &item[1..]),
            b'-' => (Op::Del, &item[1..]),
            b'+' => (Op::Order, &item[1..]),
            _ => (Op::Add, item),
        };
        if let Some(cmd) = body.strip_prefix('@') {
            special(cmd, &mut list, key, cipher_string)?;
            continue;
        }
        if body.starts_with("SUITEB") {
            return Err(format!(
                "{key} \"{cipher_string}\": {body} (Suite B) has no rustls meaning"
            ));
        }
        let parts: Vec<&str> = body.split('+').collect();
        let matches = |i: usize| parts.iter().all(|p| alias_matches(p, &TLS12[i]));
        apply(&mut list, op, matches);
    }
    let out: Vec<CipherSuite> = list
        .iter()
        .filter(|e| e.1)
        .map(|e| TLS12[e.0].suite)
        .collect();
    if out.is_empty() {
        return Err(format!(
            "{key} \"{cipher_string}\" selects none of the TLS 1.2 suites rustls \
             offers ({})",
            TLS12.map(|s| s.name).join(":")
        ));
    }
    Ok(out)
}

fn apply(list: &mut List, op: Op, matches: impl Fn(usize) -> bool) {
    match op {
        Op::Add | Op::Order => {
            let want_active = matches!(op, Op::Order);
            let (mut moved, kept): (List, List) = list
                .iter()
                .partition(|e| e.1 == want_active && matches(e.0));
            for e in &mut moved {
                e.1 = true;
            }
            *list = kept.into_iter().chain(moved).collect();
        }
        Op::Del => {
            // Deleted suites go to the head, keeping their order, so a later
            // add picks them up first (ssl_cipher_apply_rule's CIPHER_DEL).
            let (mut moved, kept): (List, List) = list.iter().partition(|e| e.1 && matches(e.0));
            for e in &mut moved {
                e.1 = false;
            }
            *list = moved.into_iter().chain(kept).collect();
        }
        Op::Kill => list.retain(|e| !matches(e.0)),
    }
}

fn special(cmd: &str, list: &mut List, key: &str, whole: &str) -> Result<(), String> {
    if cmd == "STRENGTH" {
        // Stable sort of the active suites by key bits, strongest first;
        // inactive ones stay ahead of them as in ssl_cipher_strength_sort.
        let (inactive, mut active): (List, List) = list.iter().partition(|e| !e.1);
        active.sort_by_key(|e| std::cmp::Reverse(bits(TLS12[e.0].enc)));
        *list = inactive.into_iter().chain(active).collect();
        return Ok(());
    }
    if let Some(level) = cmd.strip_prefix("SECLEVEL=") {
        return seclevel(level).map_err(|e| format!("{key} \"{whole}\": {e}"));
    }
    Err(format!("{key} \"{whole}\": @{cmd} has no rustls meaning"))
}

/// OpenSSL security levels 0-2 ask for nothing rustls does not already do
/// (level 2: 112-bit security, which every rustls suite and group meets);
/// level 3 and up add key-size and ticket rules rustls has no switch for.
pub fn seclevel(level: &str) -> Result<(), String> {
    match level.trim().parse::<u8>() {
        Ok(0..=2) => Ok(()),
        _ => Err(format!(
            "security level {level} has no rustls meaning (0 to 2 are what rustls does)"
        )),
    }
}

/// Evaluates an OpenSSL TLS 1.3 "Ciphersuites" list (colon-separated
/// names). Names rustls lacks (the CCM suites) are dropped with a warning;
/// a name that is no TLS 1.3 suite is an error. Empty means no TLS 1.3.
pub fn tls13_suites(list: &str) -> Result<(Vec<CipherSuite>, Vec<String>), String> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for name in list.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        if let Some((_, s)) = TLS13_NAMES.iter().find(|(n, _)| *n == name) {
            if !out.contains(s) {
                out.push(*s);
            }
        } else if TLS13_NOT_IN_RUSTLS.contains(&name) {
            warnings.push(format!(
                "ssl.openssl.ssl-conf-cmd \"Ciphersuites\": {name} is not in rustls; left out"
            ));
        } else {
            return Err(format!(
                "ssl.openssl.ssl-conf-cmd \"Ciphersuites\" \"{list}\": {name} is not a TLS 1.3 suite"
            ));
        }
    }
    if out.is_empty() && !list.trim().is_empty() {
        return Err(format!(
            "ssl.openssl.ssl-conf-cmd \"Ciphersuites\" \"{list}\" selects no suite rustls offers"
        ));
    }
    Ok((out, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Result<Vec<String>, String> {
        tls12_suites(s, "CipherString").map(|v| v.into_iter().map(|s| openssl_name(s).0).collect())
    }

    #[test]
    fn table() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "lighttpd's default: GCM before ChaCha",
                LIGHTTPD_DEFAULT_CIPHER_LIST,
                Some("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"),
            ),
            (
                "Debian 10-ssl.conf style list; DHE parts match nothing",
                "EECDH+AESGCM:EDH+AESGCM:AES128+EECDH:AES128+EDH",
                Some("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"),
            ),
            ("kill ECDSA", "HIGH:!aECDSA", Some("ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256")),
            ("a deleted suite is re-added first", "ALL:-AES128:AES128", Some("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256")),
            ("a killed suite is never re-added", "!CHACHA20:ALL", Some("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256")),
            ("+ moves to the end", "AESGCM+aRSA:CHACHA20+aRSA:+AES256", Some("ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES256-GCM-SHA384")),
            ("@STRENGTH sorts by bits", "AES128:CHACHA20:@STRENGTH", Some("ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256")),
            ("a full name", "ECDHE-RSA-AES128-GCM-SHA256", Some("ECDHE-RSA-AES128-GCM-SHA256")),
            ("DEFAULT then a kill", "DEFAULT:!aRSA", Some("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256")),
            ("only CBC suites: nothing rustls has", "AES128-SHA:AES256-SHA", None),
            ("SHA256 is the HMAC, not the PRF", "SHA256", None),
            ("Suite B has no rustls meaning", "SUITEB128", None),
            ("@SECLEVEL=3 has no rustls meaning", "HIGH:@SECLEVEL=3", None),
            ("@SECLEVEL=2 is met", "HIGH:@SECLEVEL=2", Some("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256")),
        ];
        for (what, input, want) in cases {
            let got = names(input);
            match want {
                Some(w) => assert_eq!(
                    got.as_ref().map(|v| v.join(":")).as_deref(),
                    Ok(*w),
                    "{what}"
                ),
                None => assert!(got.is_err(), "{what}: {got:?}"),
            }
        }
    }

    /// The evaluator against the real OpenSSL: the same strings must give
    /// OpenSSL's list with the suites rustls lacks left out.
    #[test]
    fn agrees_with_the_openssl_command() {
        let strings = [
            LIGHTTPD_DEFAULT_CIPHER_LIST,
            "EECDH+AESGCM:EDH+AESGCM:AES128+EECDH:AES128+EDH",
            "HIGH:!aNULL:!MD5",
            "ALL:-AES256:+AES128:AES256",
            "CHACHA20:AES128:@STRENGTH",
            "aRSA+AESGCM:aECDSA:-CHACHA20:CHACHA20+aRSA",
        ];
        for s in strings {
            let out = match std::process::Command::new("openssl")
                .args(["ciphers", "-tls1_2", s])
                .output()
            {
                Ok(o) if o.status.success() => o,
                _ => {
                    eprintln!("skipping: the openssl command is not available");
                    return;
                }
            };
            let theirs: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .trim()
                .split(':')
                .filter(|n| TLS12.iter().any(|t| t.name == *n))
                .map(String::from)
                .collect();
            assert_eq!(names(s).unwrap(), theirs, "{s}");
        }
    }

    #[test]
    fn tls13_lists() {
        let (v, w) = tls13_suites("TLS_AES_128_GCM_SHA256:TLS_AES_128_CCM_SHA256").unwrap();
        assert_eq!(v, vec![CipherSuite::TLS13_AES_128_GCM_SHA256]);
        assert_eq!(w.len(), 1);
        assert!(tls13_suites("TLS_AES_128_CCM_8_SHA256").is_err());
        assert!(tls13_suites("TLS_AES_999").is_err());
        assert_eq!(tls13_suites("").unwrap().0, vec![]);
    }
}

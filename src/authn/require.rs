//! `auth.require` and `auth.backend` as lighttpd 1.4.69's mod_auth parses them.
//!
//! ```text
//! auth.require = ( "/prefix" => ( "method"    => "basic" | "digest" | "extern",
//!                                 "realm"     => "...",
//!                                 "require"   => "valid-user" | "user=a|user=b|group=g|host=h",
//!                                 "algorithm" => "MD5|SHA-256",        # digest; default MD5
//!                                 "nonce-secret" => "...",             # or "nonce_secret"
//!                                 "userhash"  => "enable" ) )
//! ```
//!
//! The config layer hands each rule over as `(prefix, [(key, OptValue)])`
//! ([`parse_require`]); every bad key or value is an error naming it, and the
//! caller adds `file:line`. Two points where glint is stricter than lighttpd,
//! which silently falls back: `"userhash"` must be a boolean word, and a realm
//! may not hold control characters (it goes into a response header).
//!
//! Groups and hosts: lighttpd parses `group=` and `host=` (warning that `host`
//! is not implemented) but every backend, the file ones included, matches
//! with no group and no host, so only `user=` and `valid-user` ever grant.
//! [`Require::matches`] takes groups and a host so a later backend can supply
//! them; the file backends pass none, as lighttpd does.

use super::algorithm::DigestAlgorithm;
use super::nonce::NonceKey;
use std::sync::atomic::{AtomicU32, Ordering};

/// A config value as the config layer has it, reduced to what auth needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptValue {
    /// `"text"`.
    Str(String),
    /// `123`.
    Int(i64),
    /// `( ... )`: never valid inside an auth.require rule.
    Array,
}

/// `"method"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// RFC 7617.
    Basic,
    /// RFC 7616.
    Digest,
    /// Someone else (TLS client certificates, `auth.extern-authn`) set `REMOTE_USER`.
    Extern,
    /// mod_authn_gssapi's SPNEGO (RFC 4559, `Authorization: Negotiate`).
    Gssapi,
}

/// `auth.backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// `auth.backend.plain.userfile`: `user:password`.
    Plain,
    /// `auth.backend.htpasswd.userfile`: `user:hash`; Basic only.
    Htpasswd,
    /// `auth.backend.htdigest.userfile`: `user:realm:HA1`.
    Htdigest,
    /// mod_authn_ldap (`auth.backend.ldap.*`); Basic only.
    Ldap,
    /// mod_authn_pam (`auth.backend.pam.opts`); Basic only.
    Pam,
    /// mod_authn_sasl (`auth.backend.sasl.opts`, saslauthd); Basic only.
    Sasl,
    /// mod_authn_dbi (`auth.backend.dbi`, an SQL database); Basic only.
    Dbi,
    /// mod_authn_gssapi (`auth.backend.gssapi.*`, Kerberos); Basic only.
    Gssapi,
}

impl BackendKind {
    /// The check asks someone else and blocks: it runs off the loop.
    pub fn is_blocking(self) -> bool {
        matches!(
            self,
            BackendKind::Ldap
                | BackendKind::Pam
                | BackendKind::Sasl
                | BackendKind::Dbi
                | BackendKind::Gssapi
        )
    }
}

/// `auth.backend = "..."`: `""` is "none" (and lighttpd 1.4.69 has no
/// `mysql` back end any more: it was removed for `dbi` with
/// `"dbtype" => "mysql"`).
pub fn parse_backend(s: &str) -> Result<Option<BackendKind>, String> {
    match s {
        "" => Ok(None),
        "plain" => Ok(Some(BackendKind::Plain)),
        "htpasswd" => Ok(Some(BackendKind::Htpasswd)),
        "htdigest" => Ok(Some(BackendKind::Htdigest)),
        "ldap" => Ok(Some(BackendKind::Ldap)),
        "pam" => Ok(Some(BackendKind::Pam)),
        "sasl" => Ok(Some(BackendKind::Sasl)),
        "dbi" => Ok(Some(BackendKind::Dbi)),
        "gssapi" => Ok(Some(BackendKind::Gssapi)),
        "mysql" => Err(
            "auth.backend not supported: \"mysql\" (lighttpd 1.4.69 has no mod_authn_mysql; use \"dbi\" with auth.backend.dbi's \"dbtype\" => \"mysql\")"
                .into(),
        ),
        other => Err(format!(
            "auth.backend not supported: \"{other}\" (glint has \"plain\", \"htpasswd\", \"htdigest\", \"ldap\", \"pam\", \"sasl\", \"dbi\", \"gssapi\")"
        )),
    }
}

/// Who a rule lets in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// `valid-user`: anyone the backend authenticates.
    pub valid_user: bool,
    /// `user=name` entries, compared case-sensitively.
    pub users: Vec<String>,
    /// `group=name` entries.
    pub groups: Vec<String>,
    /// `host=name` entries.
    pub hosts: Vec<String>,
}

/// One parsed `auth.require` entry.
#[derive(Clone, Debug)]
pub struct Require {
    /// Unique per parsed rule in this process: the auth cache keys on it, as
    /// lighttpd keys on the rule's address (realm and permissions together).
    pub id: u32,
    pub method: Method,
    pub realm: String,
    /// Digest algorithms offered, strongest first. `-sess` in the config adds
    /// nothing: lighttpd always accepts the `-sess` form of an offered algorithm.
    pub algorithms: Vec<DigestAlgorithm>,
    /// From `"nonce-secret"`; `None` means the per-process key.
    pub nonce_key: Option<NonceKey>,
    /// Offer RFC 7616 `userhash=true` in the challenge.
    pub userhash: bool,
    pub rule: Rule,
}

impl Require {
    /// lighttpd's `http_auth_match_rules`: the user is allowed if the rule is
    /// `valid-user` or lists them, or lists one of `groups`, or lists `host`.
    pub fn matches(&self, user: Option<&str>, groups: &[&str], host: Option<&str>) -> bool {
        let r = &self.rule;
        if let Some(u) = user {
            if r.valid_user || r.users.iter().any(|x| x == u) {
                return true;
            }
        }
        if groups.iter().any(|g| r.groups.iter().any(|x| x == g)) {
            return true;
        }
        host.is_some_and(|h| r.hosts.iter().any(|x| x == h))
    }
}

/// The parsed `auth.require` of one config scope, in config order.
#[derive(Clone, Debug, Default)]
pub struct RequireTable {
    pub rules: Vec<(String, Require)>,
}

impl RequireTable {
    /// The first rule whose prefix starts `path`, in config order (lighttpd's
    /// `array_match_key_prefix`); ASCII case-blind when `case_blind`.
    pub fn lookup(&self, path: &str, case_blind: bool) -> Option<&Require> {
        self.rules.iter().find_map(|(prefix, req)| {
            let p = path.as_bytes().get(..prefix.len())?;
            let hit = if case_blind {
                p.eq_ignore_ascii_case(prefix.as_bytes())
            } else {
                p == prefix.as_bytes()
            };
            hit.then_some(req)
        })
    }
}

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// Parses `auth.require`. Returns the table and warnings to log (`host=`).
pub fn parse_require(
    entries: &[(String, Vec<(String, OptValue)>)],
) -> Result<(RequireTable, Vec<String>), String> {
    let mut table = RequireTable::default();
    let mut warnings = Vec::new();
    for (prefix, opts) in entries {
        let req = parse_one(prefix, opts, &mut warnings)?;
        table.rules.push((prefix.clone(), req));
    }
    Ok((table, warnings))
}

fn parse_one(
    prefix: &str,
    opts: &[(String, OptValue)],
    warnings: &mut Vec<String>,
) -> Result<Require, String> {
    let at = |key: &str| field_at(prefix, key);
    let (mut method, mut realm, mut require, mut algos, mut secret, mut userhash) =
        (None, None, None, None, None, None);
    for (key, value) in opts {
        let s = match value {
            OptValue::Str(s) => s.as_str(),
            _ => return Err(format!("a string was expected for {}", at(key))),
        };
        let slot = match key.as_str() {
            "method" => &mut method,
            "realm" => &mut realm,
            "require" => &mut require,
            "algorithm" => &mut algos,
            "nonce_secret" | "nonce-secret" => &mut secret,
            "userhash" => &mut userhash,
            _ => return Err(format!("unknown field \"{key}\" in {} (expected method, realm, require, algorithm, nonce-secret, userhash)", at(key))),
        };
        *slot = Some(s);
    }
    let method = parse_method(prefix, method)?;
    let realm = realm.ok_or_else(|| format!("the realm field is missing in {}", at("realm")))?;
    if realm.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(format!(
            "realm \"{}\" holds a control character in {}",
            realm.escape_debug(),
            at("realm")
        ));
    }
    let require = require
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| format!("the require field is missing or blank in {}", at("require")))?;
    let algorithms = match algos.filter(|a| !a.trim().is_empty()) {
        None => vec![DigestAlgorithm::Md5],
        Some(a) => parse_algorithms(a).map_err(|bad| format!("invalid algorithm \"{bad}\" in \"{a}\" (expected MD5, SHA-256, SHA-512-256, each optionally -sess, joined by '|') in {}", at("algorithm")))?,
    };
    let userhash = match userhash {
        None => false,
        Some(v) => parse_bool(v).ok_or_else(|| {
            format!(
                "userhash \"{v}\" is not enable/disable/true/false/1/0 in {}",
                at("userhash")
            )
        })?,
    };
    let rule = parse_rule(require).map_err(|e| format!("{e} in {}", at("require")))?;
    if !rule.hosts.is_empty() {
        warnings.push(format!(
            "auth.require \"{prefix}\": 'host' not implemented; field value: {require}"
        ));
    }
    Ok(Require {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        method,
        realm: realm.to_string(),
        algorithms,
        nonce_key: secret.map(NonceKey::from_secret),
        userhash,
        rule,
    })
}

/// Where a field of rule `prefix` is, for messages.
fn field_at(prefix: &str, key: &str) -> String {
    format!("auth.require = ( \"{prefix}\" => ( \"{key}\" => ... ) )")
}

/// The rule's `method` field, which must be there and be one glint knows.
fn parse_method(prefix: &str, method: Option<&str>) -> Result<Method, String> {
    Ok(match method.filter(|m| !m.trim().is_empty()) {
        None => {
            return Err(format!(
                "the method field is missing or blank in {}",
                field_at(prefix, "method")
            ))
        }
        Some("basic") => Method::Basic,
        Some("digest") => Method::Digest,
        Some("extern") => Method::Extern,
        Some("gssapi") => Method::Gssapi,
        Some(m) => {
            return Err(format!(
                "unknown method \"{m}\" (expected \"basic\", \"digest\", \"extern\" or \"gssapi\") in {}",
                field_at(prefix, "method")
            ))
        }
    })
}

/// `"MD5|SHA-256"` into algorithms offered, strongest first (the order
/// lighttpd sends the challenges in). `Err` holds the bad piece.
pub fn parse_algorithms(s: &str) -> Result<Vec<DigestAlgorithm>, String> {
    let mut out = Vec::new();
    for piece in s.split('|') {
        let (algo, _sess) = DigestAlgorithm::parse(piece).ok_or_else(|| piece.to_string())?;
        if !out.contains(&algo) {
            out.push(algo);
        }
    }
    out.sort_by_key(|a| std::cmp::Reverse(a.strength()));
    Ok(out)
}

/// lighttpd's boolean words (config_plugin_value_tobool), case-blind.
fn parse_bool(v: &str) -> Option<bool> {
    let v = v.to_ascii_lowercase();
    match v.as_str() {
        "enable" | "enabled" | "true" | "1" => Some(true),
        "disable" | "disabled" | "false" | "0" => Some(false),
        _ => None,
    }
}

const EXPECT: &str = "(expecting \"valid-user\" or \"user=a|user=b|group=g|host=h\")";

/// The `"require"` value.
pub fn parse_rule(s: &str) -> Result<Rule, String> {
    let mut rule = Rule::default();
    if s == "valid-user" {
        rule.valid_user = true;
        return Ok(rule);
    }
    // lighttpd stops at an empty piece after a trailing '|'; a '||' in the
    // middle reaches the '=' check and fails, as here.
    let s = s.strip_suffix('|').unwrap_or(s);
    for piece in s.split('|') {
        let (kind, name) = piece.split_once('=').ok_or_else(|| {
            format!("error parsing 'require' field \"{s}\": missing '=' near \"{piece}\" {EXPECT}")
        })?;
        if name.is_empty() {
            return Err(format!("error parsing 'require' field \"{s}\": missing token after '=' near \"{piece}\" {EXPECT}"));
        }
        match kind {
            "user" => rule.users.push(name.to_string()),
            "group" => rule.groups.push(name.to_string()),
            "host" => rule.hosts.push(name.to_string()),
            "valid-user" => {
                return Err(format!("error parsing 'require' field \"{s}\": valid-user can not be combined with other require rules {EXPECT}"))
            }
            _ => return Err(format!("error parsing 'require' field \"{s}\": invalid/unsupported token \"{kind}\" {EXPECT}")),
        }
    }
    Ok(rule)
}

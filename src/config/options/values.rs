//! Readers of option values: a [`Value`] checked and turned into the type a
//! `Settings` field holds, with the error text the option's line reports.

use crate::authn::require::OptValue;
use crate::config::pattern::Pattern;
use crate::config::value::Value;

pub(super) fn string(v: &Value) -> Result<String, String> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        other => Err(format!("expects a string, got {}", other.type_name())),
    }
}

pub(super) fn integer(v: &Value, max: u64) -> Result<u64, String> {
    let n = match v {
        Value::Int(i) => u64::try_from(*i).map_err(|_| "must not be negative".to_string())?,
        Value::Str(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s
            .parse::<u64>()
            .map_err(|_| format!("integer {s} is too large"))?,
        other => return Err(format!("expects an integer, got {}", other.type_name())),
    };
    if n > max {
        return Err(format!("value {n} is out of range (at most {max})"));
    }
    Ok(n)
}

pub(super) fn uint16(v: &Value) -> Result<u16, String> {
    integer(v, u64::from(u16::MAX)).map(|n| n as u16)
}

pub(super) fn uint32(v: &Value) -> Result<u32, String> {
    integer(v, u64::from(u32::MAX)).map(|n| n as u32)
}

/// lighttpd's booleans: "enable"/"disable" (also "true"/"false", any case) or an integer.
pub(super) fn boolean(v: &Value) -> Result<bool, String> {
    match v {
        Value::Int(i) => Ok(*i != 0),
        Value::Str(s) if s.eq_ignore_ascii_case("enable") || s.eq_ignore_ascii_case("true") => {
            Ok(true)
        }
        Value::Str(s) if s.eq_ignore_ascii_case("disable") || s.eq_ignore_ascii_case("false") => {
            Ok(false)
        }
        Value::Str(s) => Err(format!("expects \"enable\" or \"disable\", got \"{s}\"")),
        Value::Array(_) => Err("expects \"enable\" or \"disable\", got an array".into()),
    }
}

/// A list of strings: an array of strings (keys ignored) or one string.
pub(super) fn list(v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::Str(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|(_, v)| match v {
                Value::Str(s) => Ok(s.clone()),
                other => Err(format!(
                    "expects an array of strings, found {}",
                    other.type_name()
                )),
            })
            .collect(),
        Value::Int(_) => Err("expects an array of strings, got an integer".into()),
    }
}

/// A list of `"key" => "value"` pairs.
pub(super) fn pairs(v: &Value) -> Result<Vec<(String, String)>, String> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|(k, v)| match (k, v) {
                (Some(k), Value::Str(s)) => Ok((k.clone(), s.clone())),
                (None, _) => Err("expects an array of \"key\" => \"value\" pairs".to_string()),
                (Some(k), other) => Err(format!(
                    "expects a string for key \"{k}\", found {}",
                    other.type_name()
                )),
            })
            .collect(),
        other => Err(format!(
            "expects an array of \"key\" => \"value\" pairs, got {}",
            other.type_name()
        )),
    }
}

/// Pairs whose keys are regular expressions (`url.redirect`, `url.rewrite-*`).
pub(super) fn regex_pairs(v: &Value) -> Result<Vec<(Pattern, String)>, String> {
    pairs(v)?
        .into_iter()
        .map(|(re, to)| Ok((Pattern::new(&re)?, to)))
        .collect()
}

/// A list of regular expressions (`dir-listing.exclude`).
pub(super) fn regex_list(v: &Value) -> Result<Vec<Pattern>, String> {
    list(v)?.iter().map(|re| Pattern::new(re)).collect()
}

/// A file mode written in octal, as `chmod` takes it (`"0660"`, `"600"`).
pub(super) fn octal_mode(v: &Value) -> Result<u32, String> {
    let s = string(v)?;
    match u32::from_str_radix(&s, 8) {
        Ok(m) if !s.is_empty() && m <= 0o7777 => Ok(m),
        _ => Err(format!(
            "expects an octal file mode such as \"0660\", got \"{s}\""
        )),
    }
}

/// `"key" => value` pairs whose values are strings or integers, as text
/// (`extforward.params = ( "remote_user" => 1 )`).
pub(super) fn text_pairs(v: &Value) -> Result<Vec<(String, String)>, String> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|(k, v)| match (k, v) {
                (Some(k), Value::Str(s)) => Ok((k.clone(), s.clone())),
                (Some(k), Value::Int(i)) => Ok((k.clone(), i.to_string())),
                (None, _) => Err("expects an array of \"key\" => \"value\" pairs".to_string()),
                (Some(k), other) => Err(format!(
                    "expects a string for key \"{k}\", found {}",
                    other.type_name()
                )),
            })
            .collect(),
        other => Err(format!(
            "expects an array of \"key\" => \"value\" pairs, got {}",
            other.type_name()
        )),
    }
}

/// Pairs naming request headers: a name must be a header token and a value
/// hold no CR, LF or NUL (it reaches a backend as a header or a variable).
pub(super) fn header_pairs(v: &Value) -> Result<Vec<(String, String)>, String> {
    let p = pairs(v)?;
    for (k, val) in &p {
        if k.is_empty()
            || !k
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
        {
            return Err(format!("\"{k}\" is not a header name"));
        }
        if val.bytes().any(|c| c == b'\r' || c == b'\n' || c == 0) {
            return Err(format!("the value for \"{k}\" holds CR, LF or NUL"));
        }
    }
    Ok(p)
}

/// A string option where a blank value means unset (lighttpd's
/// `buffer_is_blank` checks).
pub(super) fn nonblank(v: &Value) -> Result<Option<String>, String> {
    Ok(Some(string(v)?).filter(|s| !s.trim().is_empty()))
}

/// `dir-listing.show-readme` / `show-header`: `enable` names the usual
/// file, `disable` (or blank) none, anything else is the file's name,
/// which must be a plain name in the directory.
pub(super) fn shown_file(v: &Value, usual: &str) -> Result<Option<String>, String> {
    let t = match v {
        Value::Int(i) => {
            if *i != 0 {
                return Ok(Some(usual.to_string()));
            }
            return Ok(None);
        }
        _ => string(v)?,
    };
    match t.as_str() {
        "" | "disable" => Ok(None),
        "enable" => Ok(Some(usual.to_string())),
        name if name.contains('/') || name == "." || name == ".." => Err(format!(
            "\"{name}\" must be the name of a file in the listed directory"
        )),
        name => Ok(Some(name.to_string())),
    }
}

/// `alias.url`: prefix => path pairs. As lighttpd (`mod_alias_check_order`),
/// a prefix listed after a shorter one that starts it is an error: it could
/// never match, since the first matching prefix wins there.
pub(super) fn alias_url(v: &Value) -> Result<Vec<(String, String)>, String> {
    let p = pairs(v)?;
    for (i, (k, t)) in p.iter().enumerate() {
        if k.is_empty() {
            return Err("an empty URL prefix would alias every path".into());
        }
        if t.is_empty() {
            return Err(format!("the path for \"{k}\" is empty"));
        }
        if let Some((short, _)) = p[..i].iter().find(|(s, _)| k.starts_with(s.as_str())) {
            return Err(format!(
                "url-prefix \"{k}\" is never used: \"{short}\" before it matches first (list the longer prefix first)"
            ));
        }
    }
    Ok(p)
}

/// A config value as mod_auth's parser takes it.
pub(super) fn opt_value(v: &Value) -> OptValue {
    match v {
        Value::Str(s) => OptValue::Str(s.clone()),
        Value::Int(i) => OptValue::Int(*i),
        Value::Array(_) => OptValue::Array,
    }
}

/// One `auth.require` entry: its prefix and its options.
pub type AuthRule = (String, Vec<(String, OptValue)>);

/// `auth.require = ( "/prefix" => ( "method" => ..., ... ), ... )` as
/// [`crate::authn::require::parse_require`] takes it.
pub fn auth_require_entries(v: &Value) -> Result<Vec<AuthRule>, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "expects ( \"/prefix\" => ( \"method\" => ..., ... ) ), got {}",
            v.type_name()
        ));
    };
    items
        .iter()
        .map(|(k, rule)| {
            let Some(prefix) = k else {
                return Err("each rule needs a \"/prefix\" => ( ... ) key".to_string());
            };
            let Value::Array(opts) = rule else {
                return Err(format!(
                    "the rule for \"{prefix}\" must be an array of \"key\" => \"value\""
                ));
            };
            let opts = opts
                .iter()
                .map(|(k, v)| match k {
                    Some(k) => Ok((k.clone(), opt_value(v))),
                    None => Err(format!(
                        "the rule for \"{prefix}\" must be an array of \"key\" => \"value\""
                    )),
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok((prefix.clone(), opts))
        })
        .collect()
}

/// `auth.cache = ( "max-age" => "600" )`: the seconds an entry lives.
pub(super) fn auth_cache(v: &Value) -> Result<i64, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "expects ( \"max-age\" => \"600\" ), got {}",
            v.type_name()
        ));
    };
    let opts: Vec<(String, OptValue)> = items
        .iter()
        .map(|(k, v)| (k.clone().unwrap_or_default(), opt_value(v)))
        .collect();
    crate::authn::cache::parse_cache_options(&opts).map(|o| o.max_age)
}

/// The pairs of an `extforward.forwarder`, as [`crate::forwarded::options::Trust::parse`]
/// takes them.
pub(super) fn borrowed_pairs(p: &[(String, String)]) -> Vec<(&str, &str)> {
    p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

pub(super) fn array(v: &Value) -> Result<Value, String> {
    match v {
        Value::Array(_) => Ok(v.clone()),
        other => Err(format!("expects an array, got {}", other.type_name())),
    }
}

/// A configuration value as [`crate::compress`] takes it.
pub(super) fn deflate_value(v: &Value) -> crate::compress::OptValue {
    use crate::compress::OptValue as D;
    match v {
        Value::Str(s) => D::Str(s.clone()),
        Value::Int(i) => D::Int(*i),
        Value::Array(items) => D::List(
            items
                .iter()
                .map(|(k, v)| (k.clone(), deflate_value(v)))
                .collect(),
        ),
    }
}

/// A configuration value in the shape [`crate::httpup`] reads (one to one).
pub fn conf_value(v: &Value) -> crate::httpup::ConfValue {
    use crate::httpup::ConfValue;
    match v {
        Value::Str(s) => ConfValue::Str(s.clone()),
        Value::Int(i) => ConfValue::Int(*i),
        Value::Array(items) => ConfValue::Array(
            items
                .iter()
                .map(|(k, v)| (k.clone(), conf_value(v)))
                .collect(),
        ),
    }
}

/// The value of flag `name` in `server.feature-flags`, if set.
pub(super) fn feature_flag(v: &Value, name: &str) -> Result<Option<bool>, String> {
    let Value::Array(items) = v else {
        return Ok(None);
    };
    match items.iter().find(|(k, _)| k.as_deref() == Some(name)) {
        Some((_, v)) => boolean(v).map(Some).map_err(|e| format!("{name}: {e}")),
        None => Ok(None),
    }
}

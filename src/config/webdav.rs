//! mod_webdav's options of one scope (`webdav.*`), typed once when the
//! configuration is loaded.

use super::value::Value;

/// `webdav.opts` flags, as lighttpd 1.4.69 names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WebdavOpts {
    /// `"deprecated-unsafe-partial-put" => "enable"`: a `Content-Range` PUT
    /// writes into the file in place.
    pub unsafe_partial_put: bool,
    /// `"propfind-depth-infinity" => "enable"`: PROPFIND may ask for
    /// `Depth: infinity` (else 403 `propfind-finite-depth`).
    pub depth_infinity: bool,
    /// `"unsafe-propfind-follow-symlink" => "enable"`: PROPFIND follows
    /// symlinks (only on a read-only share).
    pub propfind_follow_symlink: bool,
    /// `"partial-put-copy-modify" => "enable"`: a `Content-Range` PUT
    /// copies the file, modifies the copy and renames it over the original.
    pub partial_put_copy_modify: bool,
}

/// mod_webdav's settings of one scope.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WebdavSettings {
    /// `webdav.activate` (default disable).
    pub activate: bool,
    /// `webdav.is-readonly` (default disable): no method may write.
    pub is_readonly: bool,
    /// `webdav.log-xml` (default disable): request and answer XML bodies
    /// go to the error log.
    pub log_xml: bool,
    /// `webdav.sqlite-db-name`: the SQLite file of dead properties and
    /// locks; blank or unset: no PROPPATCH, no locks (as lighttpd).
    pub sqlite_db_name: Option<String>,
    /// `webdav.opts`.
    pub opts: WebdavOpts,
}

impl WebdavOpts {
    /// Parses `webdav.opts` as lighttpd 1.4.69 does: each key must be one
    /// it knows with a true value; anything else (a known key set to
    /// "disable" included) is "unrecognized webdav.opts" and stops the start.
    pub fn parse(v: &Value) -> Result<WebdavOpts, String> {
        let Value::Array(items) = v else {
            return Err(format!("expects an array, got {}", v.type_name()));
        };
        let mut o = WebdavOpts::default();
        for (k, val) in items {
            let key = k.as_deref().unwrap_or("");
            match key {
                "deprecated-unsafe-partial-put" if truthy(val) => o.unsafe_partial_put = true,
                "propfind-depth-infinity" if truthy(val) => o.depth_infinity = true,
                "unsafe-propfind-follow-symlink" if truthy(val) => o.propfind_follow_symlink = true,
                "partial-put-copy-modify" if truthy(val) => o.partial_put_copy_modify = true,
                _ => return Err(format!("unrecognized webdav.opts: {key}")),
            }
        }
        Ok(o)
    }
}

/// lighttpd's `config_plugin_value_tobool` with a false default: "enable",
/// "enabled", "true", "1" (any case) or a non-zero integer.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Int(i) => *i != 0,
        Value::Str(s) => ["enable", "enabled", "true", "1"]
            .iter()
            .any(|t| s.eq_ignore_ascii_case(t)),
        Value::Array(_) => false,
    }
}

impl super::Config {
    /// Some scope turns `webdav.activate` on (its jobs need a route).
    pub fn webdav_used(&self) -> bool {
        self.global.webdav.activate
            || self
                .assigns
                .iter()
                .flatten()
                .any(|a| a.key == "webdav.activate")
    }

    /// Every database `webdav.sqlite-db-name` names in some scope (the
    /// global one and each conditional block), blank ones left out: all
    /// are opened at start, as lighttpd opens them.
    pub fn webdav_db_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.global.webdav.sqlite_db_name.iter().cloned().collect();
        for a in self.assigns.iter().flatten() {
            if a.key != "webdav.sqlite-db-name" {
                continue;
            }
            if let Some(n) = a.value.as_str().filter(|n| !n.trim().is_empty()) {
                if !names.iter().any(|x| x == n) {
                    names.push(n.to_string());
                }
            }
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(pairs: &[(&str, Value)]) -> Value {
        Value::Array(
            pairs
                .iter()
                .map(|(k, v)| (Some(k.to_string()), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn opts_as_lighttpd_reads_them() {
        let o = WebdavOpts::parse(&arr(&[
            ("propfind-depth-infinity", Value::Str("enable".into())),
            ("deprecated-unsafe-partial-put", Value::Int(1)),
        ]))
        .unwrap();
        assert!(o.depth_infinity && o.unsafe_partial_put);
        assert!(!o.partial_put_copy_modify && !o.propfind_follow_symlink);
        // lighttpd refuses a known key whose value is false.
        assert!(WebdavOpts::parse(&arr(&[(
            "partial-put-copy-modify",
            Value::Str("disable".into())
        )]))
        .is_err());
        assert!(WebdavOpts::parse(&arr(&[("no-such", Value::Int(1))]))
            .unwrap_err()
            .contains("unrecognized webdav.opts: no-such"));
        assert!(WebdavOpts::parse(&Value::Str("x".into())).is_err());
    }
}

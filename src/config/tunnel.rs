//! mod_sockproxy's and mod_wstunnel's options of one scope (`sockproxy.*`,
//! `wstunnel.*`), and mod_ajp13's table (`ajp13.server`), typed once when
//! the configuration is loaded. Their `*.server` tables are checked and
//! turned into routes by the gateways when they are built, as
//! `proxy.server`'s are.

use super::value::Value;

/// The two modules' settings of one scope.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TunnelSettings {
    /// `sockproxy.server`: the backends a whole connection is passed to
    /// (the parsed array).
    pub sockproxy_server: Option<Value>,
    /// Which of [`crate::config::Config::sockproxy_servers`] it is.
    pub sockproxy_scope: u32,
    /// `sockproxy.debug` (default 0): a line in the error log for each
    /// connection passed on and each end.
    pub sockproxy_debug: i64,
    /// `wstunnel.server`: the backends WebSocket requests go to.
    pub wstunnel_server: Option<Value>,
    /// Which of [`crate::config::Config::wstunnel_servers`] it is.
    pub wstunnel_scope: u32,
    /// `wstunnel.debug` (default 0).
    pub wstunnel_debug: i64,
    /// `wstunnel.frame-type` = "binary" (default "text"): the frames the
    /// backend's bytes go to the client in.
    pub ws_binary: bool,
    /// `wstunnel.origins`: the `Origin`s allowed (a name, or a domain
    /// whose subdomains are allowed too); empty: any.
    pub ws_origins: Vec<String>,
    /// `wstunnel.ping-interval` in seconds (default 0: no pings).
    pub ws_ping_interval: u16,
    /// `ajp13.server`: the servlet containers requests go to.
    pub ajp13_server: Option<Value>,
    /// Which of [`crate::config::Config::ajp13_servers`] it is.
    pub ajp13_scope: u32,
}

impl TunnelSettings {
    /// Takes `key` when it is one of these options; `Ok(false)` when it is not.
    pub fn apply(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        match key {
            "sockproxy.server" => self.sockproxy_server = Some(table(v)?),
            "sockproxy.debug" => self.sockproxy_debug = int(v)?,
            "wstunnel.server" => self.wstunnel_server = Some(table(v)?),
            "wstunnel.debug" => self.wstunnel_debug = int(v)?,
            "ajp13.server" => self.ajp13_server = Some(table(v)?),
            "wstunnel.frame-type" => match v {
                // As lighttpd: "binary" in any case is binary, anything else text.
                Value::Str(s) => self.ws_binary = s.eq_ignore_ascii_case("binary"),
                _ => return Err("expects \"text\" or \"binary\"".into()),
            },
            "wstunnel.origins" => self.ws_origins = origins(v)?,
            "wstunnel.ping-interval" => {
                self.ws_ping_interval = u16::try_from(int(v)?)
                    .map_err(|_| "expects a number of seconds up to 65535".to_string())?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The options as `-p` shows them.
    pub fn entries(&self, put: &mut dyn FnMut(&str, Value)) {
        if let Some(v) = &self.sockproxy_server {
            put("sockproxy.server", v.clone());
        }
        if self.sockproxy_debug != 0 {
            put("sockproxy.debug", Value::Int(self.sockproxy_debug));
        }
        if let Some(v) = &self.wstunnel_server {
            put("wstunnel.server", v.clone());
        }
        if let Some(v) = &self.ajp13_server {
            put("ajp13.server", v.clone());
        }
        if self.wstunnel_debug != 0 {
            put("wstunnel.debug", Value::Int(self.wstunnel_debug));
        }
        if self.ws_binary {
            put("wstunnel.frame-type", Value::Str("binary".into()));
        }
        if !self.ws_origins.is_empty() {
            let list = self
                .ws_origins
                .iter()
                .map(|o| (None, Value::Str(o.clone())))
                .collect();
            put("wstunnel.origins", Value::Array(list));
        }
        if self.ws_ping_interval != 0 {
            put(
                "wstunnel.ping-interval",
                Value::Int(i64::from(self.ws_ping_interval)),
            );
        }
    }
}

fn table(v: &Value) -> Result<Value, String> {
    match v {
        Value::Array(_) => Ok(v.clone()),
        _ => Err(format!(
            "expects ( \"<prefix>\" => ( backends ) ), got {}",
            v.type_name()
        )),
    }
}

fn int(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Str(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("expects a number, got {s:?}")),
        _ => Err(format!("expects a number, got {}", v.type_name())),
    }
}

/// `wstunnel.origins`: a list of names, none blank (lighttpd refuses to
/// start on a blank one).
fn origins(v: &Value) -> Result<Vec<String>, String> {
    let items: Vec<&Value> = match v {
        Value::Array(items) => items.iter().map(|(_, v)| v).collect(),
        Value::Str(_) => vec![v],
        _ => return Err(format!("expects a list of origins, got {}", v.type_name())),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Str(s) if !s.trim().is_empty() => out.push(s.clone()),
            Value::Str(_) => return Err("unexpected empty string in wstunnel.origins".into()),
            other => return Err(format!("expects strings, got {}", other.type_name())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_typed_and_bad_values_refused() {
        let mut t = TunnelSettings::default();
        assert_eq!(
            t.apply("wstunnel.frame-type", &Value::Str("BINARY".into())),
            Ok(true)
        );
        assert!(t.ws_binary);
        assert_eq!(
            t.apply("wstunnel.frame-type", &Value::Str("text".into())),
            Ok(true)
        );
        assert!(!t.ws_binary);
        assert_eq!(t.apply("wstunnel.ping-interval", &Value::Int(30)), Ok(true));
        assert_eq!(t.ws_ping_interval, 30);
        assert!(t.apply("wstunnel.ping-interval", &Value::Int(-1)).is_err());
        let blank = Value::Array(vec![(None, Value::Str(" ".into()))]);
        assert!(
            t.apply("wstunnel.origins", &blank).is_err(),
            "a blank origin"
        );
        assert!(t
            .apply("sockproxy.server", &Value::Str("x".into()))
            .is_err());
        assert_eq!(t.apply("proxy.server", &Value::Int(1)), Ok(false));
    }
}

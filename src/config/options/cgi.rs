//! mod_cgi's `cgi.limits`: its keys into [`CgiLimits`].

use super::values::uint32;
use crate::config::settings::CgiLimits;
use crate::config::value::Value;

/// `cgi.limits`: lighttpd's `read-timeout`, `write-timeout` and
/// `tcp-fin-propagate` (a signal name, or enable for SIGTERM), and glint's
/// `max-procs`. An unknown key is refused (lighttpd logs it and goes on).
pub(super) fn cgi_limits(v: &Value) -> Result<CgiLimits, String> {
    let Value::Array(items) = v else {
        return Err("expects ( \"read-timeout\" => n, ... )".into());
    };
    let mut l = CgiLimits::default();
    for (k, val) in items {
        let k = k.as_deref().unwrap_or("");
        match k.to_ascii_lowercase().as_str() {
            "read-timeout" => l.read_timeout = uint32(val)?,
            "write-timeout" => l.write_timeout = uint32(val)?,
            "max-procs" => l.max_procs = uint32(val)?.max(1),
            "tcp-fin-propagate" => {
                l.fin_signal = match val {
                    Value::Int(n) => {
                        i32::try_from(*n).map_err(|_| "tcp-fin-propagate: not a signal")?
                    }
                    Value::Str(s) if s.eq_ignore_ascii_case("enable") => 15,
                    Value::Str(s) if s.eq_ignore_ascii_case("disable") => 0,
                    Value::Str(s) => signal_number(s)
                        .ok_or_else(|| format!("tcp-fin-propagate: unknown signal \"{s}\""))?,
                    Value::Array(_) => return Err("tcp-fin-propagate: expects a signal".into()),
                }
            }
            _ => {
                return Err(format!(
                "unknown key \"{k}\" (read-timeout, write-timeout, tcp-fin-propagate, max-procs)"
            ))
            }
        }
    }
    Ok(l)
}

/// A signal by name, with or without `SIG` (`"TERM"`, `"SIGHUP"`).
pub(super) fn signal_number(s: &str) -> Option<i32> {
    let up = s.to_ascii_uppercase();
    let name = up.strip_prefix("SIG").unwrap_or(&up);
    const SIGNALS: &[(&str, i32)] = &[
        ("HUP", 1),
        ("INT", 2),
        ("QUIT", 3),
        ("KILL", 9),
        ("USR1", 10),
        ("USR2", 12),
        ("PIPE", 13),
        ("ALRM", 14),
        ("TERM", 15),
        ("CONT", 18),
        ("STOP", 19),
    ];
    SIGNALS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

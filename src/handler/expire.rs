//! mod_expire: `Expires` and `Cache-Control: max-age` from
//! `expire.url` (URL prefix) and `expire.mimetypes` (type prefix).

use crate::config::Settings;

/// What an expiry rule counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// The time of the request (`access` or `now`).
    Access,
    /// The file's modification time.
    Modification,
}

/// Parses `access plus 1 hours 30 minutes` (`plus` optional, units singular or plural).
pub fn parse_rule(rule: &str) -> Option<(Base, u64)> {
    let mut words = rule.split_ascii_whitespace();
    let base = match words.next()? {
        "access" | "now" => Base::Access,
        "modification" => Base::Modification,
        _ => return None,
    };
    let mut total: u64 = 0;
    let mut words = words.peekable();
    if words.peek() == Some(&"plus") {
        words.next();
    }
    let mut any = false;
    while let Some(n) = words.next() {
        let n: u64 = n.parse().ok()?;
        let unit = words.next()?;
        let secs = match unit.trim_end_matches('s') {
            "second" => 1,
            "minute" => 60,
            "hour" => 3600,
            "day" => 86_400,
            "week" => 604_800,
            "month" => 2_592_000,
            "year" => 31_536_000,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(secs)?)?;
        any = true;
    }
    any.then_some((base, total))
}

/// The rule for a response, if any: `expire.url` by path prefix first, then
/// `expire.mimetypes` by type prefix.
pub fn rule_for<'s>(s: &'s Settings, url_path: &str, content_type: &str) -> Option<&'s str> {
    s.expire
        .url
        .iter()
        .find(|(prefix, _)| url_path.starts_with(prefix.as_str()))
        .or_else(|| {
            // A trailing `*` is allowed and means the same as without it.
            s.expire
                .mimetypes
                .iter()
                .find(|(prefix, _)| content_type.starts_with(prefix.trim_end_matches('*')))
        })
        .map(|(_, rule)| rule.as_str())
}

/// The moment a response expires and its max-age, in seconds.
pub fn compute(rule: &str, now: i64, mtime: i64) -> Option<(i64, u64)> {
    let (base, secs) = parse_rule(rule)?;
    let expires = match base {
        Base::Access => now + secs as i64,
        Base::Modification => mtime + secs as i64,
    };
    Some((expires, (expires - now).max(0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        let cases = [
            ("access plus 1 hours", Some((Base::Access, 3600))),
            ("now plus 1 day 2 minutes", Some((Base::Access, 86_520))),
            ("access 1 week", Some((Base::Access, 604_800))),
            (
                "modification plus 10 seconds",
                Some((Base::Modification, 10)),
            ),
            ("access plus", None),
            ("access plus x hours", None),
            ("access plus 1 fortnight", None),
            ("later", None),
        ];
        for (r, want) in cases {
            assert_eq!(parse_rule(r), want, "{r}");
        }
    }

    #[test]
    fn picks_url_then_type() {
        let s = Settings {
            expire: crate::config::Expire {
                url: vec![("/static/".into(), "access plus 1 days".into())],
                mimetypes: vec![("image/".into(), "access plus 1 hours".into())],
            },
            ..Settings::default()
        };
        assert_eq!(
            rule_for(&s, "/static/a.css", "text/css"),
            Some("access plus 1 days")
        );
        assert_eq!(
            rule_for(&s, "/a.jpg", "image/jpeg"),
            Some("access plus 1 hours")
        );
        assert_eq!(rule_for(&s, "/a.html", "text/html"), None);
        assert_eq!(
            compute("modification plus 10 seconds", 1000, 995),
            Some((1005, 5))
        );
        assert_eq!(
            compute("modification plus 10 seconds", 1000, 900),
            Some((910, 0))
        );
    }
}

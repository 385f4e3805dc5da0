//! Checks every response must pass, and table-driven cases: a [`Case`] is
//! one row (request bytes, accepted statuses, header and body expectations,
//! whether the connection must close); [`run_cases`] runs every row on a
//! fresh connection and panics once with *all* failures.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{find, show, Response, Server, TIMEOUT};

/// `Sun, 06 Nov 1994 08:49:37 GMT` exactly (RFC 9110 §5.6.7).
pub fn is_imf_fixdate(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 29 {
        return false;
    }
    let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let dig = |r: std::ops::Range<usize>| b[r].iter().all(|c| c.is_ascii_digit());
    days.contains(&&s[0..3])
        && &s[3..5] == ", "
        && dig(5..7)
        && b[7] == b' '
        && months.contains(&&s[8..11])
        && b[11] == b' '
        && dig(12..16)
        && b[16] == b' '
        && dig(17..19)
        && b[19] == b':'
        && dig(20..22)
        && b[22] == b':'
        && dig(23..25)
        && &s[25..] == " GMT"
}

/// Seconds since the epoch of an IMF-fixdate (which must be valid per [`is_imf_fixdate`]).
pub fn imf_fixdate_epoch(s: &str) -> i64 {
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
    let (d, y) = (n(5..7), n(12..16));
    let m = months.iter().position(|x| *x == &s[8..11]).unwrap() as i64 + 1;
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + n(17..19) * 3600 + n(20..22) * 60 + n(23..25)
}

/// Checks every response must pass: Date (IMF-fixdate), Server prefix, and for
/// error statuses an HTML body mentioning the code.
pub fn common_checks(server: &Server, r: &Response, head_req: bool) -> Vec<String> {
    let mut errs = Vec::new();
    match r.header("date") {
        Some(d) if is_imf_fixdate(d) => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            if (imf_fixdate_epoch(d) - now).abs() > 120 {
                errs.push(format!(
                    "Date {d:?} is more than 2 minutes off the current time"
                ));
            }
        }
        Some(d) => errs.push(format!("Date is not an IMF-fixdate: {d:?}")),
        None => errs.push("no Date header".into()),
    }
    match r.header("server") {
        Some(s)
            if s.starts_with(server.server_prefix()) && s.len() > server.server_prefix().len() => {}
        other => errs.push(format!(
            "Server header {other:?}, expected {:?}<version>",
            server.server_prefix()
        )),
    }
    if r.status >= 400 {
        let ct = r.header("content-type").unwrap_or("");
        if !ct.to_ascii_lowercase().starts_with("text/html") {
            errs.push(format!(
                "error response Content-Type {ct:?}, expected text/html"
            ));
        }
        if !head_req && !String::from_utf8_lossy(&r.body).contains(&r.status.to_string()) {
            errs.push(format!(
                "error body does not contain the status code {}",
                r.status
            ));
        }
    }
    errs
}

// ---------------------------------------------------------------------------
// Table-driven cases
// ---------------------------------------------------------------------------

pub type Check = Box<dyn Fn(&Response) -> Result<(), String> + Send + Sync>;

pub enum HeaderExp {
    /// Present (any value).
    Present,
    /// Value equal, ignoring ASCII case and surrounding blanks.
    Eq(String),
    /// Value contains the substring (ASCII case-insensitive).
    Contains(String),
    /// Value ends with (case-sensitive).
    EndsWith(String),
    /// Value equal to one of these (ignoring ASCII case).
    OneOf(Vec<String>),
}

pub struct Case {
    pub name: String,
    pub request: Vec<u8>,
    /// Accepted statuses.
    pub status: Vec<u16>,
    pub headers_present: Vec<(String, HeaderExp)>,
    pub headers_absent: Vec<String>,
    pub body: Option<Vec<u8>>,
    pub body_contains: Vec<Vec<u8>>,
    pub body_forbidden: Vec<Vec<u8>>,
    /// Some(true): server must close after the response; Some(false): must keep it open.
    pub closes: Option<bool>,
    pub checks: Vec<Check>,
}

impl Case {
    pub fn new(name: &str, request: impl Into<Vec<u8>>, status: &[u16]) -> Case {
        Case {
            name: name.to_string(),
            request: request.into(),
            status: status.to_vec(),
            headers_present: Vec::new(),
            headers_absent: Vec::new(),
            body: None,
            body_contains: Vec::new(),
            body_forbidden: Vec::new(),
            closes: None,
            checks: Vec::new(),
        }
    }
    pub fn has(mut self, name: &str) -> Self {
        self.headers_present.push((name.into(), HeaderExp::Present));
        self
    }
    pub fn hdr(mut self, name: &str, value: &str) -> Self {
        self.headers_present
            .push((name.into(), HeaderExp::Eq(value.into())));
        self
    }
    pub fn hdr_contains(mut self, name: &str, value: &str) -> Self {
        self.headers_present
            .push((name.into(), HeaderExp::Contains(value.into())));
        self
    }
    pub fn hdr_ends(mut self, name: &str, value: &str) -> Self {
        self.headers_present
            .push((name.into(), HeaderExp::EndsWith(value.into())));
        self
    }
    pub fn hdr_one_of(mut self, name: &str, values: &[&str]) -> Self {
        self.headers_present.push((
            name.into(),
            HeaderExp::OneOf(values.iter().map(|s| s.to_string()).collect()),
        ));
        self
    }
    pub fn lacks(mut self, name: &str) -> Self {
        self.headers_absent.push(name.into());
        self
    }
    pub fn body(mut self, b: impl Into<Vec<u8>>) -> Self {
        self.body = Some(b.into());
        self
    }
    pub fn empty_body(self) -> Self {
        self.body(Vec::new())
    }
    pub fn body_has(mut self, b: impl Into<Vec<u8>>) -> Self {
        self.body_contains.push(b.into());
        self
    }
    pub fn body_lacks(mut self, b: impl Into<Vec<u8>>) -> Self {
        self.body_forbidden.push(b.into());
        self
    }
    pub fn closes(mut self) -> Self {
        self.closes = Some(true);
        self
    }
    pub fn stays_open(mut self) -> Self {
        self.closes = Some(false);
        self
    }
    pub fn check(
        mut self,
        f: impl Fn(&Response) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push(Box::new(f));
        self
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || find(hay, needle).is_some()
}

/// Verifies one response against a case; returns the list of problems.
pub fn verify(server: &Server, case: &Case, r: &Response) -> Vec<String> {
    let head_req = case.request.starts_with(b"HEAD ");
    let mut errs = Vec::new();
    if !case.status.contains(&r.status) {
        errs.push(format!("status {} not in {:?}", r.status, case.status));
    }
    for (name, exp) in &case.headers_present {
        let Some(v) = r.header(name) else {
            errs.push(format!("missing header {name}"));
            continue;
        };
        let ok = match exp {
            HeaderExp::Present => true,
            HeaderExp::Eq(x) => v.trim().eq_ignore_ascii_case(x.trim()),
            HeaderExp::Contains(x) => v.to_ascii_lowercase().contains(&x.to_ascii_lowercase()),
            HeaderExp::EndsWith(x) => v.ends_with(x.as_str()),
            HeaderExp::OneOf(xs) => xs.iter().any(|x| v.trim().eq_ignore_ascii_case(x)),
        };
        if !ok {
            let want = match exp {
                HeaderExp::Present => String::new(),
                HeaderExp::Eq(x) => format!("== {x:?}"),
                HeaderExp::Contains(x) => format!("containing {x:?}"),
                HeaderExp::EndsWith(x) => format!("ending with {x:?}"),
                HeaderExp::OneOf(xs) => format!("one of {xs:?}"),
            };
            errs.push(format!("header {name}: {v:?}, expected {want}"));
        }
    }
    for name in &case.headers_absent {
        if let Some(v) = r.header(name) {
            errs.push(format!("header {name} must be absent, got {v:?}"));
        }
    }
    if let Some(b) = &case.body {
        if &r.body != b {
            errs.push(format!(
                "body ({} bytes) differs from expected ({} bytes): expected {:?}",
                r.body.len(),
                b.len(),
                show(b)
            ));
        }
    }
    for b in &case.body_contains {
        if !contains(&r.body, b) {
            errs.push(format!("body does not contain {:?}", show(b)));
        }
    }
    for b in &case.body_forbidden {
        if find(&r.body, b).is_some() {
            errs.push(format!("body must not contain {:?}", show(b)));
        }
    }
    for c in &case.checks {
        if let Err(e) = c(r) {
            errs.push(e);
        }
    }
    errs.extend(common_checks(server, r, head_req));
    errs
}

/// Runs one case on a fresh connection; returns a failure report or None.
pub fn run_case(server: &Server, case: &Case) -> Option<String> {
    let head_req = case.request.starts_with(b"HEAD ");
    let mut c = server.connect();
    let mut errs = Vec::new();
    if let Err(e) = c.send(&case.request) {
        errs.push(format!("(note) write failed: {e}"));
    }
    let resp = match c.read_response(head_req) {
        Ok(r) => r,
        Err(e) => {
            errs.push(e);
            return Some(report(case, None, &errs));
        }
    };
    errs.extend(verify(server, case, &resp));
    // Secret check on everything that came back, trailing bytes included.
    let req_text = String::from_utf8_lossy(&case.request);
    let close_requested = req_text
        .to_ascii_lowercase()
        .contains("\r\nconnection: close\r\n");
    match case.closes {
        Some(true) => match c.expect_close(TIMEOUT) {
            Ok(extra) if !extra.is_empty() => errs.push(format!(
                "bytes after the response before close: {:?}",
                show(&extra)
            )),
            Ok(_) => {}
            Err(e) => errs.push(e),
        },
        Some(false) => {
            if resp.has_token("connection", "close") {
                errs.push(
                    "response says Connection: close but the connection must stay open".into(),
                );
            }
            let _ = c.send(b"HEAD /index.html HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
            match c.read_response(true) {
                Ok(r2) if r2.status == 200 => {}
                Ok(r2) => errs.push(format!(
                    "follow-up request on the same connection got {}",
                    r2.status
                )),
                Err(e) => errs.push(format!(
                    "follow-up request on the same connection failed: {e}"
                )),
            }
        }
        None => {
            if close_requested || resp.framing == "close" {
                // Nothing may follow the response (e.g. a body after a HEAD or a 304).
                match c.expect_close(TIMEOUT) {
                    Ok(extra) if !extra.is_empty() => {
                        errs.push(format!("bytes after the response: {:?}", show(&extra)))
                    }
                    Ok(_) => {}
                    Err(e) => errs.push(e),
                }
            }
        }
    }
    if errs.is_empty() {
        None
    } else {
        Some(report(case, Some(&resp), &errs))
    }
}

fn report(case: &Case, resp: Option<&Response>, errs: &[String]) -> String {
    let mut s = format!(
        "--- case `{}`\n  request: {:?}\n",
        case.name,
        show(&case.request)
    );
    for e in errs {
        let _ = writeln!(s, "  * {e}");
    }
    match resp {
        Some(r) => {
            let _ = writeln!(
                s,
                "  response:\n    {}",
                r.describe().replace("\r\n", "\n    ")
            );
        }
        None => s.push_str("  response: none\n"),
    }
    s
}

/// Runs every case, then panics once listing all failures.
pub fn run_cases(server: &Server, cases: &[Case]) {
    let mut failures = Vec::new();
    for c in cases {
        if let Some(f) = run_case(server, c) {
            failures.push(f);
        }
    }
    finish(server, cases.len(), failures);
}

/// Panics with all collected failures (if any).
pub fn finish(server: &Server, total: usize, failures: Vec<String>) {
    if !failures.is_empty() {
        panic!(
            "{} of {} cases failed against {:?}:\n{}\nserver stderr tail:\n{}",
            failures.len(),
            total,
            server.kind,
            failures.join("\n"),
            server.stderr_tail()
        );
    }
}

//! `tests/h2/h2client.py`, the scripted HTTP/2 client, run to its end: its
//! `key=value` facts, and readers for them.

use std::path::Path;
use std::process::Command;

/// Runs `tests/h2/h2client.py PORT ARGS...` (at most 90 s) and returns its
/// `key=value` facts in the order printed; a failed run fails the test.
pub fn h2client(port: u16, args: &[&str]) -> Vec<(String, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h2/h2client.py");
    let o = Command::new("timeout")
        .arg("90")
        .arg("python3")
        .arg(script)
        .arg(port.to_string())
        .args(args)
        .output()
        .expect("python3 (pip install h2)");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "h2client.py {args:?} failed: {}\n{out}",
        String::from_utf8_lossy(&o.stderr)
    );
    out.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The fact `key` ("" when absent).
pub fn fact<'a>(facts: &'a [(String, String)], key: &str) -> &'a str {
    facts
        .iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

/// The fact `key` as a number (0 when absent).
pub fn num(facts: &[(String, String)], key: &str) -> u64 {
    fact(facts, key).parse().unwrap_or(0)
}

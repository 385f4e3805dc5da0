//! Download throttling: `connection.kbytes-per-second` (per connection)
//! and `server.kbytes-per-second` (shared by every connection under the
//! block that set it), with lighttpd's accounting.
//!
//! Every byte written to a connection counts against its own limit for the
//! current second and against its scope's. Once either is used up, the
//! connection stops writing (it is *held*) and waits, with no interest in
//! writability, for the once-a-second tick: the scopes' counts are then
//! cleared, and a held connection goes on unless it has been sent more
//! than its limit times the seconds since it was accepted (so a burst
//! after a pause never lifts its average above the limit).

use std::collections::HashMap;

use crate::config::{ScopeRate, Settings};

/// Bytes sent this second under each `server.kbytes-per-second`
/// assignment, by [`ScopeRate::id`]; cleared by the tick of each new
/// second of the monotonic clock.
#[derive(Debug, Default)]
pub struct ScopeCounts {
    used: HashMap<u64, u64>,
    /// The monotonic second of the last budget.
    second: u64,
    /// This tick began a new budget second.
    fresh: bool,
}

impl ScopeCounts {
    /// The tick at monotonic second `now`: a new budget for every scope
    /// when the second is new. (The tick also comes when only the wall
    /// clock's second changed: two budgets in one second would double
    /// the limits.)
    pub fn tick(&mut self, now: u64) {
        self.fresh = now != self.second;
        if self.fresh {
            self.second = now;
            self.used.clear();
        }
    }

    /// This tick began a new budget second: connections get theirs too.
    pub fn is_new_second(&self) -> bool {
        self.fresh
    }

    fn used(&self, id: u64) -> u64 {
        self.used.get(&id).copied().unwrap_or(0)
    }
}

/// One connection's limits and what it has been sent.
#[derive(Debug, Default)]
pub struct Throttle {
    /// Bytes sent since the connection was accepted.
    total: u64,
    /// The limits, once an answer of the connection had one: most
    /// connections never do, and a connection's slot stays small.
    limits: Option<Box<Limits>>,
    /// A limit was reached: nothing more is written until a tick lifts it.
    held: bool,
    /// New seconds still to wait before a held refused login goes out.
    login_wait: u8,
}

/// A limited connection's rates and count.
#[derive(Debug, Default)]
struct Limits {
    /// `connection.kbytes-per-second` in bytes (0: none).
    rate: u64,
    /// `server.kbytes-per-second`'s assignment, if any.
    scope: Option<ScopeRate>,
    /// Bytes sent in the current second.
    this_second: u64,
}

impl Throttle {
    /// Takes the limits of the settings an answer is made under (the
    /// counts go on: they are the connection's).
    pub fn configure(&mut self, s: &Settings) {
        let (rate, scope) = (s.limits.conn_bytes_per_second, s.limits.scope_rate);
        if rate == 0 && scope.is_none() && self.limits.is_none() {
            return;
        }
        let l = self.limits.get_or_insert_with(Box::default);
        l.rate = rate;
        l.scope = scope;
    }

    /// A backend's `X-LIGHTTPD-KBytes-per-second` (in bytes): the
    /// connection's limit for this answer, when lower than the one it has
    /// (or it has none).
    pub fn lower(&mut self, limit: u64) {
        if limit == 0 {
            return;
        }
        let l = self.limits.get_or_insert_with(Box::default);
        if l.rate == 0 || limit < l.rate {
            l.rate = limit;
        }
    }

    /// Held until the next tick.
    pub fn is_held(&self) -> bool {
        self.held
    }

    /// A write stopped at the allowance: nothing more this second.
    pub fn hold(&mut self) {
        self.held = true;
    }

    /// A refused login (`auth.delay-invalid-creds`): nothing is written
    /// until the second new second from now, one to two seconds later
    /// (lighttpd holds it until its next once-a-second check, which on
    /// an idle server comes a second after the answer).
    pub fn delay_login(&mut self) {
        self.held = true;
        self.login_wait = 2;
    }

    /// How many bytes may be written now (`u64::MAX` without a limit);
    /// 0 holds the connection.
    pub fn allowance(&mut self, counts: &ScopeCounts) -> u64 {
        if self.held {
            return 0;
        }
        let Some(l) = self.limits.as_deref() else {
            return u64::MAX;
        };
        let mut max = u64::MAX;
        if let Some(sc) = l.scope {
            max = max.min(sc.bytes_per_second.saturating_sub(counts.used(sc.id)));
        }
        if l.rate > 0 {
            max = max.min(l.rate.saturating_sub(l.this_second));
        }
        if max == 0 {
            self.held = true;
        }
        max
    }

    /// `n` bytes went out.
    pub fn wrote(&mut self, n: u64, counts: &mut ScopeCounts) {
        self.total += n;
        if let Some(l) = self.limits.as_deref_mut() {
            l.this_second += n;
            if let Some(sc) = l.scope {
                *counts.used.entry(sc.id).or_insert(0) += n;
            }
        }
    }

    /// A new second, `age` seconds after the accept: true when a held
    /// connection may write again (and is to be driven for it).
    pub fn new_second(&mut self, age: u64) -> bool {
        let rate = match self.limits.as_deref_mut() {
            Some(l) => {
                l.this_second = 0;
                l.rate
            }
            None => 0,
        };
        if !self.held {
            return false;
        }
        if self.login_wait > 0 {
            self.login_wait -= 1;
            if self.login_wait > 0 {
                return false;
            }
        }
        let within_average = rate == 0 || self.total < rate.saturating_mul(age.max(1));
        if within_average {
            self.held = false;
        }
        !self.held
    }

    /// The server stops gracefully: the answers in flight go out unthrottled, as lighttpd's do.
    pub fn lift(&mut self) {
        self.limits = None;
        self.held = false;
        self.login_wait = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(conn_kb: u16, scope_kb: u16, line: u32) -> Settings {
        let origin = crate::config::Origin {
            file: "t.conf".into(),
            line,
        };
        Settings {
            limits: crate::config::Limits {
                conn_bytes_per_second: u64::from(conn_kb) << 10,
                scope_rate: ScopeRate::assigned(scope_kb, &origin),
                ..Default::default()
            },
            ..Settings::default()
        }
    }

    #[test]
    fn a_refused_login_waits_for_the_second_new_second() {
        let counts = ScopeCounts::default();
        let mut t = Throttle::default();
        t.delay_login();
        assert_eq!(t.allowance(&counts), 0);
        assert!(!t.new_second(1), "held through the first new second");
        assert_eq!(t.allowance(&counts), 0);
        assert!(t.new_second(2));
        assert_eq!(t.allowance(&counts), u64::MAX);
        // A download limit still applies after it.
        let mut t = Throttle::default();
        t.configure(&settings(1, 0, 1));
        t.delay_login();
        assert!(!t.new_second(1));
        assert!(t.new_second(2));
        assert_eq!(t.allowance(&counts), 1024);
    }

    #[test]
    fn a_connection_limit_holds_until_the_next_second() {
        let mut counts = ScopeCounts::default();
        let mut t = Throttle::default();
        t.configure(&settings(1, 0, 1));
        assert_eq!(t.allowance(&counts), 1024);
        t.wrote(1000, &mut counts);
        assert_eq!(t.allowance(&counts), 24);
        t.wrote(24, &mut counts);
        assert_eq!(t.allowance(&counts), 0);
        assert!(t.is_held());
        // One second after the accept, 1024 bytes is the limit's average,
        // not below it (lighttpd's comparison): still held; then on.
        assert!(!t.new_second(1));
        assert_eq!(t.allowance(&counts), 0);
        assert!(t.new_second(2));
        assert_eq!(t.allowance(&counts), 1024);
    }

    #[test]
    fn the_average_since_the_accept_bounds_a_burst() {
        let mut counts = ScopeCounts::default();
        let mut t = Throttle::default();
        t.configure(&settings(1, 0, 1));
        // 3 KiB went out before the limit applied (an earlier answer).
        t.wrote(3 * 1024, &mut counts);
        assert_eq!(t.allowance(&counts), 0);
        assert!(!t.new_second(1), "3 KiB in 1 s is over 1 KiB/s");
        assert!(!t.new_second(3));
        assert!(t.new_second(4));
    }

    #[test]
    fn a_scope_limit_is_shared() {
        let mut counts = ScopeCounts::default();
        let s = settings(0, 2, 1);
        let (mut a, mut b) = (Throttle::default(), Throttle::default());
        a.configure(&s);
        b.configure(&s);
        a.wrote(1500, &mut counts);
        assert_eq!(b.allowance(&counts), 548);
        b.wrote(548, &mut counts);
        assert_eq!(a.allowance(&counts), 0);
        counts.tick(1);
        assert!(counts.is_new_second());
        assert!(a.new_second(1));
        assert_eq!(a.allowance(&counts), 2048);
        // Another assignment (another line) of the same value counts apart.
        let mut c = Throttle::default();
        c.configure(&settings(0, 2, 2));
        a.wrote(2048, &mut counts);
        assert_eq!(c.allowance(&counts), 2048);
    }

    #[test]
    fn a_backend_may_only_lower_the_limit() {
        let mut counts = ScopeCounts::default();
        let mut t = Throttle::default();
        t.configure(&settings(4, 0, 1));
        t.lower(8 * 1024);
        assert_eq!(t.allowance(&counts), 4096);
        t.lower(1024);
        assert_eq!(t.allowance(&counts), 1024);
        // The next answer's settings apply anew.
        t.configure(&Settings::default());
        t.lower(2048);
        assert_eq!(t.allowance(&counts), 2048);
        t.wrote(2048, &mut counts);
        assert_eq!(t.allowance(&counts), 0);
    }

    #[test]
    fn a_second_tick_in_the_same_second_gives_no_budget() {
        let mut counts = ScopeCounts::default();
        counts.tick(5);
        assert!(counts.is_new_second());
        let mut t = Throttle::default();
        t.configure(&settings(0, 1, 3));
        t.wrote(1024, &mut counts);
        // The wall clock's second changed, the monotonic one did not.
        counts.tick(5);
        assert!(!counts.is_new_second());
        assert_eq!(t.allowance(&counts), 0);
        counts.tick(6);
        assert_eq!(t.allowance(&counts), 0, "held until the connection's tick");
        assert!(t.new_second(1));
        assert_eq!(t.allowance(&counts), 1024);
    }

    #[test]
    fn no_limit_allows_everything() {
        let mut counts = ScopeCounts::default();
        let mut t = Throttle::default();
        t.configure(&Settings::default());
        t.wrote(1 << 30, &mut counts);
        assert_eq!(t.allowance(&counts), u64::MAX);
        assert!(!t.new_second(0));
    }
}

//! `#config timefmt`: C's strftime(3), as lighttpd formats the times of
//! `#echo` and `#flastmod` (the local time zone, or UTC for DATE_GMT).

use std::ffi::CString;

use nix::libc;

/// lighttpd's format when no `timefmt` is set.
pub const DEFAULT_TIMEFMT: &[u8] = b"%a, %d %b %Y %T %Z";

/// The longest formatted time (lighttpd's too).
const MAX_LEN: usize = 4096;

/// `t` (seconds since the epoch) in `fmt` (empty: the default), local
/// time or UTC; `(none)` when the result is empty.
pub fn format(fmt: &[u8], t: i64, local: bool) -> Vec<u8> {
    let fmt = if fmt.is_empty() { DEFAULT_TIMEFMT } else { fmt };
    let mut out = strftime(fmt, t, local);
    if out.is_empty() {
        out.extend_from_slice(b"(none)");
    }
    out
}

fn strftime(fmt: &[u8], t: i64, local: bool) -> Vec<u8> {
    // The format comes from a page: cut at a NUL as a C string is.
    let fmt = fmt.split(|&b| b == 0).next().unwrap_or_default();
    let Ok(cfmt) = CString::new(fmt) else {
        return Vec::new();
    };
    let time: libc::time_t = t as libc::time_t;
    // SAFETY: an all-zero `struct tm` is a valid value; localtime_r and
    // gmtime_r fill it from `time`, and return NULL (checked) on failure.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe {
        if local {
            !libc::localtime_r(&time, &mut tm).is_null()
        } else {
            !libc::gmtime_r(&time, &mut tm).is_null()
        }
    };
    if !ok {
        return Vec::new();
    }
    let mut buf = vec![0u8; MAX_LEN];
    // SAFETY: `buf` has MAX_LEN writable bytes, `cfmt` is NUL-terminated
    // and `tm` was filled above; strftime writes at most MAX_LEN bytes and
    // returns how many (without the NUL), 0 when they do not fit.
    let n = unsafe {
        libc::strftime(
            buf.as_mut_ptr().cast::<libc::c_char>(),
            MAX_LEN,
            cfmt.as_ptr(),
            &tm,
        )
    };
    buf.truncate(n);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats() {
        assert_eq!(
            format(b"%Y-%m-%d %H:%M:%S", 0, false),
            b"1970-01-01 00:00:00"
        );
        assert_eq!(format(b"", 86400, false), b"Fri, 02 Jan 1970 00:00:00 GMT");
        assert_eq!(format(b"%%", 0, false), b"%");
        assert_eq!(format(b"%p", 0, false).len(), 2);
    }
}

//! What a mod_vhostdb lookup comes to, for every back end (SQL in
//! [`super::vhostdb`], LDAP in [`super::vhostdb_ldap`]).

/// What a lookup came to: the document root (`None`: no such host), or
/// the status to answer (500 as lighttpd for a failed query or a root
/// that is not a directory; 503 for a full queue).
pub type Found = Result<Option<String>, u16>;

/// A document root found, if it is a directory (else 500, as lighttpd).
pub fn checked_root(root: String) -> Found {
    // (It travels in a header line of the job's answer.)
    if root.bytes().any(|b| b < b' ' || b == 0x7f) {
        log::error!("document root {root:?} has control characters");
        return Err(500);
    }
    match std::fs::metadata(&root) {
        Ok(m) if m.is_dir() => Ok(Some(root)),
        Ok(_) => {
            log::error!("{root}: not a directory");
            Err(500)
        }
        Err(e) => {
            log::error!("{root}: {e}");
            Err(500)
        }
    }
}

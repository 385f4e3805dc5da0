//! `ssl.cipher-list` and `ssl.openssl.ssl-conf-cmd` checked at their lines
//! as the loaded TLS module reads them (mod_gnutls, mod_mbedtls,
//! mod_wolfssl, mod_nss; src/tls/modules.rs), so that a value glint
//! refuses names its file and line. What only the combination of a
//! socket's values decides is checked again when the socket starts.

use super::values::{pairs, string};
use crate::config::error::ConfigError;
use crate::config::parser::{Block, Entry};
use crate::tls::module_conf::module_settings;
use crate::tls::modules::TlsModule;

/// Checks every such line of `entries` and of the blocks in `chains`.
pub fn check(
    module: TlsModule,
    entries: &[Entry],
    chains: &[Vec<Block>],
) -> Result<(), ConfigError> {
    for e in entries {
        check_entry(module, e)?;
    }
    for chain in chains {
        for b in chain {
            check(module, &b.entries, &b.children)?;
        }
    }
    Ok(())
}

fn check_entry(module: TlsModule, e: &Entry) -> Result<(), ConfigError> {
    let r = match e.key.as_str() {
        "ssl.cipher-list" => {
            string(&e.value).and_then(|s| module_settings(module, Some(&s), None, &[]).map(|_| ()))
        }
        "ssl.openssl.ssl-conf-cmd" => {
            pairs(&e.value).and_then(|p| module_settings(module, None, None, &p).map(|_| ()))
        }
        _ => Ok(()),
    };
    r.map_err(|why| {
        e.pos
            .error(format!("{why} (as {} reads it)", module.name()))
    })
}

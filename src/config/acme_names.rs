//! The names glint's ACME client looks after when `glint.acme.names` is
//! not set: those of the TLS sockets' `$HTTP["host"] ==` blocks.

use super::cond::{self, Test};
use super::{CondBlock, Config, RequestFacts};

impl Config {
    /// The names glint's ACME client gets certificates for by default:
    /// every `$HTTP["host"] == "name"` at the top level or inside a
    /// `$SERVER["socket"]` block of a TLS listener, in configuration
    /// order, lower case, each once.
    pub fn acme_default_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, l) in self.listeners.iter().enumerate() {
            if !self.socket_settings(i).tls.engine {
                continue;
            }
            let facts = RequestFacts {
                listener: i,
                remote_ip: None,
                scheme: "",
                method: "",
                host: "",
                url: "",
                query: "",
                headers: &[],
            };
            collect_host_names(&self.chains, &facts, &l.spec, &mut out);
        }
        out
    }
}

/// `$HTTP["host"] ==` names under the blocks that apply to one socket.
fn collect_host_names(
    chains: &[Vec<CondBlock>],
    facts: &RequestFacts<'_>,
    spec: &str,
    out: &mut Vec<String>,
) {
    let mut captures = Vec::new();
    for b in chains.iter().flatten() {
        let Some(c) = &b.cond else { continue };
        match (&c.field, &c.test) {
            (cond::Field::Socket, _) if c.matches(facts, spec, &mut captures) => {
                collect_host_names(&b.children, facts, spec, out);
            }
            (cond::Field::Host, Test::Eq(_)) => {
                let name = c.pattern.trim_end_matches('.').to_ascii_lowercase();
                if !name.is_empty() && !out.contains(&name) {
                    out.push(name);
                }
            }
            _ => {}
        }
    }
}

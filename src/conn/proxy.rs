//! The PROXY protocol header a listener may expect before a client's
//! first bytes: the addresses it names become the connection's.

use super::{Connection, Ctx};
use crate::buf::InBuf;

impl Connection {
    /// The PROXY protocol header at the start of `input`: its addresses
    /// become the connection's. False when more bytes are needed, or the
    /// header was bad and the connection is closed (the specification:
    /// "must be discarded and cause the receiver to abort the connection").
    /// Its time-out is `server.max-read-idle`, as for a request head.
    pub(super) fn read_proxy_header(&mut self, input: &mut InBuf, cx: &mut Ctx<'_>) -> bool {
        use crate::forwarded::proxy_protocol::{self, Endpoints};
        match proxy_protocol::parse(input.pending()) {
            Ok(None) if input.spare().is_empty() => {
                log::warn!("PROXY header from {:?} too long; closing", self.peer);
                self.close(cx);
                false
            }
            Ok(None) => false,
            Ok(Some(h)) => {
                input.consume(h.len);
                self.proxy_wait = false;
                match &h.endpoints {
                    Endpoints::Keep => {}
                    Endpoints::Tcp { src, dst } => {
                        log::debug!("PROXY header: client {src} (via {:?})", self.peer);
                        self.peer = Some(src.ip());
                        self.peer_port = src.port();
                        self.local_ip = Some(Some(dst.ip()));
                    }
                    Endpoints::Unix { .. } => {
                        self.peer = None;
                        self.peer_port = 0;
                    }
                }
                self.proxy_https = h.client_tls();
                let verify = cx
                    .sv
                    .config
                    .socket_settings(self.listener)
                    .extforward
                    .as_ref()
                    .is_some_and(|x| x.hap_proxy_ssl_client_verify);
                self.proxy_env = h.env(verify).into_boxed_slice();
                true
            }
            Err(e) => {
                log::warn!("{e} from {:?}; closing", self.peer);
                self.close(cx);
                false
            }
        }
    }
}

//! A connection mod_sockproxy takes (see [`crate::exchange::sockproxy`]):
//! its HTTP/1 session becomes a tunnel before its first byte, and the
//! gateway exchange carries the bytes both ways until either side closes.

use super::gateway::{GwSide, Sent};
use super::{Connection, Ctx};
use crate::msg::plan::Shape;

impl Connection {
    /// Some scope sets `sockproxy.server`: the connection's settings decide
    /// on its first drive whether it is HTTP or a tunnel.
    pub fn expect_sockproxy(&mut self) {
        self.sockproxy_due = true;
    }

    /// Starts the tunnel when the connection's settings route it to a
    /// backend; one that no backend takes is closed (there is no HTTP to
    /// answer it with).
    pub(super) fn start_sockproxy(&mut self, cx: &mut Ctx<'_>) {
        let info = self.info(cx.sv);
        let start = match crate::exchange::sockproxy::start(cx.sv, &info, cx.registry) {
            None => return,
            Some(Ok(start)) => start,
            Some(Err(status)) => {
                log::warn!(
                    "sockproxy: no backend for the connection from {:?} ({status}); closing it",
                    self.peer
                );
                return self.close(cx);
            }
        };
        let offer = self.offer(cx.sv);
        // Read and written as a tunnel from the first byte, never as HTTP.
        self.h1.plan(Shape::Tunnel, false, offer);
        let mut gw = GwSide::new(*start);
        // No head goes out: the backend's bytes are the whole answer.
        gw.sent = Sent::Body {
            chunked: false,
            remaining: None,
        };
        self.gw = Some(Box::new(gw));
    }
}

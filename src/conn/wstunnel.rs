//! The client's side of a mod_wstunnel exchange on HTTP/1.1 (see
//! [`crate::exchange`]'s `wstunnel`): the 101 that opens the WebSocket,
//! the client's frames decoded into bytes for the backend (pings answered,
//! a close answered and the tunnel ended, a broken frame failing the
//! connection with 1002), the backend's bytes framed as text or binary
//! messages, and `wstunnel.ping-interval`'s pings.

use super::gateway::ws::WsSide;
use super::gateway::ClientSink;
use super::{Connection, Ctx};
use crate::msg::{AnswerHead, Sink};
use crate::proto::ws::{self, Control, Op};

/// The 101's fields for request head `key`, `protocols` (the client's
/// `Sec-WebSocket-Protocol`) and `wstunnel.frame-type`: lighttpd's, with
/// `binary` (or `base64`) named when the client offered it; and whether
/// the frames are binary.
fn switch_fields(
    key: &[u8],
    protocols: Option<&[u8]>,
    binary: bool,
) -> (Vec<(String, Vec<u8>)>, bool) {
    let offered = |p: &str| protocols.is_some_and(|v| crate::httpup::has_token(v, p));
    let binary = binary || offered("binary");
    let mut fields = vec![
        ("Upgrade".to_string(), b"websocket".to_vec()),
        ("Connection".to_string(), b"upgrade".to_vec()),
        (
            "Sec-WebSocket-Accept".to_string(),
            ws::accept_key(key).into_bytes(),
        ),
    ];
    if binary {
        fields.push(("Sec-WebSocket-Protocol".into(), b"binary".to_vec()));
    } else if offered("base64") {
        fields.push(("Sec-WebSocket-Protocol".into(), b"base64".to_vec()));
    }
    (fields, binary)
}

impl Connection {
    /// A wstunnel job started: the 101 goes out and the connection is a
    /// WebSocket from here on.
    pub(super) fn start_ws(&mut self, cx: &mut Ctx<'_>) {
        let Some(gw) = self.gw.as_deref() else {
            return;
        };
        let t = &gw.start.settings.tunnel;
        let (every, binary) = (u64::from(t.ws_ping_interval), t.ws_binary);
        let mut hs = Vec::new();
        let req = gw.start.head.view(&mut hs);
        let key = req.header("sec-websocket-key").unwrap_or_default();
        let (fields, binary) = switch_fields(key, req.header("sec-websocket-protocol"), binary);
        self.with_sink_and(cx, |sink, _, _, _, _| {
            sink.head(&AnswerHead {
                status: 101,
                headers: &fields,
                content_length: None,
                bodiless: false,
                upgrade: true,
                rate_limit: None,
            })
        });
        let now = cx.sv.clock.mono_secs;
        if let Some(gw) = self.gw.as_deref_mut() {
            gw.ws = Some(Box::new(WsSide::new(binary, every, now)));
        }
    }

    /// The client's bytes on a WebSocket: decoded as far as the backend's
    /// window has room, the messages' bytes to the backend, a control
    /// frame acted on. Returns how many bytes were used.
    pub(super) fn feed_ws(&mut self, bytes: &[u8], cx: &mut Ctx<'_>) -> usize {
        let Some(gw) = self.gw.as_deref_mut() else {
            return 0;
        };
        let job = gw.start.job;
        let Some(ws) = gw.ws.as_deref_mut() else {
            return 0;
        };
        if ws.closed {
            return bytes.len();
        }
        if self.out.pending_mem() >= super::gateway::CLIENT_HIGH_WATER {
            // A client that sends pings (or anything answered) and does
            // not read the answers is read no further until it does: its
            // pongs cannot pile up in memory.
            return 0;
        }
        // A message's bytes are never more than its frames': what fits
        // the window decodes into what the window takes.
        let room = cx.sv.upstream.room(job);
        let input = &bytes[..bytes.len().min(room)];
        let mut data = std::mem::take(&mut ws.scratch);
        data.clear();
        let decoded = ws.decoder.feed(input, &mut data);
        let (used, control) = match decoded {
            Ok(d) => d,
            Err(v) => {
                log::debug!(
                    "WebSocket from {:?}: {}; closing with {}",
                    self.peer,
                    v.why,
                    v.code
                );
                ws.send_close(v.code, &mut self.out.mem);
                self.end_ws(cx);
                return bytes.len();
            }
        };
        let now = cx.sv.clock.mono_secs;
        let fed = match data.is_empty() {
            true => Ok((0, false)),
            false => cx.sv.upstream.feed(job, &data, now, cx.registry),
        };
        if let Some(ws) = self.gw.as_deref_mut().and_then(|g| g.ws.as_deref_mut()) {
            ws.scratch = data;
        }
        if fed.is_err() {
            self.ws_close(1001, cx);
            return bytes.len();
        }
        self.h1.body_taken(used, false);
        match control {
            Some(Control::Ping(p)) => ws::encode(Op::Pong, &p, &mut self.out.mem),
            Some(Control::Close(code)) => {
                // §5.5.1: the close answered with the client's code.
                self.ws_close(code.unwrap_or(1000), cx);
            }
            Some(Control::Pong) | None => {}
        }
        used
    }

    /// Sends a Close frame (unless one went) and ends the tunnel: the
    /// backend connection goes, and the connection closes once the frame
    /// is out.
    fn ws_close(&mut self, code: u16, cx: &mut Ctx<'_>) {
        if let Some(ws) = self.gw.as_deref_mut().and_then(|g| g.ws.as_deref_mut()) {
            ws.send_close(code, &mut self.out.mem);
        }
        self.end_ws(cx);
    }

    fn end_ws(&mut self, cx: &mut Ctx<'_>) {
        self.with_sink_and(cx, |sink: &mut ClientSink<'_>, _, _, _, _| sink.end());
    }

    /// Once a second: a ping when `wstunnel.ping-interval` says one is due,
    /// or a Close (1001) for a client silent for `server.max-read-idle`,
    /// as lighttpd sends. True when a frame was queued.
    pub(super) fn ws_tick(&mut self, cx: &mut Ctx<'_>) -> bool {
        let now = cx.sv.clock.mono_secs;
        let idle = u64::from(cx.sv.config.global.limits.max_read_idle);
        let silent = self.idle_us(cx.sv.clock.mono_us) >= idle * 1_000_000;
        let Some(ws) = self.gw.as_deref_mut().and_then(|g| g.ws.as_deref_mut()) else {
            return false;
        };
        if ws.closed {
            return false;
        }
        if silent {
            log::debug!(
                "WebSocket from {:?} silent for {idle} s; closing",
                self.peer
            );
            self.ws_close(1001, cx);
            return true;
        }
        if ws.ping_every > 0 && now >= ws.ping_at {
            ws.ping_at = now + ws.ping_every;
            ws::encode(Op::Ping, b"ping", &mut self.out.mem);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_101_names_binary_when_configured_or_offered() {
        let key = b"dGhlIHNhbXBsZSBub25jZQ==";
        let (f, binary) = switch_fields(key, None, false);
        assert!(!binary);
        assert!(f.contains(&(
            "Sec-WebSocket-Accept".into(),
            b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".to_vec()
        )));
        assert!(!f.iter().any(|(k, _)| k == "Sec-WebSocket-Protocol"));
        let (f, binary) = switch_fields(key, Some(b"chat, binary"), false);
        assert!(binary);
        assert!(f.contains(&("Sec-WebSocket-Protocol".into(), b"binary".to_vec())));
        let (_, binary) = switch_fields(key, None, true);
        assert!(binary);
    }
}

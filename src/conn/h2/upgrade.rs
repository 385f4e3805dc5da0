//! HTTP/1.1's `Upgrade: h2c` (RFC 7540 §3.2, which RFC 9113 deprecates
//! but lighttpd and curl still speak): on cleartext, a request without a
//! body that asks for it with a valid `HTTP2-Settings` is answered
//! `101 Switching Protocols` and becomes stream 1 of an HTTP/2 connection.
//! As lighttpd, an upgrade that does not qualify (over TLS, HTTP/1.0, with
//! a body, `HTTP2-Settings` missing or not base64url) is ignored and the
//! request answered as HTTP/1.1.

use base64::Engine as _;
use httparse::Header;

use super::stream::Task;
use super::{core_config, Io};
use crate::conn::{Connection, Ctx};
use crate::msg::{Body, Request};
use crate::proto::h2::conn::Connection as Core;

const SWITCHING: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

/// `value` (a comma-separated list) holds `token`, ASCII case-insensitive.
fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| crate::msg::request::trim_ows(t).eq_ignore_ascii_case(token.as_bytes()))
}

/// The client's SETTINGS payload when `req` asks to upgrade and may.
fn upgrade_settings(req: &Request<'_, '_>) -> Option<Vec<u8>> {
    if req.minor != 1 || req.body != Body::None {
        // RFC 7540 §3.2: a body would have to be read whole first; lighttpd
        // does not upgrade then, nor does glint.
        return None;
    }
    if !has_token(req.header("upgrade")?, "h2c") {
        return None;
    }
    let connection = req.header("connection")?;
    if !has_token(connection, "upgrade") || !has_token(connection, "http2-settings") {
        return None;
    }
    let value = crate::msg::request::trim_ows(req.header("http2-settings")?);
    let value = value
        .strip_suffix(b"==")
        .or_else(|| value.strip_suffix(b"="))
        .unwrap_or(value);
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(value)
        .ok()
}

impl Connection {
    /// Upgrades to HTTP/2 when `req` asks for it and may: the 101 is
    /// queued, the session starts, and `req` is answered on stream 1.
    /// False when the request is to be answered as HTTP/1.1.
    pub(in crate::conn) fn upgrade_h2c(&mut self, req: &Request<'_, '_>, cx: &mut Ctx<'_>) -> bool {
        let g = &cx.sv.config.global;
        if !(g.protocols.h2proto && g.protocols.h2c) || self.tls.is_some() {
            return false;
        }
        let Some(settings) = upgrade_settings(req) else {
            return false;
        };
        let core = match Core::upgrade(core_config(cx.sv), &settings) {
            Ok(c) => c,
            Err(e) => {
                log::debug!("Upgrade: h2c from {:?} ignored: {e}", self.peer);
                return false;
            }
        };
        self.prepare_output(cx.pool);
        self.out.mem.extend_from_slice(SWITCHING);
        self.enter_h2(Some(core), cx);
        // The request goes on as HTTP/2's stream 1, without the fields of
        // the upgrade.
        let headers: Vec<Header<'_>> = req
            .headers
            .iter()
            .filter(|h| {
                !["upgrade", "http2-settings", "connection"]
                    .iter()
                    .any(|n| h.name.eq_ignore_ascii_case(n))
            })
            .copied()
            .collect();
        let view = Request {
            headers: &headers,
            major: 2,
            keep_alive: true,
            ..*req
        };
        self.with_session(cx, |s, io| s.start_upgraded(&view, io));
        true
    }
}

impl super::Session {
    /// Answers the request that carried the upgrade, on stream 1.
    fn start_upgraded(&mut self, req: &Request<'_, '_>, io: &mut Io<'_>) {
        io.sv.stats.h2_streams += 1;
        io.sv.stats.h2_streams_open += 1;
        let mut task = Task::new(io.now(), true, req.method == crate::msg::Method::Head);
        let mut info = io.info_for(1);
        self.respond(1, &mut task, req, &mut info, io);
        self.settle(1, task, &mut io.sv.stats);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'h, 'b>(headers: &'h [Header<'b>], minor: u8, body: Body) -> Request<'h, 'b> {
        Request {
            method: crate::msg::Method::Get,
            method_str: "GET",
            target: "/",
            minor,
            major: 1,
            headers,
            head_len: 0,
            body,
            keep_alive: true,
            host: b"a",
            request_line: b"GET / HTTP/1.1",
        }
    }

    fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
        Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn which_requests_upgrade() {
        // AAMAAABkAAQAAP__ is curl's: MAX_CONCURRENT_STREAMS 100, INITIAL_WINDOW_SIZE 65535.
        let good = [
            h("Connection", "Upgrade, HTTP2-Settings"),
            h("Upgrade", "h2c"),
            h("HTTP2-Settings", "AAMAAABkAAQAAP__"),
        ];
        let s = upgrade_settings(&req(&good, 1, Body::None));
        assert_eq!(
            s.as_deref(),
            Some(&[0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 255, 255][..])
        );
        assert!(
            upgrade_settings(&req(&good, 0, Body::None)).is_none(),
            "HTTP/1.0"
        );
        assert!(
            upgrade_settings(&req(&good, 1, Body::Length(3))).is_none(),
            "a body"
        );
        let no_token = [good[0], h("Upgrade", "websocket"), good[2]];
        assert!(upgrade_settings(&req(&no_token, 1, Body::None)).is_none());
        let no_conn = [h("Connection", "Upgrade"), good[1], good[2]];
        assert!(upgrade_settings(&req(&no_conn, 1, Body::None)).is_none());
        let bad_b64 = [good[0], good[1], h("HTTP2-Settings", "AA*A")];
        assert!(upgrade_settings(&req(&bad_b64, 1, Body::None)).is_none());
        let empty = [good[0], good[1], h("HTTP2-Settings", "")];
        assert_eq!(upgrade_settings(&req(&empty, 1, Body::None)), Some(vec![]));
    }
}

//! The response plan: once an answer's head is known, [`framing`] decides
//! how its body is delimited on the wire and [`after`] decides what becomes
//! of the connection once it is sent. Every writer takes these two
//! decisions from here (HTTP/1 for glint's own replies, compressed bodies
//! and a backend's answers; HTTP/2 and HTTP/3 for `content-length` and the
//! end of a stream) and makes none of its own: a decision made twice will
//! one day be made two ways.

use crate::msg::{Body, Reply};

/// Bodies of requests glint does not need (a GET with a body, a POST to a
/// file) are read and dropped up to this size, so the connection can be
/// kept; beyond it the connection closes after the answer (lingering, so
/// that the client still reads the answer whole). nginx drops any size;
/// 16 MiB is a second of a fast uplink, not an unbounded wait.
pub const MAX_DISCARD: u64 = 16 * 1024 * 1024;

/// The protocol an answer goes out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// HTTP/1.x with the request's minor version.
    H1 { minor: u8 },
    /// HTTP/2 or HTTP/3: a stream's DATA frames delimit the body.
    Streams,
}

/// What an answer's head says of its body, before the protocol frames it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// No body by its status (1xx, 204, 304).
    None,
    /// This many bytes.
    Sized(u64),
    /// A body whose length is not known when the head goes out (a
    /// backend's without Content-Length, a body compressed as it is sent).
    Stream,
    /// `101 Switching Protocols`: after the head, bytes go both ways
    /// unframed until either side closes.
    Tunnel,
}

impl Shape {
    /// glint's own reply: its length, or no body by its status.
    pub fn of_reply(r: &Reply) -> Shape {
        match (r.encode, r.content_length) {
            // Compressed as it is sent: the length is the output's.
            (Some(_), _) => Shape::Stream,
            (None, Some(n)) => Shape::Sized(n),
            (None, None) => Shape::None,
        }
    }

    /// A backend's head: bodiless, announced, or streamed.
    pub fn of_answer(bodiless: bool, content_length: Option<u64>) -> Shape {
        match content_length {
            _ if bodiless => Shape::None,
            Some(n) => Shape::Sized(n),
            None => Shape::Stream,
        }
    }
}

/// How the body after a head is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked` (HTTP/1.1).
    Chunked,
    /// No length: the body ends when the connection does (HTTP/1.0).
    UntilClose,
    /// HTTP/2 and HTTP/3 without a length: the stream's end ends it.
    Unframed,
    /// No body and no length field: 1xx, 204, 304, a 101's tunnel, or
    /// HEAD of a body whose length is not known.
    None,
}

impl Framing {
    /// The `content-length` the head carries.
    pub fn length(self) -> Option<u64> {
        match self {
            Framing::Length(n) => Some(n),
            _ => None,
        }
    }
}

/// The framing of an answer of `shape` on `proto`; `head_only` for an
/// answer to HEAD (its head says what a GET's would, no body follows).
pub fn framing(proto: Proto, head_only: bool, shape: Shape) -> Framing {
    match (shape, proto) {
        (Shape::None | Shape::Tunnel, _) => Framing::None,
        (Shape::Sized(n), _) => Framing::Length(n),
        // HEAD: no body follows, nothing needs to delimit it (and the
        // connection is kept: nothing is left to end with it).
        (Shape::Stream, _) if head_only => Framing::None,
        (Shape::Stream, Proto::Streams) => Framing::Unframed,
        (Shape::Stream, Proto::H1 { minor }) if minor >= 1 => Framing::Chunked,
        (Shape::Stream, Proto::H1 { .. }) => Framing::UntilClose,
    }
}

/// The head of an answer on an HTTP/2 or HTTP/3 stream: the
/// `content-length` it carries and whether it ends the stream (nothing
/// follows it: HEAD, or no body by its status).
pub fn stream_head(head_only: bool, shape: Shape) -> (Option<u64>, bool) {
    let f = framing(Proto::Streams, head_only, shape);
    (f.length(), head_only || f == Framing::None)
}

/// What of the request's body the client has yet to send when the
/// connection's fate is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// Nothing: the body was read whole (or there was none).
    Nothing,
    /// This many bytes of a `Content-Length` body.
    Bytes(u64),
    /// The rest of a chunked body (its length is not known).
    Chunked,
}

impl Unread {
    /// What is left of `body` after `read` bytes of it were taken.
    pub fn of(body: Body, read: u64) -> Unread {
        match body {
            Body::None => Unread::Nothing,
            Body::Length(n) if read >= n => Unread::Nothing,
            Body::Length(n) => Unread::Bytes(n - read),
            Body::Chunked => Unread::Chunked,
        }
    }
}

/// What the connection's side knows when it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    /// The client allows keep-alive (HTTP/1.1 without `Connection:
    /// close`, HTTP/1.0 with `keep-alive`), and the server still offers it
    /// (not shutting down, not at the connection limit with clients
    /// waiting, under `server.max-keep-alive-requests`).
    pub keep_alive: bool,
    /// The client waits for `100 Continue` before its body, and got none.
    pub awaits_continue: bool,
    /// The answer itself ends the connection (a refused oversized body, a
    /// failed login as lighttpd does, a body cut short).
    pub answer_closes: bool,
    /// The request body the client may still be sending.
    pub unread: Unread,
    /// Bytes are buffered behind this request that it will not answer.
    pub more_input: bool,
}

/// What becomes of the connection once an answer is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// The next request.
    Next,
    /// Read and drop this many body bytes, then the next request.
    Drain(u64),
    /// Close; with `linger`, first shut the write side and read what the
    /// client still sends (bounded), so that the close does not reset the
    /// connection under the answer.
    Close { linger: bool },
}

impl After {
    /// The connection stays open after the answer (the head says so).
    pub fn keeps(self) -> bool {
        !matches!(self, After::Close { .. })
    }
}

/// The connection's fate after an answer framed by `framing`.
pub fn after(ask: &Ask, framing: Framing) -> After {
    let body_unread = ask.unread != Unread::Nothing;
    let closes = !ask.keep_alive || ask.answer_closes || framing == Framing::UntilClose;
    if closes {
        return After::Close {
            linger: body_unread || ask.more_input,
        };
    }
    match ask.unread {
        Unread::Nothing => After::Next,
        // A client waiting for `100 Continue` may never send the body, or
        // send it anyway: only closing tells the two apart.
        Unread::Bytes(n) if n <= MAX_DISCARD && !ask.awaits_continue => After::Drain(n),
        Unread::Bytes(_) | Unread::Chunked => After::Close { linger: true },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H10: Proto = Proto::H1 { minor: 0 };
    const H11: Proto = Proto::H1 { minor: 1 };

    #[test]
    fn framing_by_shape_protocol_and_method() {
        let cases: &[(&str, Proto, bool, Shape, Framing)] = &[
            (
                "a length is a length",
                H11,
                false,
                Shape::Sized(5),
                Framing::Length(5),
            ),
            (
                "HEAD keeps the GET's length",
                H11,
                true,
                Shape::Sized(5),
                Framing::Length(5),
            ),
            (
                "HTTP/1.0 too",
                H10,
                false,
                Shape::Sized(0),
                Framing::Length(0),
            ),
            (
                "1.1 streams chunked",
                H11,
                false,
                Shape::Stream,
                Framing::Chunked,
            ),
            (
                "HEAD of a stream has nothing to delimit",
                H11,
                true,
                Shape::Stream,
                Framing::None,
            ),
            (
                "1.0 streams until the close",
                H10,
                false,
                Shape::Stream,
                Framing::UntilClose,
            ),
            (
                "HEAD on 1.0 neither",
                H10,
                true,
                Shape::Stream,
                Framing::None,
            ),
            (
                "HTTP/2 streams in frames",
                Proto::Streams,
                false,
                Shape::Stream,
                Framing::Unframed,
            ),
            (
                "HTTP/2 with a length",
                Proto::Streams,
                false,
                Shape::Sized(9),
                Framing::Length(9),
            ),
            ("304 has no body", H11, false, Shape::None, Framing::None),
            ("101 has no body", H11, false, Shape::Tunnel, Framing::None),
        ];
        for (what, proto, head, shape, want) in cases {
            assert_eq!(framing(*proto, *head, *shape), *want, "{what}");
        }
    }

    fn ask(keep_alive: bool, unread: Unread) -> Ask {
        Ask {
            keep_alive,
            awaits_continue: false,
            answer_closes: false,
            unread,
            more_input: false,
        }
    }

    #[test]
    fn fate_by_keep_alive_and_unread_body() {
        let big = Unread::Bytes(MAX_DISCARD + 1);
        let cases: &[(&str, Ask, Framing, After)] = &[
            (
                "keep-alive, no body",
                ask(true, Unread::Nothing),
                Framing::Length(3),
                After::Next,
            ),
            (
                "keep-alive, a body left is dropped",
                ask(true, Unread::Bytes(10)),
                Framing::Length(3),
                After::Drain(10),
            ),
            (
                "a body too large to drop closes, lingering",
                ask(true, big),
                Framing::Length(3),
                After::Close { linger: true },
            ),
            (
                "an unread chunked body closes, lingering",
                ask(true, Unread::Chunked),
                Framing::Chunked,
                After::Close { linger: true },
            ),
            (
                "Connection: close with nothing unread closes at once",
                ask(false, Unread::Nothing),
                Framing::Length(3),
                After::Close { linger: false },
            ),
            (
                "Connection: close with a body unread lingers (the answer must arrive)",
                ask(false, Unread::Bytes(5_000_000)),
                Framing::Length(30_000),
                After::Close { linger: true },
            ),
            (
                "a body that ends with the connection closes it",
                ask(true, Unread::Nothing),
                Framing::UntilClose,
                After::Close { linger: false },
            ),
            (
                "an answer that closes, lingering for the body",
                Ask {
                    answer_closes: true,
                    ..ask(true, Unread::Bytes(1))
                },
                Framing::Length(3),
                After::Close { linger: true },
            ),
            (
                "a client waiting for 100 Continue got a final answer",
                Ask {
                    awaits_continue: true,
                    ..ask(true, Unread::Bytes(100))
                },
                Framing::Length(3),
                After::Close { linger: true },
            ),
            (
                "pipelined bytes behind a closing answer are drained",
                Ask {
                    more_input: true,
                    ..ask(false, Unread::Nothing)
                },
                Framing::Length(3),
                After::Close { linger: true },
            ),
        ];
        for (what, a, f, want) in cases {
            assert_eq!(after(a, *f), *want, "{what}");
        }
    }

    #[test]
    fn unread_counts_what_is_left() {
        assert_eq!(Unread::of(Body::None, 0), Unread::Nothing);
        assert_eq!(Unread::of(Body::Length(10), 4), Unread::Bytes(6));
        assert_eq!(Unread::of(Body::Length(10), 10), Unread::Nothing);
        assert_eq!(Unread::of(Body::Chunked, 100), Unread::Chunked);
    }
}

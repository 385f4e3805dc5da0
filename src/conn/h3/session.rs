//! One QUIC connection's HTTP/3: its control stream (SETTINGS out, the
//! client's read by `proto::h3::control`), the client's QPACK streams, and
//! a table of request streams, each parsed by `proto::h3::request` and
//! answered by an exchange, as HTTP/2's streams are.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;

use mio::Registry;
use quinn_proto::{Connection, Dir, Event, StreamEvent, StreamId, VarInt};

use super::exchange_id;
use crate::conn::gateway::GwSide;
use crate::conn::h2::fields::FieldBuf;
use crate::conn::h2::stream::{with_request_of, Task, Use};
use crate::conn::Ctx;
use crate::exchange::{self, ConnInfo, Outcome, Services, TlsFacts};
use crate::msg::{Body, Request, MAX_HEADERS};
use crate::proto::h3::control::{self, Peer, Uni, UniStream};
use crate::proto::h3::request::{Event as ReqEvent, Limits, RequestStream};
use crate::proto::h3::{Code, Failure};

/// Request body bytes read ahead of what its backend took: past 64 KiB
/// the stream is not read, so QUIC's flow control holds the client back.
pub const BODY_CAP: usize = 64 * 1024;

/// What the session needs of the server for one call.
pub(super) struct Io<'a> {
    pub sv: &'a mut Services,
    pub registry: &'a Registry,
    key: usize,
    gen: u64,
}

impl<'a> Io<'a> {
    pub fn new(cx: &'a mut Ctx<'_>, key: usize, gen: u64) -> Io<'a> {
        Io {
            sv: &mut *cx.sv,
            registry: cx.registry,
            key,
            gen,
        }
    }

    pub fn now(&self) -> u64 {
        self.sv.clock.mono_secs
    }
}

/// One request stream.
#[derive(Default)]
pub(super) struct Req {
    pub parser: RequestStream,
    /// The exchange, once the head came.
    pub task: Option<Task>,
    /// Body bytes read and not yet taken by the job.
    pub body: Vec<u8>,
    /// Framed bytes not yet taken by QUIC, from `out_at` on.
    pub out: Vec<u8>,
    pub out_at: usize,
    /// The client's side of the stream ended (or was reset).
    pub fin_read: bool,
}

impl Req {
    /// Nothing more to send and nothing more that anyone reads.
    pub fn finished(&self) -> bool {
        self.out_at >= self.out.len() && self.task.as_ref().is_some_and(|t| t.finished())
    }
}

/// One connection's HTTP/3 state.
pub(super) struct Session {
    pub(super) listener: usize,
    pub(super) peer: SocketAddr,
    pub(super) tls: Option<Rc<TlsFacts>>,
    /// Our control stream, and its bytes QUIC has not taken yet.
    pub(super) control: Option<StreamId>,
    pub(super) control_out: Vec<u8>,
    pub(super) peer_uni: Peer,
    pub(super) unis: HashMap<StreamId, UniStream>,
    pub(super) reqs: HashMap<StreamId, Req>,
    /// Answers finished whose last bytes the client has not acknowledged:
    /// closing the connection before they are would lose them.
    pub(super) unacked: std::collections::HashSet<StreamId>,
    /// A GOAWAY went out: request streams from this index on are refused.
    pub(super) goaway: Option<u64>,
    /// One past the highest request stream index seen.
    pub(super) next_index: u64,
    pub(super) fields: FieldBuf,
    pub(super) section: Vec<u8>,
    pub(super) line: String,
    /// Since when no request has been open (`server.max-keep-alive-idle`).
    pub(super) idle_since: u64,
    /// `connection.kbytes-per-second` / `server.kbytes-per-second` of the
    /// connection's scope, for all its streams (see `write.rs`).
    pub(super) throttle: crate::output::throttle::Throttle,
    /// A login was refused (`auth.delay-invalid-creds`): the output waits
    /// a second and the connection ends with GOAWAY before the next write.
    pub(super) login_refused: bool,
}

impl Session {
    pub fn new(listener: usize, peer: SocketAddr, now: u64) -> Session {
        Session {
            listener,
            peer,
            tls: None,
            control: None,
            control_out: Vec::new(),
            peer_uni: Peer::default(),
            unis: HashMap::new(),
            reqs: HashMap::new(),
            unacked: Default::default(),
            goaway: None,
            next_index: 0,
            fields: FieldBuf::default(),
            section: Vec::new(),
            line: String::new(),
            idle_since: now,
            throttle: Default::default(),
            login_refused: false,
        }
    }

    fn limits(sv: &Services) -> Limits {
        let field_size = sv.config.global.limits.max_request_field_size as usize;
        let list = (field_size + 32 * MAX_HEADERS).clamp(4096, 1 << 20);
        Limits {
            max_field_section: list,
            max_headers_frame: (2 * list) as u64,
        }
    }

    pub fn info(&self, io: &Io<'_>, stream: u32) -> ConnInfo {
        ConnInfo {
            listener: self.listener,
            peer: Some(self.peer.ip()),
            peer_port: self.peer.port(),
            conn_peer: Some(self.peer.ip()),
            forwarded_scheme: None,
            forwarded: false,
            local_ip: None,
            ex: exchange_id(io.key, io.gen, stream),
            tls: self.tls.clone(),
            // (A lookup per request: HTTP/3 connections keep none.)
            geo: Default::default(),
        }
    }

    /// A QUIC event of the connection.
    pub fn on_event(&mut self, conn: &mut Connection, ev: Event, io: &mut Io<'_>) {
        match ev {
            Event::Connected => self.connected(conn, io),
            Event::Stream(StreamEvent::Opened { dir }) => {
                while let Some(id) = conn.streams().accept(dir) {
                    self.opened(conn, id, io);
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => self.readable(conn, id, io),
            Event::Stream(StreamEvent::Finished { id }) => {
                self.unacked.remove(&id);
                self.close_if_done(conn);
            }
            Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                log::debug!("HTTP/3 stream {id} stopped by the client: {error_code}");
                self.unacked.remove(&id);
                let _ = conn
                    .send_stream(id)
                    .reset(VarInt::from_u32(Code::REQUEST_CANCELLED.0 as u32));
                self.drop_req(conn, id, io);
            }
            Event::ConnectionLost { reason } => {
                log::debug!("HTTP/3 connection of {} ended: {reason}", self.peer);
                self.drop_all(io);
            }
            _ => {}
        }
    }

    /// The handshake is done: what it came to, and our control stream.
    fn connected(&mut self, conn: &mut Connection, io: &mut Io<'_>) {
        let sni = conn
            .crypto_session()
            .handshake_data()
            .and_then(|d| {
                d.downcast::<quinn_proto::crypto::rustls::HandshakeData>()
                    .ok()
            })
            .and_then(|d| d.server_name);
        let mut env = vec![("SSL_PROTOCOL".to_string(), "TLSv1.3".to_string())];
        if let Some(name) = sni {
            env.push(("SSL_TLS_SNI".to_string(), name));
        }
        self.tls = Some(Rc::new(TlsFacts {
            version: "TLSv1.3",
            env,
        }));
        let Some(id) = conn.streams().open(Dir::Uni) else {
            return;
        };
        self.control = Some(id);
        let max = Session::limits(io.sv).max_field_section as u64;
        control::server_control_preamble(max, &mut self.control_out);
        self.write_control(conn);
    }

    /// Writes what QUIC takes of our control stream's bytes.
    pub fn write_control(&mut self, conn: &mut Connection) {
        let Some(id) = self.control else { return };
        if self.control_out.is_empty() {
            return;
        }
        if let Ok(n) = conn.send_stream(id).write(&self.control_out) {
            self.control_out.drain(..n);
        }
    }

    /// A stream the client opened.
    fn opened(&mut self, conn: &mut Connection, id: StreamId, io: &mut Io<'_>) {
        if id.dir() == Dir::Uni {
            self.unis.insert(id, UniStream::default());
            self.readable(conn, id, io);
            return;
        }
        self.next_index = self.next_index.max(id.index() + 1);
        if self.goaway.is_some_and(|g| id.index() >= g) {
            // RFC 9114 §5.2: a request past the GOAWAY is not processed.
            let code = VarInt::from_u32(Code::REQUEST_REJECTED.0 as u32);
            let _ = conn.recv_stream(id).stop(code);
            let _ = conn.send_stream(id).reset(code);
            return;
        }
        io.sv.stats.h3_streams += 1;
        self.reqs.insert(id, Req::default());
        self.readable(conn, id, io);
    }

    fn readable(&mut self, conn: &mut Connection, id: StreamId, io: &mut Io<'_>) {
        if self.unis.contains_key(&id) {
            self.read_uni(conn, id);
        } else if self.reqs.contains_key(&id) {
            self.read_req(conn, id, io);
        }
    }

    /// The connection fails with `code` (a protocol error of the client's).
    pub fn fail(&mut self, conn: &mut Connection, code: Code, why: &'static str, io: &mut Io<'_>) {
        log::debug!("HTTP/3 from {}: {why} (0x{:x})", self.peer, code.0);
        conn.close(
            std::time::Instant::now(),
            VarInt::from_u32(code.0 as u32),
            bytes::Bytes::from_static(why.as_bytes()),
        );
        self.drop_all(io);
    }

    fn read_uni(&mut self, conn: &mut Connection, id: StreamId) {
        let Some(mut u) = self.unis.remove(&id) else {
            return;
        };
        let (data, fin, reset) = read_chunks(conn, id, usize::MAX);
        let mut result = Ok(Uni::Reading);
        for (i, d) in data.iter().enumerate() {
            let last = fin && i + 1 == data.len();
            result = u.recv(d, last, &mut self.peer_uni);
            if !matches!(result, Ok(Uni::Reading)) {
                break;
            }
        }
        if data.is_empty() && fin {
            result = u.recv(&[], true, &mut self.peer_uni);
        }
        if reset.is_some() && result.is_ok() {
            result = Err(Failure::Conn(crate::proto::h3::Error {
                code: Code::CLOSED_CRITICAL_STREAM,
                why: "a critical stream reset",
            }));
        }
        match result {
            Ok(Uni::Reading) if !fin => {
                self.unis.insert(id, u);
            }
            Ok(Uni::Reading) => {}
            Ok(Uni::Stop(code)) => {
                let _ = conn.recv_stream(id).stop(VarInt::from_u32(code.0 as u32));
            }
            Err(f) => {
                let (code, why) = match f {
                    Failure::Conn(e) => (e.code, e.why),
                    Failure::Stream(e) => (e.code, e.why),
                };
                log::debug!("HTTP/3 from {}: {why} (0x{:x})", self.peer, code.0);
                conn.close(
                    std::time::Instant::now(),
                    VarInt::from_u32(code.0 as u32),
                    bytes::Bytes::from_static(why.as_bytes()),
                );
            }
        }
    }

    /// Reads a request stream as far as its body may be buffered, and acts
    /// on what came: the head starts the exchange, body goes to the job.
    pub(super) fn read_req(&mut self, conn: &mut Connection, id: StreamId, io: &mut Io<'_>) {
        let Some(mut req) = self.reqs.remove(&id) else {
            return;
        };
        if req.fin_read || req.body.len() >= BODY_CAP {
            self.reqs.insert(id, req);
            return;
        }
        let (data, fin, reset) = read_chunks(conn, id, BODY_CAP - req.body.len());
        if let Some(code) = reset {
            log::debug!("HTTP/3 request stream {id} reset by the client: {code}");
            self.reqs.insert(id, req);
            self.drop_req(conn, id, io);
            return;
        }
        let lim = Session::limits(io.sv);
        let mut heads = Vec::new();
        let (mut too_large, mut ended) = (false, false);
        let n = data.len();
        let mut result = Ok(());
        for i in 0..n.max(usize::from(fin)) {
            let chunk: &[u8] = data.get(i).map_or(&[], |b| &b[..]);
            let last = fin && i + 1 >= n;
            let body = &mut req.body;
            result = req.parser.recv(chunk, last, &lim, &mut |e| match e {
                ReqEvent::Head(h) => heads.push(h),
                ReqEvent::TooLarge => too_large = true,
                ReqEvent::Data(b) => body.extend_from_slice(b),
                ReqEvent::End => ended = true,
            });
            if result.is_err() {
                break;
            }
        }
        req.fin_read |= fin;
        if let Err(f) = result {
            self.reqs.insert(id, req);
            match f {
                Failure::Conn(e) => self.fail(conn, e.code, e.why, io),
                Failure::Stream(e) => {
                    log::debug!("HTTP/3 stream {id} of {}: {}", self.peer, e.why);
                    let code = VarInt::from_u32(e.code.0 as u32);
                    let _ = conn.recv_stream(id).stop(code);
                    let _ = conn.send_stream(id).reset(code);
                    self.drop_req(conn, id, io);
                }
            }
            return;
        }
        if too_large {
            self.refuse(conn, id, &mut req, 431, io);
        }
        for head in heads {
            self.start(id, &mut req, head, ended, io);
        }
        if ended {
            if let Some(t) = req.task.as_mut() {
                t.body.done = true;
                t.last_recv = io.now();
            }
        }
        self.feed_body(id, &mut req, io);
        self.reqs.insert(id, req);
    }

    /// Answers a head glint will not read with `status`; the rest of the
    /// stream is not read.
    fn refuse(
        &mut self,
        conn: &mut Connection,
        id: StreamId,
        req: &mut Req,
        status: u16,
        io: &mut Io<'_>,
    ) {
        let _ = conn
            .recv_stream(id)
            .stop(VarInt::from_u32(Code::NO_ERROR.0 as u32));
        req.fin_read = true;
        let mut task = Task::new(io.now(), true, false);
        let r = exchange::error_reply(io.sv, status);
        let date = io.sv.clock.http_date;
        super::reply::send_reply(
            &mut self.fields,
            &mut self.section,
            &mut task,
            &mut req.out,
            &r,
            &date,
        );
        let info = self.info(io, stream_of(id));
        exchange::log_error(io.sv, &info, &r, b"-");
        io.sv.give_back(r);
        req.task = Some(task);
    }

    /// Starts the exchange of a request head: glint's reply, or a backend's job.
    fn start(
        &mut self,
        id: StreamId,
        req: &mut Req,
        head: crate::proto::h2::conn::RequestHead,
        end: bool,
        io: &mut Io<'_>,
    ) {
        let stream = stream_of(id);
        let head_only = head.method() == b"HEAD";
        let mut task = Task::new(io.now(), end, head_only);
        let info = self.info(io, stream);
        let mut line = std::mem::take(&mut self.line);
        with_request_of(3, &head, end, &mut line, |r| match r {
            Ok(view) => {
                let mut info = info.clone();
                let outcome = exchange::respond(io.sv, &mut info, view, &[], io.registry);
                self.take_outcome(&mut task, &mut req.out, outcome, view, &info, io);
            }
            Err((status, why)) => {
                log::debug!("bad HTTP/3 request from {}: {why}", self.peer);
                let r = exchange::error_reply(io.sv, status);
                let date = io.sv.clock.http_date;
                super::reply::send_reply(
                    &mut self.fields,
                    &mut self.section,
                    &mut task,
                    &mut req.out,
                    &r,
                    &date,
                );
                let path = head.path().unwrap_or_default();
                exchange::log_error(io.sv, &info, &r, &path[..path.len().min(256)]);
                io.sv.give_back(r);
            }
        });
        self.line = line;
        req.task = Some(task);
    }

    /// Sends glint's reply now (and logs it), or holds the gateway
    /// exchange a backend will answer.
    pub(super) fn take_outcome(
        &mut self,
        task: &mut Task,
        out: &mut Vec<u8>,
        outcome: Outcome,
        req: &Request<'_, '_>,
        info: &ConnInfo,
        io: &mut Io<'_>,
    ) {
        task.body.unframed = req.body == Body::Chunked;
        let bodiless = req.body == Body::None;
        match outcome {
            Outcome::Reply(a) => {
                task.body.use_ = Use::Drop;
                let date = io.sv.clock.http_date;
                let head = super::reply::send_reply(
                    &mut self.fields,
                    &mut self.section,
                    task,
                    out,
                    &a.reply,
                    &date,
                );
                exchange::log_reply(io.sv, info, req, &a, head as u64);
                if a.reply.delay {
                    self.throttle.delay_login();
                    self.login_refused = true;
                }
                io.sv.give_back(a.reply);
            }
            Outcome::Gateway(start) => {
                task.body.use_ = if bodiless {
                    Use::Drop
                } else if start.authorizer {
                    Use::Hold
                } else {
                    Use::Feed
                };
                task.gw = Some(Box::new(GwSide::new(*start)));
            }
        }
    }
}

/// Reads what QUIC has of stream `id`, up to about `max` bytes: the
/// chunks, whether the stream ended, and a reset's code.
fn read_chunks(
    conn: &mut Connection,
    id: StreamId,
    max: usize,
) -> (Vec<bytes::Bytes>, bool, Option<VarInt>) {
    let mut data = Vec::new();
    let (mut fin, mut reset) = (false, None);
    let mut rs = conn.recv_stream(id);
    let Ok(mut chunks) = rs.read(true) else {
        return (data, true, None);
    };
    let mut got = 0;
    while got < max {
        match chunks.next(max - got) {
            Ok(Some(c)) => {
                got += c.bytes.len();
                data.push(c.bytes);
            }
            Ok(None) => {
                fin = true;
                break;
            }
            Err(quinn_proto::ReadError::Blocked) => break,
            Err(quinn_proto::ReadError::Reset(code)) => {
                reset = Some(code);
                break;
            }
        }
    }
    let _ = chunks.finalize();
    (data, fin, reset)
}

/// The exchange id's stream number of request stream `id`: its index + 1
/// (0 names the connection, as on HTTP/2).
pub(super) fn stream_of(id: StreamId) -> u32 {
    u32::try_from(id.index() + 1).unwrap_or(u32::MAX)
}

pub(super) fn stream_id(stream: u32) -> Option<StreamId> {
    let index = u64::from(stream.checked_sub(1)?);
    Some(StreamId::new(quinn_proto::Side::Client, Dir::Bi, index))
}

//! The HTTP/2 session of a connection: the sans-IO protocol core
//! (`proto::h2::conn`) driven from the connection's reads and writes, with a
//! table of streams, each an exchange of its own.
//!
//! A connection becomes HTTP/2 (`Phase::Http2`) after a TLS handshake that
//! chose ALPN `h2`, on cleartext when its first bytes are the client preface
//! (prior knowledge), or by HTTP/1.1's `Upgrade: h2c` (`upgrade.rs`); each
//! only while `server.h2proto` is on, the last only with `server.h2c`.
//!
//! How a stream flows:
//! 1. bytes read go to the core; its `Request` event becomes a
//!    [`crate::msg::Request`] view (`stream::with_request`) and
//!    `exchange::respond` answers it as it answers HTTP/1, with an
//!    [`crate::msg::ExchangeId`] naming the stream;
//! 2. glint's own reply goes out as HEADERS and its body pieces wait in the
//!    stream's [`stream::Task`]; a backend's answer comes through the
//!    stream's [`sink::StreamSink`], whose `has_room` bounds what it queues
//!    (the backend pauses: back-pressure);
//! 3. request bodies (DATA) go to the stream's job with `Gateways::feed`,
//!    and only what the job took is handed back to the core
//!    (`consume_body`): the client's window is the back-pressure; bodies
//!    nothing needs are consumed and dropped;
//! 4. the writer (`write.rs`) frames DATA by the core's priorities into the
//!    output queue, a bounded amount at a time.
//!
//! What the core does not do is here: time-outs (`timeouts.rs`: no stream
//! open, a client that never opens its window, body bytes that stop coming,
//! a SETTINGS ack), a cap on what all streams together hold while the
//! output stalls, GOAWAY on a graceful shutdown. Request bodies to jobs are
//! `body.rs`; the connection's reads and writes around the session,
//! `drive.rs`.

mod body;
mod drive;
pub(in crate::conn) mod fields;
mod pieces;
mod sink;
pub(in crate::conn) mod stream;
mod tasks;
mod timeouts;
mod upgrade;
mod write;

use std::collections::VecDeque;

use mio::Registry;

use crate::exchange::{self, ConnInfo, Outcome, Services};
use crate::msg::{Body, Request, MAX_HEADERS};
use crate::proto::h2::conn::{Config, Connection as Core, Event, RequestHead};
use crate::proto::h2::ErrorCode;
use crate::stats::Stats;
use fields::{FieldBuf, HeadCache};
use sink::{send_reply, StreamSink};
use stream::{Task, ViewScratch};
use tasks::Tasks;

/// Memory one stream's answer may have queued before its backend is asked
/// to pause: 64 KiB, a stream window's worth (what the client takes
/// before it must say WINDOW_UPDATE), so a reading client never waits on it.
pub const STREAM_HIGH_WATER: usize = 64 * 1024;
/// A paused backend reads again once its stream drained below this.
pub const STREAM_LOW_WATER: usize = STREAM_HIGH_WATER / 2;

/// Memory all streams of one connection may hold queued for a client that
/// does not take it (its windows closed, its socket full): past 1 MiB new
/// requests wait before being answered and backends pause, so a client
/// that opens 100 streams for large listings and reads nothing costs about
/// this much, not 100 answers.
pub const CONN_QUEUE_CAP: usize = 1024 * 1024;

/// Descriptors held by the file ranges queued on one connection's streams
/// past which new requests wait (ranges of one cached file share one): 32
/// lets a page's images go out side by side, while 1,000 connections hold
/// at most 32,000.
pub const MAX_QUEUED_FILES: usize = 32;

/// The client must acknowledge our SETTINGS within this many seconds (or
/// `server.max-read-idle` when that is shorter), or the connection ends
/// with SETTINGS_TIMEOUT (RFC 9113 §6.5.3). Every client acks in one round
/// trip; 10 s is the TLS handshake's own bound.
pub const SETTINGS_ACK_SECS: u64 = 10;

/// After a connection error (GOAWAY queued), the client has this long to
/// read what is left before the socket closes: a flooding client that
/// reads nothing holds its buffers no longer than that.
pub const FAILED_SECS: u64 = 2;

/// Most rounds of reading and writing per drive before others get a turn
/// (16 rounds of 64 KiB, 1 MiB, as an HTTP/1 upload's).
const ROUNDS: usize = 16;

/// A request waiting for the connection's queued answers to drain (see
/// [`CONN_QUEUE_CAP`]); its body stays in the core, unread (back-pressure).
#[derive(Debug)]
struct Held {
    stream: u32,
    head: RequestHead,
    end_stream: bool,
}

/// What the session needs of the server for one call.
pub(super) struct Io<'a> {
    pub sv: &'a mut Services,
    pub registry: &'a Registry,
    /// The connection's, with stream 0.
    pub info: ConnInfo,
    /// What the connection sets for every request (a PROXY header's).
    pub env: &'a [(&'static str, Vec<u8>)],
}

impl Io<'_> {
    fn info_for(&self, stream: u32) -> ConnInfo {
        let mut i = self.info.clone();
        i.ex = i.ex.on_stream(stream);
        i
    }

    fn now(&self) -> u64 {
        self.sv.clock.mono_secs
    }
}

/// One HTTP/2 connection's state above the protocol core.
pub struct Session {
    core: Core,
    /// The start of a frame that did not fit in one read (a frame may be
    /// 16,393 bytes, the input buffer holds 16,384).
    partial: Vec<u8>,
    tasks: Tasks,
    held: VecDeque<Held>,
    fields: FieldBuf,
    heads: HeadCache,
    /// `clock.mono_secs` when our SETTINGS went out.
    since: u64,
    /// When the output queue last moved (or was empty).
    last_write: u64,
    /// Since when no stream has been open.
    idle_since: u64,
    /// Streams whose paused backend may read again.
    pump: Vec<u32>,
    /// Scratch for an unframed request body given to a job.
    chunk: Vec<u8>,
    /// What building request views reuses (the request line the access
    /// log shows, the header vector).
    view: ViewScratch,
    /// The core's events of one read, reused.
    events: Vec<Event>,
    /// When the connection was first seen failed (GOAWAY for an error
    /// queued): it closes [`FAILED_SECS`] later, written or not.
    failed_at: Option<u64>,
    /// A compressed reply was given its slice in this [`Session::fill`].
    sliced: bool,
    /// A compressed reply waits for the next turn's slice.
    pub(super) encode_pending: bool,
    /// [`Session::compact`] ran and nothing was read since.
    compacted: bool,
    /// A login was refused on a stream: the connection holds its output
    /// for a second (`auth.delay-invalid-creds`); taken by the connection.
    pub(super) delay_output: bool,
    /// Logins refused on this connection.
    refused_logins: u8,
    /// Streams started on this connection (saturating at 255).
    started: u8,
}

/// How a connection's first bytes (or its ALPN) decide the protocol.
pub(super) enum Start {
    H2,
    /// A prefix of the HTTP/2 preface: wait for more.
    Wait,
    H1,
}

/// The core's limits from the configuration: `server.max-request-field-size`
/// bounds the decoded header list, with 32 bytes per field of the 64 a
/// request may carry (HPACK's per-field overhead), as for HTTP/1's head.
fn core_config(sv: &Services) -> Config {
    let field_size = sv.config.global.limits.max_request_field_size as usize;
    let list = field_size + 32 * MAX_HEADERS;
    Config {
        max_header_list_size: list.clamp(4096, 1 << 20) as u32,
        max_header_block_bytes: (2 * list).clamp(8192, 2 << 20),
        ..Config::default()
    }
}

impl Session {
    fn new(core: Core, now: u64) -> Session {
        Session {
            core,
            partial: Vec::new(),
            tasks: Tasks::default(),
            held: VecDeque::new(),
            fields: FieldBuf::default(),
            heads: HeadCache::default(),
            since: now,
            last_write: now,
            idle_since: now,
            pump: Vec::new(),
            chunk: Vec::new(),
            view: ViewScratch::default(),
            events: Vec::new(),
            failed_at: None,
            sliced: false,
            encode_pending: false,
            compacted: false,
            delay_output: false,
            refused_logins: 0,
            started: 0,
        }
    }

    fn queued_mem(&self) -> usize {
        self.tasks.mem()
    }

    /// Descriptors the queued file ranges hold (ranges of one cached file
    /// share one).
    fn queued_files(&self) -> usize {
        self.tasks.files()
    }

    /// The connection holds as much unsent as it may: new requests wait.
    fn over_cap(&self) -> bool {
        self.queued_mem() >= CONN_QUEUE_CAP || self.queued_files() >= MAX_QUEUED_FILES
    }

    /// Streams open (answered or waiting).
    fn open(&self) -> usize {
        self.tasks.len() + self.held.len()
    }

    /// No stream open, no frame half read, nothing the core has to write:
    /// closing loses nothing the client sent (see `Connection::is_idle`).
    pub fn is_idle(&self) -> bool {
        self.open() == 0 && self.partial.is_empty() && self.core.output().is_empty()
    }

    /// GOAWAY went out: no new stream is served here.
    pub fn going_away(&self) -> bool {
        self.core.going_away()
    }

    /// Nothing left to do: close the socket once the output is written.
    fn is_done(&self) -> bool {
        self.core.is_done() && self.tasks.is_empty() && self.held.is_empty()
    }

    /// Bytes read: to the core, then what they caused.
    fn recv(&mut self, bytes: &[u8], io: &mut Io<'_>) {
        self.compacted = false;
        let now_ms = io.sv.clock.mono_us / 1000;
        let result = if self.partial.is_empty() {
            self.core.recv(bytes, now_ms).map(|used| {
                self.partial.extend_from_slice(&bytes[used..]);
            })
        } else {
            self.partial.extend_from_slice(bytes);
            let mut p = std::mem::take(&mut self.partial);
            let r = self.core.recv(&p, now_ms).map(|used| {
                p.drain(..used);
            });
            self.partial = p;
            r
        };
        self.on_events(io);
        if let Err(e) = result {
            log::debug!("HTTP/2 from {:?}: {e}", io.info.peer);
            self.partial = Vec::new();
            // GOAWAY is queued: no stream goes on.
            self.drop_all(io.sv);
        }
    }

    /// Handles what the core reported. A request whose reset is in the
    /// same batch is never started: a rapid reset (CVE-2023-44487) costs
    /// glint its frames, not an exchange.
    fn on_events(&mut self, io: &mut Io<'_>) {
        let mut events = std::mem::take(&mut self.events);
        events.extend(std::iter::from_fn(|| self.core.poll_event()));
        let mut reset: Vec<u32> = events
            .iter()
            .filter_map(|e| match e {
                Event::Reset { stream, .. } => Some(*stream),
                _ => None,
            })
            .collect();
        reset.sort_unstable();
        for ev in events.drain(..) {
            match ev {
                Event::Request {
                    stream,
                    head,
                    end_stream,
                } => {
                    io.sv.stats.h2_streams += 1;
                    io.sv.stats.h2_streams_open += 1;
                    if reset.binary_search(&stream).is_ok() {
                        // Counted and dropped at its Reset.
                        self.held.push_back(Held {
                            stream,
                            head,
                            end_stream,
                        });
                    } else if self.over_cap() || !self.held.is_empty() {
                        self.held.push_back(Held {
                            stream,
                            head,
                            end_stream,
                        });
                    } else {
                        self.start(stream, &head, end_stream, io);
                        self.core.recycle(head.into_list());
                    }
                }
                Event::Data {
                    stream, end_stream, ..
                } => self.on_body(stream, end_stream, io),
                Event::Trailers { stream, fields } => {
                    self.core.recycle(fields);
                    self.on_body(stream, true, io);
                }
                Event::Reset { stream, code, .. } => {
                    log::debug!("HTTP/2 stream {stream} reset: {code:?}");
                    self.drop_stream(stream, io.sv);
                    // Its row on the status page goes with it, answered or not.
                    io.sv.board.end(io.info.ex.slot, stream);
                }
                Event::Rejected { stream, why } => {
                    log::debug!("HTTP/2 stream {stream} refused: {why}");
                }
                Event::GoAway { code, .. } => {
                    log::debug!("HTTP/2 client {:?} said GOAWAY {code:?}", io.info.peer);
                }
            }
        }
        self.events = events;
    }

    /// Body bytes (or its end) for `stream`.
    fn on_body(&mut self, stream: u32, end: bool, io: &mut Io<'_>) {
        if let Some(h) = self.held.iter_mut().find(|h| h.stream == stream) {
            // Kept in the core until the request starts.
            h.end_stream |= end;
            return;
        }
        let Some(mut task) = self.tasks.remove(&stream) else {
            // Nothing needs it (the stream's answer is done).
            self.core.consume_all_body(stream);
            return;
        };
        task.body.done |= end;
        task.last_recv = io.now();
        self.feed_task(stream, &mut task, io);
        self.settle(stream, task, &mut io.sv.stats);
    }

    /// Starts the exchange of a request: glint's reply, or a backend's job.
    fn start(&mut self, stream: u32, head: &RequestHead, end_stream: bool, io: &mut Io<'_>) {
        self.started = self.started.saturating_add(1);
        let head_only = head.method() == b"HEAD";
        let mut task = Task::new(io.now(), end_stream, head_only);
        let mut info = io.info_for(stream);
        let mut scratch = std::mem::take(&mut self.view);
        stream::with_request(head, end_stream, &mut scratch, |r| match r {
            Ok(req) => self.respond(stream, &mut task, req, &mut info, io),
            Err((status, why)) => {
                log::debug!("bad HTTP/2 request from {:?}: {why}", info.peer);
                let r = exchange::error_reply(io.sv, status);
                let date = io.sv.clock.http_date;
                send_reply(
                    &mut self.core,
                    &mut self.fields,
                    &mut self.heads,
                    &mut task,
                    stream,
                    &r,
                    &date,
                );
                let path = head.path().unwrap_or_default();
                exchange::log_error(io.sv, &info, &r, &path[..path.len().min(256)]);
                io.sv.give_back(r);
            }
        });
        self.view = scratch;
        // Fed and settled while out of the table: each trip through it
        // costs a slot's insert and remove and two moves of the task.
        self.feed_task(stream, &mut task, io);
        self.settle(stream, task, &mut io.sv.stats);
    }

    /// Answers `req` on `stream` through the exchange.
    fn respond(
        &mut self,
        stream: u32,
        task: &mut Task,
        req: &Request<'_, '_>,
        info: &mut ConnInfo,
        io: &mut Io<'_>,
    ) {
        // mod_extforward may change who the client is: logged so.
        let outcome = exchange::respond(io.sv, info, req, io.env, io.registry);
        self.take_outcome(stream, task, outcome, req, info, io);
    }

    /// Sends glint's reply now (and logs it), or holds the gateway
    /// exchange a backend will answer.
    fn take_outcome(
        &mut self,
        stream: u32,
        task: &mut Task,
        outcome: Outcome,
        req: &Request<'_, '_>,
        info: &ConnInfo,
        io: &mut Io<'_>,
    ) {
        task.body.unframed = req.body == Body::Chunked;
        let bodiless = req.body == Body::None;
        match outcome {
            Outcome::Reply(a) => {
                task.body.use_ = stream::Use::Drop;
                let date = io.sv.clock.http_date;
                let head = send_reply(
                    &mut self.core,
                    &mut self.fields,
                    &mut self.heads,
                    task,
                    stream,
                    &a.reply,
                    &date,
                );
                exchange::log_reply(io.sv, info, req, &a, head as u64);
                if a.reply.delay {
                    self.refuse_login();
                }
                io.sv.give_back(a.reply);
            }
            Outcome::Gateway(start) => {
                let authorizer = start.authorizer;
                // An authorizer gets the head alone; the body waits in the
                // core (unread: the client's window holds it back).
                task.body.use_ = if bodiless {
                    stream::Use::Drop
                } else if authorizer {
                    stream::Use::Hold
                } else {
                    stream::Use::Feed
                };
                let continue_100 = !authorizer
                    && !task.body.done
                    && !matches!(req.body, Body::None)
                    && req.header("expect").is_some();
                task.gw = Some(Box::new(super::gateway::GwSide::new(*start)));
                if continue_100 {
                    // The client waits for a go-ahead before its body.
                    let _ = self.core.send_headers(stream, 100, [], false);
                }
            }
        }
    }

    /// A refused login, as lighttpd answers one over HTTP/2: the
    /// connection's output waits a second, and the connection ends (GOAWAY)
    /// so that the next guess costs a new one; a second refusal before it
    /// has ended ends it at once with ENHANCE_YOUR_CALM.
    fn refuse_login(&mut self) {
        self.delay_output = true;
        self.refused_logins = self.refused_logins.saturating_add(1);
        if self.refused_logins == 1 {
            self.core.shutdown();
        } else {
            self.core
                .abort(ErrorCode::ENHANCE_YOUR_CALM, "logins refused again");
        }
    }

    /// Puts a task back, or lets it go when it is done: its answer framed
    /// and nothing more to read for it. A request body still coming then
    /// is dropped as it comes, for a window's worth, with the stream's
    /// frames still judged, and then stopped with RST_STREAM(NO_ERROR), as
    /// RFC 9113 §8.1 allows after a complete response (see the core's
    /// `drop_body`).
    fn settle(&mut self, stream: u32, task: Task, stats: &mut Stats) {
        if !task.finished() {
            self.tasks.insert(stream, task);
            return;
        }
        self.finish(stream, &task, stats);
    }

    /// What a finished task, out of the table, leaves to do (see `settle`).
    fn finish(&mut self, stream: u32, task: &Task, stats: &mut Stats) {
        if !task.body.done {
            self.core.drop_body(stream);
        } else {
            self.core.consume_all_body(stream);
        }
        stats.h2_streams_open = stats.h2_streams_open.saturating_sub(1);
    }

    /// The client (or the core, for the client's error) reset `stream`.
    fn drop_stream(&mut self, stream: u32, sv: &mut Services) {
        if let Some(i) = self.held.iter().position(|h| h.stream == stream) {
            self.held.remove(i);
            sv.stats.h2_streams_open = sv.stats.h2_streams_open.saturating_sub(1);
        }
        if let Some(mut t) = self.tasks.remove(&stream) {
            t.drop_pieces();
            if let Some(g) = t.gw.take() {
                sv.upstream.finish(g.start.job);
            }
            sv.stats.h2_streams_open = sv.stats.h2_streams_open.saturating_sub(1);
        }
    }

    /// Every stream ends (the connection failed or closes).
    fn drop_all(&mut self, sv: &mut Services) {
        let streams: Vec<u32> = self
            .tasks
            .streams()
            .chain(self.held.iter().map(|h| h.stream))
            .collect();
        for s in streams {
            self.drop_stream(s, sv);
        }
    }

    /// Starts waiting requests while the connection has room for them.
    fn start_held(&mut self, io: &mut Io<'_>) {
        while !self.held.is_empty() && !self.over_cap() {
            let Some(h) = self.held.pop_front() else {
                break;
            };
            self.start(h.stream, &h.head, h.end_stream, io);
            self.core.recycle(h.head.into_list());
        }
    }

    /// Backends paused for room that may read again.
    fn pump_paused(&mut self, io: &mut Io<'_>) {
        for s in std::mem::take(&mut self.pump) {
            self.with_sink(s, io, |sink, io, job| {
                let now = io.now();
                io.sv.upstream.pump(job, sink, now, io.registry);
            });
            self.feed_body(s, io);
        }
    }

    /// Runs `f` with the sink of `stream`'s gateway exchange, then acts on
    /// what the answer came to.
    fn with_sink(
        &mut self,
        stream: u32,
        io: &mut Io<'_>,
        f: impl FnOnce(&mut StreamSink<'_>, &mut Io<'_>, crate::upstream::JobId),
    ) {
        let Some(mut task) = self.tasks.remove(&stream) else {
            return;
        };
        if let Some(job) = task.gw.as_ref().map(|g| g.start.job) {
            let others = self.queued_mem();
            let mut sink = StreamSink {
                core: &mut self.core,
                fields: &mut self.fields,
                heads: &mut self.heads,
                task: &mut task,
                stream,
                others,
                date: io.sv.clock.http_date,
            };
            f(&mut sink, io, job);
            self.after_gw(stream, &mut task, io);
        }
        self.settle(stream, task, &mut io.sv.stats);
    }
}

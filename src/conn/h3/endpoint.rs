//! One UDP socket and its QUIC endpoint: binding, the transport limits,
//! datagrams in (`recvmmsg` with GRO through quinn-udp) and out (`sendmsg`
//! with GSO and ECN), and the drive of one connection: its events to the
//! HTTP/3 session, its packets to the socket, its end.

use std::collections::HashMap;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{ConnectionHandle, EndpointConfig, ServerConfig, TransportConfig, VarInt};
use quinn_udp::{RecvMeta, UdpSockRef, UdpSocketState};

use super::session::Io;
use super::Quic;
use crate::conn::Ctx;

/// Concurrent request streams a client may open (QUIC's
/// initial_max_streams_bidi): HTTP/2's 100 (`proto::h2::conn::limits`).
pub const MAX_REQUEST_STREAMS: u32 = 100;

/// Unidirectional streams a client may have open: its control and two
/// QPACK streams, and room for a few of the reserved types clients send
/// to keep servers honest (RFC 9114 §6.2.3), each read and dropped.
pub const MAX_UNI_STREAMS: u32 = 8;

/// Request body bytes in flight per stream (QUIC's stream window), and on
/// a whole connection: 256 KiB and 1 MiB, the HTTP/2 session's bounds on
/// what it holds for a client (`conn::h2::CONN_QUEUE_CAP`).
const STREAM_WINDOW: u32 = 256 * 1024;
const CONN_WINDOW: u32 = 1024 * 1024;

/// Answer bytes quinn-proto keeps unacknowledged per connection: past it
/// writes block and the stream's queue waits (back-pressure to files and
/// backends). 1 MiB fills a 100 Mbit/s path with 80 ms of round trip.
const SEND_WINDOW: u64 = 1024 * 1024;

/// Initial packets of new connections buffered while they wait to be
/// accepted: an Initial flight is 2-3 datagrams of 1,200-1,500 bytes.
const INCOMING_BUFFER: u64 = 16 * 1024;
/// ... and what all waiting connections may hold together.
const INCOMING_BUFFER_TOTAL: u64 = 1024 * 1024;

/// The socket's receive buffer: 2 MiB holds a burst of some 1,400 full
/// datagrams while the loop is busy (the kernel caps it at rmem_max).
const RECV_BUFFER: usize = 2 * 1024 * 1024;

/// What an endpoint is made of.
pub struct EndpointSpec {
    /// The TCP listener it stands beside (for Alt-Svc and the settings).
    pub listener: usize,
    /// The address to bind: the TCP listener's, port included.
    pub addr: SocketAddr,
    pub tls: Arc<rustls::ServerConfig>,
    /// `server.max-read-idle`: QUIC's idle time-out.
    pub idle: Duration,
}

pub(super) struct Endpoint {
    pub listener: usize,
    pub socket: mio::net::UdpSocket,
    pub local: SocketAddr,
    udp: UdpSocketState,
    pub ep: quinn_proto::Endpoint,
    pub handles: HashMap<ConnectionHandle, usize>,
}

fn server_config(spec: &EndpointSpec) -> io::Result<ServerConfig> {
    let crypto = QuicServerConfig::try_from(Arc::clone(&spec.tls))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("QUIC TLS: {e}")))?;
    let mut t = TransportConfig::default();
    t.max_concurrent_bidi_streams(VarInt::from_u32(MAX_REQUEST_STREAMS))
        .max_concurrent_uni_streams(VarInt::from_u32(MAX_UNI_STREAMS))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(CONN_WINDOW))
        .send_window(SEND_WINDOW)
        .datagram_receive_buffer_size(None)
        .max_idle_timeout(spec.idle.try_into().ok());
    let mut c = ServerConfig::with_crypto(Arc::new(crypto));
    c.transport_config(Arc::new(t))
        .max_incoming(super::RETRY_HANDSHAKES * 4)
        .incoming_buffer_size(INCOMING_BUFFER)
        .incoming_buffer_size_total(INCOMING_BUFFER_TOTAL);
    Ok(c)
}

impl Endpoint {
    pub fn bind(spec: EndpointSpec) -> io::Result<Endpoint> {
        let config = server_config(&spec)?;
        let std_sock = std::net::UdpSocket::bind(spec.addr)
            .map_err(|e| io::Error::new(e.kind(), format!("UDP {}: {e}", spec.addr)))?;
        std_sock.set_nonblocking(true)?;
        let udp = UdpSocketState::new(UdpSockRef::from(&std_sock))?;
        let _ = udp.set_recv_buffer_size(UdpSockRef::from(&std_sock), RECV_BUFFER);
        let local = std_sock.local_addr()?;
        let ep = quinn_proto::Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(Arc::new(config)),
            !udp.may_fragment(),
            None,
        );
        Ok(Endpoint {
            listener: spec.listener,
            socket: mio::net::UdpSocket::from_std(std_sock),
            local,
            udp,
            ep,
            handles: HashMap::new(),
        })
    }

    /// Sends a packet (or a GSO batch). A full socket buffer drops it, as a
    /// congested network would: QUIC's loss recovery sends it again, and
    /// waiting for writability would hold every connection of the socket.
    pub fn send(&self, t: &quinn_proto::Transmit, contents: &[u8]) {
        let out = quinn_udp::Transmit {
            destination: t.destination,
            ecn: t
                .ecn
                .and_then(|e| quinn_udp::EcnCodepoint::from_bits(e as u8)),
            contents,
            segment_size: t.segment_size,
            src_ip: t.src_ip,
        };
        if let Err(e) = self.udp.try_send(UdpSockRef::from(&self.socket), &out) {
            if e.kind() != io::ErrorKind::WouldBlock {
                log::debug!("HTTP/3: send to {}: {e}", t.destination);
            }
        }
    }

    fn max_gso(&self) -> usize {
        self.udp.max_gso_segments().clamp(1, 10)
    }
}

impl Quic {
    /// One `recvmmsg` on endpoint `i`; the datagrams go to quinn-proto.
    /// Returns how many buffers were filled, `None` when nothing was there.
    pub(super) fn recv_batch(&mut self, i: usize, cx: &mut Ctx<'_>) -> Option<usize> {
        let e = self.eps.get(i)?;
        let gro = e.udp.gro_segments().max(1);
        let slot = 1500 * gro;
        let batch = quinn_udp::BATCH_SIZE.min(8);
        self.rx.resize(slot * batch, 0);
        let mut meta = [RecvMeta::default(); 8];
        let got = {
            let mut bufs: Vec<IoSliceMut<'_>> =
                self.rx.chunks_mut(slot).map(IoSliceMut::new).collect();
            match e
                .udp
                .recv(UdpSockRef::from(&e.socket), &mut bufs, &mut meta[..batch])
            {
                Ok(n) => n,
                Err(err) => {
                    if err.kind() != io::ErrorKind::WouldBlock {
                        log::debug!("HTTP/3: recv: {err}");
                    }
                    return None;
                }
            }
        };
        let now = Instant::now();
        let rx = std::mem::take(&mut self.rx);
        for (k, m) in meta.iter().enumerate().take(got) {
            let buf = &rx[k * slot..k * slot + m.len];
            let stride = m.stride.max(1);
            for d in buf.chunks(stride) {
                cx.sv.stats.h3_datagrams += 1;
                self.tx.clear();
                let ecn = m
                    .ecn
                    .and_then(|c| quinn_proto::EcnCodepoint::from_bits(c as u8));
                let data = bytes::BytesMut::from(d);
                let ev = self.eps[i]
                    .ep
                    .handle(now, m.addr, m.dst_ip, ecn, data, &mut self.tx);
                if let Some(ev) = ev {
                    self.on_datagram(i, ev, cx);
                }
            }
        }
        self.rx = rx;
        Some(got)
    }

    /// Everything one connection has to do now: endpoint events, its
    /// events to the session, its packets out, and its removal once drained.
    pub(super) fn drive(&mut self, key: usize, cx: &mut Ctx<'_>) {
        let Some(c) = self.conns.get_mut(key) else {
            return;
        };
        let e = &mut self.eps[c.ep];
        let mut io = Io::new(cx, key, c.gen);
        // What came in so far shows in the status page asked for now.
        count_bytes(&c.conn, &mut io, key);
        // Bounded: each round handles what the last one produced.
        for _ in 0..8 {
            let mut any = false;
            while let Some(ev) = c.conn.poll_endpoint_events() {
                any = true;
                if let Some(back) = e.ep.handle_event(c.ch, ev) {
                    c.conn.handle_event(back);
                }
            }
            while let Some(ev) = c.conn.poll() {
                any = true;
                c.s.on_event(&mut c.conn, ev, &mut io);
            }
            c.s.write_all(&mut c.conn, &mut io);
            let now = Instant::now();
            let gso = e.max_gso();
            loop {
                self.tx.clear();
                let Some(t) = c.conn.poll_transmit(now, gso, &mut self.tx) else {
                    break;
                };
                any = true;
                e.send(&t, &self.tx[..t.size]);
            }
            if !any {
                break;
            }
        }
        c.timer = c.conn.poll_timeout();
        count_bytes(&c.conn, &mut io, key);
        if c.conn.is_drained() {
            let ch = c.ch;
            c.s.drop_all(&mut io);
            e.handles.remove(&ch);
            self.conns.remove(key);
            cx.sv.board.close(super::SLOT_BASE + key);
        }
    }
}

/// The connection's byte totals into its row on the status page (only
/// while something shows the table).
fn count_bytes(conn: &quinn_proto::Connection, io: &mut Io<'_>, key: usize) {
    if io.sv.board.is_kept() {
        let st = conn.stats();
        io.sv
            .board
            .totals(super::SLOT_BASE + key, st.udp_rx.bytes, st.udp_tx.bytes);
    }
}

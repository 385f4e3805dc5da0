//! One synchronous LDAPv3 connection: connect (plain, `ldaps://`, or
//! StartTLS), simple bind, subtree search for DNs, unbind. Every socket
//! operation is bounded by the connection's time-out, so a server that
//! stops answering costs at most that long per step.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use super::ber::{self, BerError, Reader};
use super::{LdapError, LdapUrl};

/// The StartTLS extended operation (RFC 4511 4.14.1).
const STARTTLS_OID: &[u8] = b"1.3.6.1.4.1.1466.20037";

/// How to reach and trust a server.
#[derive(Clone)]
pub struct Options {
    /// Connect, and each read or write, at most this long.
    pub timeout: Duration,
    /// Upgrade a plain `ldap://` connection with StartTLS before binding.
    pub starttls: bool,
    /// The TLS client configuration (trusted CAs), for `ldaps://` and StartTLS.
    pub tls: Option<Arc<ClientConfig>>,
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
    /// Between the plain socket and its TLS session.
    Gone,
}

impl Stream {
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.write_all(b),
            Stream::Tls(s) => {
                s.write_all(b)?;
                s.flush()
            }
            Stream::Gone => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(b),
            Stream::Tls(s) => s.read(b),
            Stream::Gone => Err(io::ErrorKind::NotConnected.into()),
        }
    }
}

/// An open connection to a directory server.
pub struct Connection {
    stream: Stream,
    next_id: i64,
    buf: Vec<u8>,
}

/// A found entry: its DN and the first value of the attribute asked for.
pub type Entry = (String, Option<Vec<u8>>);

/// One LDAPResult: the code (0 is success) and the server's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdapResult {
    pub code: i64,
    pub message: String,
}

impl Connection {
    /// Connects to `url` (and upgrades with StartTLS when asked).
    pub fn open(url: &LdapUrl, opts: &Options) -> Result<Connection, LdapError> {
        let addrs = (url.host.as_str(), url.port)
            .to_socket_addrs()
            .map_err(|e| LdapError::Io(format!("{}: {e}", url.host)))?;
        let mut last = LdapError::Io(format!("{}: no address", url.host));
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, opts.timeout) {
                Ok(s) => {
                    let io = |e: io::Error| LdapError::Io(e.to_string());
                    s.set_read_timeout(Some(opts.timeout)).map_err(io)?;
                    s.set_write_timeout(Some(opts.timeout)).map_err(io)?;
                    let _ = s.set_nodelay(true);
                    let mut c = Connection {
                        stream: Stream::Plain(s),
                        next_id: 1,
                        buf: Vec::new(),
                    };
                    if url.tls {
                        c.tls(url, opts)?;
                    } else if opts.starttls {
                        c.starttls(url, opts)?;
                    }
                    return Ok(c);
                }
                Err(e) => last = LdapError::Io(format!("{addr}: {e}")),
            }
        }
        Err(last)
    }

    fn tls(&mut self, url: &LdapUrl, opts: &Options) -> Result<(), LdapError> {
        let cfg = opts
            .tls
            .clone()
            .ok_or_else(|| LdapError::Tls("no TLS configuration".into()))?;
        let name = ServerName::try_from(url.host.clone())
            .map_err(|e| LdapError::Tls(format!("{}: {e}", url.host)))?;
        let conn = ClientConnection::new(cfg, name).map_err(|e| LdapError::Tls(e.to_string()))?;
        let tcp = match std::mem::replace(&mut self.stream, Stream::Gone) {
            Stream::Plain(s) => s,
            _ => return Err(LdapError::Tls("TLS already on".into())),
        };
        let mut s = StreamOwned::new(conn, tcp);
        // The handshake now, so that a certificate refused is its own error.
        while s.conn.is_handshaking() {
            s.conn
                .complete_io(&mut s.sock)
                .map_err(|e| LdapError::Tls(e.to_string()))?;
        }
        self.stream = Stream::Tls(Box::new(s));
        Ok(())
    }

    fn starttls(&mut self, url: &LdapUrl, opts: &Options) -> Result<(), LdapError> {
        let id = self.send(|o| {
            ber::put_with(o, 0x77, |o| ber::put(o, 0x80, STARTTLS_OID));
        })?;
        let (tag, op) = self.receive(id)?;
        if tag != 0x78 {
            return Err(LdapError::Protocol("StartTLS: unexpected answer"));
        }
        let r = result(&op)?;
        if r.code != 0 {
            return Err(LdapError::Result(r));
        }
        self.tls(url, opts)
    }

    /// Simple bind as `dn` with `password` (both empty: anonymous).
    pub fn bind(&mut self, dn: &str, password: &[u8]) -> Result<(), LdapError> {
        let id = self.send(|o| {
            ber::put_with(o, 0x60, |o| {
                ber::put_int(o, ber::INTEGER, 3);
                ber::put(o, ber::OCTET_STRING, dn.as_bytes());
                ber::put(o, 0x80, password);
            })
        })?;
        let (tag, op) = self.receive(id)?;
        if tag != 0x61 {
            return Err(LdapError::Protocol("bind: unexpected answer"));
        }
        let r = result(&op)?;
        if r.code == 0 {
            Ok(())
        } else {
            Err(LdapError::Result(r))
        }
    }

    /// The DNs of the entries under `base` (whole subtree) that `filter`
    /// (BER, from [`super::filter::encode`]) matches, no attributes; at
    /// most `limit` (0: the server's limit). A server's size limit
    /// exceeded is reported as `LdapError::Result` with code 4.
    pub fn search(
        &mut self,
        base: &str,
        filter: &[u8],
        limit: i64,
        time_limit: i64,
    ) -> Result<Vec<String>, LdapError> {
        let found = self.search_attr(base, filter, None, limit, time_limit)?;
        Ok(found.into_iter().map(|(dn, _)| dn).collect())
    }

    /// As [`Connection::search`], asking for the attribute `attr` too (None:
    /// no attribute, "1.1"): each entry's DN and the first value of `attr`
    /// it holds (the type compared without regard to case).
    pub fn search_attr(
        &mut self,
        base: &str,
        filter: &[u8],
        attr: Option<&str>,
        limit: i64,
        time_limit: i64,
    ) -> Result<Vec<Entry>, LdapError> {
        let id = self.send(|o| {
            ber::put_with(o, 0x63, |o| {
                ber::put(o, ber::OCTET_STRING, base.as_bytes());
                ber::put_int(o, ber::ENUMERATED, 2); // wholeSubtree
                ber::put_int(o, ber::ENUMERATED, 0); // neverDerefAliases
                ber::put_int(o, ber::INTEGER, limit);
                ber::put_int(o, ber::INTEGER, time_limit);
                ber::put(o, ber::BOOLEAN, &[0]);
                o.extend_from_slice(filter);
                // "1.1": no attributes (RFC 4511 4.5.1.8).
                let a = attr.unwrap_or("1.1");
                ber::put_with(o, ber::SEQUENCE, |o| {
                    ber::put(o, ber::OCTET_STRING, a.as_bytes())
                });
            })
        })?;
        let mut found = Vec::new();
        // Entries, then the done message; bounded by the size cap per
        // message and the time-out per read.
        loop {
            let (tag, op) = self.receive(id)?;
            match tag {
                0x64 => found.push(entry(&op, attr).map_err(ber_err)?),
                0x73 => {} // a referral elsewhere: not followed, as lighttpd.
                0x65 => {
                    let r = result(&op)?;
                    return if r.code == 0 {
                        Ok(found)
                    } else {
                        Err(LdapError::Result(r))
                    };
                }
                _ => return Err(LdapError::Protocol("search: unexpected answer")),
            }
        }
    }

    /// Says goodbye (the server closes); errors do not matter any more.
    pub fn unbind(mut self) {
        let _ = self.send(|o| ber::put(o, 0x42, &[]));
    }

    /// Sends one LDAPMessage whose protocolOp `op` writes; its message id.
    fn send(&mut self, op: impl FnOnce(&mut Vec<u8>)) -> Result<i64, LdapError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = Vec::new();
        ber::put_with(&mut msg, ber::SEQUENCE, |o| {
            ber::put_int(o, ber::INTEGER, id);
            op(o);
        });
        self.stream
            .write_all(&msg)
            .map_err(|e| LdapError::Io(e.to_string()))?;
        Ok(id)
    }

    /// The next message for `id`: its protocolOp's tag and content.
    /// Notices of disconnection (id 0) end the connection.
    fn receive(&mut self, id: i64) -> Result<(u8, Vec<u8>), LdapError> {
        loop {
            let msg = self.read_message()?;
            let mut r = Reader::new(&msg);
            let got = r.int(ber::INTEGER).map_err(ber_err)?;
            let (tag, op) = r.any().map_err(ber_err)?;
            if got == 0 {
                return Err(LdapError::Io(
                    "server sent a notice of disconnection".into(),
                ));
            }
            if got == id {
                return Ok((tag, op.to_vec()));
            }
        }
    }

    /// One whole LDAPMessage's content from the stream.
    fn read_message(&mut self) -> Result<Vec<u8>, LdapError> {
        let mut chunk = [0u8; 4096];
        loop {
            match ber::element(&self.buf) {
                Ok((tag, content, used)) => {
                    if tag != ber::SEQUENCE {
                        return Err(LdapError::Protocol("not an LDAPMessage"));
                    }
                    let msg = content.to_vec();
                    self.buf.drain(..used);
                    return Ok(msg);
                }
                Err(BerError::Short) => {}
                Err(e) => return Err(ber_err(e)),
            }
            let n = self.stream.read(&mut chunk).map_err(|e| {
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) {
                    LdapError::Timeout
                } else {
                    LdapError::Io(e.to_string())
                }
            })?;
            if n == 0 {
                return Err(LdapError::Io("server closed the connection".into()));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn ber_err(e: BerError) -> LdapError {
    match e {
        BerError::Short => LdapError::Protocol("message cut short"),
        BerError::Bad(why) => LdapError::Protocol(why),
    }
}

/// A SearchResultEntry's DN and the first value of `attr`, if it has one.
fn entry(op: &[u8], attr: Option<&str>) -> Result<Entry, BerError> {
    let mut r = Reader::new(op);
    let dn = String::from_utf8_lossy(r.expect(ber::OCTET_STRING)?).into_owned();
    let Some(attr) = attr else {
        return Ok((dn, None));
    };
    let mut attrs = Reader::new(r.expect(ber::SEQUENCE)?);
    while !attrs.is_empty() {
        let mut a = Reader::new(attrs.expect(ber::SEQUENCE)?);
        let name = a.expect(ber::OCTET_STRING)?;
        if !name.eq_ignore_ascii_case(attr.as_bytes()) {
            continue;
        }
        let mut vals = Reader::new(a.expect(ber::SET)?);
        if !vals.is_empty() {
            return Ok((dn, Some(vals.expect(ber::OCTET_STRING)?.to_vec())));
        }
    }
    Ok((dn, None))
}

/// An LDAPResult's code and message.
pub fn result(op: &[u8]) -> Result<LdapResult, LdapError> {
    let mut r = Reader::new(op);
    let code = r.int(ber::ENUMERATED).map_err(ber_err)?;
    let _matched = r.expect(ber::OCTET_STRING).map_err(ber_err)?;
    let msg = r.expect(ber::OCTET_STRING).map_err(ber_err)?;
    Ok(LdapResult {
        code,
        message: String::from_utf8_lossy(msg).into_owned(),
    })
}

//! PostgreSQL over a blocking socket: the wire protocol of
//! `postgres-protocol` (sans-IO) on a `std` TCP or unix stream. The
//! `postgres` crate would bring an async runtime with it. Passwords go as
//! the server asks: in clear (`password`), `md5`, or `scram-sha-256`
//! (Debian's default); `trust` asks for none.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use super::{escape_standard, Client, FirstValue, IO_TIMEOUT};

/// Where and as whom to connect, as lighttpd hands it to `PQsetdbLogin`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PgParams {
    /// A host name or address; a path (starting with `/`) is the directory
    /// of the server's unix socket. None: libpq's default, the socket in
    /// `/var/run/postgresql`.
    pub host: Option<String>,
    /// Default 5432 (also the unix socket's name, `.s.PGSQL.5432`).
    pub port: Option<u16>,
    pub dbname: String,
    pub user: String,
    pub password: Option<String>,
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Read for Stream {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(b),
            Stream::Unix(s) => s.read(b),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(b),
            Stream::Unix(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One session with the server.
pub struct Pg {
    stream: Stream,
    inbuf: BytesMut,
    out: BytesMut,
    /// `standard_conforming_strings` as the server reported it: when off,
    /// a backslash in a literal escapes and must be doubled.
    standard_strings: bool,
    broken: bool,
}

fn open(p: &PgParams) -> io::Result<Stream> {
    let port = p.port.unwrap_or(5432);
    let host = p.host.as_deref().unwrap_or("/var/run/postgresql");
    if host.starts_with('/') {
        let path = format!("{}/.s.PGSQL.{port}", host.trim_end_matches('/'));
        let s = UnixStream::connect(path)?;
        s.set_read_timeout(Some(IO_TIMEOUT))?;
        s.set_write_timeout(Some(IO_TIMEOUT))?;
        return Ok(Stream::Unix(s));
    }
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, IO_TIMEOUT) {
            Ok(s) => {
                s.set_read_timeout(Some(IO_TIMEOUT))?;
                s.set_write_timeout(Some(IO_TIMEOUT))?;
                let _ = s.set_nodelay(true);
                return Ok(Stream::Tcp(s));
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

impl Pg {
    /// Connects and logs in.
    pub fn connect(p: &PgParams) -> Result<Pg, String> {
        let stream = open(p).map_err(|e| format!("cannot connect: {e}"))?;
        let mut pg = Pg {
            stream,
            inbuf: BytesMut::with_capacity(4096),
            out: BytesMut::with_capacity(256),
            standard_strings: false,
            broken: false,
        };
        let params = [
            ("user", p.user.as_str()),
            ("database", p.dbname.as_str()),
            ("client_encoding", "UTF8"),
        ];
        frontend::startup_message(params, &mut pg.out).map_err(|e| e.to_string())?;
        pg.send()?;
        pg.login(p)?;
        Ok(pg)
    }

    fn send(&mut self) -> Result<(), String> {
        let r = self.stream.write_all(&self.out);
        self.out.clear();
        r.map_err(|e| {
            self.broken = true;
            format!("write: {e}")
        })
    }

    fn next(&mut self) -> Result<Message, String> {
        loop {
            match Message::parse(&mut self.inbuf) {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => {
                    self.broken = true;
                    return Err(format!("bad message: {e}"));
                }
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.broken = true;
                    return Err("the server closed the connection".into());
                }
                Ok(n) => self.inbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.broken = true;
                    return Err(format!("read: {e}"));
                }
            }
        }
    }

    /// The authentication exchange, up to the first ReadyForQuery.
    fn login(&mut self, p: &PgParams) -> Result<(), String> {
        let password = p.password.as_deref().unwrap_or("").as_bytes();
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.next()? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password, &mut self.out)
                        .map_err(|e| e.to_string())?;
                    self.send()?;
                }
                Message::AuthenticationMd5Password(b) => {
                    let h = md5_hash(p.user.as_bytes(), password, b.salt());
                    frontend::password_message(h.as_bytes(), &mut self.out)
                        .map_err(|e| e.to_string())?;
                    self.send()?;
                }
                Message::AuthenticationSasl(b) => {
                    let mut mechs = b.mechanisms();
                    let mut ok = false;
                    while let Some(m) = mechs.next().map_err(|e| e.to_string())? {
                        ok |= m == SCRAM_SHA_256;
                    }
                    if !ok {
                        return Err("the server offers no SASL mechanism glint knows".into());
                    }
                    let s = ScramSha256::new(password, ChannelBinding::unsupported());
                    frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.out)
                        .map_err(|e| e.to_string())?;
                    scram = Some(s);
                    self.send()?;
                }
                Message::AuthenticationSaslContinue(b) => {
                    let s = scram.as_mut().ok_or("SASL continue without a start")?;
                    s.update(b.data()).map_err(|e| format!("SCRAM: {e}"))?;
                    frontend::sasl_response(s.message(), &mut self.out)
                        .map_err(|e| e.to_string())?;
                    self.send()?;
                }
                Message::AuthenticationSaslFinal(b) => {
                    let s = scram.as_mut().ok_or("SASL final without a start")?;
                    s.finish(b.data())
                        .map_err(|e| format!("SCRAM: the server's proof: {e}"))?;
                }
                Message::ParameterStatus(b) => self.parameter(b.name(), b.value()),
                Message::BackendKeyData(_) | Message::NoticeResponse(_) => {}
                Message::ErrorResponse(b) => {
                    self.broken = true;
                    return Err(error_text(&b));
                }
                Message::ReadyForQuery(_) => return Ok(()),
                _ => {
                    self.broken = true;
                    return Err("unsupported authentication method".into());
                }
            }
        }
    }

    fn parameter(&mut self, name: io::Result<&str>, value: io::Result<&str>) {
        if let (Ok("standard_conforming_strings"), Ok(v)) = (name, value) {
            self.standard_strings = v == "on";
        }
    }
}

fn error_text(b: &postgres_protocol::message::backend::ErrorResponseBody) -> String {
    let mut fields = b.fields();
    let mut msg = String::new();
    while let Ok(Some(f)) = fields.next() {
        if f.type_() == b'M' {
            msg = String::from_utf8_lossy(f.value_bytes()).into_owned();
        }
    }
    if msg.is_empty() {
        "the server reported an error".into()
    } else {
        msg
    }
}

impl Client for Pg {
    fn escape(&self, value: &str) -> Result<String, String> {
        escape_standard(value, !self.standard_strings)
    }

    /// PQexec's result as lighttpd reads it: an error, a statement that
    /// returned no rows (not PGRES_TUPLES_OK), or the rows of the last one.
    fn first_value(&mut self, sql: &str) -> Result<FirstValue, String> {
        frontend::query(sql, &mut self.out).map_err(|e| e.to_string())?;
        self.send()?;
        let mut out = FirstValue::default();
        let (mut tuples, mut error) = (false, None::<String>);
        loop {
            match self.next()? {
                Message::RowDescription(_) => {
                    tuples = true;
                    out = FirstValue::default();
                }
                Message::DataRow(row) => {
                    if out.rows == 0 {
                        let mut ranges = row.ranges();
                        if let Ok(Some(Some(r))) = ranges.next() {
                            let bytes = row.buffer().get(r).unwrap_or_default();
                            out.value = Some(String::from_utf8_lossy(bytes).into_owned());
                        }
                    }
                    out.rows += 1;
                }
                Message::CommandComplete(_) | Message::EmptyQueryResponse => {}
                Message::ErrorResponse(b) => error = Some(error_text(&b)),
                Message::ParameterStatus(b) => self.parameter(b.name(), b.value()),
                Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match (error, tuples) {
            (Some(e), _) => Err(e),
            (None, false) => Err("the statement returned no rows".into()),
            (None, true) => Ok(out),
        }
    }

    fn broken(&self) -> bool {
        self.broken
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        if !self.broken {
            frontend::terminate(&mut self.out);
            let _ = self.stream.write_all(&self.out);
        }
    }
}

/// libpq's user when none is given: `PGUSER`, else the user glint runs as.
pub fn default_user() -> String {
    if let Ok(u) = std::env::var("PGUSER") {
        if !u.is_empty() {
            return u;
        }
    }
    super::os_user()
}

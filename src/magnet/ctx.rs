//! What a script sees of its request and changes in it: a copy made before
//! the run, read back after it. The Lua side reaches it as the state's app
//! data while the script runs (see `prims`).

/// The point of the request a script runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stage {
    /// `magnet.attract-raw-url-to`.
    #[default]
    RawUrl,
    /// `magnet.attract-physical-path-to`.
    Physical,
    /// `magnet.attract-response-start-to`.
    ResponseStart,
}

/// The keys of `lighty.r.req_attr` (lighttpd 1.4.69's), in index order.
pub const ATTRS: &[&str] = &[
    "physical.path",
    "physical.rel-path",
    "physical.doc-root",
    "physical.basedir",
    "uri.path",
    "uri.path-raw",
    "uri.scheme",
    "uri.authority",
    "uri.query",
    "request.method",
    "request.uri",
    "request.orig-uri",
    "request.path-info",
    "request.remote-addr",
    "request.remote-port",
    "request.server-addr",
    "request.server-port",
    "request.protocol",
    "request.server-name",
    "request.stage",
];

/// Index of each key in [`ATTRS`].
pub mod attr {
    pub const PHYSICAL_PATH: usize = 0;
    pub const PHYSICAL_REL_PATH: usize = 1;
    pub const PHYSICAL_DOC_ROOT: usize = 2;
    pub const PHYSICAL_BASEDIR: usize = 3;
    pub const URI_PATH: usize = 4;
    pub const URI_PATH_RAW: usize = 5;
    pub const URI_SCHEME: usize = 6;
    pub const URI_AUTHORITY: usize = 7;
    pub const URI_QUERY: usize = 8;
    pub const REQUEST_METHOD: usize = 9;
    pub const REQUEST_URI: usize = 10;
    pub const REQUEST_ORIG_URI: usize = 11;
    pub const REQUEST_PATH_INFO: usize = 12;
    pub const REMOTE_ADDR: usize = 13;
    pub const REMOTE_PORT: usize = 14;
    pub const SERVER_ADDR: usize = 15;
    pub const SERVER_PORT: usize = 16;
    pub const PROTOCOL: usize = 17;
    pub const SERVER_NAME: usize = 18;
    pub const STAGE: usize = 19;
}

/// The index of a `req_attr` key (`request.remote-ip` is `remote-addr`).
pub fn attr_id(key: &[u8]) -> Option<usize> {
    if key == b"request.remote-ip" {
        return Some(attr::REMOTE_ADDR);
    }
    ATTRS.iter().position(|k| k.as_bytes() == key)
}

/// One piece of a body a script set: bytes, or (part of) a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Mem(Vec<u8>),
    File {
        path: String,
        offset: u64,
        /// `None`: to the end of the file.
        len: Option<u64>,
    },
}

/// One request as a script sees it.
#[derive(Debug, Default)]
pub struct Ctx {
    pub stage: Stage,
    /// The request's headers, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// Buffers of earlier requests' headers, for the next request's.
    spare_headers: Vec<(String, Vec<u8>)>,
    pub headers_changed: bool,
    /// `req_attr`'s values by [`ATTRS`] index, each meaningful only
    /// while its bit is in `present` (nil otherwise): the strings keep
    /// their buffers from one request to the next (see [`Ctx::reset`]).
    attrs: Vec<String>,
    /// Bit `1 << i` for each attribute that is not nil.
    present: u32,
    /// Bit `1 << i` for each attribute the script set.
    pub changed: u32,
    /// `req_env`: the request's environment for backends.
    pub env: Vec<(String, String)>,
    pub env_changed: bool,
    /// The response's headers (at response start, those it has; before,
    /// those a script set for the answer to come).
    pub resp_headers: Vec<(String, String)>,
    pub resp_changed: bool,
    /// The response body a script set or added to.
    pub body: Vec<Part>,
    pub body_set: bool,
    /// The response body as it is when it is known (response start).
    pub body_known: Option<Vec<u8>>,
    /// The response status (0 before one is decided).
    pub status: u16,
    /// The client offers to keep the connection open.
    pub keep_alive: bool,
}

impl Ctx {
    /// A context for `stage`, every attribute nil.
    pub fn new(stage: Stage) -> Ctx {
        let mut c = Ctx::default();
        c.reset(stage);
        c
    }

    /// Made a context for `stage` again, every attribute nil, keeping the
    /// buffers of the last request: a script on every request then costs
    /// no allocation for what it may read.
    pub fn reset(&mut self, stage: Stage) {
        self.stage = stage;
        // Header buffers go back to the spares, at most 64 of them.
        while let Some(h) = self.headers.pop() {
            if self.spare_headers.len() < 64 {
                self.spare_headers.push(h);
            }
        }
        self.headers_changed = false;
        self.attrs.resize_with(ATTRS.len(), String::new);
        self.present = 0;
        self.changed = 0;
        self.env.clear();
        self.env_changed = false;
        self.resp_headers.clear();
        self.resp_changed = false;
        self.body.clear();
        self.body_set = false;
        self.body_known = None;
        self.status = 0;
        self.keep_alive = false;
    }

    /// The request's headers, written into the buffers of the last
    /// request's where there are some.
    pub fn set_headers<'a>(&mut self, fields: impl Iterator<Item = (&'a str, &'a [u8])>) {
        for (name, value) in fields {
            match self.spare_headers.pop() {
                Some((mut k, mut v)) => {
                    k.clear();
                    k.push_str(name);
                    v.clear();
                    v.extend_from_slice(value);
                    self.headers.push((k, v));
                }
                None => self.headers.push((name.to_string(), value.to_vec())),
            }
        }
    }

    /// The attribute `id` (empty when nil).
    pub fn attr(&self, id: usize) -> &str {
        self.attr_opt(id).unwrap_or("")
    }

    /// The attribute `id`, `None` when nil.
    pub fn attr_opt(&self, id: usize) -> Option<&str> {
        if self.present & (1 << id) == 0 {
            return None;
        }
        self.attrs.get(id).map(String::as_str)
    }

    pub fn set_attr(&mut self, id: usize, v: &str) {
        self.attr_buf(id).push_str(v);
    }

    /// Attribute `id` set to empty (not nil), for the caller to write into.
    pub fn attr_buf(&mut self, id: usize) -> &mut String {
        if id >= self.attrs.len() {
            self.attrs.resize_with(id + 1, String::new);
        }
        self.present |= 1 << id;
        let a = &mut self.attrs[id];
        a.clear();
        a
    }

    /// The script set attribute `id`.
    pub fn was_changed(&self, id: usize) -> bool {
        self.changed & (1 << id) != 0
    }

    /// The first request header named `name`, with later ones of the
    /// same name joined by ", ".
    pub fn header(&self, name: &str) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        for (k, v) in &self.headers {
            if k.eq_ignore_ascii_case(name) {
                match out.as_mut() {
                    Some(o) => {
                        o.extend_from_slice(b", ");
                        o.extend_from_slice(v);
                    }
                    None => out = Some(v.clone()),
                }
            }
        }
        out
    }

    /// The response header named `name`.
    pub fn resp_header(&self, name: &str) -> Option<&str> {
        self.resp_headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

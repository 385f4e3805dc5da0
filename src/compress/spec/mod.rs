//! lighttpd's compression options as plain Rust values.
//!
//! The mapping follows lighttpd 1.4.69's `mod_deflate_set_defaults()` and
//! `mod_deflate_parse_params()`; where lighttpd only logs a bad value and
//! goes on, glint refuses it with a message naming the key (it fails
//! closed). The lead converts glint's `config::Value` into [`OptValue`]
//! (one arm per variant) and calls [`DeflateSpec::apply`] once for the
//! global block and once per conditional block on a clone of the spec the
//! block inherits, as lighttpd's `mod_deflate_patch_config()` overrides.

mod loadavg;

pub use loadavg::{parse_loadavg, LoadAvg};

use super::Coding;

/// A configuration value, shaped as glint's configuration parser makes them.
#[derive(Debug, Clone, PartialEq)]
pub enum OptValue {
    Str(String),
    Int(i64),
    /// `( elem, "key" => elem, ... )` in order.
    List(Vec<(Option<String>, OptValue)>),
}

/// The keys [`DeflateSpec::apply`] takes, in lighttpd's table order: in one
/// block a `compress.*` name is applied after its `deflate.*` name and so
/// wins, as in lighttpd. The last two are glint's own (see [`DeflateSpec`]).
pub const KEYS: [&str; 17] = [
    "deflate.mimetypes",
    "deflate.allowed-encodings",
    "deflate.max-compress-size",
    "deflate.min-compress-size",
    "deflate.compression-level",
    "deflate.output-buffer-size",
    "deflate.work-block-size",
    "deflate.max-loadavg",
    "deflate.cache-dir",
    "compress.filetype",
    "compress.allowed-encodings",
    "compress.cache-dir",
    "compress.max-filesize",
    "compress.max-loadavg",
    "deflate.params",
    "deflate.sync-flush",
    "glint.static-precompressed",
];

/// The compression settings in force for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct DeflateSpec {
    /// `deflate.mimetypes`: prefixes of `Content-Type`; empty = compression
    /// off (lighttpd's default). A trailing `*` is dropped (when the entry is
    /// longer than 2 bytes) and `application/javascript` becomes
    /// `text/javascript`, as lighttpd rewrites them.
    pub mimetypes: Vec<String>,
    /// `deflate.allowed-encodings` as lighttpd's preference groups (bit sets
    /// of [`Coding::bit`]), in the configured order. Unset or `()` gives
    /// lighttpd's default: zstd, then br, then gzip/x-gzip/deflate.
    pub allowed: Vec<u8>,
    /// `deflate.max-compress-size` in KiB; 0 = no limit. Default 131072 (128 MiB).
    pub max_compress_kib: u64,
    /// `deflate.min-compress-size` in bytes: bodies of this size or less
    /// stay identity. Default 256.
    pub min_compress_size: u64,
    /// `deflate.compression-level`: 1..9, or -1 for each library's default.
    pub compression_level: i32,
    /// `deflate.output-buffer-size` in bytes, 0 = default. glint: the most
    /// an [`Encoder`](super::Encoder) call appends (see [`Self::out_budget`]).
    pub output_buffer_size: u32,
    /// `deflate.work-block-size` in KiB, default 2048. glint: the most input
    /// a streaming filter should feed per event-loop turn.
    pub work_block_kib: u32,
    /// `deflate.max-loadavg`: above this 1-minute load, send identity. 0 = off.
    pub max_loadavg: f64,
    /// `deflate.cache-dir` with any trailing `/` removed; `None` = no cache.
    pub cache_dir: Option<String>,
    /// `deflate.params`; once set (even to `()`), `compression-level` no
    /// longer applies to any coding, as in lighttpd.
    pub params: Option<Params>,
    /// `deflate.sync-flush` (`"enable"`/`"disable"`): not a key of lighttpd
    /// 1.4.69, which derives it from `server.stream-response-body`; glint
    /// takes it as an explicit override. See [`Self::sync_flush`].
    pub sync_flush: Option<bool>,
    /// `glint.static-precompressed = ( "br", "zstd", "gzip" )`: serve
    /// `file.br`, `file.zst`, `file.gz` next to a static file, in this order
    /// of preference among codings the client weighs equally. Empty = off.
    pub precompressed: Vec<Coding>,
}

impl Default for DeflateSpec {
    fn default() -> Self {
        DeflateSpec {
            mimetypes: Vec::new(),
            allowed: default_allowed(),
            max_compress_kib: 128 * 1024,
            min_compress_size: 256,
            compression_level: -1,
            output_buffer_size: 0,
            work_block_kib: 2048,
            max_loadavg: 0.0,
            cache_dir: None,
            params: None,
            sync_flush: None,
            precompressed: Vec::new(),
        }
    }
}

fn default_allowed() -> Vec<u8> {
    vec![
        Coding::Zstd.bit(),
        Coding::Br.bit(),
        Coding::Gzip.bit() | Coding::XGzip.bit() | Coding::Deflate.bit(),
    ]
}

/// `deflate.params`, with lighttpd's defaults for what is not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// `gzip.level` 1..9; 0 = unset (zlib's default, 6).
    pub gzip_level: i32,
    /// `gzip.windowBits` 9..15, default 15.
    pub gzip_window_bits: u8,
    /// `gzip.memLevel` 1..9, default 8.
    pub gzip_mem_level: u8,
    /// `gzip.strategy` 0..4 (default, filtered, huffman-only, rle, fixed).
    pub gzip_strategy: u8,
    /// `BROTLI_PARAM_QUALITY` 0..11, default 5 (11 costs ~60x the time of 5
    /// on a 200 KB page: 304 ms against 5 ms measured here).
    pub brotli_quality: u32,
    /// `BROTLI_PARAM_LGWIN` 10..24, default 22.
    pub brotli_lgwin: u32,
    /// `BROTLI_PARAM_MODE` 0..2 (generic, text, font); generic means "guess
    /// from the Content-Type", as lighttpd does.
    pub brotli_mode: u32,
    /// `ZSTD_c_compressionLevel`, default 3 (ZSTD_CLEVEL_DEFAULT).
    pub zstd_level: i32,
    /// `ZSTD_c_strategy` 1..9; 0 = the level's own.
    pub zstd_strategy: u32,
    /// `ZSTD_c_windowLog` 10..31; 0 = the level's own.
    pub zstd_window_log: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            gzip_level: 0,
            gzip_window_bits: 15,
            gzip_mem_level: 8,
            gzip_strategy: 0,
            brotli_quality: 5,
            brotli_lgwin: 22,
            brotli_mode: 0,
            zstd_level: 3,
            zstd_strategy: 0,
            zstd_window_log: 0,
        }
    }
}

/// What an [`Encoder`](super::Encoder) is built from: the per-coding values
/// lighttpd's `stream_*_init()` would pass to each library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderParams {
    /// zlib level 1..9 (lighttpd passes Z_DEFAULT_COMPRESSION = 6 when unset).
    pub gzip_level: i32,
    pub gzip_window_bits: u8,
    pub gzip_mem_level: u8,
    pub gzip_strategy: u8,
    pub brotli_quality: u32,
    pub brotli_lgwin: u32,
    /// 0 = choose from the Content-Type at [`Encoder::new`](super::Encoder::new).
    pub brotli_mode: u32,
    /// `None` keeps libzstd's default level (3).
    pub zstd_level: Option<i32>,
    pub zstd_strategy: Option<u32>,
    pub zstd_window_log: Option<u32>,
    /// The most bytes one encoder call appends to its output.
    pub out_budget: usize,
}

/// Default output per encoder call: 64 KiB, lighttpd's tmp_buf size without
/// zstd, and 4 × the 16 KiB a TLS record carries.
pub const DEFAULT_OUT_BUDGET: usize = 64 * 1024;
/// Smallest output per call glint uses, so that a tiny
/// `deflate.output-buffer-size` cannot turn one response into 10^5 calls.
pub const MIN_OUT_BUDGET: usize = 512;

impl DeflateSpec {
    /// Apply one configuration block's keys. Keys not in [`KEYS`] are left
    /// to the caller (returns an error for none of them). Returns warnings
    /// to log (lighttpd's DEPRECATED notes); an error names the key.
    pub fn apply(&mut self, block: &[(&str, &OptValue)]) -> Result<Vec<String>, String> {
        let mut warnings = Vec::new();
        for key in KEYS {
            for (_, value) in block.iter().filter(|(k, _)| *k == key) {
                if let Some(w) = self.set(key, value)? {
                    warnings.push(w);
                }
            }
        }
        Ok(warnings)
    }

    /// Set one key. `Ok(Some(text))` is a warning to log.
    pub fn set(&mut self, key: &str, value: &OptValue) -> Result<Option<String>, String> {
        // lighttpd's note when a mod_compress name is used.
        let renamed = |old: &str, new: &str| {
            (key == old).then(|| format!("DEPRECATED: {key} replaced with {new}"))
        };
        match key {
            "deflate.mimetypes" | "compress.filetype" => {
                self.mimetypes = mimetypes(key, value)?;
                Ok(renamed("compress.filetype", "deflate.mimetypes"))
            }
            "deflate.allowed-encodings" | "compress.allowed-encodings" => {
                let (groups, warning) = encodings_to_groups(key, &string_list(key, value)?)?;
                self.allowed = groups;
                Ok(warning.or(renamed(
                    "compress.allowed-encodings",
                    "deflate.allowed-encodings",
                )))
            }
            "deflate.max-compress-size" | "compress.max-filesize" => {
                self.max_compress_kib = int_in(key, value, 0, u32::MAX as i64)? as u64;
                Ok(renamed(
                    "compress.max-filesize",
                    "deflate.max-compress-size",
                ))
            }
            "deflate.min-compress-size" => {
                self.min_compress_size = int_in(key, value, 0, 65535)? as u64;
                Ok(None)
            }
            "deflate.compression-level" => {
                let v = int_in(key, value, -1, 9)?;
                if v == 0 {
                    return Err(format!(
                        "{key}: compression-level must be between 1 and 9 (or -1): 0"
                    ));
                }
                self.compression_level = v as i32;
                Ok(None)
            }
            "deflate.output-buffer-size" => {
                self.output_buffer_size = int_in(key, value, 0, 65535)? as u32;
                Ok(None)
            }
            "deflate.work-block-size" => {
                self.work_block_kib = int_in(key, value, 0, 65535)? as u32;
                Ok(None)
            }
            "deflate.max-loadavg" | "compress.max-loadavg" => {
                self.max_loadavg = loadavg_value(key, value)?;
                Ok(renamed("compress.max-loadavg", "deflate.max-loadavg"))
            }
            "deflate.cache-dir" | "compress.cache-dir" => {
                let OptValue::Str(s) = value else {
                    return Err(format!(
                        "{key} should have been a string like ... = \"...\""
                    ));
                };
                let s = s.strip_suffix('/').unwrap_or(s);
                self.cache_dir = (!s.trim().is_empty()).then(|| s.to_string());
                Ok(renamed("compress.cache-dir", "deflate.cache-dir"))
            }
            "deflate.params" => {
                let (params, warning) = parse_params(key, value)?;
                self.params = Some(params);
                Ok(warning)
            }
            "deflate.sync-flush" => {
                self.sync_flush = Some(bool_value(key, value)?);
                Ok(None)
            }
            "glint.static-precompressed" => {
                self.precompressed = precompressed(key, value)?;
                Ok(None)
            }
            _ => Err(format!("{key}: not a compression option")),
        }
    }

    /// Is compression configured at all here? (lighttpd: `deflate.mimetypes` non-empty.)
    pub fn enabled(&self) -> bool {
        !self.mimetypes.is_empty()
    }

    /// Does a response `Content-Type` match `deflate.mimetypes`? A byte-exact
    /// prefix match as lighttpd's `array_match_value_prefix()`, so `text/`
    /// takes every text type and `text/html` takes `text/html; charset=utf-8`.
    /// Without a Content-Type, only when the first entry is `""`.
    pub fn mimetype_matches(&self, content_type: Option<&str>) -> bool {
        match content_type {
            Some(ct) => self.mimetypes.iter().any(|m| ct.starts_with(m.as_str())),
            None => self.mimetypes.first().is_some_and(|m| m.trim().is_empty()),
        }
    }

    /// Is a body of `len` bytes in the compressed range? lighttpd compresses
    /// `min < len <= max`.
    pub fn size_in_range(&self, len: u64) -> bool {
        len > self.min_compress_size
            && (self.max_compress_kib == 0 || len <= self.max_compress_kib.saturating_mul(1024))
    }

    /// Is the load too high to compress? `loadavg` is the 1-minute average.
    pub fn overloaded(&self, loadavg: f64) -> bool {
        self.max_loadavg > 0.0 && self.max_loadavg < loadavg
    }

    /// Whether a streamed answer is flushed after each piece that arrives:
    /// `deflate.sync-flush` if given, else lighttpd's rule (the response body
    /// is streamed and `deflate.output-buffer-size` is 0).
    pub fn sync_flush(&self, stream_response_body: bool) -> bool {
        self.sync_flush
            .unwrap_or(stream_response_body && self.output_buffer_size == 0)
    }

    /// Bytes per encoder call (see [`EncoderParams::out_budget`]).
    pub fn out_budget(&self) -> usize {
        match self.output_buffer_size {
            0 => DEFAULT_OUT_BUDGET,
            n => (n as usize).max(MIN_OUT_BUDGET),
        }
    }

    /// The most input a streaming filter feeds in one event-loop turn
    /// (`deflate.work-block-size` KiB; 0 = no slicing).
    pub fn work_block_bytes(&self) -> usize {
        self.work_block_kib as usize * 1024
    }

    /// The library parameters, resolved as lighttpd's `stream_*_init()`:
    /// with `deflate.params` set, its values (and defaults) win for every
    /// coding; otherwise `deflate.compression-level` is gzip's level,
    /// brotli's quality and — lighttpd's mapping since 1.4.60 — zstd's
    /// *strategy* (both run 1..9).
    pub fn encoder_params(&self) -> EncoderParams {
        let level = self.compression_level;
        let p = self.params;
        let gzip_level = p.map_or(level, |p| p.gzip_level);
        EncoderParams {
            gzip_level: if gzip_level > 0 { gzip_level } else { 6 },
            gzip_window_bits: p.map_or(15, |p| p.gzip_window_bits),
            gzip_mem_level: p.map_or(8, |p| p.gzip_mem_level),
            gzip_strategy: p.map_or(0, |p| p.gzip_strategy),
            brotli_quality: p.map_or(if level >= 0 { level as u32 } else { 5 }, |p| {
                p.brotli_quality
            }),
            brotli_lgwin: p.map_or(22, |p| p.brotli_lgwin),
            brotli_mode: p.map_or(0, |p| p.brotli_mode),
            zstd_level: p.map(|p| p.zstd_level),
            zstd_strategy: match p {
                Some(p) => (p.zstd_strategy != 0).then_some(p.zstd_strategy),
                None => (level >= 0).then_some(level as u32),
            },
            zstd_window_log: p.and_then(|p| (p.zstd_window_log != 0).then_some(p.zstd_window_log)),
            out_budget: self.out_budget(),
        }
    }
}

/// `deflate.mimetypes`: a trailing `*` of a prefix dropped, and
/// `application/javascript` as `text/javascript`.
fn mimetypes(key: &str, value: &OptValue) -> Result<Vec<String>, String> {
    Ok(string_list(key, value)?
        .into_iter()
        .map(|mut m| {
            if m.len() > 2 && m.ends_with('*') {
                m.pop();
            }
            if m == "application/javascript" {
                m = "text/javascript".to_string();
            }
            m
        })
        .collect())
}

/// `glint.static-precompressed`: the codings whose files glint looks for,
/// in order, each once.
fn precompressed(key: &str, value: &OptValue) -> Result<Vec<Coding>, String> {
    let mut list = Vec::new();
    for name in string_list(key, value)? {
        let c = match name.as_str() {
            "br" => Coding::Br,
            "zstd" => Coding::Zstd,
            "gzip" => Coding::Gzip,
            other => {
                return Err(format!(
                    "{key}: unknown coding \"{other}\" (glint knows \"br\" .br, \"zstd\" .zst, \"gzip\" .gz)"
                ))
            }
        };
        if !list.contains(&c) {
            list.push(c);
        }
    }
    Ok(list)
}

fn string_list(key: &str, value: &OptValue) -> Result<Vec<String>, String> {
    let shape = || {
        format!("{key} should have been a list of string values like {key} = ( \"...\", \"...\" )")
    };
    let OptValue::List(items) = value else {
        return Err(shape());
    };
    items
        .iter()
        .map(|(k, v)| match (k, v) {
            (None, OptValue::Str(s)) => Ok(s.clone()),
            _ => Err(shape()),
        })
        .collect()
}

/// An integer, or a string holding one (lighttpd takes both, for env vars).
fn int_value(key: &str, value: &OptValue) -> Result<i64, String> {
    match value {
        OptValue::Int(i) => Ok(*i),
        OptValue::Str(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| format!("{key}: got a string but expected an integer: \"{s}\"")),
        OptValue::List(_) => Err(format!("{key}: expected an integer, got a list")),
    }
}

fn int_in(key: &str, value: &OptValue, lo: i64, hi: i64) -> Result<i64, String> {
    let v = int_value(key, value)?;
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{key}: {v} is out of range {lo} ... {hi}"))
    }
}

fn bool_value(key: &str, value: &OptValue) -> Result<bool, String> {
    match value {
        OptValue::Int(i) => Ok(*i != 0),
        OptValue::Str(s) => match s.to_ascii_lowercase().as_str() {
            "enable" | "enabled" | "true" | "1" => Ok(true),
            "disable" | "disabled" | "false" | "0" => Ok(false),
            _ => Err(format!(
                "{key}: expected \"enable\" or \"disable\", got \"{s}\""
            )),
        },
        OptValue::List(_) => Err(format!(
            "{key}: expected \"enable\" or \"disable\", got a list"
        )),
    }
}

/// lighttpd reads the load limit as a string with `strtod`; glint also takes
/// an integer and refuses what is not a non-negative number.
fn loadavg_value(key: &str, value: &OptValue) -> Result<f64, String> {
    match value {
        OptValue::Int(i) if *i >= 0 => Ok(*i as f64),
        OptValue::Str(s) if s.trim().is_empty() => Ok(0.0),
        OptValue::Str(s) => match s.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(format!(
                "{key}: expected a load average like \"4.5\", got \"{s}\""
            )),
        },
        _ => Err(format!(
            "{key} should have been a string like {key} = \"4.5\""
        )),
    }
}

/// lighttpd's `mod_deflate_encodings_to_flags()`: each entry is searched for
/// the substrings "gzip" (gzip and x-gzip), "deflate", "br" (so "brotli"
/// too) and "zstd"; each hit is one preference group. An entry with none of
/// them is an error in glint; "bzip2" is accepted and ignored with a warning
/// (glint has no bzip2 encoder, as lighttpd built without libbz2).
fn encodings_to_groups(key: &str, list: &[String]) -> Result<(Vec<u8>, Option<String>), String> {
    if list.is_empty() {
        return Ok((default_allowed(), None));
    }
    let mut groups = Vec::new();
    let mut warning = None;
    for entry in list {
        let before = groups.len();
        if entry.contains("gzip") {
            groups.push(Coding::Gzip.bit() | Coding::XGzip.bit());
        }
        if entry.contains("deflate") {
            groups.push(Coding::Deflate.bit());
        }
        if entry.contains("br") {
            groups.push(Coding::Br.bit());
        }
        if entry.contains("zstd") {
            groups.push(Coding::Zstd.bit());
        }
        if entry.contains("bzip2") {
            warning = Some(format!(
                "{key}: \"{entry}\": glint has no bzip2 encoder; ignored"
            ));
        } else if groups.len() == before {
            return Err(format!(
                "{key}: unknown encoding \"{entry}\" (glint knows zstd, br, gzip, x-gzip, deflate)"
            ));
        }
    }
    Ok((groups, warning))
}

/// lighttpd's `mod_deflate_parse_params()`: keys compared ASCII
/// case-insensitively, values integers or numeric strings.
fn parse_params(key: &str, value: &OptValue) -> Result<(Params, Option<String>), String> {
    let shape = || {
        format!(
            "{key} should have been a list of key => values like {key} = ( \"...\" => \"...\" )"
        )
    };
    let OptValue::List(items) = value else {
        return Err(shape());
    };
    let mut p = Params::default();
    let mut warning = None;
    for (k, v) in items {
        let Some(k) = k else { return Err(shape()) };
        let name = format!("{key} {k}");
        let v = int_value(&name, v)?;
        let range = |lo: i64, hi: i64| -> Result<i64, String> {
            if (lo..=hi).contains(&v) {
                Ok(v)
            } else {
                Err(format!(
                    "{key}: invalid value for {k}: {v} (range {lo} ... {hi})"
                ))
            }
        };
        match k.to_ascii_lowercase().as_str() {
            "brotli_param_quality" => p.brotli_quality = range(0, 11)? as u32,
            "brotli_param_lgwin" => p.brotli_lgwin = range(10, 24)? as u32,
            "brotli_param_mode" => p.brotli_mode = range(0, 2)? as u32,
            // libzstd's own bounds (ZSTD_minCLevel() .. ZSTD_maxCLevel()):
            // lighttpd passes any number and lets libzstd clamp it.
            "zstd_c_compressionlevel" => p.zstd_level = range(-(1 << 17), 22)? as i32,
            "zstd_c_strategy" => p.zstd_strategy = range(1, 9)? as u32,
            "zstd_c_windowlog" => p.zstd_window_log = range(10, 31)? as u32,
            "gzip.level" => p.gzip_level = range(1, 9)? as i32,
            "gzip.windowbits" => p.gzip_window_bits = range(9, 15)? as u8,
            "gzip.memlevel" => p.gzip_mem_level = range(1, 9)? as u8,
            "gzip.strategy" => p.gzip_strategy = range(0, 4)? as u8,
            "bzip2.blocksize100k" => {
                range(1, 9)?;
                warning = Some(format!("{key}: {k}: glint has no bzip2 encoder; ignored"));
            }
            _ => return Err(format!("{key}: unrecognized param: {k}")),
        }
    }
    Ok((p, warning))
}

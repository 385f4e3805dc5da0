//! Response compression in the manner of lighttpd's mod_deflate: the pure
//! part, free of the event loop and of every other glint module.
//!
//! Map, in the order a response meets it:
//! - [`spec`]: lighttpd's `deflate.*` options (and mod_compress's old
//!   `compress.*` names) parsed into a [`DeflateSpec`]; `deflate.params`
//!   into per-coding [`EncoderParams`]; the load average, cached.
//! - [`negotiate`]: `Accept-Encoding` with q-values, the "compress this
//!   response?" [`Decision`], `Vary`, the ETag of a compressed variant and
//!   `If-None-Match` against it.
//! - [`encoder`]: one streaming [`Encoder`] over zstd, brotli, gzip and
//!   zlib-wrapped deflate, with bounded output per call for back-pressure.
//! - [`cache`]: compressed copies of static files in `deflate.cache-dir`,
//!   named per (path, ETag, coding), written to a temporary name and
//!   renamed, stale copies removed, and a bounded [`cache::Sweeper`].
//! - [`pool`]: a small bounded pool of threads that fills the cache off the
//!   event loop and calls a completion callback.
//! - [`precompressed`]: `file.br` / `.zst` / `.gz` siblings served as they
//!   are (`glint.static-precompressed`).
//!
//! Where the server calls it:
//! - start-up: [`DeflateSpec::apply`] per config block;
//!   [`cache::prepare_cache_dir`] for each `deflate.cache-dir`; one
//!   [`pool::Pool`]; a [`spec::LoadAvg`] and a [`cache::Sweeper`] stepped
//!   from the once-a-second tick.
//! - static files: [`precompressed::find`] first; else [`decide`]; on
//!   `Compress` with [`negotiate::cacheable`], [`cache::cache_path`] and
//!   [`cache::open_cached`] (sendfile it) or [`pool::Pool::submit`] and
//!   identity meanwhile.
//! - other answers: [`decide`], then one [`Encoder`] fed as the body
//!   arrives, bounded by the output queue.

pub mod cache;
pub mod encoder;
pub mod negotiate;
pub mod pool;
pub mod precompressed;
pub mod spec;

#[cfg(test)]
mod tests_cache;
#[cfg(test)]
mod tests_encoder;
#[cfg(test)]
mod tests_negotiate;
#[cfg(test)]
mod tests_spec;

pub use encoder::{Encoder, Progress};
pub use negotiate::{decide, Decision, ResponseFacts};
pub use spec::{DeflateSpec, EncoderParams, OptValue};

/// A content coding glint produces. `XGzip` is gzip sent under the label a
/// client asked for ("x-gzip", RFC 9110 §8.4.1.3); the bytes are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coding {
    Zstd,
    Br,
    Gzip,
    XGzip,
    Deflate,
}

impl Coding {
    /// lighttpd's fixed order inside one `deflate.allowed-encodings` entry:
    /// zstd, br, gzip, x-gzip, deflate (mod_deflate_choose_encoding()).
    pub const ALL: [Coding; 5] = [
        Coding::Zstd,
        Coding::Br,
        Coding::Gzip,
        Coding::XGzip,
        Coding::Deflate,
    ];

    /// The `Content-Encoding` value, also the suffix of a variant's ETag.
    pub fn label(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Br => "br",
            Coding::Gzip => "gzip",
            Coding::XGzip => "x-gzip",
            Coding::Deflate => "deflate",
        }
    }

    /// The coding named by an `Accept-Encoding` token (ASCII case-insensitive).
    pub fn from_token(token: &str) -> Option<Coding> {
        Coding::ALL
            .into_iter()
            .find(|c| c.label().eq_ignore_ascii_case(token))
    }

    /// A bit for the sets lighttpd keeps as flags (allowed-encodings groups).
    pub fn bit(self) -> u8 {
        match self {
            Coding::Zstd => 1,
            Coding::Br => 2,
            Coding::Gzip => 4,
            Coding::XGzip => 8,
            Coding::Deflate => 16,
        }
    }
}

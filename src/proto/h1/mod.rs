//! HTTP/1.0 and 1.1: the request-head parser ([`parse`]), the response
//! head serializer and body framing ([`encode`]), chunked bodies
//! ([`chunked`]), and the session's state machine ([`session`]), sans-IO.

pub mod chunked;
pub mod encode;
pub mod parse;
pub mod session;
#[cfg(test)]
mod session_tests;
mod states;

pub use encode::{write_chunk, write_head, write_last_chunk, write_reply, Fields, Framing, Head};
pub use parse::{parse, parse_uninit};

pub mod conn;
pub mod error;
pub mod frame;
pub mod hpack;
pub mod huffman;

pub use error::{Error, ErrorCode, StreamId};

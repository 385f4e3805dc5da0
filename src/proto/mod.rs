//! Wire protocols, no I/O: HTTP/1.x ([`h1`]: parsing request heads, writing
//! response heads, framing bodies), HTTP/2 ([`h2`]: frames, HPACK, the
//! sans-IO connection state machine), HTTP/3 ([`h3`]: frames, QPACK, the
//! control and request streams over QUIC), the Huffman code HPACK and
//! QPACK share ([`huffman`]), and WebSocket frames ([`ws`]).

pub mod h1;
pub mod h2;
pub mod h3;
pub mod huffman;
pub mod ws;

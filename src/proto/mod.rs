//! Wire protocols, no I/O: HTTP/1.x ([`h1`]: parsing request heads, writing
//! response heads, framing bodies) and HTTP/2 ([`h2`]: frames, HPACK, the
//! sans-IO connection state machine).

pub mod h1;
pub mod h2;

//! Wire protocols: HTTP/1.x ([`h1`]): parsing request heads, writing
//! response heads and framing bodies.

pub mod h1;

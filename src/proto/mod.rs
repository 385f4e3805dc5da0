<<<<<<< HEAD
//! Wire protocols: HTTP/1.x ([`h1`]): parsing request heads, writing
//! response heads and framing bodies.

pub mod h1;
=======
//! Wire protocols below the exchange layer: parse and encode, no I/O.
pub mod h2;
>>>>>>> h2-codec

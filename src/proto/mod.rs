//! Wire protocols below the exchange layer: parse and encode, no I/O.
pub mod h2;

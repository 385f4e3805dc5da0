//! Table-style tests for authn: real vectors from htpasswd, openssl,
//! mkpasswd and RFC 7616, each case named.

// Table tests are tuples by design: one line per case, a description first.
#![allow(clippy::type_complexity)]

mod basic;
mod challenge;
mod crypt;
mod digest;
mod flow;
mod require;
mod userfile;

//! Table-style tests for authn: real vectors from htpasswd, openssl,
//! mkpasswd and RFC 7616, each case named.

mod basic;
mod crypt;
mod require;
mod userfile;

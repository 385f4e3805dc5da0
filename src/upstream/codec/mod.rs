//! The backends' wire formats: FastCGI records, SCGI netstrings, uwsgi packets.

pub mod fastcgi;
pub mod scgi;
pub mod uwsgi;

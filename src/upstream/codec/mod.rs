//! The backends' wire formats: FastCGI records, SCGI netstrings, uwsgi
//! packets, AJP/1.3 packets.

pub mod ajp13;
pub mod fastcgi;
pub mod scgi;
pub mod uwsgi;

//! HTTP/1.x: parsing requests, writing responses.
pub mod chunked;
pub mod date;
pub mod range;
pub mod request;
pub mod response;
pub mod status;

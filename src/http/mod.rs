//! HTTP/1.x: parsing requests, writing responses.
pub mod date;
pub mod range;
pub mod request;
pub mod response;
pub mod status;

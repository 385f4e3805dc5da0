//! Table tests for mod_extforward's parts, with byte literals; spoofing
//! attempts throughout.

mod client;
mod options;
mod proxy_protocol;

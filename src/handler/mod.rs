//! What glint answers from itself, as [`crate::msg::Reply`] values: static
//! files (with mod_expire's headers), directory listings, the status page,
//! and mod_deflate's compression of them ([`deflate`]).

pub mod deflate;
pub mod dirlisting;
pub mod expire;
pub mod mime;
pub mod ssi;
pub mod static_file;
pub mod status_page;
pub mod vhostdb;
pub mod vhostdb_ldap;
mod vhostdb_root;
pub mod webdav;

//! mod_ssi among the handlers: a file `ssi.extension` names is parsed for
//! directives instead of sent as it is (after mod_cgi and the gateways,
//! before mod_staticfile, as lighttpd orders them), with the request's CGI
//! variables and mod_access for what it includes.

use super::gateway::server_vars;
use super::physical::Physical;
use super::{access_denied, Carry, ConnInfo, Services};
use crate::config::Settings;
use crate::handler::ssi;
use crate::msg::Request;

/// Where the request is.
pub(super) struct Here<'a> {
    /// The decoded URL path.
    pub path: &'a str,
    /// The request's path after rewrites, not decoded.
    pub raw_path: &'a str,
    pub query: &'a str,
    pub ph: &'a Physical<'a>,
    /// The document root (an alias may have put the file elsewhere).
    pub docroot: &'a str,
    pub info: &'a ConnInfo,
}

/// Answers with the page when mod_ssi takes the path: true when it did.
/// A file that is not there, a directory or a symlink not to be followed
/// is left to mod_staticfile's answers (404, the redirect, 403).
pub(super) fn answered(
    sv: &mut Services,
    here: &Here<'_>,
    req: &Request<'_, '_>,
    settings: &Settings,
    carry: &Carry,
) -> bool {
    if settings.ssi.extension.is_empty() {
        return false;
    }
    let physical = here.ph.join();
    if !ssi::takes(settings, &physical) {
        return false;
    }
    let plain_file = if settings.files.follow_symlink {
        std::fs::metadata(&physical)
    } else {
        std::fs::symlink_metadata(&physical)
    };
    if !plain_file.is_ok_and(|m| m.is_file()) {
        return false;
    }
    // The target after rewrites, query included, for the page's
    // variables: built only for a page mod_ssi takes (every request passes
    // here).
    let mut target = here.raw_path.to_string();
    if !here.query.is_empty() {
        target.push('?');
        target.push_str(here.query);
    }
    let env = variables(sv, here, req, settings, carry);
    let allowed = |p: &str| !access_denied(p, settings);
    let page = ssi::Page {
        settings,
        method: req.method,
        uri_path: here.path,
        physical: &physical,
        docroot: here.docroot,
        scheme: here.info.scheme(),
        authority: std::str::from_utf8(req.host).unwrap_or(""),
        target_path: &target,
        query: here.query,
        env,
        now: sv.clock.unix,
        allowed: &allowed,
        if_none_match: req.header("if-none-match"),
        if_modified_since: req.header("if-modified-since"),
    };
    ssi::serve(&page, &mut sv.reply);
    true
}

/// The request's CGI variables, as a CGI program would get them (without
/// `HTTP_AUTHORIZATION`: a page must not show the client's password).
fn variables(
    sv: &Services,
    here: &Here<'_>,
    req: &Request<'_, '_>,
    settings: &Settings,
    carry: &Carry,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let at = super::cgi::ProgramAt {
        path: here.path,
        query: here.query,
        docroot: here.docroot,
        script_name: here.path,
        path_info: "",
        info: here.info,
    };
    let mut env = super::cgi::request_env(sv, &at, req, settings);
    server_vars(&mut env, settings, carry, here.info);
    let length = match req.body {
        crate::msg::Body::Length(n) => n,
        _ => 0,
    };
    env.set(
        b"CONTENT_LENGTH",
        crate::msg::status::itoa_u64(length).as_bytes(),
    );
    env.remove(b"HTTP_AUTHORIZATION");
    env.pairs().map(|(k, v)| (k.to_vec(), v.to_vec())).collect()
}

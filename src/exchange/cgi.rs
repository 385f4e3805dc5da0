//! mod_cgi's part of a request: whether a file below the docroot is a CGI
//! program (`cgi.assign`'s suffixes, `cgi.execute-x-only`), where its
//! name ends and its PATH_INFO begins, and the job that runs it with the
//! CGI environment the gateways build ([`crate::upstream::cgi::environment`]).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use mio::Registry;

use super::endpoint::{host_name, server_end};
use super::{Carry, ConnInfo, GwStart, Services};
use crate::config::Settings;
use crate::hash::fnv1a;
use crate::msg::{Body, Method, OwnedHead, Request};
use crate::upstream::cgi::Env;
use crate::upstream::cgi_run::CgiJob;
use crate::upstream::{BodyFraming, JobSpec, Protocol, Upload};

/// Most path prefixes tried when looking for the script in a path with
/// more after its name (`/cgi-bin/x.py/a/b`): one `stat` each.
const MAX_SPLITS: usize = 16;

/// Where the request is, for [`start`].
pub(super) struct Here<'a> {
    /// The directory the path lives below (the docroot, or where
    /// mod_userdir or mod_alias put it).
    pub docroot: &'a str,
    pub path: &'a str,
    /// The path below `docroot` on the file system (`path` itself unless
    /// mod_userdir or mod_alias mapped it; its end is the same).
    pub fs_rel: &'a str,
    pub query: &'a str,
    pub info: &'a ConnInfo,
}

/// The script a path names below `docroot`: the longest prefix of `path`
/// (ending at a `/`) that is a regular file, with its metadata.
fn find_script(docroot: &str, path: &str) -> Option<(usize, std::fs::Metadata)> {
    let root = docroot.trim_end_matches('/');
    let mut end = path.len();
    for _ in 0..MAX_SPLITS {
        if end == 0 {
            return None;
        }
        let prefix = &path[..end];
        if !prefix.ends_with('/') {
            let mut p = String::with_capacity(root.len() + prefix.len());
            p.push_str(root);
            p.push_str(prefix);
            match std::fs::metadata(&p) {
                Ok(m) if m.is_file() => return Some((end, m)),
                // A directory on the way: nothing below it is a file
                // named by a shorter prefix of this path.
                Ok(m) if m.is_dir() && end < path.len() => return None,
                _ => {}
            }
        }
        end = path[..end].rfind('/')?;
    }
    None
}

/// Starts the CGI program for `req` when `cgi.assign` takes its path;
/// `None` when it is not a CGI request (the static file handler goes on).
pub(super) fn start(
    sv: &mut Services,
    here: &Here<'_>,
    req: &Request<'_, '_>,
    settings: &Rc<Settings>,
    carry: &mut Carry,
    registry: &Registry,
) -> Option<Result<Box<GwStart>, u16>> {
    let cgi = &settings.cgi;
    // (`/cgi.pl/` is the script with PATH_INFO `/`, as lighttpd; a
    // directory's path finds no script.)
    if cgi.assign.is_empty() {
        return None;
    }
    let route = sv.upstream.cgi_route?;
    let (fs_split, meta) = find_script(here.docroot, here.fs_rel)?;
    // The script's file is found below `docroot`; SCRIPT_NAME stays the
    // URL's (the PATH_INFO after it is the same in both).
    let info_len = here.fs_rel.len() - fs_split;
    let split = here.path.len().saturating_sub(info_len);
    if !here.path.is_char_boundary(split) {
        return None;
    }
    let (script_name, path_info) = here.path.split_at(split);
    let root = here.docroot.trim_end_matches('/');
    let physical = format!("{root}{}", &here.fs_rel[..fs_split]);
    // lighttpd's array_match_key_suffix: the first key the path ends with.
    let (_, handler) = cgi
        .assign
        .iter()
        .find(|(k, _)| physical.ends_with(k.as_str()))?;
    if cgi.execute_x_only && meta.permissions().mode() & 0o111 == 0 {
        return None;
    }
    Some(run(
        sv,
        here,
        req,
        settings,
        carry,
        registry,
        route,
        script_name,
        path_info,
        physical,
        handler,
    ))
}

#[allow(clippy::too_many_arguments)]
fn run(
    sv: &mut Services,
    here: &Here<'_>,
    req: &Request<'_, '_>,
    settings: &Rc<Settings>,
    carry: &mut Carry,
    registry: &Registry,
    route: usize,
    script_name: &str,
    path_info: &str,
    physical: String,
    handler: &str,
) -> Result<Box<GwStart>, u16> {
    let cgi = &settings.cgi;
    let now = sv.clock.mono_secs;
    // `server.error-handler` runs as a GET without the body, as lighttpd
    // runs it (HEAD stays HEAD).
    let as_get;
    let req = match carry.error.as_ref() {
        Some(e) if e.generic && req.method != Method::Head => {
            as_get = Request {
                method: Method::Get,
                method_str: "GET",
                body: Body::None,
                ..*req
            };
            &as_get
        }
        _ => req,
    };
    let framing = body_framing(req, settings)?;
    let at = ProgramAt {
        path: here.path,
        query: here.query,
        docroot: here.docroot,
        script_name,
        path_info,
        info: here.info,
    };
    let mut env = request_env(sv, &at, req, settings);
    server_vars(&mut env, settings, carry, here.info);
    // `cgi.upgrade`: only an HTTP/1.1 request that asks may be upgraded;
    // otherwise the program does not see the wish (lighttpd removes it).
    let asks_upgrade = req.header("upgrade").is_some();
    let upgrade = cgi.upgrade && asks_upgrade && req.minor >= 1;
    if asks_upgrade && !upgrade {
        env.remove(b"HTTP_UPGRADE");
    }
    let job = cgi_job(settings, &physical, handler, upgrade);
    let head_only = req.method == Method::Head;
    let spec = JobSpec {
        route,
        protocol: Protocol::Cgi,
        upload: Upload::new(Protocol::Cgi, env, framing),
        settings: Rc::clone(settings),
        hash_path: fnv1a(here.path.as_bytes()),
        hash_ip: 0,
        authorizer: false,
        local_redir: cgi.local_redir,
        head_only,
        method: String::new(),
        http: None,
        cgi: Some(Box::new(job)),
        local: None,
    };
    let job = sv.upstream.start(spec, here.info.ex, now, registry)?;
    Ok(Box::new(GwStart {
        job,
        authorizer: false,
        settings: Rc::clone(settings),
        head_only,
        minor: req.minor,
        head: OwnedHead::of(req),
        carry: std::mem::take(carry),
        route,
        info: here.info.clone(),
    }))
}

/// How the request's body goes to the program, 413 over
/// `server.max-request-size`. The program needs CONTENT_LENGTH: a chunked
/// body is collected first.
fn body_framing(req: &Request<'_, '_>, settings: &Settings) -> Result<BodyFraming, u16> {
    let limit = match settings.limits.max_request_size_kb {
        0 => u64::MAX,
        kb => kb.saturating_mul(1024),
    };
    Ok(match req.body {
        Body::None => BodyFraming::Length(0),
        Body::Length(n) if n > limit => return Err(413),
        Body::Length(n) => BodyFraming::Length(n),
        Body::Chunked => BodyFraming::Chunked {
            limit: limit.min(crate::upstream::MAX_BODY),
        },
    })
}

/// Where a program runs for a request: a CGI script, or the command of an
/// SSI page's `#exec`.
pub(super) struct ProgramAt<'a> {
    pub path: &'a str,
    pub query: &'a str,
    pub docroot: &'a str,
    pub script_name: &'a str,
    pub path_info: &'a str,
    pub info: &'a ConnInfo,
}

/// The request's CGI/1.1 variables for a program at `at`.
pub(super) fn request_env(
    sv: &Services,
    at: &ProgramAt<'_>,
    req: &Request<'_, '_>,
    settings: &Settings,
) -> Env {
    let (server_port, server_addr) = server_end(sv, at.info);
    crate::upstream::cgi::environment(&crate::upstream::cgi::EnvInput {
        req,
        path: at.path,
        query: at.query,
        script_name: at.script_name,
        path_info: at.path_info,
        document_root: at.docroot,
        script_filename_whole_path: false,
        remote: at.info.peer,
        remote_port: at.info.peer_port,
        server_addr,
        server_port,
        server_name: host_name(req.host),
        server_software: &settings.identity.tag,
        scgi: false,
        authorizer: false,
    })
}

/// The variables set after the request's: HTTPS, mod_setenv's, an
/// authorizer's, who mod_auth let in and how, the status an error
/// handler replaces.
fn server_vars(env: &mut Env, settings: &Settings, carry: &Carry, info: &ConnInfo) {
    if info.scheme() == "https" {
        env.set(b"HTTPS", b"on");
    }
    super::gateway::carried_vars(env, settings, carry, info);
    if let Some(run) = carry.error.as_ref() {
        env.set(
            b"REDIRECT_STATUS",
            crate::msg::status::itoa_u64(u64::from(run.status)).as_bytes(),
        );
    }
}

/// What runs: the script at `physical` (by `handler` unless that is
/// empty), in its directory, under `cgi.*`'s options.
fn cgi_job(settings: &Settings, physical: &str, handler: &str, upgrade: bool) -> CgiJob {
    let cgi = &settings.cgi;
    let script = PathBuf::from(physical);
    let cwd = script
        .parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
    CgiJob {
        program: Some(handler.to_string()).filter(|h| !h.is_empty()),
        script,
        cwd,
        x_sendfile: cgi.x_sendfile.then(|| cgi.x_sendfile_docroot.clone()),
        upgrade,
        read_timeout: cgi.limits.read_timeout,
        write_timeout: cgi.limits.write_timeout,
        fin_signal: cgi.limits.fin_signal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_is_the_longest_file_prefix() {
        let dir = std::env::temp_dir().join(format!("glint-cgi-find-{}", std::process::id()));
        let _ = std::fs::create_dir_all(dir.join("cgi-bin/sub"));
        std::fs::write(dir.join("cgi-bin/x.py"), "").expect("write");
        let root = dir.to_str().expect("utf-8 path");
        let split = |p: &str| find_script(root, p).map(|(n, _)| n);
        assert_eq!(split("/cgi-bin/x.py"), Some(13));
        assert_eq!(split("/cgi-bin/x.py/a/b"), Some(13));
        assert_eq!(split("/cgi-bin/none.py"), None);
        assert_eq!(split("/cgi-bin/sub/y"), None, "a directory on the way");
        assert_eq!(split("/cgi-bin"), None, "a directory is not a script");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

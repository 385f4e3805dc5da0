//! mod_magnet's three points in the phases: after the URL is parsed and
//! rewritten (`magnet.attract-raw-url-to`), once the file system path is
//! known (`-physical-path-to`), and when glint's own answer is ready
//! (`-response-start-to`). Each hands the scripts a copy of the request
//! ([`Ctx`]) and reads back what they changed: a status answers at once;
//! changed headers, path or query run the phases again on a request made
//! of them (without the scripts and rewrites that already ran);
//! `lighty.RESTART_REQUEST` runs the request again from the start.

use std::cell::RefCell;
use std::rc::Rc;

use super::physical::Physical;
use super::{endpoint, Carry, ConnInfo, Services};
use crate::config::Settings;
use crate::magnet::{attr, Ctx, Parked, Part, Ran, Stage, Verdict, MAX_RESTARTS};
use crate::msg::{OwnedHead, Reply, Request};

/// What the scripts of a stage before the response came to.
pub(super) enum Turn {
    GoOn,
    /// The answer is in `sv.reply`.
    Answered,
    /// Run the phases again on this request.
    Again(Box<OwnedHead>),
    /// A script's run is parked: the request waits for it (see
    /// `magnet_wait`).
    Park(Parked),
}

/// What a parked request carries to its run again.
pub struct MagnetWait {
    pub(super) run: Parked,
    /// glint's answer the response-start scripts run on.
    pub(super) reply: RefCell<Option<Reply>>,
}

impl std::fmt::Debug for MagnetWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MagnetWait")
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

/// What mod_magnet carries from one run of the phases to the next.
#[derive(Debug, Default, Clone)]
pub struct MagnetCarry {
    /// The raw-url scripts ran for this request already (a run made of
    /// their changes does not run them again).
    pub raw_done: bool,
    /// The target is the scripts': not rewritten again.
    pub no_rewrite: bool,
    /// Times a script restarted the request.
    pub restarts: u8,
    /// Response headers the scripts set before the response.
    pub resp_headers: Vec<(String, String)>,
    /// A parked script run the request waits for.
    pub wait: Option<Rc<MagnetWait>>,
    /// The parked run, done: its stage takes its outcome on the run again.
    pub resumed: Option<Parked>,
}

/// Runs `files` on `ctx`, or takes the outcome of the run of them that
/// was parked (the request runs again after it).
fn run_stage(
    sv: &mut Services,
    carry: &mut Carry,
    files: &[String],
    ctx: &mut Ctx,
) -> Result<Verdict, Parked> {
    // (The parked run's stage takes it: the stages before it ran already.)
    if let Some(p) = carry.magnet.resumed.take_if(|p| p.stage() == ctx.stage) {
        match p.take() {
            Some((v, done_ctx)) => {
                let fresh = std::mem::replace(ctx, done_ctx);
                done(sv, fresh);
                return Ok(v);
            }
            None => {
                log::error!("mod_magnet: a parked run's outcome went astray; running the scripts")
            }
        }
    }
    match sv.magnet.run(files, ctx) {
        Ran::Done(v) => Ok(v),
        Ran::Parked(p) => Err(p),
    }
}

/// mod_maxminddb's variables in `req_env`, as lighttpd fills it when a
/// script reads it (over a variable of the same name already there).
fn geo_env(ctx: &mut Ctx, settings: &Settings, info: &ConnInfo) {
    if settings.maxminddb.active().is_none() {
        return;
    }
    for g in super::geo::vars(settings, info).iter() {
        // (Under the name as written: lighttpd makes CGI names of them
        // only for backends.)
        let v = String::from_utf8_lossy(&g.value).into_owned();
        match ctx.env.iter_mut().find(|(n, _)| *n == g.name) {
            Some(slot) => slot.1 = v,
            None => ctx.env.push((g.name.clone(), v)),
        }
    }
}

/// The request as the scripts of `stage` see it; `uri` is the target in
/// force (after rewrites), `query` its query. Lent, not copied, to the
/// context mod_magnet keeps between requests (given back with [`done`]
/// while `req`, `uri` and `sv.scratch` are as they are now).
fn ctx_for(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &Carry,
    stage: Stage,
    (uri, query): (&str, &str),
) -> Ctx {
    let mut c = sv.magnet.take_ctx();
    c.reset(stage);
    c.env.extend(
        carry
            .vars
            .iter()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned())),
    );
    c.keep_alive = req.keep_alive;
    let orig = carry
        .orig_line
        .as_deref()
        .and_then(|l| l.split(|&b| b == b' ').nth(1));
    if let Some(t) = orig {
        c.set_attr(attr::REQUEST_ORIG_URI, &String::from_utf8_lossy(t));
    }
    let (port, addr) = endpoint::server_end(sv, info);
    c.set_end(false, info.peer, info.peer_port);
    c.set_end(true, addr, port);
    let host = &sv.scratch.host;
    // SAFETY: all of it is in the request, its target in force or the
    // scratch strings of its turn, none of which changes before the
    // context is given back (`done`, with the request in scope) or
    // detached (mod_magnet does so before a run is parked).
    unsafe {
        c.lend_headers(req.headers);
        if orig.is_none() {
            c.lend(attr::REQUEST_ORIG_URI, req.target);
        }
        c.lend(attr::URI_PATH, &sv.scratch.path);
        c.lend(attr::URI_PATH_RAW, super::split_uri(uri).0);
        c.lend(attr::URI_SCHEME, info.scheme());
        c.lend(attr::URI_AUTHORITY, host);
        c.lend(attr::URI_QUERY, query);
        c.lend(attr::REQUEST_METHOD, req.method_str);
        c.lend(attr::REQUEST_URI, uri);
        c.lend(attr::REQUEST_PATH_INFO, "");
        c.lend(attr::PROTOCOL, req.protocol());
        c.lend_server_name(host, super::host_without_port);
        c.lend(attr::STAGE, "handle-req");
    }
    c
}

/// Gives the context back to mod_magnet for the next request.
fn done(sv: &mut Services, ctx: Ctx) {
    sv.magnet.put_ctx(ctx);
}

/// `magnet.attract-raw-url-to`, for the target `uri` once rewritten.
pub(super) fn raw_url(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    settings: &Settings,
    uri: &str,
) -> Turn {
    let (_, query) = super::split_uri(uri);
    let mut ctx = ctx_for(sv, info, req, carry, Stage::RawUrl, (uri, query));
    geo_env(&mut ctx, settings, info);
    let v = match run_stage(sv, carry, &settings.magnet.raw_url, &mut ctx) {
        Ok(v) => v,
        Err(p) => {
            done(sv, ctx);
            return Turn::Park(p);
        }
    };
    let turn = match settle(sv, req, carry, &mut ctx, v) {
        Some(turn) => turn,
        None => changed_request(req, carry, &mut ctx, uri),
    };
    done(sv, ctx);
    turn
}

/// After a stage's scripts: what every verdict but "go on" means, and
/// the environment and response headers they set. `None`: go on.
fn settle(
    sv: &mut Services,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    ctx: &mut Ctx,
    v: Verdict,
) -> Option<Turn> {
    if ctx.env_changed {
        carry.vars = ctx
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect();
    }
    if ctx.resp_changed {
        carry.magnet.resp_headers = ctx.resp_headers.clone();
    }
    match v {
        Verdict::GoOn => None,
        Verdict::Failed => {
            sv.reply.error(500);
            Some(Turn::Answered)
        }
        Verdict::Status(s) => {
            answer(sv, s, ctx);
            Some(Turn::Answered)
        }
        Verdict::Restart => Some(restart(sv, req, carry, ctx)),
    }
}

/// `lighty.RESTART_REQUEST`: the request again from the start, with the
/// target (`request.uri`) and headers the scripts left; past
/// [`MAX_RESTARTS`], 500.
fn restart(sv: &mut Services, req: &Request<'_, '_>, carry: &mut Carry, ctx: &mut Ctx) -> Turn {
    carry.magnet.restarts += 1;
    if carry.magnet.restarts >= MAX_RESTARTS {
        log::error!(
            "(mod_magnet) too many request restarts (infinite loop?) for {}",
            req.target
        );
        sv.reply.error(500);
        return Turn::Answered;
    }
    let target = ctx.attr(attr::REQUEST_URI).to_string();
    if !target.starts_with('/') || target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        log::error!(
            "(mod_magnet) request.uri {target:?} to restart with is not a path; answering 400"
        );
        sv.reply.error(400);
        return Turn::Answered;
    }
    carry.magnet.raw_done = false;
    carry.magnet.no_rewrite = false;
    carry
        .orig_line
        .get_or_insert_with(|| req.request_line.to_vec());
    Turn::Again(Box::new(OwnedHead::changed(
        req,
        &target,
        ctx.headers_mut(),
    )))
}

/// The request made of what the raw-url scripts changed (headers, path,
/// query, authority), when they changed any of it.
fn changed_request(req: &Request<'_, '_>, carry: &mut Carry, ctx: &mut Ctx, uri: &str) -> Turn {
    let path_or_query = ctx.was_changed(attr::URI_PATH) || ctx.was_changed(attr::URI_QUERY);
    let authority = ctx.was_changed(attr::URI_AUTHORITY);
    if !(ctx.headers_changed || path_or_query || authority) {
        return Turn::GoOn;
    }
    let target = if path_or_query {
        let mut t = String::new();
        crate::syntax::percent_encode(ctx.attr(attr::URI_PATH).as_bytes(), &PATH, &mut t);
        let q = ctx.attr(attr::URI_QUERY);
        if !q.is_empty() {
            t.push('?');
            t.push_str(q);
        }
        t
    } else {
        uri.to_string()
    };
    if !target.starts_with('/') {
        return Turn::GoOn;
    }
    if authority && crate::syntax::valid_host(ctx.attr(attr::URI_AUTHORITY).as_bytes()) {
        carry.host = Some(ctx.attr(attr::URI_AUTHORITY).to_string());
    }
    carry.magnet.raw_done = true;
    carry.magnet.no_rewrite = true;
    carry
        .orig_line
        .get_or_insert_with(|| req.request_line.to_vec());
    Turn::Again(Box::new(OwnedHead::changed(
        req,
        &target,
        ctx.headers_mut(),
    )))
}

/// A decoded path as a target: unreserved characters and `/` as they are.
const PATH: crate::syntax::Unescaped =
    crate::syntax::Unescaped::new(b"/!$&'()*+,;=:@", crate::syntax::KeptEscapes::None);

/// Where the physical-path scripts left the file.
pub(super) struct Moved {
    /// The URL path, when they changed `uri.path`.
    pub path: Option<String>,
    /// The file, when they changed `physical.path`.
    pub ph: Option<Physical<'static>>,
}

/// `magnet.attract-physical-path-to`, for URL path `path` at `ph`.
#[allow(clippy::too_many_arguments)]
pub(super) fn physical(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    settings: &Settings,
    (uri, query): (&str, &str),
    (path, docroot, ph): (&str, &str, &Physical<'_>),
) -> Result<Moved, Turn> {
    let mut ctx = ctx_for(sv, info, req, carry, Stage::Physical, (uri, query));
    geo_env(&mut ctx, settings, info);
    if !query.is_empty() {
        // (`uri` is the target's path: request.uri is all of it.)
        ctx.set_attr(attr::REQUEST_URI, &format!("{uri}?{query}"));
    }
    ctx.set_attr(attr::URI_PATH, path);
    ctx.set_attr(attr::PHYSICAL_PATH, &ph.join());
    ctx.set_attr(attr::PHYSICAL_REL_PATH, path);
    ctx.set_attr(attr::PHYSICAL_DOC_ROOT, docroot);
    ctx.set_attr(attr::PHYSICAL_BASEDIR, &ph.base);
    let v = match run_stage(sv, carry, &settings.magnet.physical_path, &mut ctx) {
        Ok(v) => v,
        Err(p) => {
            done(sv, ctx);
            return Err(Turn::Park(p));
        }
    };
    if let Some(turn) = settle(sv, req, carry, &mut ctx, v) {
        done(sv, ctx);
        return Err(turn);
    }
    let moved_path = ctx
        .was_changed(attr::URI_PATH)
        .then(|| ctx.attr(attr::URI_PATH).to_string())
        .filter(|p| p.starts_with('/'));
    let ph = ctx.was_changed(attr::PHYSICAL_PATH).then(|| {
        let root = ctx.attr(attr::PHYSICAL_DOC_ROOT).to_string();
        let root = root.trim_end_matches('/');
        let p = ctx.attr(attr::PHYSICAL_PATH);
        match p.strip_prefix(root) {
            Some(rel) if !root.is_empty() && rel.starts_with('/') => Physical {
                base: root.to_string().into(),
                rel: rel.to_string().into(),
            },
            _ => Physical {
                base: "/".into(),
                rel: p.to_string().into(),
            },
        }
    });
    done(sv, ctx);
    Ok(Moved {
        path: moved_path,
        ph,
    })
}

/// `magnet.attract-response-start-to`, on glint's own answer in
/// `sv.reply`, with the response headers earlier scripts set. Some: a
/// script's run is parked (the answer waits for it).
pub(super) fn response_start(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
) -> Option<Parked> {
    for (k, v) in std::mem::take(&mut carry.magnet.resp_headers) {
        sv.reply.remove_field(&k);
        sv.reply.header(&k, v.as_bytes());
    }
    let settings = Rc::clone(&sv.reply.settings);
    if settings.magnet.response_start.is_empty() {
        return None;
    }
    let uri = req.target;
    let mut ctx = ctx_for(
        sv,
        info,
        req,
        carry,
        Stage::ResponseStart,
        (uri, super::split_uri(uri).1),
    );
    geo_env(&mut ctx, &settings, info);
    ctx.status = sv.reply.status;
    ctx.resp_headers = fields(&sv.reply.fields);
    ctx.body_known = sv.reply.body_bytes_in_memory();
    let v = match run_stage(sv, carry, &settings.magnet.response_start, &mut ctx) {
        Ok(v) => v,
        Err(p) => {
            done(sv, ctx);
            return Some(p);
        }
    };
    apply_response_start(sv, ctx, v);
    None
}

/// What the response-start scripts changed, onto the answer in
/// `sv.reply`.
pub(super) fn apply_response_start(sv: &mut Services, ctx: Ctx, v: Verdict) {
    if ctx.resp_changed {
        sv.reply.fields.clear();
        for (k, v) in &ctx.resp_headers {
            sv.reply.header(k, v.as_bytes());
        }
    }
    if let Verdict::Status(s) = v {
        sv.reply.status = s;
    }
    if ctx.body_set {
        set_body(sv, &ctx.body);
    }
    done(sv, ctx);
}

/// `Name: value\r\n` lines as pairs.
fn fields(raw: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(raw)
        .split("\r\n")
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// The scripts' answer: `status`, the headers they set, their body; an
/// error status without a body gets glint's error page alone (the
/// headers set go with the body, as lighttpd has it).
fn answer(sv: &mut Services, status: u16, ctx: &Ctx) {
    sv.reply.clear_answer();
    if status >= 400 && (!ctx.body_set || ctx.body.is_empty()) {
        sv.reply.error(status);
        return;
    }
    sv.reply.start(status);
    for (k, v) in &ctx.resp_headers {
        sv.reply.header(k, v.as_bytes());
    }
    set_body(sv, &ctx.body);
}

/// Replaces the reply's body with `parts` (a file that cannot be opened
/// ends the body there, as lighttpd).
fn set_body(sv: &mut Services, parts: &[Part]) {
    let r = &mut sv.reply;
    r.replace_body(b"");
    r.encode = None;
    let mut total = 0u64;
    for p in parts {
        match p {
            Part::Mem(b) => {
                r.push_mem(b);
                total += b.len() as u64;
            }
            Part::File { path, offset, len } => {
                let opened = std::fs::File::open(path).and_then(|f| Ok((f.metadata()?.len(), f)));
                let Ok((size, f)) = opened else {
                    log::error!("(mod_magnet) error opening file '{path}'");
                    break;
                };
                let off = (*offset).min(size);
                let n = len.map_or(size - off, |l| l.min(size - off));
                r.push_file(Rc::new(f), off, n);
                total += n;
            }
        }
    }
    r.end_head(Some(total));
}

//! A request whose `auth.backend` blocks (LDAP, PAM) waits for its check
//! without holding up the loop: the check goes to `authn::blocking`'s
//! threads, and the request becomes a local job of the upstream whose
//! answer is "run on" ([`RunOn`], an authorizer as far as the
//! connection is concerned: the body stays unread, HTTP/1, HTTP/2 and
//! HTTP/3 all wait the same way, a client that goes away cancels it).
//! When the check's verdict is in, the worker wakes the loop through the
//! job's pipe, the connection runs the request again, and [`resume`]
//! turns the verdict into the grant (on to the handlers, into
//! `auth.cache`) or glint's own 401.

use std::rc::Rc;
use std::sync::Arc;

use mio::Registry;

use super::auth::{answer_outcome, cache_for, Blocked, Checked};
use super::{respond_with, Answer, Carry, ConnInfo, GwStart, Outcome, Services};
use crate::authn;
use crate::authn::ask::{Ask, Verdict};
use crate::authn::basic::Credentials;
use crate::authn::blocking::{Pending, Refused, QUEUE, THREADS};
use crate::authn::dbi;
use crate::authn::digest::{conclude_digest, DigestWork};
use crate::authn::external::{conclude, Spec};
use crate::authn::gssapi::negotiate_unauthorized;
use crate::authn::nonce::NonceKey;
use crate::authn::require::Require;
use crate::config::Settings;
use crate::msg::local::{Awaited, RunOn, Wake};
use crate::msg::{Method, Request};
use crate::upstream::{HttpBody, JobSpec, Protocol, Upload};

/// What a waiting request carries to its run again.
pub struct AuthWait {
    pending: Pending<Verdict>,
    rule: Require,
    user: String,
    /// For `auth.cache`, when the verdict is a grant.
    password: Vec<u8>,
    path: String,
    /// A Digest check (its grant is a Digest one, its refusal a Digest
    /// challenge).
    digest: Option<Box<DigestWork>>,
    /// The user file's generation, for `auth.cache` (0: no file).
    generation: u64,
    /// A Negotiate check (`"method" => "gssapi"`): never cached, refused
    /// with its own challenge.
    negotiate: bool,
}

impl std::fmt::Debug for AuthWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthWait")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The local job waits for the verdict, then answers "run on" (what the
/// verdict says is read by [`resume`]).
impl Awaited for Pending<Verdict> {
    fn is_ready(&self) -> bool {
        Pending::is_ready(self)
    }

    fn on_ready(&mut self, wake: Wake) -> Option<Wake> {
        Pending::on_ready(self, wake);
        None
    }
}

/// Where the request goes while it waits.
pub(super) struct Waiting<'a> {
    pub info: &'a ConnInfo,
    pub req: &'a Request<'a, 'a>,
    pub settings: &'a Settings,
    pub path: &'a str,
    pub carry: &'a mut Carry,
    pub registry: &'a Registry,
}

/// Starts the check of `creds` for `rule` on the worker threads and
/// parks the request as a local job; a full queue or an unusable
/// configuration answers at once (503, 401) in `sv.reply`.
pub(super) fn start(sv: &mut Services, w: Waiting<'_>, b: Blocked) -> Checked {
    let Blocked {
        rule,
        kind,
        creds,
        token,
        digest,
        local,
    } = b;
    let negotiate = token.is_some();
    let generation = local.as_ref().map_or(0, |(_, g)| *g);
    let ip = w
        .info
        .peer
        .map_or_else(|| "(unix socket)".to_string(), |ip| ip.to_string());
    let spec = match local.map_or_else(|| sv.auth.spec_for(kind, w.settings), |(s, _)| Ok(s)) {
        Ok(s) => s,
        Err(why) => {
            let now = sv.clock.unix;
            let outcome = finish(
                &rule,
                sv.auth.key(),
                now,
                w.path,
                creds.user,
                digest.as_deref(),
                negotiate,
                Verdict::Denied(why),
            );
            return answer_outcome(sv, w.carry, rule.id, outcome, &ip);
        }
    };
    let Some(route) = sv.upstream.local_route else {
        sv.reply.error(500);
        return Checked::Refused;
    };
    let ask = ask_for(&w, &rule, &creds, ip, token);
    let Some(pending) = submit(sv, spec, ask, digest.clone(), w.path) else {
        return Checked::Refused;
    };
    let wait = AuthWait {
        pending,
        rule,
        user: creds.user,
        password: creds.password,
        path: w.path.to_string(),
        digest,
        generation,
        negotiate,
    };
    park(sv, w, route, wait)
}

/// What the back end is asked: the credentials for the rule, from whom,
/// for which path and Host.
fn ask_for(
    w: &Waiting<'_>,
    rule: &Require,
    creds: &Credentials,
    remote: String,
    token: Option<Vec<u8>>,
) -> Ask {
    Ask {
        user: creds.user.clone(),
        password: creds.password.clone(),
        rule: rule.rule.clone(),
        remote,
        realm: rule.realm.clone(),
        path: w.path.to_string(),
        host: w
            .carry
            .host
            .clone()
            .unwrap_or_else(|| String::from_utf8_lossy(w.req.host).into_owned()),
        token,
    }
}

/// Hands the check to the worker threads (a Digest check asks for the
/// HA1); None, with 503 in `sv.reply`, when the pool is full or closed.
fn submit(
    sv: &mut Services,
    spec: Spec,
    ask: Ask,
    digest: Option<Box<DigestWork>>,
    path: &str,
) -> Option<Pending<Verdict>> {
    let pending: Pending<Verdict> = Pending::default();
    let panicked = Verdict::Denied("the back-end check failed".into());
    let check = move || match (&spec, digest) {
        (Spec::Dbi(s), Some(work)) => dbi::verify_digest(s, &ask, &work),
        (_, Some(_)) => Verdict::Denied("the back end holds no HA1".into()),
        (_, None) => spec.verify(&ask),
    };
    let submitted = match sv.auth.pool() {
        Some(pool) => pool.submit(&pending, check, panicked),
        None => Err(Refused::Closed),
    };
    if let Err(why) = submitted {
        if why == Refused::Full {
            log::warn!(
                "(mod_auth) {THREADS} back-end checks running and {QUEUE} waiting; answering 503 for {path}"
            );
        }
        sv.reply.error(503);
        return None;
    }
    Some(pending)
}

/// The request becomes a local job on `route` that answers once `wait`'s
/// verdict is in.
fn park(sv: &mut Services, w: Waiting<'_>, route: usize, wait: AuthWait) -> Checked {
    let settings = Rc::clone(&sv.reply.settings);
    let job = JobSpec {
        route,
        protocol: Protocol::Cgi,
        upload: Upload::http(Vec::new(), HttpBody::Length(0)),
        settings: Rc::clone(&settings),
        hash_path: 0,
        hash_ip: 0,
        authorizer: true,
        local_redir: false,
        head_only: w.req.method == Method::Head,
        method: String::new(),
        http: None,
        cgi: None,
        local: Some(Box::new(RunOn::new(wait.pending.clone()))),
    };
    let job = match sv
        .upstream
        .start(job, w.info.ex, sv.clock.mono_secs, w.registry)
    {
        Ok(j) => j,
        Err(status) => {
            sv.reply.error(status);
            return Checked::Refused;
        }
    };
    w.carry.authn_wait = Some(Rc::new(wait));
    let mut g = GwStart::whole(job, &settings, w.req, w.carry, route, w.info);
    g.authorizer = true;
    Checked::Wait(g)
}

/// The request runs again with its check's verdict: a grant goes on
/// through the phases (and into `auth.cache`), a refusal is answered.
#[allow(clippy::too_many_arguments)]
pub(super) fn resume(
    sv: &mut Services,
    info: &ConnInfo,
    first: &Request<'_, '_>,
    mut carry: Carry,
    wait: Rc<AuthWait>,
    settings: &Rc<Settings>,
    head_only: bool,
    registry: &Registry,
) -> Outcome {
    let verdict = wait
        .pending
        .take()
        .unwrap_or_else(|| Verdict::Denied("no verdict".into()));
    let granted = matches!(
        verdict,
        Verdict::Granted | Verdict::Answer(authn::Outcome::Granted(_), _)
    ) && !wait.negotiate;
    let ccache = match &verdict {
        Verdict::Answer(authn::Outcome::Granted(_), Some(c)) => Some(Arc::clone(c)),
        _ => None,
    };
    let outcome = finish(
        &wait.rule,
        sv.auth.key(),
        sv.clock.unix,
        &wait.path,
        wait.user.clone(),
        wait.digest.as_deref(),
        wait.negotiate,
        verdict,
    );
    if let Some(c) = ccache {
        // KRB5CCNAME for CGI, FastCGI, SCGI and SSI, the request header
        // X-Forwarded-Keytab (replacing the client's) for every back end,
        // as lighttpd sets them; the file goes with the request.
        let path = c.path().as_bytes().to_vec();
        carry
            .vars
            .retain(|(k, _)| k != "KRB5CCNAME" && k != "HTTP_X_FORWARDED_KEYTAB");
        carry.vars.push(("KRB5CCNAME".into(), path.clone()));
        carry.vars.push(("HTTP_X_FORWARDED_KEYTAB".into(), path));
        carry.krb5_ccache = Some(c);
    }
    // (Digest logins are not cached: lighttpd caches the HA1, glint asks
    // the database again.)
    if granted && wait.digest.is_none() {
        if let Some(age) = settings.auth.cache_max_age {
            let now = sv.clock.unix;
            if let Some(c) = cache_for(&mut sv.auth.caches, age) {
                c.insert(
                    wait.rule.id,
                    wait.generation,
                    &wait.user,
                    &wait.password,
                    now,
                );
            }
        }
    }
    let ip = info
        .peer
        .map_or_else(|| "(unix socket)".to_string(), |ip| ip.to_string());
    sv.reply.reset(Rc::clone(settings), head_only);
    match answer_outcome(sv, &mut carry, wait.rule.id, outcome, &ip) {
        Checked::Pass => respond_with(sv, info, first, carry, registry),
        _ => Outcome::Reply(Answer {
            orig_line: carry.orig_line.take(),
            ..Answer::taken(sv)
        }),
    }
}

/// The request's outcome for `verdict`: Basic's, Digest's for `digest`,
/// or for a Negotiate check a refusal with its own challenge (a failure
/// before its check ran too).
#[allow(clippy::too_many_arguments)]
fn finish(
    rule: &Require,
    key: &NonceKey,
    now: i64,
    path: &str,
    user: String,
    digest: Option<&DigestWork>,
    negotiate: bool,
    verdict: Verdict,
) -> crate::authn::Outcome {
    match (digest, verdict) {
        (_, Verdict::Denied(why)) if negotiate => negotiate_unauthorized(why),
        (Some(work), verdict) => conclude_digest(rule, key, now, path, work, verdict),
        (None, verdict) => conclude(rule, path, user, verdict),
    }
}

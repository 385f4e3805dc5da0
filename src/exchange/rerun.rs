//! Running a request again inside glint once its backend's answer said so:
//! after an authorizer's 200 the same request goes on, with the
//! authorizer's `docroot` and `Variable-`s; after a local redirect (RFC 3875
//! 6.2.2) glint answers a GET (HEAD for a HEAD) for the new path and
//! query, without the body the first backend already had.

use std::rc::Rc;

use mio::Registry;

use super::{respond_with, Answer, Carry, ConnInfo, GwStart, Outcome, Services};
use crate::msg::{OwnedHead, Request, Rerun};
use crate::upstream::HostSpec;

/// Most times one client request is run again inside glint (an authorizer
/// allowed it, a backend redirected it locally); past it the client gets 500.
pub const MAX_RERUNS: u8 = 5;

/// Runs the request of gateway exchange `gw` again, as `why` says. At most
/// [`MAX_RERUNS`] times per request, then 500. The request's body is the
/// client's still, unread after an authorizer (the new outcome takes it),
/// spent after a redirect (whatever of it is still to come is dropped).
pub fn rerun(
    sv: &mut Services,
    info: &ConnInfo,
    gw: GwStart,
    why: Rerun,
    registry: &Registry,
) -> Outcome {
    let GwStart {
        head,
        mut carry,
        settings,
        head_only,
        route,
        ..
    } = gw;
    let mut headers = Vec::new();
    let first = head.view(&mut headers);
    if carry.magnet.wait.is_some() {
        // A parked mod_magnet run is done (not a run again of its own).
        return super::magnet_wait::resume(sv, info, &first, carry, &settings, registry);
    }
    carry
        .orig_line
        .get_or_insert_with(|| first.request_line.to_vec());
    carry.reruns += 1;
    // (A graceful restart may have removed the route since.)
    let spec = sv
        .upstream
        .routes
        .get(route)
        .and_then(|r| r.hosts.first())
        .and_then(|&h| sv.upstream.hosts.get(h))
        .map(|h| &h.spec);
    let (label, addr) = spec.map_or((String::new(), String::new()), |s| {
        (s.label.clone(), s.addr.to_string())
    });
    let failed = |sv: &mut Services, status: u16, orig_line: Option<Vec<u8>>| {
        sv.reply.reset(Rc::clone(&settings), head_only);
        sv.reply.error(status);
        Outcome::Reply(Answer {
            orig_line,
            ..Answer::taken(sv)
        })
    };
    if let Rerun::Intercepted { status, challenge } = why {
        let error = (status, challenge);
        return intercepted(sv, info, &first, carry, settings, error, registry);
    }
    if carry.reruns > MAX_RERUNS {
        log::error!(
            "backend {label} ({addr}): {:?} ran {} times inside glint (a redirect loop?); answering 500",
            String::from_utf8_lossy(carry.orig_line.as_deref().unwrap_or(b"")),
            MAX_RERUNS
        );
        return failed(sv, 500, carry.orig_line);
    }
    if let Some(wait) = carry.authn_wait.take() {
        // The check of a blocking auth.backend is done: its verdict.
        let head_only = head_only || first.method == crate::msg::Method::Head;
        return super::auth_wait::resume(
            sv, info, &first, carry, wait, &settings, head_only, registry,
        );
    }
    let next = match next_run(&mut carry, why, spec, &first, (&label, &addr)) {
        Ok(next) => next,
        Err(status) => return failed(sv, status, carry.orig_line),
    };
    match &next {
        Some(h) => {
            let mut hs = Vec::new();
            let req = h.view(&mut hs);
            respond_with(sv, info, &req, carry, registry)
        }
        None => respond_with(sv, info, &first, carry, registry),
    }
}

/// `server.error-intercept`: the backend's error answer is replaced by
/// glint's own for its status: the error handler's answer when one is set
/// for it (`REDIRECT_STATUS` tells its backend the status), else the
/// error page (`server.errorfile-prefix`), with a 401's challenge.
fn intercepted(
    sv: &mut Services,
    info: &ConnInfo,
    first: &Request<'_, '_>,
    mut carry: Carry,
    settings: Rc<crate::config::Settings>,
    (status, challenge): (u16, Option<Vec<u8>>),
    registry: &Registry,
) -> Outcome {
    log::debug!("server.error-intercept: the backend's {status} is answered by glint");
    // Any error status of a backend may go to the handler (it is no
    // verdict on the request's syntax), but a 401: its challenge must
    // reach the client. (The handler's own backend is not intercepted.)
    let handler = (status != 401)
        .then(|| super::error_handler_of(&settings, status))
        .flatten();
    if let Some(next) = handler {
        carry.error = Some(next);
        carry.magnet.raw_done = false;
        carry.magnet.no_rewrite = false;
        return respond_with(sv, info, first, carry, registry);
    }
    sv.reply
        .reset(settings, first.method == crate::msg::Method::Head);
    match challenge.as_deref() {
        Some(c) => sv.reply.error_with(status, &[("WWW-Authenticate", c)]),
        None => sv.reply.error(status),
    }
    Outcome::Reply(Answer {
        orig_line: carry.orig_line,
        remote_user: carry.remote_user,
        ..Answer::taken(sv)
    })
}

/// What runs next, in `carry`: the request itself with an authorizer's
/// variables and docroot (None), or a local redirect's new head; Err: the
/// status to answer (502 for a Location that does not parse). The label
/// and address are the backend's, for the log.
fn next_run(
    carry: &mut Carry,
    why: Rerun,
    spec: Option<&HostSpec>,
    first: &Request<'_, '_>,
    (label, addr): (&str, &str),
) -> Result<Option<OwnedHead>, u16> {
    match why {
        Rerun::Authorized(vars) => {
            carry.authorized = true;
            carry.docroot = spec.and_then(|s| s.docroot.clone());
            for (k, v) in vars {
                carry.vars.retain(|(old, _)| *old != k);
                carry.vars.push((k, v));
            }
            Ok(None)
        }
        // (Answered by `intercepted`.)
        Rerun::Intercepted { status, .. } => Err(status),
        Rerun::Vhost(found) => {
            carry.vhost.answer = Some(found);
            Ok(None)
        }
        Rerun::Redirect(target) => {
            log::debug!("backend {label}: local redirect to {target}");
            if !target.starts_with('/') || target.bytes().any(|b| b <= b' ' || b == 0x7f) {
                log::error!(
                    "backend {label} ({addr}): the request to run again does not parse (a bad Location?); answering 502"
                );
                return Err(502);
            }
            // The new path meets its own authorizer, if it has one.
            carry.authorized = false;
            carry.docroot = None;
            Ok(Some(OwnedHead::redirect(first, &target)))
        }
    }
}

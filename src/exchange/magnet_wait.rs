//! A request whose mod_magnet script runs past its quantum waits without
//! holding up the others: the run is suspended (see `magnet::park`), and
//! the request becomes a local job of the upstream whose answer is "run
//! on", as a request waiting for a blocking `auth.backend` does (see
//! `auth_wait`: HTTP/1, HTTP/2 and HTTP/3 wait the same way, a client
//! that goes away cancels the run). The loop gives the parked runs their
//! quanta after the other work of each turn; when the scripts are done,
//! the job answers and the request runs again, taking their outcome where
//! they ran ([`super::magnet`]) instead of running them again. The
//! response-start scripts' request keeps glint's answer here meanwhile.

use std::cell::RefCell;
use std::rc::Rc;

use mio::Registry;

use super::magnet::MagnetWait;
use super::{Carry, ConnInfo, GwStart, Outcome, Services};
use crate::config::Settings;
use crate::magnet::{Parked, Stage};
use crate::msg::local::{Awaited, RunOn, Wake};
use crate::msg::{Method, Reply, Request};
use crate::upstream::{HttpBody, JobSpec, Protocol, Upload};

/// What the local job waits for: the scripts' run. Dropped before it is
/// done (the client went away), it drops the run.
struct ParkedRun(Parked);

impl Awaited for ParkedRun {
    fn is_ready(&self) -> bool {
        self.0.is_done()
    }

    fn on_ready(&mut self, wake: Wake) -> Option<Wake> {
        self.0.on_done(wake)
    }
}

impl Drop for ParkedRun {
    fn drop(&mut self) {
        if !self.0.is_done() {
            self.0.cancel();
        }
    }
}

/// Parks `req` on `run` (with glint's answer `reply` for a response-start
/// script): the gateway exchange to wait on, or None when it cannot
/// wait (the answer, 500 or the upstream's refusal, is in `sv.reply`).
pub(super) fn park(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    (run, reply): (Parked, Option<Reply>),
    registry: &Registry,
) -> Option<Box<GwStart>> {
    let settings: Rc<Settings> = match &reply {
        Some(r) => Rc::clone(&r.settings),
        None => Rc::clone(&sv.reply.settings),
    };
    let Some(route) = sv.upstream.local_route else {
        log::error!("mod_magnet: no local route to park a long script run on");
        run.cancel();
        sv.reply.reset(settings, req.method == Method::Head);
        sv.reply.error(500);
        return None;
    };
    let job = JobSpec {
        route,
        protocol: Protocol::Cgi,
        upload: Upload::http(Vec::new(), HttpBody::Length(0)),
        settings: Rc::clone(&settings),
        hash_path: 0,
        hash_ip: 0,
        authorizer: true,
        local_redir: false,
        head_only: req.method == Method::Head,
        method: String::new(),
        http: None,
        cgi: None,
        local: Some(Box::new(RunOn::new(ParkedRun(run.clone())))),
    };
    let job = match sv
        .upstream
        .start(job, info.ex, sv.clock.mono_secs, registry)
    {
        Ok(j) => j,
        Err(status) => {
            run.cancel();
            sv.reply.reset(settings, req.method == Method::Head);
            sv.reply.error(status);
            return None;
        }
    };
    if run.stage() == Stage::Physical {
        // The raw-url scripts ran for this request already: the run again
        // does not run them again.
        carry.magnet.raw_done = true;
    }
    carry.magnet.wait = Some(Rc::new(MagnetWait {
        run,
        reply: RefCell::new(reply),
    }));
    let mut g = GwStart::whole(job, &settings, req, carry, route, info);
    g.authorizer = true;
    Some(g)
}

/// The request's scripts are done: it runs again, the stage that parked
/// taking their outcome (a response-start script's goes onto the answer
/// kept for it).
pub(super) fn resume(
    sv: &mut Services,
    info: &ConnInfo,
    first: &Request<'_, '_>,
    mut carry: Carry,
    settings: &Rc<Settings>,
    registry: &Registry,
) -> Outcome {
    let head_only = first.method == Method::Head;
    let Some(wait) = carry.magnet.wait.take() else {
        sv.reply.reset(Rc::clone(settings), head_only);
        sv.reply.error(500);
        return super::reply_outcome(sv, first, &mut carry);
    };
    let reply = wait.reply.borrow_mut().take();
    match reply {
        Some(reply) => {
            let old = std::mem::replace(&mut sv.reply, reply);
            sv.give_back(old);
            match wait.run.take() {
                Some((v, ctx)) if wait.run.stage() == Stage::ResponseStart => {
                    super::magnet::apply_response_start(sv, ctx, v);
                }
                _ => log::error!("mod_magnet: a response-start run ended without its outcome"),
            }
            super::reply_outcome(sv, first, &mut carry)
        }
        None => {
            carry.magnet.resumed = Some(wait.run.clone());
            sv.reply.reset(Rc::clone(settings), head_only);
            super::respond_with(sv, info, first, carry, registry)
        }
    }
}

//! What answers a request, returned as a value: glint's own [`Answer`]
//! or a job started on a backend ([`GwStart`]).

use std::rc::Rc;

use super::{Carry, ConnInfo, Services};
use crate::config::Settings;
use crate::msg::{OwnedHead, Reply, Request};
use crate::upstream::JobId;

/// What answers a request.
pub enum Outcome {
    /// glint's own answer. Its body is never the request's: the
    /// connection drops the request body (or closes, as the plan says).
    Reply(Answer),
    /// A backend's: the job started for it, and what the client's side
    /// needs to pass the answer on. Its body (if any) goes to the job, or
    /// waits unread while an authorizer decides (`GwStart::authorizer`).
    Gateway(Box<GwStart>),
}

/// glint's own answer to a request, with what its access log line needs.
#[derive(Debug)]
pub struct Answer {
    /// `Reply::close`: the answer ends the connection (a refused body, a
    /// failed login, as lighttpd).
    pub reply: Reply,
    /// A request run again is logged with the line the client sent.
    pub orig_line: Option<Vec<u8>>,
    /// The user mod_auth let in, for the access log's `%u`.
    pub remote_user: Option<String>,
}

impl Answer {
    /// An answer built from the reply in [`Services::reply`].
    pub fn taken(sv: &mut Services) -> Answer {
        Answer {
            reply: sv.take_reply(),
            orig_line: None,
            remote_user: None,
        }
    }
}

/// A gateway exchange as the client's side holds it.
#[derive(Debug)]
pub struct GwStart {
    pub job: JobId,
    /// The backend is an authorizer (its refusal goes to the client; its
    /// 200 runs the request on).
    pub authorizer: bool,
    pub settings: Rc<Settings>,
    pub head_only: bool,
    pub minor: u8,
    /// The request's head, for the access log and for running it again.
    pub head: OwnedHead,
    /// What the request carries into a later run.
    pub carry: Carry,
    /// The route it went to (for log lines).
    pub route: usize,
    /// The connection as the request saw it (its client after
    /// mod_extforward), for the access log and a run again.
    pub info: ConnInfo,
}

impl GwStart {
    /// The exchange of a request that a backend answers whole (not an
    /// authorizer's, not a HEAD's own framing): WebDAV's lock-free jobs,
    /// the WebSocket tunnel.
    pub(crate) fn whole(
        job: JobId,
        settings: &Rc<Settings>,
        req: &Request<'_, '_>,
        carry: &mut Carry,
        route: usize,
        info: &ConnInfo,
    ) -> Box<GwStart> {
        Box::new(GwStart {
            job,
            authorizer: false,
            settings: Rc::clone(settings),
            head_only: false,
            minor: req.minor,
            head: OwnedHead::of(req),
            carry: std::mem::take(carry),
            route,
            info: info.clone(),
        })
    }
}

//! Messages as values, shared by every protocol and every handler: the
//! request ([`request`]), glint's own response ([`reply`]), the way an
//! upstream answers ([`sink`]), statuses and error pages ([`status`]), and
//! byte ranges ([`range`]), the response plan that frames every answer
//! and decides the connection's fate ([`plan`]), and work glint does
//! itself as a job ([`local`]).

pub mod local;
pub mod plan;
pub mod range;
pub mod reply;
pub mod request;
pub mod sink;
pub mod status;

pub use reply::{Piece, Reply, ReplyData};
pub use request::{Body, HttpError, Method, OwnedHead, Request, MAX_HEADERS};
pub use sink::{AnswerHead, ExchangeId, Rerun, Sink, H3_SLOT_BASE};

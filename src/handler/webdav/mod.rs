//! mod_webdav: WebDAV (RFC 4918) on the files below a docroot, as
//! lighttpd 1.4.69 serves it: `webdav.activate`, `webdav.is-readonly`,
//! `webdav.sqlite-db-name` (dead properties and locks, in lighttpd's own
//! schema: [`store`]), `webdav.log-xml`, `webdav.opts`.
//!
//! The exchange asks [`start`] once the request met mod_auth and
//! mod_access and its path is mapped (docroot, mod_alias, mod_userdir).
//! A method without a body (MKCOL, DELETE, COPY, MOVE, UNLOCK) is
//! answered at once ([`Start::Answer`]). PUT, PROPFIND, PROPPATCH and
//! LOCK become a [`LocalWork`] job ([`Start::Work`]): the body reaches it
//! through the upstream's window (PUT's into a temporary file beside the
//! target, synced and renamed), and the answer (a PROPFIND's multistatus
//! streamed a directory entry at a time) goes out under the client's
//! back-pressure. File work is synchronous, in bounded slices, as
//! lighttpd's.
//!
//! Where: [`request`] (what a method needs of the request), [`xml`]
//! (bodies), [`out`] (answers), [`locks`] (the `If` header, LOCK,
//! UNLOCK), [`props`] (PROPFIND), [`proppatch`], [`fsops`] (recursive delete,
//! copy and move), [`methods`] (MKCOL, DELETE, COPY, MOVE), [`put`].

pub mod common;
pub mod fsops;
pub mod locks;
pub mod methods;
pub mod out;
pub mod proppatch;
pub mod props;
pub mod put;
pub mod request;
pub mod store;
pub mod xml;

use crate::msg::local::LocalWork;
pub use out::Answer;
pub use request::{Ctx, DavMethod};
pub use store::Stores;

/// What answers a WebDAV request.
pub enum Start {
    /// Answered now.
    Answer(Answer),
    /// A job: its body goes to the work, which then answers.
    Work(Box<dyn LocalWork>),
}

/// lighttpd's physical-path handler: the read-only check, bodies where
/// none may be, the lock on the source of a change, then the method.
pub fn start(cx: Ctx) -> Start {
    let m = cx.method;
    if m.writes() && cx.settings.webdav.is_readonly {
        return Start::Answer(Answer::error(403));
    }
    if m.rejects_body() && cx.body_len != Some(0) {
        // RFC 4918 8.4: a body that would be ignored is refused.
        return Start::Answer(Answer::error(415));
    }
    if cx.symlink_refused() {
        return Start::Answer(Answer::error(403));
    }
    if m.locks_source() {
        if let Err(a) = locks::has_lock(&cx, &cx.rel, true) {
            return Start::Answer(a);
        }
    }
    match m {
        DavMethod::Mkcol => Start::Answer(methods::mkcol(&cx)),
        DavMethod::Delete => Start::Answer(methods::delete(&cx)),
        DavMethod::Copy | DavMethod::Move => Start::Answer(methods::copymove(&cx)),
        DavMethod::Unlock => Start::Answer(locks::unlock(&cx)),
        DavMethod::Put => put::start(cx),
        DavMethod::Propfind => props::propfind_start(cx),
        DavMethod::Proppatch => proppatch::proppatch_start(cx),
        DavMethod::Lock => locks::lock_start(cx),
    }
}

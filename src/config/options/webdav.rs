//! mod_webdav's `webdav.*` options into [`Settings`].

use std::rc::Rc;

use super::values::{boolean, string};
use crate::config::settings::Settings;
use crate::config::value::Value;

/// Applies `key` when it is one of mod_webdav's `webdav.*` options.
pub(super) fn apply(s: &mut Settings, key: &str, v: &Value) -> Result<bool, String> {
    match key {
        "webdav.activate" => {
            Rc::make_mut(&mut s.webdav).activate = boolean(v)?;
            s.keep_raw(key, v);
        }
        "webdav.is-readonly" => {
            Rc::make_mut(&mut s.webdav).is_readonly = boolean(v)?;
            s.keep_raw(key, v);
        }
        "webdav.log-xml" => {
            Rc::make_mut(&mut s.webdav).log_xml = boolean(v)?;
            s.keep_raw(key, v);
        }
        "webdav.sqlite-db-name" => {
            // (Blank: no database, as lighttpd.)
            Rc::make_mut(&mut s.webdav).sqlite_db_name =
                Some(string(v)?).filter(|n| !n.trim().is_empty());
            s.keep_raw(key, v);
        }
        "webdav.opts" => {
            Rc::make_mut(&mut s.webdav).opts = crate::config::webdav::WebdavOpts::parse(v)?;
            s.keep_raw(key, v);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

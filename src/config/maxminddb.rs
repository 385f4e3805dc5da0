//! mod_maxminddb's options of one scope (`maxminddb.activate`, `.db`,
//! `.env`), and the databases a configuration names, each opened once at
//! load: a file that cannot be opened stops the start at the line that
//! named it, as lighttpd refuses to start.

use std::rc::Rc;

use super::error::ConfigError;
use super::value::Value;
use crate::geo::{GeoDb, GeoVar};

/// The module's name in `server.modules`.
pub const MODULE: &str = "mod_maxminddb";

/// mod_maxminddb's settings of one scope.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GeoSettings {
    /// `maxminddb.activate` (default disable).
    pub activate: bool,
    /// `maxminddb.db`: the database file. A blank value leaves the
    /// scope's database as it was (lighttpd merges only a file it opened).
    pub db: Option<String>,
    /// `maxminddb.env`: the variables and their record paths. An empty
    /// list leaves the scope's as it was, as lighttpd.
    pub env: Option<Rc<[GeoVar]>>,
    /// The open database of `db` (from [`Databases`], once per scope).
    pub reader: Option<Rc<GeoDb>>,
    /// mod_maxminddb is in `server.modules`: without it lighttpd ignores
    /// these options (with a warning), and so does glint.
    pub loaded: bool,
    /// mod_maxminddb comes before mod_setenv in `server.modules`: its
    /// variables are set first (a variable both set is then mod_setenv's).
    pub before_setenv: bool,
}

impl GeoSettings {
    /// `maxminddb.db`: a blank value changes nothing.
    pub fn set_db(&mut self, v: &str) {
        if !v.trim().is_empty() {
            self.db = Some(v.to_string());
        }
    }

    /// `maxminddb.env`: an empty list changes nothing.
    pub fn set_env(&mut self, v: &Value) -> Result<(), String> {
        let env = parse_env(v)?;
        if !env.is_empty() {
            self.env = Some(env.into());
        }
        Ok(())
    }

    /// What a request under these settings gets: the database and the
    /// variables, when the module is loaded and activated with both.
    pub fn active(&self) -> Option<(&GeoDb, &[GeoVar])> {
        if !(self.loaded && self.activate) {
            return None;
        }
        Some((self.reader.as_deref()?, self.env.as_deref()?))
    }

    /// Fills in what depends on the whole configuration: whether the
    /// module is loaded, its place beside mod_setenv, the open database.
    pub fn finish(&mut self, modules: &[String], dbs: &Databases) {
        let at = |m: &str| modules.iter().position(|x| x == m);
        self.loaded = at(MODULE).is_some();
        self.before_setenv = match (at(MODULE), at("mod_setenv")) {
            (Some(g), Some(s)) => g < s,
            _ => false,
        };
        self.reader = self.db.as_deref().and_then(|p| dbs.get(p));
    }
}

/// `maxminddb.env`: `"NAME" => "path/in/record"`, ...
fn parse_env(v: &Value) -> Result<Vec<GeoVar>, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "expects an array of \"name\" => \"path\", got {}",
            v.type_name()
        ));
    };
    items
        .iter()
        .map(|(k, v)| match (k, v) {
            (Some(k), Value::Str(p)) => GeoVar::parse(k, p),
            (None, _) => Err("expects an array of \"name\" => \"path\"".to_string()),
            (Some(_), _) => Err("maxminddb.env must be a list of strings".to_string()),
        })
        .collect()
}

/// The databases of one configuration, each file opened once.
#[derive(Debug, Default)]
pub struct Databases {
    open: Vec<Rc<GeoDb>>,
}

impl Databases {
    /// Opens each distinct file of `named` (file, and the configuration
    /// file and line that set it); the first that fails is the
    /// configuration's error, at its line.
    pub fn open<'a>(
        named: impl IntoIterator<Item = (&'a str, &'a str, u32)>,
    ) -> Result<Databases, ConfigError> {
        let mut dbs = Databases::default();
        for (path, file, line) in named {
            if dbs.get(path).is_some() {
                continue;
            }
            let db = GeoDb::open(path)
                .map_err(|e| ConfigError::at(file, line, 0, format!("maxminddb.db: {e}")))?;
            dbs.open.push(Rc::new(db));
        }
        Ok(dbs)
    }

    /// No scope has a database.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// The open database of file `path`.
    pub fn get(&self, path: &str) -> Option<Rc<GeoDb>> {
        self.open.iter().find(|d| d.path == path).cloned()
    }
}

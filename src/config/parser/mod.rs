//! The parser and evaluator: tokens to scopes of final option values.
//!
//! Like lighttpd, glint evaluates while it parses: expressions are computed
//! as they are read (variables must be set before they are used), `include`
//! splices another file in place, and every scope ends up holding one final
//! value per key.

mod include;

use super::cond::{Cond, Field, Net, Test};
use super::error::ConfigError;
use super::lexer::{lex, Pos, Tok, Token};
use super::value::Value;
use regex::Regex;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// How deeply includes and condition blocks may nest.
const MAX_DEPTH: usize = 64;

/// One key's final value in a scope.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    pub value: Value,
    pub pos: Pos,
}

/// A conditional block: its condition (`None` for a plain `else`), the keys
/// it sets, and the condition chains nested in it.
#[derive(Debug)]
pub struct Block {
    pub id: u32,
    pub cond: Option<Cond>,
    pub entries: Vec<Entry>,
    pub children: Vec<Vec<Block>>,
}

/// The result of parsing a whole configuration.
#[derive(Debug, Default)]
pub struct Parsed {
    pub entries: Vec<Entry>,
    pub chains: Vec<Vec<Block>>,
    /// Every `$SERVER["socket"] == "..."`, in order; `Test::OnListener(i)` indexes this.
    pub sockets: Vec<(String, Pos)>,
    /// Every module `server.modules` holds at the end, with the place that
    /// named it (the string in the array, or the assignment when the value
    /// came from a variable).
    pub modules: Vec<(String, Pos)>,
}

#[derive(Default)]
struct Frame {
    entries: Vec<Entry>,
    chains: Vec<Vec<Block>>,
}

struct Eval {
    base_dir: PathBuf,
    frames: Vec<Frame>,
    sockets: Vec<(String, Pos)>,
    next_id: u32,
    depth: usize,
    /// The string literals of the statement being read, with their places.
    strings: Vec<(String, Pos)>,
    /// `server.modules` of the global scope, element by element, with places.
    modules: Vec<(String, Pos)>,
}

struct Cur<'t> {
    toks: &'t [Token],
    i: usize,
}

impl<'t> Cur<'t> {
    fn peek(&self) -> &'t Token {
        // The lexer always ends the list with Eof, and `bump` never passes it.
        &self.toks[self.i.min(self.toks.len() - 1)]
    }
    fn peek2(&self) -> &'t Token {
        &self.toks[(self.i + 1).min(self.toks.len() - 1)]
    }
    fn bump(&mut self) -> &'t Token {
        let t = self.peek();
        if self.i < self.toks.len() - 1 {
            self.i += 1;
        }
        t
    }
    fn require(&mut self, want: Tok, what: &str) -> Result<&'t Token, ConfigError> {
        let t = self.bump();
        if t.tok == want {
            Ok(t)
        } else {
            Err(unexpected(t, what))
        }
    }
}

fn unexpected(t: &Token, expected: &str) -> ConfigError {
    t.pos.error(format!(
        "unexpected {}, expected {expected}",
        t.tok.describe()
    ))
}

/// The full name of a key: a name without `.` is a variable.
fn full_key(k: &str) -> String {
    if k.contains('.') {
        k.to_string()
    } else {
        format!("var.{k}")
    }
}

/// `a + b` and `a += b`: strings concatenate (an integer joins a string
/// as its decimal text, on either side, as lighttpd's
/// `configparser_merge_data` does: `1 + "/x"` is `"1/x"`), integers add,
/// arrays append.
pub fn merge(a: Value, b: Value, pos: &Pos) -> Result<Value, ConfigError> {
    match (a, b) {
        (Value::Str(mut x), Value::Str(y)) => {
            x.push_str(&y);
            Ok(Value::Str(x))
        }
        (Value::Str(mut x), Value::Int(y)) => {
            x.push_str(&y.to_string());
            Ok(Value::Str(x))
        }
        (Value::Int(x), Value::Str(y)) => Ok(Value::Str(format!("{x}{y}"))),
        (Value::Int(x), Value::Int(y)) => x
            .checked_add(y)
            .filter(|n| *n <= i64::from(i32::MAX))
            .map(Value::Int)
            .ok_or_else(|| pos.error("integer overflow")),
        (Value::Array(mut x), Value::Array(y)) => {
            for (k, v) in y {
                if let Some(k) = &k {
                    if x.iter().any(|(xk, _)| xk.as_ref() == Some(k)) {
                        return Err(pos.error(format!("duplicate array key \"{k}\"")));
                    }
                }
                x.push((k, v));
            }
            Ok(Value::Array(x))
        }
        (x, y) => Err(pos.error(format!("cannot add {} to {}", y.type_name(), x.type_name()))),
    }
}

impl Eval {
    fn lookup(&self, key: &str) -> Option<&Value> {
        self.frames
            .iter()
            .rev()
            .find_map(|f| f.entries.iter().find(|e| e.key == key).map(|e| &e.value))
    }

    fn parse_stmts(&mut self, c: &mut Cur<'_>, in_block: bool) -> Result<(), ConfigError> {
        loop {
            let t = c.peek();
            match &t.tok {
                Tok::Eof if in_block => return Err(unexpected(t, "'}'")),
                Tok::Eof => return Ok(()),
                Tok::RBrace if in_block => return Ok(()),
                Tok::Semicolon => {
                    c.bump();
                }
                Tok::CondVar(_) => self.parse_chain(c)?,
                Tok::Key(k)
                    if (k == "include" || k == "include_shell")
                        && !matches!(c.peek2().tok, Tok::Assign | Tok::Replace | Tok::Append) =>
                {
                    c.bump();
                    let shell = k == "include_shell";
                    let (v, pos) = self.parse_expr(c)?;
                    let Value::Str(arg) = v else {
                        return Err(
                            pos.error(format!("{k} expects a string, got {}", v.type_name()))
                        );
                    };
                    if shell {
                        self.include_shell(&arg, &t.pos)?;
                    } else {
                        self.include(&arg, &t.pos)?;
                    }
                }
                Tok::Key(k) if k == "global" && c.peek2().tok == Tok::LBrace => {
                    if self.frames.len() > 1 {
                        return Err(t.pos.error("'global' block inside a condition"));
                    }
                    c.bump();
                    c.bump();
                    self.depth += 1;
                    self.parse_stmts(c, true)?;
                    self.depth -= 1;
                    c.require(Tok::RBrace, "'}'")?;
                }
                Tok::Key(k) if matches!(k.as_str(), "else" | "elseif" | "elsif") => {
                    return Err(t.pos.error(format!("'{k}' without a condition before it")));
                }
                Tok::Key(k) => {
                    c.bump();
                    let op = c.bump();
                    if !matches!(op.tok, Tok::Assign | Tok::Replace | Tok::Append) {
                        return Err(unexpected(op, "'=', ':=' or '+='"));
                    }
                    self.strings.clear();
                    let (v, vpos) = self.parse_expr(c)?;
                    let key = full_key(k);
                    if key == "server.modules" && self.frames.len() == 1 {
                        self.note_modules(&op.tok, &v, &t.pos);
                    }
                    self.assign(key, &op.tok, v, &t.pos, &vpos)?;
                }
                _ => {
                    return Err(unexpected(
                        t,
                        "an option, a condition, 'include' or 'include_shell'",
                    ))
                }
            }
        }
    }

    /// Keeps where each module of a global `server.modules` assignment was named.
    fn note_modules(&mut self, op: &Tok, v: &Value, kpos: &Pos) {
        if *op != Tok::Append {
            self.modules.clear();
        }
        let names: Vec<&str> = match v {
            Value::Str(s) => vec![s.as_str()],
            Value::Array(items) => items
                .iter()
                .filter_map(|(_, v)| match v {
                    Value::Str(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect(),
            Value::Int(_) => Vec::new(),
        };
        for name in names {
            let pos = self
                .strings
                .iter()
                .find(|(s, _)| s == name)
                .map_or_else(|| kpos.clone(), |(_, p)| p.clone());
            self.modules.push((name.to_string(), pos));
        }
    }

    fn assign(
        &mut self,
        key: String,
        op: &Tok,
        v: Value,
        kpos: &Pos,
        vpos: &Pos,
    ) -> Result<(), ConfigError> {
        if key.starts_with("env.") {
            return Err(kpos.error(format!("{key} is read-only")));
        }
        let outer = match op {
            Tok::Append => {
                let n = self.frames.len();
                self.frames[..n.saturating_sub(1)]
                    .iter()
                    .rev()
                    .find_map(|f| f.entries.iter().find(|e| e.key == key))
                    .map(|e| e.value.clone())
            }
            _ => None,
        };
        let Some(frame) = self.frames.last_mut() else {
            return Err(kpos.error("internal error: no scope"));
        };
        let existing = frame.entries.iter_mut().find(|e| e.key == key);
        match (op, existing) {
            (Tok::Assign, Some(e)) => Err(kpos.error(format!(
                "{key} is already set in this scope (at {}:{}); use := to replace it",
                e.pos.file, e.pos.line
            ))),
            (Tok::Append, Some(e)) => {
                let old = std::mem::replace(&mut e.value, Value::Int(0));
                e.value = merge(old, v, vpos)?;
                e.pos = kpos.clone();
                Ok(())
            }
            (_, Some(e)) => {
                e.value = v;
                e.pos = kpos.clone();
                Ok(())
            }
            (_, None) => {
                let value = match outer {
                    Some(old) => merge(old, v, vpos)?,
                    None => v,
                };
                frame.entries.push(Entry {
                    key,
                    value,
                    pos: kpos.clone(),
                });
                Ok(())
            }
        }
    }

    /// `expr := value { "+" value }`; returns the value and where it starts.
    fn parse_expr(&mut self, c: &mut Cur<'_>) -> Result<(Value, Pos), ConfigError> {
        let start = c.peek().pos.clone();
        let mut v = self.parse_value(c)?;
        while c.peek().tok == Tok::Plus {
            let plus = c.bump();
            let rhs = self.parse_value(c)?;
            v = merge(v, rhs, &plus.pos)?;
        }
        Ok((v, start))
    }

    fn parse_value(&mut self, c: &mut Cur<'_>) -> Result<Value, ConfigError> {
        let t = c.bump();
        match &t.tok {
            Tok::Str(s) => {
                self.strings.push((s.clone(), t.pos.clone()));
                Ok(Value::Str(s.clone()))
            }
            Tok::Int(i) => Ok(Value::Int(*i)),
            Tok::Key(k) => {
                if let Some(name) = k.strip_prefix("env.") {
                    return std::env::var(name).map(Value::Str).map_err(|_| {
                        t.pos
                            .error(format!("environment variable {name} is not set"))
                    });
                }
                let key = full_key(k);
                self.lookup(&key)
                    .cloned()
                    .ok_or_else(|| t.pos.error(format!("{key} is not set")))
            }
            Tok::LParen => {
                if self.depth >= MAX_DEPTH {
                    return Err(t.pos.error("arrays nested too deeply"));
                }
                self.depth += 1;
                let items = self.parse_array_items(c);
                self.depth -= 1;
                Ok(Value::Array(items?))
            }
            _ => Err(unexpected(t, "a value")),
        }
    }

    /// The elements of an array after its `(`, through the `)`.
    fn parse_array_items(
        &mut self,
        c: &mut Cur<'_>,
    ) -> Result<Vec<(Option<String>, Value)>, ConfigError> {
        let mut items: Vec<(Option<String>, Value)> = Vec::new();
        loop {
            if c.peek().tok == Tok::RParen {
                c.bump();
                break;
            }
            let (v, vpos) = self.parse_expr(c)?;
            let item = if c.peek().tok == Tok::Arrow {
                c.bump();
                let Value::Str(k) = v else {
                    return Err(vpos.error(format!(
                        "an array key must be a string, got {}",
                        v.type_name()
                    )));
                };
                if items.iter().any(|(ik, _)| ik.as_ref() == Some(&k)) {
                    return Err(vpos.error(format!("duplicate array key \"{k}\"")));
                }
                let (v, _) = self.parse_expr(c)?;
                (Some(k), v)
            } else {
                (None, v)
            };
            items.push(item);
            let sep = c.bump();
            match sep.tok {
                Tok::Comma => {}
                Tok::RParen => break,
                _ => return Err(unexpected(sep, "',' or ')'")),
            }
        }
        Ok(items)
    }

    /// A condition, its block, and any `else` branches after it.
    fn parse_chain(&mut self, c: &mut Cur<'_>) -> Result<(), ConfigError> {
        let mut chain = vec![self.parse_cond_block(c)?];
        loop {
            let t = c.peek();
            let Tok::Key(k) = &t.tok else { break };
            match k.as_str() {
                "else" => {
                    c.bump();
                    match &c.peek().tok {
                        Tok::Key(k) if k == "if" => {
                            c.bump();
                            chain.push(self.parse_cond_block(c)?);
                        }
                        Tok::CondVar(_) => chain.push(self.parse_cond_block(c)?),
                        Tok::LBrace => {
                            c.bump();
                            chain.push(self.parse_block(c, None)?);
                            break;
                        }
                        _ => return Err(unexpected(c.peek(), "a condition or '{'")),
                    }
                }
                "elseif" | "elsif" => {
                    c.bump();
                    chain.push(self.parse_cond_block(c)?);
                }
                _ => break,
            }
        }
        match self.frames.last_mut() {
            Some(f) => f.chains.push(chain),
            None => return Err(c.peek().pos.error("internal error: no scope")),
        }
        Ok(())
    }

    fn parse_cond_block(&mut self, c: &mut Cur<'_>) -> Result<Block, ConfigError> {
        let cond = self.parse_cond(c)?;
        c.require(Tok::LBrace, "'{'")?;
        self.parse_block(c, Some(cond))
    }

    /// The body of a block after its `{`, through the `}`.
    fn parse_block(&mut self, c: &mut Cur<'_>, cond: Option<Cond>) -> Result<Block, ConfigError> {
        if self.depth >= MAX_DEPTH {
            return Err(c.peek().pos.error("conditions nested too deeply"));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.depth += 1;
        self.frames.push(Frame::default());
        let body = self.parse_stmts(c, true);
        let frame = self.frames.pop().unwrap_or_default();
        self.depth -= 1;
        body?;
        c.require(Tok::RBrace, "'}'")?;
        Ok(Block {
            id,
            cond,
            entries: frame.entries,
            children: frame.chains,
        })
    }

    fn parse_cond(&mut self, c: &mut Cur<'_>) -> Result<Cond, ConfigError> {
        let vt = c.bump();
        let Tok::CondVar(var) = &vt.tok else {
            return Err(unexpected(vt, "a condition"));
        };
        c.require(Tok::LBracket, "'['")?;
        let nt = c.bump();
        let Tok::Str(name) = &nt.tok else {
            return Err(unexpected(nt, "a string"));
        };
        c.require(Tok::RBracket, "']'")?;
        let ot = c.bump();
        let Tok::Op(op) = ot.tok else {
            return Err(unexpected(ot, "'==', '!=', '=~', '!~', '=^' or '=$'"));
        };
        let (pv, ppos) = self.parse_expr(c)?;
        let Value::Str(pattern) = pv else {
            return Err(ppos.error(format!(
                "a condition compares with a string, got {}",
                pv.type_name()
            )));
        };
        let field = Field::from_names(var, name).ok_or_else(|| {
            vt.pos
                .error(format!("unknown condition ${var}[\"{name}\"]"))
        })?;
        let regex =
            |p: &str| Regex::new(p).map_err(|e| ppos.error(format!("invalid regex \"{p}\": {e}")));
        let test = match (op, &field) {
            ("==", Field::Socket) => {
                super::parse_socket(&pattern).map_err(|m| ppos.error(m))?;
                self.sockets.push((pattern.clone(), ppos.clone()));
                Test::OnListener(self.sockets.len() - 1)
            }
            ("==" | "!=", Field::RemoteIp) => {
                let net = Net::parse(&pattern).ok_or_else(|| {
                    ppos.error(format!(
                        "\"{pattern}\" is not an IP address or network (a.b.c.d/n)"
                    ))
                })?;
                if op == "==" {
                    Test::InNet(net)
                } else {
                    Test::NotInNet(net)
                }
            }
            ("==", _) => Test::Eq(pattern.clone()),
            ("!=", _) => Test::Ne(pattern.clone()),
            ("=^", _) => Test::Prefix(pattern.clone()),
            ("=$", _) => Test::Suffix(pattern.clone()),
            ("=~", _) => Test::Match(regex(&pattern)?),
            (_, _) => Test::NoMatch(regex(&pattern)?),
        };
        Ok(Cond {
            field,
            test,
            var: format!("${var}[\"{name}\"]"),
            op,
            pattern,
        })
    }
}

/// Parses a whole configuration named `name`; includes are relative to `base_dir`.
pub fn parse(text: &str, name: &str, base_dir: &Path) -> Result<Parsed, ConfigError> {
    let file: Rc<str> = Rc::from(name);
    let here = Pos {
        file: Rc::clone(&file),
        line: 0,
        col: 0,
    };
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut root = Frame::default();
    for (k, v) in [
        ("var.CWD", Value::Str(cwd)),
        ("var.PID", Value::Int(i64::from(std::process::id()))),
    ] {
        root.entries.push(Entry {
            key: k.into(),
            value: v,
            pos: here.clone(),
        });
    }
    let mut ev = Eval {
        base_dir: base_dir.to_path_buf(),
        frames: vec![root],
        sockets: Vec::new(),
        next_id: 0,
        depth: 0,
        strings: Vec::new(),
        modules: Vec::new(),
    };
    let toks = lex(text, &file)?;
    let mut c = Cur { toks: &toks, i: 0 };
    ev.parse_stmts(&mut c, false)?;
    let root = ev.frames.pop().unwrap_or_default();
    Ok(Parsed {
        entries: root.entries,
        chains: root.chains,
        sockets: ev.sockets,
        modules: ev.modules,
    })
}

// The glob matcher is checked on its own by the unit tests.
#[cfg(test)]
pub use include::expand;

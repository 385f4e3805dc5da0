//! The lexer of the configuration language: text to tokens with line and column.

use super::error::ConfigError;
use std::rc::Rc;

/// A token kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// A string literal, escapes resolved.
    Str(String),
    /// An unsigned integer literal.
    Int(i64),
    /// A key or variable name: `[A-Za-z0-9._-]+` that is not all digits.
    Key(String),
    /// `$NAME`, the start of a condition.
    CondVar(String),
    /// `=`
    Assign,
    /// `:=`
    Replace,
    /// `+=`
    Append,
    /// `+`
    Plus,
    /// `=>`
    Arrow,
    /// `==`, `!=`, `=~`, `!~`, `=^`, `=$`
    Op(&'static str),
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Semicolon,
    Eof,
}

impl Tok {
    /// The token as shown in error messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Str(s) => {
                let mut out = String::new();
                let _ = super::value::write_quoted(&mut out, s);
                format!("string {out}")
            }
            Tok::Int(i) => format!("integer {i}"),
            Tok::Key(k) => format!("'{k}'"),
            Tok::CondVar(n) => format!("'${n}'"),
            Tok::Assign => "'='".into(),
            Tok::Replace => "':='".into(),
            Tok::Append => "'+='".into(),
            Tok::Plus => "'+'".into(),
            Tok::Arrow => "'=>'".into(),
            Tok::Op(o) => format!("'{o}'"),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBrace => "'{'".into(),
            Tok::RBrace => "'}'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::Comma => "','".into(),
            Tok::Semicolon => "';'".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// A position in a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pos {
    pub file: Rc<str>,
    pub line: u32,
    pub col: u32,
}

impl Pos {
    /// An error at this position.
    pub fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::at(&self.file, self.line, self.col, message)
    }
}

/// A token and where it starts.
#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-'
}

/// Splits `text` (named `file` in errors) into tokens, ending with [`Tok::Eof`].
pub fn lex(text: &str, file: &Rc<str>) -> Result<Vec<Token>, ConfigError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    while i < chars.len() {
        let pos = Pos {
            file: Rc::clone(file),
            line,
            col,
        };
        match chars[i] {
            '\n' => {
                i += 1;
                line += 1;
                col = 1;
                continue;
            }
            ' ' | '\t' | '\r' => {
                i += 1;
                col += 1;
                continue;
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '"' => {
                let (s, end) = string_literal(&chars, i, line, col, &pos)?;
                out.push(Token {
                    tok: Tok::Str(s),
                    pos,
                });
                (i, line, col) = end;
                continue;
            }
            _ => {}
        }
        let (tok, len) = token(&chars, i, &pos)?;
        out.push(Token { tok, pos });
        i += len;
        col += len as u32;
    }
    out.push(Token {
        tok: Tok::Eof,
        pos: Pos {
            file: Rc::clone(file),
            line,
            col,
        },
    });
    Ok(out)
}

/// The string whose opening quote is `chars[i]` (at `line`, `col`), and
/// where lexing goes on after its closing quote: index, line and column
/// (a string may span lines).
fn string_literal(
    chars: &[char],
    i: usize,
    line: u32,
    col: u32,
    pos: &Pos,
) -> Result<(String, (usize, u32, u32)), ConfigError> {
    let mut s = String::new();
    let mut j = i + 1;
    let (mut l, mut cl) = (line, col + 1);
    loop {
        match chars.get(j) {
            None => return Err(pos.error("unterminated string")),
            Some('\\') if chars.get(j + 1) == Some(&'"') => {
                s.push('"');
                j += 2;
                cl += 2;
            }
            Some('"') => {
                j += 1;
                cl += 1;
                break;
            }
            Some(&ch) => {
                s.push(ch);
                j += 1;
                if ch == '\n' {
                    l += 1;
                    cl = 1;
                } else {
                    cl += 1;
                }
            }
        }
    }
    Ok((s, (j, l, cl)))
}

/// The one-line token that starts at `chars[i]` (not a space, a comment or
/// a string) and its length in characters.
fn token(chars: &[char], i: usize, pos: &Pos) -> Result<(Tok, usize), ConfigError> {
    let at = |n: usize| chars.get(i + n).copied();
    Ok(match chars[i] {
        '=' => match at(1) {
            Some('=') => (Tok::Op("=="), 2),
            Some('~') => (Tok::Op("=~"), 2),
            Some('^') => (Tok::Op("=^"), 2),
            Some('$') => (Tok::Op("=$"), 2),
            Some('>') => (Tok::Arrow, 2),
            _ => (Tok::Assign, 1),
        },
        '!' => match at(1) {
            Some('=') => (Tok::Op("!="), 2),
            Some('~') => (Tok::Op("!~"), 2),
            _ => return Err(pos.error("unexpected character '!'")),
        },
        '+' => match at(1) {
            Some('=') => (Tok::Append, 2),
            _ => (Tok::Plus, 1),
        },
        ':' => match at(1) {
            Some('=') => (Tok::Replace, 2),
            _ => return Err(pos.error("unexpected character ':'")),
        },
        '(' => (Tok::LParen, 1),
        ')' => (Tok::RParen, 1),
        '{' => (Tok::LBrace, 1),
        '}' => (Tok::RBrace, 1),
        '[' => (Tok::LBracket, 1),
        ']' => (Tok::RBracket, 1),
        ',' => (Tok::Comma, 1),
        ';' => (Tok::Semicolon, 1),
        '$' => return cond_var(chars, i, pos),
        c if is_key_char(c) => return word(chars, i, pos),
        other => return Err(pos.error(format!("unexpected character '{other}'"))),
    })
}

/// `$HTTP` and the like, from the `$` at `chars[i]`.
fn cond_var(chars: &[char], i: usize, pos: &Pos) -> Result<(Tok, usize), ConfigError> {
    let mut j = i + 1;
    while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
        j += 1;
    }
    if j == i + 1 {
        return Err(pos.error("expected a condition name after '$'"));
    }
    Ok((Tok::CondVar(chars[i + 1..j].iter().collect()), j - i))
}

/// A key (`server.port`) or, when all digits, an integer.
fn word(chars: &[char], i: usize, pos: &Pos) -> Result<(Tok, usize), ConfigError> {
    let mut j = i;
    while j < chars.len() && is_key_char(chars[j]) {
        j += 1;
    }
    let word: String = chars[i..j].iter().collect();
    let tok = if word.bytes().all(|b| b.is_ascii_digit()) {
        match word.parse::<i64>() {
            Ok(n) if n <= i64::from(i32::MAX) => Tok::Int(n),
            _ => return Err(pos.error(format!("integer {word} is too large"))),
        }
    } else {
        Tok::Key(word)
    };
    Ok((tok, j - i))
}

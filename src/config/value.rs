//! Values of the configuration language and their lighttpd-syntax printing.

use std::fmt;

/// A value as the configuration language knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `"text"`.
    Str(String),
    /// `123`.
    Int(i64),
    /// `( elem, "key" => elem, ... )`: elements in order, each with an optional key.
    Array(Vec<(Option<String>, Value)>),
}

impl Value {
    /// The name of the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "a string",
            Value::Int(_) => "an integer",
            Value::Array(_) => "an array",
        }
    }

    /// The text of a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The element keyed `key` of an array value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Array(items) => items
                .iter()
                .find(|(k, _)| k.as_deref() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Writes `s` as a string literal: only `"` needs an escape in the language.
pub fn write_quoted(f: &mut impl fmt::Write, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        if c == '"' {
            f.write_str("\\\"")?;
        } else {
            f.write_char(c)?;
        }
    }
    f.write_char('"')
}

impl Value {
    fn write_indented(&self, f: &mut impl fmt::Write, indent: usize) -> fmt::Result {
        match self {
            Value::Str(s) => write_quoted(f, s),
            Value::Int(i) => write!(f, "{i}"),
            Value::Array(items) if items.is_empty() => f.write_str("( )"),
            Value::Array(items) => {
                let flat = items
                    .iter()
                    .all(|(k, v)| k.is_none() && !matches!(v, Value::Array(_)));
                if flat {
                    f.write_str("( ")?;
                    for (i, (_, v)) in items.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        v.write_indented(f, indent)?;
                    }
                    return f.write_str(" )");
                }
                f.write_str("(\n")?;
                for (k, v) in items {
                    write!(f, "{:width$}", "", width = indent + 2)?;
                    if let Some(k) = k {
                        write_quoted(f, k)?;
                        f.write_str(" => ")?;
                    }
                    v.write_indented(f, indent + 2)?;
                    f.write_str(",\n")?;
                }
                write!(f, "{:width$})", "", width = indent)
            }
        }
    }

    /// The value in lighttpd syntax, nested arrays indented from `indent`.
    pub fn to_conf(&self, indent: usize) -> String {
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = self.write_indented(&mut s, indent);
        s
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_indented(f, 0)
    }
}

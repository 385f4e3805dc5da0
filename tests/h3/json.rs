//! A small JSON reader for the scripted clients' output (no serde in
//! glint), shared by tests/h3.rs and tests/h3_limits.rs.
#![allow(dead_code)]

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    List(Vec<Value>),
    Obj(Vec<(String, Value)>),
}

impl Value {
    pub fn get(&self, k: &str) -> &Value {
        match self {
            Value::Obj(m) => m
                .iter()
                .find(|(n, _)| n == k)
                .map_or(&Value::Null, |(_, v)| v),
            _ => &Value::Null,
        }
    }
    pub fn at(&self, i: usize) -> &Value {
        match self {
            Value::List(l) => l.get(i).unwrap_or(&Value::Null),
            _ => &Value::Null,
        }
    }
    pub fn list(&self) -> &[Value] {
        match self {
            Value::List(l) => l,
            _ => &[],
        }
    }
    pub fn num(&self) -> Option<u64> {
        match self {
            Value::Num(n) => Some(*n as u64),
            _ => None,
        }
    }
    pub fn str(&self) -> &str {
        match self {
            Value::Str(s) => s,
            _ => "",
        }
    }
    /// A header of an answer (`headers`: [[name, value]...]).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.get("headers")
            .list()
            .iter()
            .find(|h| h.at(0).str() == name)
            .map(|h| h.at(1).str())
    }
}

pub fn parse(s: &str) -> Value {
    let b = s.trim().as_bytes();
    let mut i = 0;
    let v = value(b, &mut i);
    assert!(i == b.len(), "trailing JSON at {i}: {s}");
    v
}

fn ws(b: &[u8], i: &mut usize) {
    while *i < b.len() && b[*i].is_ascii_whitespace() {
        *i += 1;
    }
}

fn value(b: &[u8], i: &mut usize) -> Value {
    ws(b, i);
    let v = match b[*i] {
        b'n' => {
            *i += 4;
            Value::Null
        }
        b't' => {
            *i += 4;
            Value::Bool(true)
        }
        b'f' => {
            *i += 5;
            Value::Bool(false)
        }
        b'"' => Value::Str(string(b, i)),
        b'[' => {
            *i += 1;
            let mut l = Vec::new();
            loop {
                ws(b, i);
                if b[*i] == b']' {
                    *i += 1;
                    break;
                }
                l.push(value(b, i));
                ws(b, i);
                if b[*i] == b',' {
                    *i += 1;
                }
            }
            Value::List(l)
        }
        b'{' => {
            *i += 1;
            let mut m = Vec::new();
            loop {
                ws(b, i);
                if b[*i] == b'}' {
                    *i += 1;
                    break;
                }
                let k = string(b, i);
                ws(b, i);
                *i += 1; // ':'
                m.push((k, value(b, i)));
                ws(b, i);
                if b[*i] == b',' {
                    *i += 1;
                }
            }
            Value::Obj(m)
        }
        _ => {
            let start = *i;
            while *i < b.len() && (b[*i] == b'-' || b[*i] == b'.' || b[*i].is_ascii_alphanumeric())
            {
                *i += 1;
            }
            let t = std::str::from_utf8(&b[start..*i]).unwrap_or("0");
            Value::Num(t.parse().unwrap_or(f64::NAN))
        }
    };
    ws(b, i);
    v
}

fn string(b: &[u8], i: &mut usize) -> String {
    *i += 1;
    let mut out = String::new();
    while b[*i] != b'"' {
        if b[*i] == b'\\' {
            *i += 1;
            match b[*i] {
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => {
                    let h = std::str::from_utf8(&b[*i + 1..*i + 5]).unwrap_or("0");
                    let c = u32::from_str_radix(h, 16).unwrap_or(0xfffd);
                    out.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                    *i += 4;
                }
                c => out.push(c as char),
            }
            *i += 1;
        } else {
            let start = *i;
            while b[*i] != b'"' && b[*i] != b'\\' {
                *i += 1;
            }
            out.push_str(std::str::from_utf8(&b[start..*i]).unwrap_or(""));
        }
    }
    *i += 1;
    out
}

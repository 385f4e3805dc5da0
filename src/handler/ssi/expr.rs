//! The expressions of `#if` and `#elif`, evaluated as lighttpd 1.4.69
//! evaluates them: words and `'quoted strings'` next to each other join
//! with one space, `$NAME` and `${NAME}` are variables (empty when unset),
//! `=`, `!=`, `<`, `<=`, `>`, `>=` compare strings (a comparison or a
//! parenthesis yields a truth value, and a truth value compares as 0 or
//! 1), `!`, `&&`, `||` (left to right, no precedence, both sides always
//! evaluated) and parentheses, at most 16 deep. A string is true when it
//! is not empty. A malformed expression is false.
//!
//! Where lighttpd loops for ever (a character that is neither printable
//! ASCII nor a space or tab, such as a line break inside the quotes of
//! `expr="..."`), glint calls the expression malformed.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    And,
    Or,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Not,
    LParen,
    RParen,
    Value,
}

/// Malformed.
struct Bad;

type Step = Result<Tok, Bad>;

/// The nesting limit of parentheses and of `!`.
const MAX_NESTING: i32 = 16;

#[derive(Default)]
struct Val {
    s: Vec<u8>,
    truth: Option<bool>,
}

impl Val {
    fn is_true(&self) -> bool {
        self.truth.unwrap_or(!self.s.is_empty())
    }

    fn reset(&mut self) {
        self.s.clear();
        self.truth = None;
    }

    fn append(&mut self, w: &[u8]) {
        if self.s.is_empty() {
            self.s.extend_from_slice(w);
        } else if !w.is_empty() {
            self.s.push(b' ');
            self.s.extend_from_slice(w);
        }
    }
}

struct Lexer<'a> {
    input: &'a [u8],
    at: usize,
    in_brace: i32,
    depth: i32,
    lookup: &'a dyn Fn(&[u8]) -> Option<Vec<u8>>,
}

impl Lexer<'_> {
    fn byte(&self, i: usize) -> u8 {
        self.input.get(i).copied().unwrap_or(0)
    }

    fn token(&mut self, v: &mut Val) -> Step {
        while matches!(self.byte(self.at), b' ' | b'\t') {
            self.at += 1;
        }
        if self.at >= self.input.len() {
            return Ok(Tok::End);
        }
        let c = self.byte(self.at);
        let next = self.byte(self.at + 1);
        let (tok, len) = match c {
            b'=' => (Tok::Eq, 1),
            b'>' if next == b'=' => (Tok::Ge, 2),
            b'>' => (Tok::Gt, 1),
            b'<' if next == b'=' => (Tok::Le, 2),
            b'<' => (Tok::Lt, 1),
            b'!' if next == b'=' => (Tok::Ne, 2),
            b'!' => (Tok::Not, 1),
            b'&' if next == b'&' => (Tok::And, 2),
            b'|' if next == b'|' => (Tok::Or, 2),
            b'&' | b'|' => return Err(Bad),
            b'(' => {
                self.in_brace += 1;
                (Tok::LParen, 1)
            }
            b')' => {
                self.in_brace -= 1;
                (Tok::RParen, 1)
            }
            b'\'' => return self.quoted(v),
            b'$' => return self.variable(v),
            _ => return self.word(v),
        };
        self.at += len;
        Ok(tok)
    }

    fn quoted(&mut self, v: &mut Val) -> Step {
        let rest = &self.input[self.at + 1..];
        let end = rest.iter().position(|&b| b == b'\'').ok_or(Bad)?;
        v.append(&rest[..end]);
        self.at += end + 2;
        Ok(Tok::Value)
    }

    fn variable(&mut self, v: &mut Val) -> Step {
        let rest = &self.input[self.at + 1..];
        let (name, used) = if rest.first() == Some(&b'{') {
            // `${` without its `}` is malformed.
            let end = rest.iter().position(|&b| b == b'}').ok_or(Bad)?;
            (&rest[1..end], end + 1)
        } else {
            let n = rest
                .iter()
                .enumerate()
                .take_while(|&(i, &b)| {
                    b.is_ascii_alphabetic() || b == b'_' || (i > 0 && b.is_ascii_digit())
                })
                .count();
            (&rest[..n], n)
        };
        if let Some(val) = (self.lookup)(name) {
            v.append(&val);
        }
        self.at += 1 + used;
        Ok(Tok::Value)
    }

    fn word(&mut self, v: &mut Val) -> Step {
        let n = self.input[self.at..]
            .iter()
            .take_while(|&&b| b.is_ascii_graphic() && !b"()'=!<>&|".contains(&b))
            .count();
        if n == 0 {
            return Err(Bad);
        }
        v.append(&self.input[self.at..self.at + n]);
        self.at += n;
        Ok(Tok::Value)
    }

    fn step(&mut self, v: &mut Val) -> Step {
        v.reset();
        let level = self.in_brace;
        match self.token(&mut *v)? {
            Tok::Value => loop {
                match self.token(&mut *v)? {
                    Tok::Value => {}
                    t => return Ok(t),
                }
            },
            Tok::LParen => {
                if self.in_brace > MAX_NESTING {
                    return Err(Bad);
                }
                let next = self.expr(v)?;
                if next != Tok::RParen || level != self.in_brace {
                    return Err(Bad);
                }
                let inner = v.is_true();
                let next = self.step(v)?;
                v.truth = Some(inner);
                match next {
                    Tok::And | Tok::Or | Tok::RParen | Tok::End => Ok(next),
                    _ => Err(Bad),
                }
            }
            Tok::RParen if self.in_brace >= 0 => Ok(Tok::RParen),
            Tok::RParen => Err(Bad),
            Tok::Not => {
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return Err(Bad);
                }
                let next = self.step(v)?;
                self.depth -= 1;
                v.truth = Some(!v.is_true());
                Ok(next)
            }
            t => Ok(t),
        }
    }

    fn compare(&mut self, v1: &mut Val, op: Tok) -> Step {
        let mut v2 = Val::default();
        let next = self.step(&mut v2)?;
        let ord = if v1.truth.is_none() && v2.truth.is_none() {
            v1.s.cmp(&v2.s)
        } else {
            v1.is_true().cmp(&v2.is_true())
        };
        v1.truth = Some(match op {
            Tok::Eq => ord.is_eq(),
            Tok::Ne => ord.is_ne(),
            Tok::Ge => ord.is_ge(),
            Tok::Gt => ord.is_gt(),
            Tok::Le => ord.is_le(),
            _ => ord.is_lt(),
        });
        Ok(next)
    }

    fn expr(&mut self, v1: &mut Val) -> Step {
        let mut next = self.step(v1)?;
        match next {
            Tok::And | Tok::Or => {}
            op if is_cmp(op) => {
                next = self.compare(v1, op)?;
                match next {
                    Tok::RParen | Tok::End => return Ok(next),
                    Tok::And | Tok::Or => {}
                    _ => return Err(Bad),
                }
            }
            _ => return Ok(next),
        }
        let mut v2 = Val::default();
        while matches!(next, Tok::And | Tok::Or) {
            let cond = next;
            next = self.step(&mut v2)?;
            if is_cmp(next) {
                next = self.compare(&mut v2, next)?;
            } else if !matches!(next, Tok::And | Tok::Or | Tok::End | Tok::RParen) {
                break;
            }
            let (a, b) = (v1.is_true(), v2.is_true());
            v1.truth = Some(if cond == Tok::Or { a || b } else { a && b });
        }
        Ok(next)
    }
}

fn is_cmp(t: Tok) -> bool {
    matches!(t, Tok::Eq | Tok::Ne | Tok::Gt | Tok::Ge | Tok::Lt | Tok::Le)
}

/// Evaluates `expr`; `lookup` gives a variable's value. `None`: malformed.
pub fn eval(expr: &[u8], lookup: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> Option<bool> {
    let mut lx = Lexer {
        input: expr,
        at: 0,
        in_brace: 0,
        depth: 0,
        lookup,
    };
    let mut v = Val::default();
    match lx.expr(&mut v) {
        Ok(Tok::End) if lx.in_brace == 0 && lx.depth == 0 => Some(v.is_true()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(e: &str) -> Option<bool> {
        let vars = |n: &[u8]| match n {
            b"A" => Some(b"abc".to_vec()),
            b"EMPTY" => Some(Vec::new()),
            _ => None,
        };
        eval(e.as_bytes(), &vars)
    }

    #[test]
    fn expressions_table() {
        let cases: &[(&str, Option<bool>, &str)] = &[
            ("", Some(false), "empty is false"),
            ("x", Some(true), "a word"),
            ("$A = abc", Some(true), "variable equals"),
            ("${A} = 'abc'", Some(true), "braced variable and quotes"),
            ("$A != abc", Some(false), "not equal"),
            ("$NONE", Some(false), "unset is empty"),
            ("$EMPTY = ''", Some(true), "empty equals empty quotes"),
            ("a b = 'a b'", Some(true), "words join with one space"),
            ("b > a", Some(true), "string order"),
            ("abc < abd", Some(true), "string order, less"),
            ("a = a && b = c", Some(false), "and"),
            ("a = a || b = c", Some(true), "or"),
            ("!(a = b)", Some(true), "not of a parenthesis"),
            ("(a = b) || (c = c)", Some(true), "parentheses"),
            ("((a)", None, "unbalanced"),
            ("a & b", None, "single ampersand"),
            ("'abc", None, "unclosed quote"),
            ("a\nb", None, "a line break (lighttpd loops)"),
            ("(((((((((((((((((a)))))))))))))))))", None, "too deep"),
            ("a = b = c", None, "chained comparison"),
        ];
        for (e, want, why) in cases {
            assert_eq!(ev(e), *want, "{why}: {e:?}");
        }
    }
}

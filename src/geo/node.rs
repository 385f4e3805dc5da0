//! A MaxMind DB record as a tree borrowed from the mapped file (strings
//! and bytes are not copied), and the walk of a `maxminddb.env` path in it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A decoded value.
#[derive(Debug, PartialEq)]
pub(super) enum Node<'a> {
    Map(Vec<(Cow<'a, str>, Node<'a>)>),
    Array(Vec<Node<'a>>),
    Leaf(Leaf<'a>),
}

/// A value that is neither a map nor an array.
#[derive(Debug, PartialEq)]
pub(super) enum Leaf<'a> {
    Str(Cow<'a, str>),
    Bytes(Cow<'a, [u8]>),
    Bool(bool),
    Int(i64),
    UInt(u64),
    U128(u128),
    /// A double, or a float widened to one (as C's `printf` does).
    Float(f64),
}

impl<'a> Node<'a> {
    /// The value at `path`, if the path leads to one: a map is entered by
    /// key, an array by index; a path that ends on a map or an array, or
    /// meets a value before its end, finds nothing.
    pub(super) fn at(&self, path: &[String]) -> Option<&Leaf<'a>> {
        let mut here = self;
        for step in path {
            here = match here {
                Node::Map(entries) => entries.iter().find(|(k, _)| k == step).map(|(_, v)| v)?,
                Node::Array(items) => items.get(index(step, items.len())?)?,
                Node::Leaf(_) => return None,
            };
        }
        match here {
            Node::Leaf(l) => Some(l),
            _ => None,
        }
    }
}

/// An array index as libmaxminddb reads one with `strtol`: optional
/// leading white space and sign, decimal digits and nothing after them
/// (an empty step is index 0, as `strtol` leaves it); a negative index
/// counts from the end.
fn index(step: &str, len: usize) -> Option<usize> {
    if step.is_empty() {
        return (len > 0).then_some(0);
    }
    let t = step.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: usize = digits.parse().ok()?;
    if neg {
        len.checked_sub(n)
    } else {
        (n < len).then_some(n)
    }
}

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a MaxMind DB value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Node::Leaf(Leaf::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Node::Leaf(Leaf::Int(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Node::Leaf(Leaf::UInt(v)))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
        Ok(Node::Leaf(Leaf::U128(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Node::Leaf(Leaf::Float(v)))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Node::Leaf(Leaf::Str(Cow::Borrowed(v))))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Node::Leaf(Leaf::Str(Cow::Owned(v.to_string()))))
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
        Ok(Node::Leaf(Leaf::Bytes(Cow::Borrowed(v))))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
        Ok(Node::Leaf(Leaf::Bytes(Cow::Owned(v.to_vec()))))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // (The decoder bounds how much a record may expand to.)
        let mut items = Vec::new();
        while let Some(v) = seq.next_element::<Node<'de>>()? {
            items.push(v);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some((Key(k), v)) = map.next_entry::<Key<'de>, Node<'de>>()? {
            entries.push((k, v));
        }
        Ok(Node::Map(entries))
    }
}

/// A map's key, borrowed from the file when the decoder can.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_indexes_as_strtol_reads_them() {
        let cases: &[(&str, usize, Option<usize>, &str)] = &[
            ("0", 2, Some(0), "first"),
            ("1", 2, Some(1), "second"),
            ("2", 2, None, "past the end"),
            ("-1", 2, Some(1), "last"),
            ("-2", 2, Some(0), "from the end"),
            ("-3", 2, None, "before the start"),
            ("+1", 2, Some(1), "a plus sign"),
            (" 1", 2, Some(1), "leading space"),
            ("1 ", 2, None, "trailing space"),
            ("", 2, Some(0), "empty is 0"),
            ("", 0, None, "empty array"),
            ("x", 2, None, "not a number"),
            ("-", 2, None, "a sign alone"),
            ("99999999999999999999999", 2, None, "too large"),
        ];
        for (step, len, want, why) in cases {
            assert_eq!(index(step, *len), *want, "{why}: {step:?}");
        }
    }

    #[test]
    fn paths_walk_maps_and_arrays() {
        let leaf = |s: &'static str| Node::Leaf(Leaf::Str(Cow::Borrowed(s)));
        let rec = Node::Map(vec![
            (
                Cow::Borrowed("country"),
                Node::Map(vec![(Cow::Borrowed("iso_code"), leaf("NZ"))]),
            ),
            (
                Cow::Borrowed("subdivisions"),
                Node::Array(vec![leaf("A"), leaf("B")]),
            ),
        ]);
        let at = |p: &str| {
            let path: Vec<String> = p.split('/').map(str::to_string).collect();
            rec.at(&path).map(|l| match l {
                Leaf::Str(s) => s.to_string(),
                other => format!("{other:?}"),
            })
        };
        assert_eq!(at("country/iso_code").as_deref(), Some("NZ"));
        assert_eq!(at("country"), None, "a map is no value");
        assert_eq!(at("subdivisions"), None, "an array is no value");
        assert_eq!(at("subdivisions/-1").as_deref(), Some("B"));
        assert_eq!(at("country/iso_code/x"), None, "past a value");
        assert_eq!(at("country/ISO_CODE"), None, "keys are exact");
        assert_eq!(at("nothing/here"), None);
    }
}

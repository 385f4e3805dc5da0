//! Request bodies of PROPFIND, PROPPATCH and LOCK: parsed with quick-xml
//! into a small tree with every element's namespace resolved.
//!
//! Bounded: at most [`MAX_BODY`] bytes, [`MAX_DEPTH`] levels and
//! [`MAX_NODES`] nodes. No DTD is processed: a body with a `<!DOCTYPE`
//! is refused (400), so no entity is ever defined, let alone expanded
//! (RFC 4918 20.6; a "billion laughs" body costs its own bytes and no
//! more). Character references and the five predefined entities are kept
//! as written, as part of a property's value.

use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

/// Largest XML request body read (PROPFIND, PROPPATCH, LOCK): WebDAV
/// clients send a few KiB (litmus's largest, propmanyns, is 2 KiB);
/// 1 MiB leaves room for large dead properties while bounding the memory
/// one request holds.
pub const MAX_BODY: usize = 1024 * 1024;
/// Deepest nesting: a propertyupdate's value sits at depth 5.
const MAX_DEPTH: usize = 64;
/// Most elements and text pieces in one body.
const MAX_NODES: usize = 20_000;

/// One element: its namespace (empty when none), local name and children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elem {
    pub ns: String,
    pub name: String,
    /// The element's prefix was bound to the empty namespace
    /// (`xmlns:p=""`), which XML 1.0 namespaces forbid.
    pub bad_prefix: bool,
    pub children: Vec<Node>,
}

/// A child of an element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Elem(Elem),
    /// Text as written (escaped: references kept as they were).
    Text(String),
}

/// Why a body is not a document glint reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlError(pub String);

impl Elem {
    /// The child elements.
    pub fn elems(&self) -> impl Iterator<Item = &Elem> {
        self.children.iter().filter_map(|n| match n {
            Node::Elem(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// The first child element named `name` (any namespace, as lighttpd
    /// compares element names).
    pub fn child(&self, name: &str) -> Option<&Elem> {
        self.elems().find(|e| e.name == name)
    }

    /// The element's content as XML text: text as written, elements
    /// written again with their namespace declared on each
    /// (`<name xmlns="ns">`), so the value stands alone wherever it is
    /// put later (a property's value in a PROPFIND answer).
    pub fn inner_xml(&self) -> String {
        let mut out = String::new();
        for n in &self.children {
            write_node(n, &mut out);
        }
        out
    }
}

fn write_node(n: &Node, out: &mut String) {
    match n {
        Node::Text(t) => out.push_str(t),
        Node::Elem(e) => {
            out.push('<');
            out.push_str(&e.name);
            out.push_str(" xmlns=\"");
            push_attr_escaped(&e.ns, out);
            out.push('"');
            if e.children.is_empty() {
                out.push_str("/>");
                return;
            }
            out.push('>');
            for c in &e.children {
                write_node(c, out);
            }
            out.push_str("</");
            out.push_str(&e.name);
            out.push('>');
        }
    }
}

fn push_attr_escaped(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("&quot;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            _ => out.push(c),
        }
    }
}

/// Parses a whole body; its root element.
pub fn parse(body: &[u8]) -> Result<Elem, XmlError> {
    if body.len() > MAX_BODY {
        return Err(XmlError(format!("body over {MAX_BODY} bytes")));
    }
    let text = std::str::from_utf8(body).map_err(|_| XmlError("not UTF-8".into()))?;
    let mut reader = NsReader::from_str(text);
    let mut stack: Vec<Elem> = Vec::new();
    let mut root: Option<Elem> = None;
    let mut nodes = 0usize;
    loop {
        let (res, ev) = reader
            .read_resolved_event()
            .map_err(|e| XmlError(e.to_string()))?;
        nodes += 1;
        if nodes > MAX_NODES {
            return Err(XmlError("too many nodes".into()));
        }
        let ns = match res {
            ResolveResult::Bound(ns) => Some(ns.0.to_string()),
            ResolveResult::Unbound => Some(String::new()),
            ResolveResult::Unknown(p) => {
                return Err(XmlError(format!("undeclared prefix {p:?}")));
            }
        };
        match ev {
            Event::Start(s) => {
                if root.is_some() || stack.len() >= MAX_DEPTH {
                    return Err(XmlError("content after the root, or too deep".into()));
                }
                stack.push(elem_of(&s, ns.unwrap_or_default()));
            }
            Event::Empty(s) => {
                if root.is_some() {
                    return Err(XmlError("content after the root".into()));
                }
                let e = elem_of(&s, ns.unwrap_or_default());
                close(&mut stack, &mut root, e);
            }
            Event::End(_) => {
                let Some(e) = stack.pop() else {
                    return Err(XmlError("unmatched end tag".into()));
                };
                close(&mut stack, &mut root, e);
            }
            Event::Text(t) => push_text(&mut stack, t.into_inner().into_owned(), true)?,
            Event::CData(c) => {
                let mut esc = String::new();
                escape_text(&c.into_inner(), &mut esc);
                push_text(&mut stack, esc, false)?;
            }
            Event::GeneralRef(r) => {
                let name = r.into_inner();
                if !is_predefined_or_char(&name) {
                    return Err(XmlError(format!("undefined entity &{name};")));
                }
                push_text(&mut stack, format!("&{name};"), false)?;
            }
            Event::DocType(_) => {
                return Err(XmlError("a DOCTYPE is not accepted".into()));
            }
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err(XmlError("unclosed element".into()));
    }
    root.ok_or_else(|| XmlError("no root element".into()))
}

fn elem_of(s: &quick_xml::events::BytesStart<'_>, ns: String) -> Elem {
    let qname = s.name();
    let local = s.local_name().as_ref().to_string();
    let bad_prefix = qname.prefix().is_some() && ns.is_empty();
    Elem {
        ns,
        name: local,
        bad_prefix,
        children: Vec::new(),
    }
}

/// Text (as written) into the open element; outside the root only
/// whitespace is allowed (`blank_ok`).
fn push_text(stack: &mut [Elem], text: String, blank_ok: bool) -> Result<(), XmlError> {
    match stack.last_mut() {
        Some(top) => {
            top.children.push(Node::Text(text));
            Ok(())
        }
        None if blank_ok && text.trim().is_empty() => Ok(()),
        None => Err(XmlError("content outside the root".into())),
    }
}

/// An element is complete: into its parent, or it is the root.
fn close(stack: &mut [Elem], root: &mut Option<Elem>, e: Elem) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Elem(e)),
        None => *root = Some(e),
    }
}

fn is_predefined_or_char(name: &str) -> bool {
    matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
        || quick_xml::events::BytesRef::new(name)
            .resolve_char_ref()
            .is_ok_and(|c| c.is_some())
}

/// Escapes text for XML element content.
pub fn escape_text(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_resolved() {
        let r = parse(
            br#"<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><x:a xmlns:x="urn:x"/><b xmlns=""/></D:prop></D:propfind>"#,
        )
        .unwrap();
        assert_eq!((r.ns.as_str(), r.name.as_str()), ("DAV:", "propfind"));
        let prop = r.child("prop").unwrap();
        let names: Vec<_> = prop
            .elems()
            .map(|e| (e.ns.as_str(), e.name.as_str()))
            .collect();
        assert_eq!(names, [("urn:x", "a"), ("", "b")]);
    }

    #[test]
    fn a_value_keeps_its_xml_with_namespaces_declared() {
        let r = parse(
            br#"<t:v xmlns:t="urn:t">a &amp; &#65536;<foo xmlns="http://bar">x</foo><t:e/></t:v>"#,
        )
        .unwrap();
        assert_eq!(
            r.inner_xml(),
            r#"a &amp; &#65536;<foo xmlns="http://bar">x</foo><e xmlns="urn:t"/>"#
        );
    }

    #[test]
    fn malformed_bodies_are_errors() {
        for bad in [
            &b"<foo>"[..],
            b"<a></b>",
            b"<a/><b/>",
            b"<x:a/>",
            b"<a>&ent;</a>",
            b"",
            b"\xff\xfe",
        ] {
            assert!(
                parse(bad).is_err(),
                "{:?} parsed",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_doctype_and_its_entities_are_refused_unexpanded() {
        let laughs = br#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<propfind xmlns="DAV:"><prop>&lol3;</prop></propfind>"#;
        assert!(parse(laughs).unwrap_err().0.contains("DOCTYPE"));
    }

    #[test]
    fn bounds_hold() {
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        assert!(parse(deep.as_bytes()).is_err());
        let big = vec![b' '; MAX_BODY + 1];
        assert!(parse(&big).is_err());
    }
}

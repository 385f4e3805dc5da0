//! glint's own [`Reply`] onto a request stream: the head as a HEADERS
//! frame (the fields HTTP/3 has no use for left out), the body's pieces
//! into the stream's queue. The session sends it; so does a gateway
//! exchange's sink for its error pages.

use crate::conn::encoded::Encoded;
use crate::conn::h2::fields::FieldBuf;
use crate::conn::h2::stream::Task;
use crate::msg::plan::{self, Shape};
use crate::msg::Reply;
use crate::proto::h3::{frame, qpack};

/// Fields with no meaning in HTTP/3 (RFC 9114 §4.2): never sent.
fn connection_specific(name: &[u8]) -> bool {
    matches!(
        name,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

/// Appends the HEADERS frame of a response head; returns its bytes.
pub fn encode_head(
    status: u16,
    fields: &FieldBuf,
    section: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> usize {
    section.clear();
    qpack::begin_section(section);
    qpack::encode_status(status, section);
    for (n, v) in fields.iter() {
        if !connection_specific(n) {
            qpack::encode_field(n, v, section);
        }
    }
    let before = out.len();
    frame::write_headers(section, out);
    out.len() - before
}

/// Sends one of glint's replies: its head, and its body's pieces into the
/// task's queue (compressed as they go out when the head says so).
/// Returns the bytes of the encoded head.
pub fn send_reply(
    fields: &mut FieldBuf,
    section: &mut Vec<u8>,
    task: &mut Task,
    out: &mut Vec<u8>,
    r: &Reply,
    date: &[u8],
) -> usize {
    let has_body = !r.head_only && !task.head_only && !r.pieces().is_empty();
    fields.start(&r.settings, date);
    fields.lines(&r.fields);
    let (length, _) = plan::stream_head(r.head_only || task.head_only, Shape::of_reply(r));
    fields.finish(&r.settings, length);
    let n = encode_head(r.status, fields, section, out);
    task.head_sent = true;
    task.complete = true;
    if has_body {
        match r.encode {
            Some(coding) => match Encoded::of_reply(r, coding, false) {
                Some(e) => {
                    task.encoded = Some(Box::new(e));
                    task.complete = false;
                }
                None => task.cut = true,
            },
            None => {
                task.push_reply(r);
            }
        }
    }
    n
}

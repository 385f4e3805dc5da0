//! Status codes: reason phrases and the small HTML page every error carries.

/// The reason phrase of a status code.
pub fn reason(status: u16) -> &'static str {
    // lighttpd 1.4.69's names (413 excepted: RFC 9110's), so that a
    // status a script answers with reads the same.
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        // lighttpd's spelling (WebDAV's multistatus answers).
        207 => "Multi-status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Entity",
        423 => "Locked",
        424 => "Failed Dependency",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "Unknown",
    }
}

/// Appends the HTML body of an error response. It names the status and
/// nothing else: no paths, no versions, no request data.
pub fn write_error_page(out: &mut Vec<u8>, status: u16) {
    // lighttpd's page, byte for byte: clients and tests written against
    // lighttpd see the same error bodies (all ASCII, so the declared
    // ISO-8859-1 and the UTF-8 of the Content-Type agree).
    let r = reason(status);
    out.extend_from_slice(
        concat!(
            "<?xml version=\"1.0\" encoding=\"iso-8859-1\"?>\n",
            "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Transitional//EN\"\n",
            "         \"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">\n",
            "<html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\" lang=\"en\">\n",
            " <head>\n",
            "  <title>",
        )
        .as_bytes(),
    );
    push_status(out, status, r);
    out.extend_from_slice(b"</title>\n </head>\n <body>\n  <h1>");
    push_status(out, status, r);
    out.extend_from_slice(b"</h1>\n </body>\n</html>\n");
}

fn push_status(out: &mut Vec<u8>, status: u16, reason: &str) {
    out.extend_from_slice(itoa_u64(status as u64).as_bytes());
    out.push(b' ');
    out.extend_from_slice(reason.as_bytes());
}

/// Decimal digits of `v` without allocating: a small stack buffer.
pub struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// Formats an unsigned integer in decimal on the stack (with `itoa`).
pub fn itoa_u64(v: u64) -> Digits {
    let mut b = itoa::Buffer::new();
    let s = b.format(v).as_bytes();
    let mut buf = [0u8; 20];
    let start = buf.len() - s.len();
    buf[start..].copy_from_slice(s);
    Digits { buf, start }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits() {
        for v in [0u64, 7, 10, 469, 25_600, u64::MAX] {
            assert_eq!(itoa_u64(v).as_bytes(), v.to_string().as_bytes());
        }
    }

    #[test]
    fn error_page_names_the_status() {
        let mut out = Vec::new();
        write_error_page(&mut out, 404);
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("<title>404 Not Found</title>"), "{s}");
    }
}

use crate::httpup::options::HeaderOptions;
use crate::httpup::remap::{Dir, Remap};

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn uri(h: &HeaderOptions, r: &mut Remap, s: &str, dir: Dir) -> String {
    let mut b = s.as_bytes().to_vec();
    r.remap_uri(h, &mut b, dir);
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn urlpath_table() {
    let h = HeaderOptions {
        map_urlpath: pairs(&[("/a/", "/x/"), ("/b/", "/x/"), ("/", "/root/")]),
        ..HeaderOptions::default()
    };
    // (input, direction, state's forwarded prefix, output)
    let cases: &[(&str, Dir, Option<usize>, &str)] = &[
        ("/a/page", Dir::Request, None, "/x/page"),
        ("/b/page", Dir::Request, None, "/x/page"),
        ("/c", Dir::Request, None, "/root/c"),
        // Back: the prefix the request used wins over the first in the list.
        ("/x/next", Dir::Response, Some(1), "/b/next"),
        ("/x/next", Dir::Response, None, "/a/next"),
        ("/root/y", Dir::Response, Some(1), "/y"),
        ("/other", Dir::Response, None, "/other"),
        ("relative", Dir::Response, None, "relative"),
        ("mailto:a@b", Dir::Response, None, "mailto:a@b"),
        ("http:///x/", Dir::Response, None, "http:///x/"),
        ("http://host", Dir::Response, None, "http://host/"),
        ("http://host/x/a", Dir::Response, None, "http://host/a/a"),
    ];
    for &(input, dir, fwd, want) in cases {
        let mut r = Remap {
            forwarded_urlpath: fwd,
            ..Remap::default()
        };
        assert_eq!(uri(&h, &mut r, input, dir), want, "{input} {dir:?}");
    }
    let mut r = Remap::default();
    uri(&h, &mut r, "/b/1", Dir::Request);
    uri(&h, &mut r, "/a/1", Dir::Request);
    assert_eq!(r.forwarded_urlpath, Some(1), "the first mapping is kept");
}

#[test]
fn host_table() {
    let h = HeaderOptions {
        map_host_request: pairs(&[
            ("keep.example", ""),
            ("-", "backend"),
            ("self.example", "-"),
        ]),
        map_host_response: pairs(&[("-", "-"), ("other.internal", "other.example")]),
        https_remap: true,
        ..HeaderOptions::default()
    };
    let cases: &[(&str, Dir, &str)] = &[
        ("http://CLIENT.example/p", Dir::Request, "http://backend/p"),
        (
            "http://keep.example/p",
            Dir::Request,
            "http://keep.example/p",
        ),
        ("http://unknown/p", Dir::Request, "http://unknown/p"),
        ("https://client.example/p", Dir::Request, "http://backend/p"),
        (
            "http://backend/q",
            Dir::Response,
            "https://client.example/q",
        ),
        (
            "http://other.internal/q",
            Dir::Response,
            "https://other.example/q",
        ),
        (
            "https://backend/q",
            Dir::Response,
            "https://client.example/q",
        ),
        ("http://unmapped/q", Dir::Response, "http://unmapped/q"),
    ];
    for &(input, dir, want) in cases {
        let mut r = Remap {
            client_host: Some("client.example".into()),
            forwarded_host: Some("backend".into()),
            https_remap: true,
            ..Remap::default()
        };
        assert_eq!(uri(&h, &mut r, input, dir), want, "{input} {dir:?}");
    }
    // "-" as a value: the client's own Host.
    let mut r = Remap {
        client_host: Some("client.example".into()),
        ..Remap::default()
    };
    let mut b = b"self.example".to_vec();
    assert_eq!(r.remap_host(&h, &mut b, 0, 12, Dir::Request), 14);
    assert_eq!(b, b"client.example");
}

#[test]
fn set_cookie_table() {
    let h = HeaderOptions {
        map_urlpath: pairs(&[("/app/", "/")]),
        map_host_response: pairs(&[("backend", "www.example.com")]),
        ..HeaderOptions::default()
    };
    let cases: &[(&str, &str)] = &[
        (
            "a=1; Path=/; Domain=backend",
            "a=1; Path=/app/; Domain=www.example.com",
        ),
        ("a=1; HttpOnly; path=/x", "a=1; HttpOnly; path=/app/x"),
        (
            "a=1;domain=.backend;path=\"/\"",
            "a=1;domain=.www.example.com;path=\"/app/\"",
        ),
        ("path=/x", "path=/x"),
        ("a=1; Path=relative", "a=1; Path=relative"),
        ("a=1; Domain=", "a=1; Domain="),
        ("a=1; Domain=other; Path", "a=1; Domain=other; Path"),
        ("a=1;", "a=1;"),
        ("a=1; =x; Path=/", "a=1; =x; Path=/app/"),
    ];
    for &(input, want) in cases {
        let mut r = Remap::default();
        let mut b = input.as_bytes().to_vec();
        r.remap_setcookie(&h, &mut b);
        assert_eq!(String::from_utf8_lossy(&b), want, "{input}");
    }
}

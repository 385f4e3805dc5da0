//! The first bytes of a forwarder's connection and its forwarding headers
//! never panic glint: the PROXY protocol parser asks for more only while
//! the header may still fit its bounds, answers with a length inside the
//! bytes and the same answer whatever follows, and a shorter prefix only
//! asks for more; mod_extforward's header walk on any value gives an
//! address or nothing.
#![no_main]

use std::net::IpAddr;

use glint::forwarded::client::{resolve, Request};
use glint::forwarded::options::ExtForward;
use glint::forwarded::proxy_protocol::{parse, V1_MAX, V2_MAX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse(data) {
        Ok(Some(h)) => {
            assert!(h.len <= data.len() && h.len <= V2_MAX);
            if h.version == 1 {
                assert!(h.len <= V1_MAX);
            }
            let mut more = data[..h.len].to_vec();
            more.extend_from_slice(b"GET / HTTP/1.1\r\n");
            assert_eq!(parse(&more).ok().flatten().as_ref(), Some(&h));
            assert_eq!(parse(&data[..h.len - 1]), Ok(None));
            let _ = h.env(true);
        }
        Ok(None) => assert!(data.len() < V2_MAX),
        Err(_) => {}
    }

    let forwarder = [
        ("10.0.0.1", "trust"),
        ("192.168.0.0/16", "trust"),
        ("_gw", "trust"),
    ];
    let peer: IpAddr = [10, 0, 0, 1].into();
    for header in ["X-Forwarded-For", "Forwarded"] {
        let Ok(cfg) = ExtForward::parse(
            &forwarder,
            Some(&[header]),
            &[("host", "1"), ("remote_user", "1")],
            false,
            false,
        ) else {
            return;
        };
        let headers: &[(&str, &[u8])] = &[(header, data), ("X-Forwarded-Proto", data)];
        if let Ok(r) = resolve(
            &cfg,
            &Request {
                peer: Some(peer),
                scheme: "http",
                headers,
            },
        ) {
            if let Some(h) = r.host {
                assert!(!h.is_empty() && h == h.to_ascii_lowercase());
                assert!(!h.contains(|c: char| c.is_ascii_whitespace() || c == '/'));
            }
        }
        let stranger: IpAddr = [203, 0, 113, 9].into();
        let r = resolve(
            &cfg,
            &Request {
                peer: Some(stranger),
                scheme: "http",
                headers,
            },
        );
        assert_eq!(
            r,
            Ok(Default::default()),
            "an untrusted peer changed something"
        );
    }
});

//! The fields glint reads from certificates made by the `openssl` command.

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::CertificateDer;

use super::super::x509;
use super::*;

fn der_of(pki: &Pki, name: &str) -> Vec<u8> {
    let pem = std::fs::read(pki.path(&format!("{name}.pem"))).expect("read pem");
    CertificateDer::from_pem_slice(&pem)
        .expect("one certificate")
        .to_vec()
}

#[test]
fn openssl_certificate_fields_read_back() {
    need("openssl");
    let pki = Pki::new("x509");
    pki.openssl(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.pem",
        "-days",
        "30",
        "-set_serial",
        "0x00C0FFEE",
        "-subj",
        "/C=DE/O=Glint Test/OU=Unit/CN=alice/emailAddress=alice@example.test/DC=example",
        "-addext",
        "subjectAltName=DNS:a.test,DNS:*.b.test,IP:127.0.0.1",
        "-addext",
        "tlsfeature=status_request",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
    ]);
    let leaf = der_of(&pki, "leaf");
    let ca = der_of(&pki, "ca");
    let c = x509::cert(&leaf).expect("leaf parses");
    let ca = x509::cert(&ca).expect("CA parses");
    // The INTEGER's content: a leading 0 keeps 0xC0FFEE positive.
    assert_eq!(c.serial, [0, 0xc0, 0xff, 0xee]);
    assert_eq!(c.issuer, ca.subject, "issued by the CA");
    assert_eq!(ca.issuer, ca.subject, "the CA is self-signed");
    assert_ne!(c.subject, c.issuer);
    assert_eq!(c.dns_names, ["a.test", "*.b.test"]);
    assert!(c.must_staple);
    // openssl names the issuer's key in every certificate it issues.
    assert!(c.aki.as_ref().is_some_and(|k| k.len() == 20), "{:?}", c.aki);
    assert!(!ca.must_staple);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    assert!(
        c.not_before <= now && now - c.not_before < 3600,
        "{}",
        c.not_before
    );
    assert_eq!(c.not_after - c.not_before, 30 * 86_400);
    let names: Vec<(String, String)> = c
        .subject_entries()
        .into_iter()
        .map(|a| (a.short_name.map_or(a.dotted, str::to_string), a.value))
        .collect();
    let want = [
        ("C", "DE"),
        ("O", "Glint Test"),
        ("OU", "Unit"),
        ("CN", "alice"),
        ("emailAddress", "alice@example.test"),
        ("DC", "example"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(names, want);
}

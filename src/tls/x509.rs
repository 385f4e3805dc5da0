//! The X.509 and OCSP fields glint needs beyond what rustls checks, read
//! with RustCrypto's `x509-cert` and `der` (no nom, no hand-written DER):
//! validity dates (`-tt` warnings), subject/issuer names (lighttpd's
//! `SSL_CLIENT_S_DN_*`, chain building from `ssl.ca-file`), the serial, DNS
//! names (SNI fallback), OCSP Must-Staple and an OCSP response's nextUpdate
//! (when to drop a staple). Every function returns `None` on malformed
//! input; certificates were already parsed by webpki on load.

use der::asn1::{AnyRef, GeneralizedTime, ObjectIdentifier, OctetStringRef};
use der::{Decode, Encode, Enumerated, Sequence, Tag, Tagged};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{AuthorityKeyIdentifier, SubjectAltName};
use x509_cert::name::Name;
use x509_cert::Certificate;

/// The certificate fields glint reads.
pub(crate) struct Cert {
    pub serial: Vec<u8>,
    /// The issuer and subject Names as DER, as they are compared and sent.
    pub issuer: Vec<u8>,
    pub subject: Vec<u8>,
    /// Seconds since the epoch.
    pub not_before: i64,
    pub not_after: i64,
    pub dns_names: Vec<String>,
    pub must_staple: bool,
    /// The authorityKeyIdentifier's keyIdentifier (ACME renewal
    /// information names a certificate by it and the serial).
    pub aki: Option<Vec<u8>>,
    names: Name,
}

/// id-pe-tlsfeature (RFC 7633).
const OID_TLS_FEATURE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.1.24");
/// TLS feature 5: status_request, i.e. OCSP Must-Staple (RFC 7633).
const STATUS_REQUEST: u16 = 5;

pub(crate) fn cert(der: &[u8]) -> Option<Cert> {
    let c = Certificate::from_der(der).ok()?;
    let tbs = c.tbs_certificate();
    let mut dns_names = Vec::new();
    let mut must_staple = false;
    let mut aki = None;
    for ext in tbs.extensions().into_iter().flatten() {
        let value = ext.extn_value.as_bytes();
        if ext.extn_id == <SubjectAltName as der::oid::AssociatedOid>::OID {
            let san = SubjectAltName::from_der(value).ok()?;
            for n in san.0 {
                if let GeneralName::DnsName(d) = n {
                    dns_names.push(d.to_string());
                }
            }
        } else if ext.extn_id == <AuthorityKeyIdentifier as der::oid::AssociatedOid>::OID {
            let id = AuthorityKeyIdentifier::from_der(value).ok()?.key_identifier;
            aki = id.map(|k| k.as_bytes().to_vec());
        } else if ext.extn_id == OID_TLS_FEATURE {
            let features = Vec::<u16>::from_der(value).ok()?;
            must_staple |= features.contains(&STATUS_REQUEST);
        }
    }
    let validity = tbs.validity();
    Some(Cert {
        serial: tbs.serial_number().as_bytes().to_vec(),
        issuer: tbs.issuer().to_der().ok()?,
        subject: tbs.subject().to_der().ok()?,
        not_before: validity.not_before.to_unix_duration().as_secs() as i64,
        not_after: validity.not_after.to_unix_duration().as_secs() as i64,
        dns_names,
        must_staple,
        aki,
        names: tbs.subject().clone(),
    })
}

/// One attribute of a subject: its OpenSSL short name (or the dotted OID
/// when it has none) and its value as text.
pub(crate) struct Attribute {
    pub short_name: Option<&'static str>,
    pub dotted: String,
    pub value: String,
}

impl Cert {
    /// The attribute type/value pairs of the subject, in order.
    pub fn subject_entries(&self) -> Vec<Attribute> {
        self.names
            .iter()
            .map(|atv| Attribute {
                short_name: short_name(&atv.oid),
                dotted: atv.oid.to_string(),
                value: string_value(atv.value.tag(), atv.value.value()),
            })
            .collect()
    }
}

/// OpenSSL's short name of an attribute type (`OBJ_nid2sn`), for the ones
/// certificates carry.
fn short_name(oid: &ObjectIdentifier) -> Option<&'static str> {
    const X520: [(u32, &str); 18] = [
        (3, "CN"),
        (4, "SN"),
        (5, "serialNumber"),
        (6, "C"),
        (7, "L"),
        (8, "ST"),
        (9, "street"),
        (10, "O"),
        (11, "OU"),
        (12, "title"),
        (15, "businessCategory"),
        (17, "postalCode"),
        (41, "name"),
        (42, "GN"),
        (43, "initials"),
        (44, "generationQualifier"),
        (46, "dnQualifier"),
        (65, "pseudonym"),
    ];
    const EMAIL: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.1");
    const UID: ObjectIdentifier = ObjectIdentifier::new_unwrap("0.9.2342.19200300.100.1.1");
    const DC: ObjectIdentifier = ObjectIdentifier::new_unwrap("0.9.2342.19200300.100.1.25");
    const X520_BASE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4");
    match *oid {
        EMAIL => Some("emailAddress"),
        UID => Some("UID"),
        DC => Some("DC"),
        _ if oid.parent() == Some(X520_BASE) => {
            let last = oid.arcs().last()?;
            X520.iter().find(|(k, _)| *k == last).map(|(_, s)| *s)
        }
        _ => None,
    }
}

/// An attribute value as text: UTF8String, PrintableString, IA5String as
/// they are; T61String as Latin-1; BMPString (UTF-16) decoded, as OpenSSL
/// shows them. (UniversalString, tag 28, is unknown to `der` 0.8: a
/// certificate naming one does not parse, so its client reports FAILED.)
fn string_value(tag: Tag, v: &[u8]) -> String {
    match tag {
        Tag::TeletexString => v.iter().map(|b| *b as char).collect(),
        Tag::BmpString => char::decode_utf16(
            v.chunks(2)
                .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])),
        )
        .map(|c| c.unwrap_or('\u{fffd}'))
        .collect(),
        _ => String::from_utf8_lossy(v).into_owned(),
    }
}

/// OCSPResponse (RFC 6960 4.2.1), as far as glint reads it.
#[derive(Sequence)]
struct OcspResponse<'a> {
    status: OcspStatus,
    #[asn1(context_specific = "0", optional = "true")]
    bytes: Option<ResponseBytes<'a>>,
}

#[derive(Clone, Copy, Debug, Enumerated, PartialEq, Eq)]
#[repr(u32)]
enum OcspStatus {
    Successful = 0,
    MalformedRequest = 1,
    InternalError = 2,
    TryLater = 3,
    SigRequired = 5,
    Unauthorized = 6,
}

#[derive(Sequence)]
struct ResponseBytes<'a> {
    kind: ObjectIdentifier,
    response: &'a OctetStringRef,
}

#[derive(Sequence)]
struct BasicOcspResponse<'a> {
    data: ResponseData<'a>,
    algorithm: AnyRef<'a>,
    signature: AnyRef<'a>,
    #[asn1(context_specific = "0", optional = "true")]
    certs: Option<AnyRef<'a>>,
}

#[derive(Sequence)]
struct ResponseData<'a> {
    #[asn1(context_specific = "0", optional = "true")]
    version: Option<u8>,
    responder: AnyRef<'a>,
    produced_at: AnyRef<'a>,
    responses: Vec<SingleResponse<'a>>,
    #[asn1(context_specific = "1", optional = "true")]
    extensions: Option<AnyRef<'a>>,
}

#[derive(Sequence)]
struct SingleResponse<'a> {
    cert_id: AnyRef<'a>,
    status: AnyRef<'a>,
    this_update: AnyRef<'a>,
    #[asn1(context_specific = "0", optional = "true")]
    next_update: Option<AnyRef<'a>>,
    #[asn1(context_specific = "1", optional = "true")]
    extensions: Option<AnyRef<'a>>,
}

/// nextUpdate of the first SingleResponse of a successful OCSP response:
/// `Err` when the bytes are no successful OCSP response, `Ok(None)` when
/// the responder gave no nextUpdate.
pub(crate) fn ocsp_next_update(der: &[u8]) -> Result<Option<i64>, ()> {
    let resp = OcspResponse::from_der(der).map_err(|_| ())?;
    let bytes = match (resp.status, resp.bytes) {
        (OcspStatus::Successful, Some(b)) => b,
        _ => return Err(()),
    };
    let basic = BasicOcspResponse::from_der(bytes.response.as_bytes()).map_err(|_| ())?;
    let single = basic.data.responses.first().ok_or(())?;
    match single.next_update {
        Some(t) => generalized_time(t).map(Some).ok_or(()),
        None => Ok(None),
    }
}

/// A GeneralizedTime as seconds since the epoch. `der` reads only the
/// 15-byte `YYYYMMDDHHMMSSZ` form; responders may add fractional seconds
/// (RFC 5280 forbids them in certificates, RFC 6960 does not in OCSP),
/// which are dropped here, as OpenSSL's comparison at one-second grain does.
fn generalized_time(t: AnyRef<'_>) -> Option<i64> {
    let v = t.value();
    let whole = match v.iter().position(|&b| b == b'.') {
        Some(dot) if v.last() == Some(&b'Z') => {
            let mut s = v.get(..dot)?.to_vec();
            s.push(b'Z');
            AnyRef::new(Tag::GeneralizedTime, &s)
                .ok()?
                .decode_as::<GeneralizedTime>()
                .ok()?
        }
        _ => t.decode_as::<GeneralizedTime>().ok()?,
    };
    Some(whole.to_unix_duration().as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generalized_times_with_and_without_fractions() {
        let at = |s: &[u8]| {
            AnyRef::new(Tag::GeneralizedTime, s)
                .ok()
                .and_then(generalized_time)
        };
        assert_eq!(at(b"20000229120000Z"), Some(951_825_600));
        assert_eq!(at(b"20000229120000.123Z"), Some(951_825_600));
        assert_eq!(at(b"20000230120000Z"), None, "30 February");
        assert_eq!(at(b"2000130112000Z"), None);
        assert_eq!(at(b"20000229120000+0100"), None);
    }

    #[test]
    fn malformed_input_is_none() {
        assert!(cert(&[0x30, 0x03, 0x30, 0x01, 0x00]).is_none());
        assert!(cert(&[0x30, 0x80, 0, 0]).is_none(), "indefinite length");
        assert!(cert(&[0x30, 0x05, 1, 2]).is_none(), "truncated");
        assert_eq!(ocsp_next_update(b"garbage"), Err(()));
        // OCSPResponse { responseStatus tryLater }.
        assert_eq!(ocsp_next_update(&[0x30, 0x03, 0x0a, 0x01, 0x03]), Err(()));
    }

    #[test]
    fn names_and_strings() {
        let oid = |s: &str| ObjectIdentifier::new(s).ok();
        assert_eq!(oid("2.5.4.3").as_ref().and_then(short_name), Some("CN"));
        assert_eq!(oid("2.5.4.99").as_ref().and_then(short_name), None);
        assert_eq!(
            oid("0.9.2342.19200300.100.1.25")
                .as_ref()
                .and_then(short_name),
            Some("DC")
        );
        assert_eq!(string_value(Tag::BmpString, &[0, b'h', 0, b'i']), "hi");
        assert_eq!(string_value(Tag::TeletexString, &[0xe9]), "é");
    }
}

//! A test PKI for the TLS listeners: a CA and a server certificate.

use std::path::Path;
use std::process::Command;

/// Makes `ca.pem` and `server.pem` (an ECDSA P-256 certificate for
/// `localhost` signed by that CA, its key in the same file, as lighttpd's
/// ssl.pemfile takes them) in `dir`, with openssl.
pub fn make_cert(dir: &Path) {
    let script = r#"
set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3 \
  -subj /CN=glint-test-ca -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
  -keyout s.key -out s.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' > s.ext
openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3 \
  -extfile s.ext -out s.crt 2>/dev/null
cat s.crt s.key > server.pem
"#;
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .expect("sh");
    assert!(ok.success(), "openssl could not make the test certificate");
}

//! Fail closed: a lighttpd configuration never makes glint serve what
//! lighttpd protects. Each row is (configuration, request, what must not
//! happen), tested from the attacker's side: the request that must not get
//! through, the file that must not be served. A row glint cannot honour
//! must stop glint at start (`-t`, `-tt` and the start itself exit
//! non-zero naming the file and line); a row it honours must answer as
//! lighttpd does.
//!
//! `GLINT_BLACKBOX_SERVER=lighttpd cargo test --test fail_closed` runs the
//! same table against lighttpd (Debian's 1.4.69 with its modules), where
//! every row must pass its request check; rows naming a module lighttpd
//! does not have either are skipped there.

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a row's answer must (not) be.
type Check = fn(&Response) -> Result<(), String>;

struct Row {
    name: &'static str,
    /// Files in the document root: (path, content).
    files: &'static [(&'static str, &'static str)],
    /// Lines after the document root, bind and port; `{dir}` is a private
    /// directory, `{php}` the php-cgi binary, `{tlsport}` a second free port.
    conf: &'static str,
    /// Requests, each with the check its answer must pass.
    requests: &'static [(&'static str, Check)],
    /// glint refuses to start: the error names this line of the
    /// configuration file and says this.
    glint_refuses: Option<(u32, &'static str)>,
    /// lighttpd has the modules of this row too (the row runs against it).
    in_lighttpd: bool,
    /// The row needs php-cgi.
    php: bool,
}

/// A PHP script whose source must never be shown: the secret is in a comment.
const PHP_SCRIPT: &str =
    "<?php /* SOURCE-SECRET password=hunter2 */ echo 'ran:', 6 * 7, \"\\n\"; ?>";
/// A CGI script for `cgi.assign`: its source holds a secret too.
const PY_SCRIPT: &str =
    "# SOURCE-SECRET\nprint('Content-Type: text/plain')\nprint()\nprint('ran:' + str(6 * 7))\n";

fn ran_php(r: &Response) -> Result<(), String> {
    no_source(r)?;
    if r.status == 200 && find(&r.body, b"ran:42").is_some() {
        Ok(())
    } else {
        Err(format!("PHP did not run: {}", r.describe()))
    }
}

/// The script's source must not be in the answer, whatever its status.
fn no_source(r: &Response) -> Result<(), String> {
    if find(&r.body, b"SOURCE-SECRET").is_some() || find(&r.body, b"<?php").is_some() {
        Err(format!("the script's source was sent: {}", r.describe()))
    } else {
        Ok(())
    }
}

fn forbidden(r: &Response) -> Result<(), String> {
    no_source(r)?;
    if find(&r.body, b"ran:42").is_some() {
        return Err(format!("the script ran: {}", r.describe()));
    }
    if find(&r.body, b"PROTECTED-CONTENT").is_some() {
        return Err(format!("protected content was sent: {}", r.describe()));
    }
    if r.status == 403 {
        Ok(())
    } else {
        Err(format!("expected 403: {}", r.describe()))
    }
}

fn unauthorized(r: &Response) -> Result<(), String> {
    if find(&r.body, b"PROTECTED-CONTENT").is_some() || r.status != 401 {
        Err(format!(
            "expected 401 without the content: {}",
            r.describe()
        ))
    } else {
        Ok(())
    }
}

/// A password-protected page once the right password is given.
fn protected_served(r: &Response) -> Result<(), String> {
    if r.status == 200 && find(&r.body, b"PROTECTED-CONTENT").is_some() {
        Ok(())
    } else {
        Err(format!(
            "expected the page for the right password: {}",
            r.describe()
        ))
    }
}

/// 401 from a gateway route: the script neither ran nor was shown.
fn unauthorized_gateway(r: &Response) -> Result<(), String> {
    no_source(r)?;
    if find(&r.body, b"ran:42").is_some() {
        return Err(format!("the script ran: {}", r.describe()));
    }
    unauthorized(r)
}

/// Refused, by a status or by closing without an answer (status 0 here),
/// and nothing protected in it.
fn refused(r: &Response) -> Result<(), String> {
    if find(&r.body, b"PROTECTED-CONTENT").is_some() || (200..400).contains(&r.status) {
        Err(format!("expected a refusal: {}", r.describe()))
    } else {
        Ok(())
    }
}

/// Whatever the status, the file outside the mapped directory is not sent.
fn not_secret(r: &Response) -> Result<(), String> {
    if find(&r.body, b"PROTECTED-CONTENT").is_some() {
        Err(format!(
            "a file outside the mapped directory was sent: {}",
            r.describe()
        ))
    } else if r.status == 200 {
        Err(format!("expected no page: {}", r.describe()))
    } else {
        Ok(())
    }
}

fn alias_page(r: &Response) -> Result<(), String> {
    if r.status == 200 && find(&r.body, b"alias page").is_some() {
        Ok(())
    } else {
        Err(format!("expected the aliased file: {}", r.describe()))
    }
}

fn served_ok(r: &Response) -> Result<(), String> {
    if r.status == 200 && find(&r.body, b"public page").is_some() {
        Ok(())
    } else {
        Err(format!("expected the public page: {}", r.describe()))
    }
}

fn ran_cgi(r: &Response) -> Result<(), String> {
    no_source(r)?;
    if r.status == 200 && find(&r.body, b"ran:42").is_some() {
        Ok(())
    } else {
        Err(format!("the CGI script did not run: {}", r.describe()))
    }
}

fn listing_without_excluded(r: &Response) -> Result<(), String> {
    if r.status == 200
        && find(&r.body, b"shown.txt").is_some()
        && find(&r.body, b"PROTECTED").is_none()
    {
        Ok(())
    } else {
        Err(format!(
            "expected a listing without the excluded names: {}",
            r.describe()
        ))
    }
}

fn handler_page_with_403(r: &Response) -> Result<(), String> {
    if r.status == 403
        && find(&r.body, b"handler page").is_some()
        && find(&r.body, b"PROTECTED-CONTENT").is_none()
    {
        Ok(())
    } else {
        Err(format!(
            "expected the error handler's page with status 403: {}",
            r.describe()
        ))
    }
}

const ROWS: &[Row] = &[
    Row {
        name: "seed 004: index.php as the index file runs through FastCGI",
        files: &[("index.php", PHP_SCRIPT)],
        conf: r#"server.modules = ( "mod_fastcgi" )
index-file.names = ( "index.php" )
fastcgi.server = ( ".php" => (( "bin-path" => "{php}", "socket" => "{dir}/php.sock", "max-procs" => 1 )) )
"#,
        requests: &[("/", ran_php), ("/index.php", ran_php)],
        glint_refuses: None,
        in_lighttpd: true,
        php: true,
    },
    Row {
        name: "the 404 handler is a PHP script: it runs",
        files: &[("index.php", PHP_SCRIPT)],
        conf: r#"server.modules = ( "mod_fastcgi" )
server.error-handler-404 = "/index.php"
fastcgi.server = ( ".php" => (( "bin-path" => "{php}", "socket" => "{dir}/php.sock", "max-procs" => 1 )) )
"#,
        requests: &[("/no/such/page", ran_php)],
        glint_refuses: None,
        in_lighttpd: true,
        php: true,
    },
    Row {
        name: "a rewrite to a PHP script runs it",
        files: &[("index.php", PHP_SCRIPT)],
        conf: r#"server.modules = ( "mod_rewrite", "mod_fastcgi" )
url.rewrite-once = ( "^/pretty/(.*)$" => "/index.php?q=$1" )
fastcgi.server = ( ".php" => (( "bin-path" => "{php}", "socket" => "{dir}/php.sock", "max-procs" => 1 )) )
"#,
        requests: &[("/pretty/x", ran_php)],
        glint_refuses: None,
        in_lighttpd: true,
        php: true,
    },
    Row {
        name: "an index.php that url.access-deny names is neither run nor shown",
        files: &[("index.php", PHP_SCRIPT)],
        conf: r#"server.modules = ( "mod_access", "mod_fastcgi" )
index-file.names = ( "index.php" )
url.access-deny = ( ".php" )
fastcgi.server = ( ".php" => (( "host" => "127.0.0.1", "port" => 9 )) )
"#,
        requests: &[("/", forbidden), ("/index.php", forbidden)],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "static-file.exclude-extensions: a .php without a backend is never sent",
        files: &[("index.php", PHP_SCRIPT), ("sub/index.php", PHP_SCRIPT)],
        conf: r#"index-file.names = ( "index.php", "index.html" )
static-file.exclude-extensions = ( ".php", ".pl", ".fcgi" )
"#,
        requests: &[
            ("/", forbidden),
            ("/index.php", forbidden),
            ("/sub/", forbidden),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "url.access-deny = (\"\") denies everything",
        files: &[
            ("index.html", "PROTECTED-CONTENT"),
            ("a.txt", "PROTECTED-CONTENT"),
        ],
        conf: r#"server.modules = ( "mod_access" )
url.access-deny = ( "" )
"#,
        requests: &[
            ("/", forbidden),
            ("/index.html", forbidden),
            ("/a.txt", forbidden),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "url.access-allow serves only what it names",
        files: &[
            ("index.html", "public page"),
            ("data.txt", "PROTECTED-CONTENT"),
        ],
        conf: r#"server.modules = ( "mod_access" )
url.access-allow = ( ".html" )
"#,
        requests: &[("/index.html", served_ok), ("/data.txt", forbidden)],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "a deny in a url block guards FastCGI under it",
        files: &[("private/x.php", PHP_SCRIPT)],
        conf: r#"server.modules = ( "mod_access", "mod_fastcgi" )
fastcgi.server = ( ".php" => (( "host" => "127.0.0.1", "port" => 9 )) )
$HTTP["url"] =^ "/private/" { url.access-deny = ( "" ) }
"#,
        requests: &[("/private/x.php", forbidden)],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "a deny guards an SCGI prefix route",
        files: &[],
        conf: r#"server.modules = ( "mod_access", "mod_scgi" )
scgi.server = ( "/app" => (( "host" => "127.0.0.1", "port" => 9, "check-local" => "disable" )) )
$HTTP["url"] =^ "/app" { url.access-deny = ( "" ) }
"#,
        requests: &[("/app/x", forbidden)],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "a deny guards mod_status",
        files: &[],
        conf: r#"server.modules = ( "mod_access", "mod_status" )
status.status-url = "/server-status"
$HTTP["url"] =^ "/server-status" { url.access-deny = ( "" ) }
"#,
        requests: &[
            ("/server-status", forbidden),
            ("/server-status?auto", forbidden),
            ("/server-status?json", forbidden),
            ("/server-status?jsonp=f", forbidden),
            ("/server-status/", forbidden),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "a deny guards glint's metrics page",
        files: &[],
        conf: r#"server.modules = ( "mod_access", "mod_status" )
glint.metrics-url = "/metrics"
$HTTP["remoteip"] == "127.0.0.1" { $HTTP["url"] =^ "/metrics" { url.access-deny = ( "" ) } }
"#,
        requests: &[("/metrics", forbidden), ("/metrics?x", forbidden)],
        glint_refuses: None,
        in_lighttpd: false,
        php: false,
    },
    Row {
        name: "auth.require on glint's metrics page",
        files: &[],
        conf: r#"server.modules = ( "mod_auth", "mod_authn_file", "mod_status" )
glint.metrics-url = "/metrics"
auth.backend = "plain"
auth.backend.plain.userfile = "{dir}/users"
auth.require = ( "/metrics" => ( "method" => "basic", "realm" => "r", "require" => "valid-user" ) )
"#,
        requests: &[
            ("/metrics", unauthorized),
            (
                "/metrics\nAuthorization: Basic YWxpY2U6d3Jvbmc=",
                unauthorized,
            ),
        ],
        glint_refuses: None,
        in_lighttpd: false,
        php: false,
    },
    Row {
        name: "a deny guards directory listings",
        files: &[("list/PROTECTED-CONTENT.txt", "x")],
        conf: r#"server.modules = ( "mod_access", "mod_dirlisting" )
dir-listing.activate = "enable"
$HTTP["url"] =^ "/list/" { url.access-deny = ( "" ) }
"#,
        requests: &[("/list/", forbidden)],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "force-lowercase-filenames: a deny suffix matches in any case",
        files: &[("secret.inc", "PROTECTED-CONTENT")],
        conf: r#"server.modules = ( "mod_access" )
server.force-lowercase-filenames = "enable"
url.access-deny = ( ".inc" )
"#,
        requests: &[
            ("/SECRET.INC", forbidden),
            ("/Secret.Inc", forbidden),
            ("/secret.inc", forbidden),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "dir-listing.exclude hides what it names",
        files: &[
            ("list/shown.txt", "x"),
            ("list/PROTECTED.bak", "x"),
            ("list/PROTECTED~", "x"),
        ],
        conf: r#"server.modules = ( "mod_dirlisting" )
dir-listing.activate = "enable"
dir-listing.exclude = ( "\.bak$", "~$" )
"#,
        requests: &[("/list/", listing_without_excluded)],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "server.error-handler answers a denied file with its page, status kept",
        files: &[
            ("secret.inc", "PROTECTED-CONTENT"),
            ("oops.html", "handler page"),
        ],
        conf: r#"server.modules = ( "mod_access" )
url.access-deny = ( ".inc" )
server.error-handler = "/oops.html"
"#,
        requests: &[("/secret.inc", handler_page_with_403)],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "auth.require on a directory",
        files: &[("secret/index.html", "PROTECTED-CONTENT")],
        conf: r#"server.modules = ( "mod_auth", "mod_authn_file" )
auth.backend = "plain"
auth.backend.plain.userfile = "{dir}/users"
auth.require = ( "/secret/" => ( "method" => "basic", "realm" => "r", "require" => "valid-user" ) )
"#,
        requests: &[
            ("/secret/", unauthorized),
            ("/secret/index.html", unauthorized),
            // alice:wrong, a wrong password
            (
                "/secret/\nAuthorization: Basic YWxpY2U6d3Jvbmc=",
                unauthorized,
            ),
            // mallory:secret, an unknown user
            (
                "/secret/\nAuthorization: Basic bWFsbG9yeTpzZWNyZXQ=",
                unauthorized,
            ),
            // alice:secret (the file by name: lighttpd without
            // index-file.names has no index file for "/secret/")
            (
                "/secret/index.html\nAuthorization: Basic YWxpY2U6c2VjcmV0",
                protected_served,
            ),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        // (lighttpd runs its modules in the order listed: with mod_status
        // before mod_auth it serves the page unguarded; glint checks
        // auth.require before mod_status whatever the order.)
        name: "auth.require on mod_status, from an included-style += line",
        files: &[],
        conf: r#"server.modules = ( "mod_access" )
server.modules += ( "mod_auth", "mod_authn_file", "mod_status" )
status.status-url = "/server-status"
auth.backend = "plain"
auth.backend.plain.userfile = "{dir}/users"
auth.require = ( "/server-status" => ( "method" => "basic", "realm" => "r", "require" => "valid-user" ) )
"#,
        requests: &[
            ("/server-status", unauthorized),
            ("/server-status?auto", unauthorized),
            ("/server-status?json", unauthorized),
            (
                "/server-status\nAuthorization: Basic YWxpY2U6d3Jvbmc=",
                unauthorized,
            ),
            (
                "/server-status?auto\nAuthorization: Basic YWxpY2U6d3Jvbmc=",
                unauthorized,
            ),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "auth.require on a gateway route: the script runs only for the user",
        files: &[("app/index.php", PHP_SCRIPT)],
        conf: r#"server.modules = ( "mod_auth", "mod_authn_file", "mod_fastcgi" )
index-file.names = ( "index.php" )
auth.backend = "plain"
auth.backend.plain.userfile = "{dir}/users"
auth.require = ( "/app/" => ( "method" => "basic", "realm" => "r", "require" => "user=alice" ) )
fastcgi.server = ( ".php" => (( "bin-path" => "{php}", "socket" => "{dir}/php.sock", "max-procs" => 1 )) )
"#,
        requests: &[
            ("/app/", unauthorized_gateway),
            ("/app/index.php", unauthorized_gateway),
            (
                "/app/index.php\nAuthorization: Basic YWxpY2U6d3Jvbmc=",
                unauthorized_gateway,
            ),
            (
                "/app/index.php\nAuthorization: Basic YWxpY2U6c2VjcmV0",
                ran_php,
            ),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: true,
    },
    Row {
        name: "ssl.engine on a socket: never plain HTTP there",
        files: &[("index.html", "PROTECTED-CONTENT")],
        conf: r#"$SERVER["socket"] == "127.0.0.1:{tlsport}" {
  ssl.engine = "enable"
  ssl.pemfile = "{dir}/cert.pem"
}
"#,
        requests: &[],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "cgi.assign runs the script, never shows it",
        files: &[("x.py", PY_SCRIPT)],
        conf: r#"server.modules = ( "mod_cgi" )
cgi.assign = ( ".py" => "/usr/bin/python3" )
"#,
        requests: &[("/x.py", ran_cgi)],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "extforward: a deny written for the client's address",
        files: &[("index.html", "public page")],
        conf: r#"server.modules = ( "mod_access", "mod_extforward" )
extforward.forwarder = ( "127.0.0.1" => "trust" )
$HTTP["remoteip"] == "203.0.113.0/24" { url.access-deny = ( "" ) }
"#,
        requests: &[
            ("/index.html\nX-Forwarded-For: 203.0.113.9", forbidden),
            ("/index.html\nX-Forwarded-For: 198.51.100.7", served_ok),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "extforward: an untrusted peer's X-Forwarded-For changes nothing",
        files: &[("index.html", "PROTECTED-CONTENT")],
        conf: r#"server.modules = ( "mod_access", "mod_extforward" )
extforward.forwarder = ( "10.9.9.9" => "trust" )
$HTTP["remoteip"] == "127.0.0.1" { url.access-deny = ( "" ) }
"#,
        requests: &[
            ("/index.html", forbidden),
            ("/index.html\nX-Forwarded-For: 198.51.100.7", forbidden),
            (
                "/index.html\nX-Forwarded-For: 198.51.100.7, 10.9.9.9",
                forbidden,
            ),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "extforward: a PROXY header from an untrusted peer is no PROXY header",
        files: &[("index.html", "PROTECTED-CONTENT")],
        conf: r#"server.modules = ( "mod_access", "mod_extforward" )
extforward.forwarder = ( "10.9.9.9" => "trust" )
extforward.hap-PROXY = "enable"
$HTTP["remoteip"] == "127.0.0.1" { url.access-deny = ( "" ) }
"#,
        requests: &[
            (
                "PROXY TCP4 198.51.100.7 127.0.0.1 4000 80\n/index.html",
                refused,
            ),
            ("/index.html", forbidden),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "extforward: a trusted forwarder's PROXY header names the client",
        files: &[("index.html", "public page")],
        conf: r#"server.modules = ( "mod_access", "mod_extforward" )
extforward.forwarder = ( "127.0.0.1" => "trust" )
extforward.hap-PROXY = "enable"
$HTTP["remoteip"] == "203.0.113.0/24" { url.access-deny = ( "" ) }
"#,
        requests: &[
            (
                "PROXY TCP4 203.0.113.9 127.0.0.1 4000 80\n/index.html",
                forbidden,
            ),
            (
                "PROXY TCP4 198.51.100.7 127.0.0.1 4000 80\n/index.html",
                served_ok,
            ),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "alias.url exposes its target and nothing beside it",
        files: &[("index.html", "public page")],
        conf: r#"server.modules = ( "mod_alias" )
alias.url = ( "/files/" => "{dir}/aliased/", "/icons" => "{dir}/aliased/" )
"#,
        requests: &[
            ("/files/ok.txt", alias_page),
            ("/icons/ok.txt", alias_page),
            ("/files/../secret.txt", not_secret),
            ("/files/%2e%2e/secret.txt", not_secret),
            ("/files/..%2fsecret.txt", not_secret),
            ("/icons../secret.txt", not_secret),
            ("/icons/../secret.txt", not_secret),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "userdir serves public_html and nothing else of the home",
        files: &[("index.html", "public page")],
        conf: r#"server.modules = ( "mod_userdir" )
userdir.path = "public_html"
userdir.basepath = "{dir}/home/"
"#,
        requests: &[
            ("/~bob/index.html", alias_page),
            ("/~bob/../secret.txt", not_secret),
            ("/~bob/%2e%2e/secret.txt", not_secret),
            ("/~bob/..%2fsecret.txt", not_secret),
            ("/~bob/public_html/../secret.txt", not_secret),
            ("/~../bob/secret.txt", not_secret),
        ],
        glint_refuses: None,
        in_lighttpd: true,
        php: false,
    },
    Row {
        name: "a module lighttpd does not have either",
        files: &[("index.html", "PROTECTED-CONTENT")],
        conf: r#"server.modules = ( "mod_access", "mod_secdownload" )
"#,
        requests: &[],
        glint_refuses: Some((4, "module mod_secdownload is not provided by glint")),
        in_lighttpd: false,
        php: false,
    },
    Row {
        name: "a typo in a module name",
        files: &[("index.html", "PROTECTED-CONTENT")],
        conf: r#"server.modules = ( "mod_acces" )
url.access-deny = ( "" )
"#,
        requests: &[],
        glint_refuses: Some((4, "module mod_acces is not provided by glint")),
        in_lighttpd: false,
        php: false,
    },
];

fn php_cgi() -> Option<&'static str> {
    ["/usr/bin/php-cgi", "/usr/local/bin/php-cgi"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

/// The configuration file of a row for a server on `port`.
fn write_row_conf(
    row: &Row,
    d: &Docroot,
    dir: &TempDir,
    port: u16,
    tlsport: u16,
    lighttpd: bool,
) -> std::path::PathBuf {
    let mut text = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {port}\n",
        d.root.display()
    );
    if lighttpd {
        // (glint prints its listeners on stderr; lighttpd's log goes here.)
        text.push_str(&format!(
            "server.errorlog = \"{}\"\n",
            dir.join("error.log").display()
        ));
    }
    text.push_str(
        &row.conf
            .replace("{dir}", &dir.path().display().to_string())
            .replace("{php}", php_cgi().unwrap_or("/usr/bin/php-cgi"))
            .replace("{tlsport}", &tlsport.to_string()),
    );
    // Refused logins answered at once on both servers (the wait itself is
    // tests/auth_delay.rs's); after the row, so that its line numbers stay.
    text.push_str("server.feature-flags = ( \"auth.delay-invalid-creds\" => \"disable\" )\n");
    let path = dir.join("test.conf");
    std::fs::write(&path, text).expect("write the row's configuration");
    path
}

/// Files a row's configuration reads: a user file, a certificate, an
/// alias target and a home beside a file that must stay unreachable.
fn row_support_files(dir: &TempDir) {
    std::fs::write(dir.join("users"), "alice:secret\n").expect("users file");
    std::fs::create_dir_all(dir.join("aliased")).expect("alias dir");
    std::fs::write(dir.join("aliased/ok.txt"), "alias page\n").expect("alias file");
    std::fs::write(dir.join("secret.txt"), "PROTECTED-CONTENT\n").expect("secret");
    std::fs::create_dir_all(dir.join("home/bob/public_html")).expect("home");
    std::fs::write(dir.join("home/bob/public_html/index.html"), "alias page\n").expect("home page");
    std::fs::write(dir.join("home/bob/secret.txt"), "PROTECTED-CONTENT\n").expect("home secret");
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        // lighttpd's ssl.pemfile may hold the key after the certificate.
        let both = [
            std::fs::read(&cert).unwrap_or_default(),
            std::fs::read(&key).unwrap_or_default(),
        ]
        .concat();
        let _ = std::fs::write(&cert, both);
    }
}

/// Runs glint with `args` and the configuration, and waits for it to exit
/// (it must, within the time limit): its exit success and stderr.
fn glint_exits(args: &[&str], conf: &Path) -> (bool, String) {
    let mut child = Command::new(glint_bin())
        .args(args)
        .arg("-f")
        .arg(conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start glint");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                return (st.success(), err);
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return (
                    true,
                    "glint kept running with a configuration it must refuse".into(),
                );
            }
        }
    }
}

/// A running lighttpd for a row's configuration, stopped on drop.
struct Lighttpd(std::process::Child);

impl Drop for Lighttpd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn lighttpd_with_log(conf: &Path, port: u16, dir: &TempDir) -> Result<Lighttpd, String> {
    start_lighttpd(conf, port).map(Lighttpd).map_err(|e| {
        format!(
            "{e}: {}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        )
    })
}

/// The bytes of a row's request: `path` and header lines after it, one a
/// line; a first line starting with `PROXY ` goes before the request as
/// it is (the PROXY protocol's v1 header).
fn request_for(spec: &str) -> Vec<u8> {
    let (proxy, rest) = match spec.strip_prefix("PROXY ") {
        Some(_) => match spec.split_once('\n') {
            Some((p, r)) => (Some(p), r),
            None => (Some(spec), "/"),
        },
        None => (None, spec),
    };
    let mut lines = rest.split('\n');
    let path = lines.next().unwrap_or("/");
    let headers: Vec<&str> = lines.collect();
    let mut out = Vec::new();
    if let Some(p) = proxy {
        out.extend_from_slice(p.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(&get(path, &headers));
    out
}

/// The first line of a request spec, for messages.
fn shown(spec: &str) -> String {
    spec.replace('\n', " | ")
}

/// An answer, or (status 0) the connection closed without one.
fn answer(r: Result<Response, String>) -> Response {
    r.unwrap_or_else(|e| Response {
        version: String::new(),
        status: 0,
        reason: e,
        headers: Vec::new(),
        body: Vec::new(),
        head: String::new(),
        framing: "none",
    })
}

/// One row against glint: refused at start where it must be, else every
/// request checked. Failures are collected as text.
fn run_glint(row: &Row, fails: &mut Vec<String>) {
    let d = Docroot::new();
    for (p, c) in row.files {
        d.file(p, c.as_bytes());
    }
    let dir = TempDir::new("failclosed");
    row_support_files(&dir);
    let tlsport = free_port();
    let conf = write_row_conf(row, &d, &dir, 0, tlsport, false);
    if let Some((line, msg)) = row.glint_refuses {
        let at = format!("test.conf:{line}:");
        for args in [&["-t"][..], &["-tt"][..], &["-D"][..]] {
            let (ok, err) = glint_exits(args, &conf);
            if ok || !err.contains(&at) || !err.contains(msg) {
                fails.push(format!(
                    "{}: glint {args:?} must exit non-zero with \"{at}..: {msg}\"; exit ok={ok}, stderr: {err}",
                    row.name
                ));
            }
        }
        return;
    }
    let listeners = if row.conf.contains("$SERVER[\"socket\"]") {
        2
    } else {
        1
    };
    let s = Launch::new()
        .config_file(&conf)
        .listeners(listeners)
        .start();
    for (spec, check) in row.requests {
        let r = answer(exchange(&s, &request_for(spec)).map(|(r, _)| r));
        if let Err(e) = check(&r) {
            fails.push(format!("{}: GET {}: {e}", row.name, shown(spec)));
        }
    }
    if row.name.starts_with("ssl.engine") {
        plain_http_gets_nothing(row, tlsport, fails);
    }
}

/// One row against lighttpd: it must pass the request checks (and the rows
/// glint refuses must show what lighttpd protects).
fn run_lighttpd(row: &Row, fails: &mut Vec<String>) {
    if !row.in_lighttpd {
        return;
    }
    let d = Docroot::new();
    for (p, c) in row.files {
        d.file(p, c.as_bytes());
    }
    let dir = TempDir::new("failclosed-lt");
    row_support_files(&dir);
    let port = free_port();
    let tlsport = free_port();
    let conf = write_row_conf(row, &d, &dir, port, tlsport, true);
    let _l = match lighttpd_with_log(&conf, port, &dir) {
        Ok(l) => l,
        Err(e) => return fails.push(format!("{}: {e}", row.name)),
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    for (spec, check) in row.requests {
        let r = Conn::open(addr)
            .map_err(|e| e.to_string())
            .and_then(|mut c| {
                c.send(&request_for(spec)).map_err(|e| e.to_string())?;
                c.read_response(false)
            });
        if let Err(e) = check(&answer(r)) {
            fails.push(format!("{}: GET {}: {e}", row.name, shown(spec)));
        }
    }
    if row.name.starts_with("ssl.engine") {
        plain_http_gets_nothing(row, tlsport, fails);
    }
}

/// Plain HTTP on a TLS port gets no page (an error in clear, or nothing).
fn plain_http_gets_nothing(row: &Row, tlsport: u16, fails: &mut Vec<String>) {
    let tls = std::net::SocketAddr::from(([127, 0, 0, 1], tlsport));
    match Conn::open(tls) {
        Ok(mut c) => {
            let _ = c.send(&get("/index.html", &[]));
            if let Ok(r) = c.read_response(false) {
                if find(&r.body, b"PROTECTED-CONTENT").is_some() || r.status < 400 {
                    fails.push(format!(
                        "{}: plain HTTP on the TLS port: {}",
                        row.name,
                        r.describe()
                    ));
                }
            }
        }
        Err(e) => fails.push(format!("{}: the TLS port is not open: {e}", row.name)),
    }
}

#[test]
fn fail_closed_table() {
    let lighttpd = server_kind() == Kind::Lighttpd;
    let mut fails = Vec::new();
    for row in ROWS {
        if row.php && php_cgi().is_none() {
            panic!("{}: needs php-cgi (apt-get install php-cgi)", row.name);
        }
        if lighttpd {
            run_lighttpd(row, &mut fails);
        } else {
            run_glint(row, &mut fails);
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n\n"));
}

//! Table-driven tests of the lexer, the evaluator, conditions and errors.

use super::lexer::{lex, Tok};
use super::*;
use std::rc::Rc;

fn load(text: &str) -> Result<Config, ConfigError> {
    Config::parse_str(text, "t.conf", Path::new("/nonexistent"))
}

/// A request for condition tests.
struct Req {
    listener: usize,
    ip: &'static str,
    host: &'static str,
    url: &'static str,
    query: &'static str,
    method: &'static str,
    headers: Vec<(&'static str, &'static str)>,
}

impl Default for Req {
    fn default() -> Self {
        Req {
            listener: 0,
            ip: "192.0.2.1",
            host: "example.org",
            url: "/index.html",
            query: "",
            method: "GET",
            headers: Vec::new(),
        }
    }
}

impl Req {
    fn resolve(&self, c: &Config) -> Resolved {
        let headers: Vec<httparse::Header<'_>> = self
            .headers
            .iter()
            .map(|(n, v)| httparse::Header {
                name: n,
                value: v.as_bytes(),
            })
            .collect();
        let facts = RequestFacts {
            listener: self.listener,
            remote_ip: self.ip.parse().ok(),
            scheme: "http",
            method: self.method,
            host: self.host,
            url: self.url,
            query: self.query,
            headers: &headers,
        };
        c.resolve(&facts)
    }
}

#[test]
fn lexer_table() {
    let cases: Vec<(&str, &str, Vec<Tok>)> = vec![
        ("empty input", "", vec![]),
        ("comment only", "# x = 1\n", vec![]),
        (
            "assignment",
            "server.port = 80",
            vec![Tok::Key("server.port".into()), Tok::Assign, Tok::Int(80)],
        ),
        (
            "string with escaped quote",
            r#""a\"b""#,
            vec![Tok::Str("a\"b".into())],
        ),
        (
            "other backslashes are kept",
            r#""\.php$""#,
            vec![Tok::Str("\\.php$".into())],
        ),
        (
            "all assignment operators",
            "a = b := c += d + e",
            vec![
                Tok::Key("a".into()),
                Tok::Assign,
                Tok::Key("b".into()),
                Tok::Replace,
                Tok::Key("c".into()),
                Tok::Append,
                Tok::Key("d".into()),
                Tok::Plus,
                Tok::Key("e".into()),
            ],
        ),
        (
            "condition operators",
            "== != =~ !~ =^ =$ =>",
            vec![
                Tok::Op("=="),
                Tok::Op("!="),
                Tok::Op("=~"),
                Tok::Op("!~"),
                Tok::Op("=^"),
                Tok::Op("=$"),
                Tok::Arrow,
            ],
        ),
        (
            "condition head",
            r#"$HTTP["host"]{}"#,
            vec![
                Tok::CondVar("HTTP".into()),
                Tok::LBracket,
                Tok::Str("host".into()),
                Tok::RBracket,
                Tok::LBrace,
                Tok::RBrace,
            ],
        ),
        (
            "array punctuation",
            "( 1, ); ",
            vec![
                Tok::LParen,
                Tok::Int(1),
                Tok::Comma,
                Tok::RParen,
                Tok::Semicolon,
            ],
        ),
        (
            "key with dash and digits",
            "server.max-keep-alive-idle 10k",
            vec![
                Tok::Key("server.max-keep-alive-idle".into()),
                Tok::Key("10k".into()),
            ],
        ),
    ];
    let file: Rc<str> = Rc::from("t.conf");
    for (desc, input, want) in cases {
        let got: Vec<Tok> = match lex(input, &file) {
            Ok(t) => t.into_iter().map(|t| t.tok).collect(),
            Err(e) => panic!("{desc}: {e}"),
        };
        let mut want = want;
        want.push(Tok::Eof);
        assert_eq!(got, want, "{desc}");
    }
}

#[test]
fn lexer_positions() {
    let file: Rc<str> = Rc::from("t.conf");
    let toks = lex("a = \"x\ny\"\n  b", &file).unwrap_or_default();
    let pos: Vec<(u32, u32)> = toks.iter().map(|t| (t.pos.line, t.pos.col)).collect();
    assert_eq!(pos, vec![(1, 1), (1, 3), (1, 5), (3, 3), (3, 4)]);
}

/// Evaluates `text` and returns the final global value of `key`.
fn value_of(text: &str, key: &str) -> Result<Value, ConfigError> {
    let p = parser::parse(text, "t.conf", Path::new("/nonexistent"))?;
    p.entries
        .into_iter()
        .find(|e| e.key == key)
        .map(|e| e.value)
        .ok_or_else(|| ConfigError::file("t.conf", format!("{key} not set")))
}

fn s(x: &str) -> Value {
    Value::Str(x.into())
}

fn arr(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|x| (None, s(x))).collect())
}

#[test]
fn evaluator_table() {
    std::env::set_var("GLINT_TEST_ENV", "from-env");
    let cases: Vec<(&str, &str, &str, Value)> = vec![
        ("string", r#"a.b = "x""#, "a.b", s("x")),
        ("integer", "a.b = 42", "a.b", Value::Int(42)),
        ("bare name is a variable", "x = 1", "var.x", Value::Int(1)),
        ("var. prefix", "var.x = 1", "var.x", Value::Int(1)),
        (
            "variable use",
            "var.r = \"/srv\"\na.b = r + \"/htdocs\"",
            "a.b",
            s("/srv/htdocs"),
        ),
        ("integers add", "a.b = 1 + 2", "a.b", Value::Int(3)),
        ("string plus integer", "a.b = \"p\" + 8", "a.b", s("p8")),
        ("integer plus string", "a.b = 1 + \"/x\"", "a.b", s("1/x")),
        (
            "arrays concatenate",
            "a.b = (\"x\") + (\"y\")",
            "a.b",
            arr(&["x", "y"]),
        ),
        (
            "+= appends to array",
            "a.b = (\"x\")\na.b += (\"y\")",
            "a.b",
            arr(&["x", "y"]),
        ),
        (
            "+= concatenates strings",
            "a.b = \"x\"\na.b += \"y\"",
            "a.b",
            s("xy"),
        ),
        (
            "+= adds integers",
            "a.b = 1\na.b += 2",
            "a.b",
            Value::Int(3),
        ),
        ("+= on unset key", "a.b += (\"y\")", "a.b", arr(&["y"])),
        (":= replaces", "a.b = 1\na.b := 2", "a.b", Value::Int(2)),
        ("env.", "a.b = env.GLINT_TEST_ENV", "a.b", s("from-env")),
        (
            "keyed array and trailing comma",
            "a.b = ( \"k\" => \"v\", )",
            "a.b",
            Value::Array(vec![(Some("k".into()), s("v"))]),
        ),
        (
            "nested arrays",
            "a.b = ( \"k\" => ( \"x\", 1 ) )",
            "a.b",
            Value::Array(vec![(
                Some("k".into()),
                Value::Array(vec![(None, s("x")), (None, Value::Int(1))]),
            )]),
        ),
        ("empty array", "a.b = ()", "a.b", Value::Array(vec![])),
        ("global block", "global { a.b = 5 }", "a.b", Value::Int(5)),
        ("semicolons", "a.b = 1; a.c = 2;", "a.c", Value::Int(2)),
        (
            "include_shell",
            "include_shell \"echo 'a.b = 7'\"",
            "a.b",
            Value::Int(7),
        ),
        (
            "var.PID predefined",
            "a.b = var.PID",
            "a.b",
            Value::Int(i64::from(std::process::id())),
        ),
    ];
    for (desc, text, key, want) in cases {
        match value_of(text, key) {
            Ok(v) => assert_eq!(v, want, "{desc}"),
            Err(e) => panic!("{desc}: {e}"),
        }
    }
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    assert_eq!(
        value_of("a.b = var.CWD", "a.b").ok(),
        Some(s(&cwd)),
        "var.CWD"
    );
}

#[test]
fn options_table() {
    type Check = fn(&Settings) -> bool;
    let cases: Vec<(&str, &str, Check)> = vec![
        ("port", "server.port = 8080", |s| s.listener.port == 8080),
        ("port as digit string", "server.port = \"81\"", |s| {
            s.listener.port == 81
        }),
        ("bind", "server.bind = \"127.0.0.1\"", |s| {
            s.listener.bind.as_deref() == Some("127.0.0.1")
        }),
        ("enable", "server.follow-symlink = \"disable\"", |s| {
            !s.files.follow_symlink
        }),
        ("boolean integer", "server.dir-listing = 1", |s| {
            s.dir_listing.activate
        }),
        ("boolean true", "dir-listing.activate = \"TRUE\"", |s| {
            s.dir_listing.activate
        }),
        (
            "index-file.names",
            "index-file.names = (\"a\", \"b\")",
            |s| s.files.index_file_names == ["a", "b"],
        ),
        ("single string as list", "url.access-deny = \"~\"", |s| {
            s.access.deny == ["~"]
        }),
        (
            "mimetype.assign",
            "mimetype.assign = (\".x\" => \"t/x\")",
            |s| s.files.mimetype_assign == [(".x".to_string(), "t/x".to_string())],
        ),
        (
            "url.rewrite is rewrite-once",
            "url.rewrite = (\"^/a\" => \"/b\")",
            |s| s.rewrite.once.len() == 1,
        ),
        ("max-request-size", "server.max-request-size = 1024", |s| {
            s.limits.max_request_size_kb == 1024
        }),
        (
            "document-root origin",
            "\n server.document-root = \"/w\"",
            |s| {
                s.paths.document_root_origin
                    == Some(Origin {
                        file: "t.conf".into(),
                        line: 2,
                    })
            },
        ),
        ("kept raw option", "scgi.protocol = \"uwsgi\"", |s| {
            s.raw == [("scgi.protocol".to_string(), Value::Str("uwsgi".into()))]
        }),
        (
            "fastcgi.server kept",
            "fastcgi.server = ( \".php\" => ( ( \"socket\" => \"/s\" ) ) )",
            |s| {
                s.backends
                    .fastcgi_server
                    .as_ref()
                    .and_then(|v| v.get(".php"))
                    .is_some()
            },
        ),
        ("defaults", "", |s| *s == Settings::default()),
    ];
    for (desc, text, ok) in cases {
        match load(text) {
            Ok(c) => assert!(ok(&c.global), "{desc}: {:?}", c.global),
            Err(e) => panic!("{desc}: {e}"),
        }
    }
}

#[test]
fn warnings_table() {
    let cases: Vec<(&str, &str, &[&str])> = vec![
        ("known option", "server.port = 1", &[]),
        (
            "unknown option",
            "\nfoo.bar = 1",
            &["t.conf:2: unknown option foo.bar; ignored (lighttpd does not know it either)"],
        ),
        (
            "ignored option in a block",
            "$HTTP[\"host\"] == \"a\" {\n server.core-files = \"enable\" }",
            &["t.conf:2: option server.core-files ignored: process setting with no effect on what is served"],
        ),
        (
            "mod_compress's name for a mod_deflate option",
            "\ncompress.filetype = ( \"text/plain\" )",
            &["t.conf:2: DEPRECATED: compress.filetype replaced with deflate.mimetypes"],
        ),
        (
            "an option at lighttpd's default",
            "ssl.engine = \"disable\"",
            &[],
        ),
        ("variables are not options", "var.x = 1\ny = 2", &[]),
        (
            "global-only option in a block",
            "$SERVER[\"socket\"] == \":81\" {\n server.port = 82 }",
            &["t.conf:2: option server.port can only be set in the global scope; ignored"],
        ),
    ];
    for (desc, text, want) in cases {
        match load(text) {
            Ok(c) => assert_eq!(c.warnings, want, "{desc}"),
            Err(e) => panic!("{desc}: {e}"),
        }
    }
}

#[test]
fn errors_table() {
    let cases: Vec<(&str, &str, &str)> = vec![
        ("unterminated string", "a.b = \"x", "t.conf:1:7: unterminated string"),
        ("stray character", "a.b = @", "t.conf:1:7: unexpected character '@'"),
        ("lone !", "a ! b", "t.conf:1:3: unexpected character '!'"),
        ("lone :", "a : b", "t.conf:1:3: unexpected character ':'"),
        ("$ without name", "$ [", "t.conf:1:1: expected a condition name after '$'"),
        (
            "integer too large",
            "a.b = 99999999999",
            "t.conf:1:7: integer 99999999999 is too large",
        ),
        (
            "missing operator",
            "a.b 1",
            "t.conf:1:5: unexpected integer 1, expected '=', ':=' or '+='",
        ),
        (
            "missing value",
            "a.b =",
            "t.conf:1:6: unexpected end of file, expected a value",
        ),
        (
            "statement starts with a value",
            "\"x\"",
            "t.conf:1:1: unexpected string \"x\", expected an option, a condition, 'include' or 'include_shell'",
        ),
        (
            "duplicate =",
            "a.b = 1\na.b = 2",
            "t.conf:2:1: a.b is already set in this scope (at t.conf:1); use := to replace it",
        ),
        ("undefined variable", "a.b = nope", "t.conf:1:7: var.nope is not set"),
        (
            "undefined env",
            "a.b = env.GLINT_SURELY_UNSET_1234",
            "t.conf:1:7: environment variable GLINT_SURELY_UNSET_1234 is not set",
        ),
        ("env is read-only", "env.X = 1", "t.conf:1:1: env.X is read-only"),
        (
            "string plus array",
            "a.b = \"x\" + ()",
            "t.conf:1:11: cannot add an array to a string",
        ),
        (
            "integer overflow",
            "a.b = 2147483647 + 1",
            "t.conf:1:18: integer overflow",
        ),
        (
            "duplicate array key",
            "a.b = (\"k\" => 1, \"k\" => 2)",
            "t.conf:1:18: duplicate array key \"k\"",
        ),
        (
            "duplicate array key via +=",
            "a.b = (\"k\" => 1)\na.b += (\"k\" => 2)",
            "t.conf:2:8: duplicate array key \"k\"",
        ),
        (
            "non-string array key",
            "a.b = (1 => 2)",
            "t.conf:1:8: an array key must be a string, got an integer",
        ),
        (
            "bad array separator",
            "a.b = (1 2)",
            "t.conf:1:10: unexpected integer 2, expected ',' or ')'",
        ),
        (
            "unclosed block",
            "$HTTP[\"url\"] == \"/\" {",
            "t.conf:1:22: unexpected end of file, expected '}'",
        ),
        (
            "unknown condition",
            "$HTTP[\"nope\"] == \"x\" {}",
            "t.conf:1:1: unknown condition $HTTP[\"nope\"]",
        ),
        (
            "condition needs a string",
            "$HTTP[\"url\"] == 1 {}",
            "t.conf:1:17: a condition compares with a string, got an integer",
        ),
        (
            "condition needs an operator",
            "$HTTP[\"url\"] = \"x\" {}",
            "t.conf:1:14: unexpected '=', expected '==', '!=', '=~', '!~', '=^' or '=$'",
        ),
        (
            "condition name must be a string",
            "$HTTP[url] == \"x\" {}",
            "t.conf:1:7: unexpected 'url', expected a string",
        ),
        (
            "bad remoteip",
            "$HTTP[\"remoteip\"] == \"10.0.0.0/99\" {}",
            "t.conf:1:22: \"10.0.0.0/99\" is not an IP address or network (a.b.c.d/n)",
        ),
        (
            "bad socket",
            "$SERVER[\"socket\"] == \"1.2.3.4:http\" {}",
            "t.conf:1:22: invalid socket \"1.2.3.4:http\" (expected ip:port, [v6]:port, :port or a path)",
        ),
        (
            "else without condition",
            "else { }",
            "t.conf:1:1: 'else' without a condition before it",
        ),
        (
            "else followed by junk",
            "$HTTP[\"url\"] == \"/\" {} else 5",
            "t.conf:1:29: unexpected integer 5, expected a condition or '{'",
        ),
        (
            "global inside condition",
            "$HTTP[\"url\"] == \"/\" { global { } }",
            "t.conf:1:23: 'global' block inside a condition",
        ),
        (
            "include of a missing file",
            "include \"missing.conf\"",
            "t.conf:1:1: cannot include /nonexistent/missing.conf: No such file or directory (os error 2)",
        ),
        (
            "include needs a string",
            "include 5",
            "t.conf:1:9: include expects a string, got an integer",
        ),
        (
            "include_shell failure",
            "include_shell \"exit 3\"",
            "t.conf:1:1: include_shell \"exit 3\" failed: exit status: 3",
        ),
        (
            "error inside include_shell output",
            "include_shell \"echo 'a.b = @'\"",
            "include_shell \"echo 'a.b = @'\":1:7: unexpected character '@'",
        ),
        (
            "wrong type for integer option",
            "\nserver.port = \"eighty\"",
            "t.conf:2:1: server.port: expects an integer, got a string",
        ),
        (
            "port out of range",
            "server.port = 70000",
            "t.conf:1:1: server.port: value 70000 is out of range (at most 65535)",
        ),
        (
            "unknown gateway protocol, also in a block",
            "$HTTP[\"url\"] =^ \"/u\" {\n  scgi.protocol = \"uwsgi2\"\n}",
            "t.conf:2:3: scgi.protocol: expects \"scgi\" or \"uwsgi\"",
        ),
        (
            "wrong type for string option",
            "server.tag = 5",
            "t.conf:1:1: server.tag: expects a string, got an integer",
        ),
        (
            "wrong boolean",
            "server.follow-symlink = \"yes\"",
            "t.conf:1:1: server.follow-symlink: expects \"enable\" or \"disable\", got \"yes\"",
        ),
        (
            "boolean given an array",
            "server.range-requests = ()",
            "t.conf:1:1: server.range-requests: expects \"enable\" or \"disable\", got an array",
        ),
        (
            "list of non-strings",
            "index-file.names = (1)",
            "t.conf:1:1: index-file.names: expects an array of strings, found an integer",
        ),
        (
            "list given an integer",
            "index-file.names = 1",
            "t.conf:1:1: index-file.names: expects an array of strings, got an integer",
        ),
        (
            "pairs without keys",
            "mimetype.assign = (\".x\")",
            "t.conf:1:1: mimetype.assign: expects an array of \"key\" => \"value\" pairs",
        ),
        (
            "pairs with non-string value",
            "mimetype.assign = (\".x\" => 1)",
            "t.conf:1:1: mimetype.assign: expects a string for key \".x\", found an integer",
        ),
        (
            "pairs given a string",
            "expire.url = \"x\"",
            "t.conf:1:1: expire.url: expects an array of \"key\" => \"value\" pairs, got a string",
        ),
        (
            "negative via string is not a number",
            "server.max-fds = \"-1\"",
            "t.conf:1:1: server.max-fds: expects an integer, got a string",
        ),
        (
            "fastcgi.server must be an array",
            "fastcgi.server = \"x\"",
            "t.conf:1:1: fastcgi.server: expects an array, got a string",
        ),
        (
            "arrays nested too deeply",
            "a.b = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
            "t.conf:1:71: arrays nested too deeply",
        ),
        (
            "type error inside a block",
            "$HTTP[\"host\"] == \"a\" {\n  server.tag = 5\n}",
            "t.conf:2:3: server.tag: expects a string, got an integer",
        ),
        // Fail closed: what glint cannot honour stops the start, at the
        // line that asked for it.
        (
            "a module glint does not provide, named on its own line",
            "server.modules = (\n  \"mod_access\",\n  \"mod_evasive\",\n)",
            "t.conf:3:3: module mod_evasive is not provided by glint",
        ),
        (
            "a typo in a module name",
            "server.modules = ( \"mod_acces\" )",
            "t.conf:1:20: module mod_acces is not provided by glint",
        ),
        (
            "a module added with +=, not the first assignment",
            "server.modules = ( \"mod_access\" )\nserver.modules += ( \"mod_secdownload\" )",
            "t.conf:2:21: module mod_secdownload is not provided by glint",
        ),
        (
            "an auth.require rule without a realm",
            "auth.require = ( \"/secret/\" => ( \"method\" => \"basic\" ) )",
            "t.conf:1:1: auth.require: the realm field is missing in auth.require = ( \"/secret/\" => ( \"realm\" => ... ) )",
        ),
        (
            "a dbi database glint has no client for, as lighttpd stops without a libdbi driver",
            "auth.backend.dbi = ( \"sql\" => \"SELECT 1\", \"dbtype\" => \"oracle\", \"dbname\" => \"d\" )",
            "t.conf:1:1: auth.backend.dbi: dbtype \"oracle\" is not provided by glint (\"sqlite3\", \"pgsql\" and \"mysql\" are)",
        ),
        (
            "dbi's userhash query, whose second column glint does not read",
            "auth.backend.dbi = ( \"sql\" => \"SELECT 1\", \"sql-userhash\" => \"SELECT 1, 2\", \"dbtype\" => \"sqlite3\", \"dbname\" => \"d\" )",
            "t.conf:1:1: auth.backend.dbi: \"sql-userhash\" (the Digest userhash query) is not provided by glint; remove it (clients that send a userhash are then refused, as lighttpd refuses them without it)",
        ),
        (
            "auth.backend = \"mysql\", which lighttpd 1.4.69 no longer has",
            "auth.backend = \"mysql\"",
            "t.conf:1:1: auth.backend: auth.backend not supported: \"mysql\" (lighttpd 1.4.69 has no mod_authn_mysql; use \"dbi\" with auth.backend.dbi's \"dbtype\" => \"mysql\")",
        ),
        (
            "an auth backend lighttpd does not have either",
            "auth.backend = \"kerberos\"",
            "t.conf:1:1: auth.backend: auth.backend not supported: \"kerberos\" (glint has \"plain\", \"htpasswd\", \"htdigest\", \"ldap\", \"pam\", \"sasl\", \"dbi\", \"gssapi\")",
        ),
        (
            "an LDAP filter without the user's place, as lighttpd refuses it",
            "auth.backend.ldap.filter = \"(uid=bob)\"",
            "t.conf:1:1: auth.backend.ldap.filter: ldap: auth.backend.ldap.filter is missing a replace-operator '?'",
        ),
        (
            "an LDAP server glint cannot reach",
            "auth.backend.ldap.hostname = \"ldapi://%2frun%2fslapd\"",
            "t.conf:1:1: auth.backend.ldap.hostname: \"ldapi://%2frun%2fslapd\": only ldap:// and ldaps:// are supported",
        ),
        (
            "a SASL password check lighttpd does not know",
            "auth.backend.sasl.opts = ( \"pwcheck_method\" => \"kerberos\" )",
            "t.conf:1:1: auth.backend.sasl.opts: sasl pwcheck_method must be one of saslauthd, sasldb, or auxprop, not: kerberos",
        ),
        (
            "SSLv3 asked for on a socket",
            "$SERVER[\"socket\"] == \":443\" {\n  ssl.use-sslv3 = \"enable\"\n}",
            "t.conf:2:3: option ssl.use-sslv3 = \"enable\" (mod_openssl) is not provided by glint (only its default is)",
        ),
        (
            "two TLS modules",
            "server.modules += ( \"mod_openssl\", \"mod_gnutls\" )",
            "t.conf:1:36: module mod_gnutls: mod_openssl is loaded already; one TLS module serves the ssl.* options",
        ),
        (
            "a cipher list mod_mbedtls cannot translate, in a socket block",
            "server.modules += ( \"mod_mbedtls\" )\n$SERVER[\"socket\"] == \":443\" {\n  ssl.cipher-list = \"kRSA\"\n}",
            "t.conf:3:3: ssl.cipher-list \"kRSA\": mod_mbedtls does not know \"kRSA\" (lighttpd 1.4.69 refuses to start with it too) (as mod_mbedtls reads it)",
        ),
        (
            "cgi.assign not pairs",
            "cgi.assign = \"/usr/bin/python3\"",
            "t.conf:1:1: cgi.assign: expects an array of \"key\" => \"value\" pairs, got a string",
        ),
        (
            "cgi.limits with a key glint does not know",
            "cgi.limits = ( \"read-timout\" => 5 )",
            "t.conf:1:1: cgi.limits: unknown key \"read-timout\" (read-timeout, write-timeout, tcp-fin-propagate, max-procs)",
        ),
        (
            "proxy.header with a key lighttpd does not know",
            "proxy.header = ( \"upgrad\" => \"enable\" )",
            "t.conf:1:1: proxy.header: unexpected key \"upgrad\" (map-urlpath, map-host-request, map-host-response, https-remap, upgrade, connect, force-http10)",
        ),
        (
            "an extforward forwarder that is no address",
            "$HTTP[\"url\"] =^ \"/\" {\n extforward.forwarder = ( \"not an address\" => \"trust\" ) }",
            "t.conf:2:2: extforward.forwarder: \"not an address\" is not an address, a network or \"all\"",
        ),
        (
            "a query rewrite in http-parseopts",
            "server.http-parseopts = ( \"url-query-20-plus\" => \"enable\" )",
            "t.conf:1:1: server.http-parseopts: \"url-query-20-plus\" => \"enable\" is not provided by glint",
        ),
    ];
    for (desc, text, want) in cases {
        match load(text) {
            Ok(_) => panic!("{desc}: loaded without error"),
            Err(e) => assert_eq!(e.to_string(), want, "{desc}"),
        }
    }
}

#[test]
fn regex_errors_name_the_position() {
    let cases: Vec<(&str, &str, &str)> = vec![
        (
            "condition regex",
            "\n$HTTP[\"url\"] =~ \"(\" {}",
            "t.conf:2:17: invalid regex \"(\"",
        ),
        (
            "negated condition regex",
            "$HTTP[\"url\"] !~ \"[\" {}",
            "t.conf:1:17: invalid regex \"[\"",
        ),
        (
            "look-around is not supported",
            "$HTTP[\"url\"] =~ \"^(?!/a)\" {}",
            "t.conf:1:17: invalid regex \"^(?!/a)\"",
        ),
        (
            "url.redirect pattern",
            "url.redirect = (\"(\" => \"/\")",
            "t.conf:1:1: url.redirect: invalid regex \"(\"",
        ),
    ];
    for (desc, text, want) in cases {
        match load(text) {
            Ok(_) => panic!("{desc}: loaded without error"),
            Err(e) => assert!(e.to_string().starts_with(want), "{desc}: {e}"),
        }
    }
}

#[test]
fn main_file_errors_have_no_position() {
    let e = Config::load(Path::new("/nonexistent/glint.conf")).err();
    let text = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.starts_with("/nonexistent/glint.conf: cannot read: "),
        "{text}"
    );
}

const CONDS: &str = r#"
server.document-root = "/global"
$HTTP["host"] == "a.example" { server.document-root = "/a" }
$HTTP["host"] != "b.example" { server.tag = "not-b" }
$HTTP["url"] =~ "^/user/([a-z]+)/(\d+)" { server.document-root = "/users" }
$HTTP["url"] !~ "^/static/" { server.name = "dynamic" }
$HTTP["url"] =^ "/pre" { server.document-root = "/prefix" }
$HTTP["url"] =$ ".suf" { server.document-root = "/suffix" }
$HTTP["remoteip"] == "10.0.0.0/8" { server.document-root = "/ten" }
$HTTP["remoteip"] != "192.0.2.0/24" { server.errorfile-prefix = "/outside" }
$HTTP["remoteip"] == "2001:db8::/32" { server.document-root = "/v6" }
$HTTP["querystring"] == "q=1" { server.document-root = "/query" }
$HTTP["request-method"] == "POST" { server.document-root = "/post" }
$HTTP["useragent"] =~ "curl" { server.document-root = "/curl" }
$HTTP["referer"] == "r" { server.document-root = "/referer" }
$HTTP["cookie"] =~ "session=" { server.document-root = "/cookie" }
$HTTP["language"] =^ "de" { server.document-root = "/de" }
$REQUEST_HEADER["X-Test"] == "1" { server.document-root = "/header" }
$HTTP["scheme"] == "https" { server.document-root = "/https" }
"#;

#[test]
fn condition_table() {
    let c = match load(CONDS) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    type Check = fn(&Resolved) -> bool;
    fn root_is(r: &Resolved, want: &str) -> bool {
        r.settings.paths.document_root.as_deref() == Some(Path::new(want))
    }
    let cases: Vec<(&str, Req, Check)> = vec![
        (
            "nothing matches",
            Req {
                host: "b.example",
                url: "/static/x",
                ..Req::default()
            },
            |r| root_is(r, "/global") && r.captures.is_empty(),
        ),
        (
            "== host, case-insensitive",
            Req {
                host: "A.Example",
                ..Req::default()
            },
            |r| root_is(r, "/a"),
        ),
        ("!= host", Req::default(), |r| {
            r.settings.identity.tag == "not-b"
        }),
        (
            "!= host not taken",
            Req {
                host: "b.example",
                ..Req::default()
            },
            |r| r.settings.identity.tag != "not-b",
        ),
        (
            "=~ with captures",
            Req {
                url: "/user/bob/42",
                ..Req::default()
            },
            |r| root_is(r, "/users") && r.captures == ["/user/bob/42", "bob", "42"],
        ),
        (
            "!~",
            Req {
                url: "/x",
                ..Req::default()
            },
            |r| r.settings.identity.server_name.as_deref() == Some("dynamic"),
        ),
        (
            "!~ not taken",
            Req {
                url: "/static/x",
                ..Req::default()
            },
            |r| r.settings.identity.server_name.is_none(),
        ),
        (
            "=^",
            Req {
                url: "/prefix/x",
                ..Req::default()
            },
            |r| root_is(r, "/prefix"),
        ),
        (
            "=$",
            Req {
                url: "/x.suf",
                ..Req::default()
            },
            |r| root_is(r, "/suffix"),
        ),
        (
            "CIDR ==",
            Req {
                ip: "10.1.2.3",
                ..Req::default()
            },
            |r| root_is(r, "/ten"),
        ),
        (
            "CIDR == v4-mapped",
            Req {
                ip: "::ffff:10.1.2.3",
                ..Req::default()
            },
            |r| root_is(r, "/ten"),
        ),
        ("CIDR != inside", Req::default(), |r| {
            r.settings.errors.errorfile_prefix.is_none()
        }),
        (
            "CIDR != outside",
            Req {
                ip: "198.51.100.1",
                ..Req::default()
            },
            |r| r.settings.errors.errorfile_prefix.as_deref() == Some("/outside"),
        ),
        (
            "CIDR v6",
            Req {
                ip: "2001:db8::1",
                ..Req::default()
            },
            |r| root_is(r, "/v6"),
        ),
        (
            "querystring",
            Req {
                query: "q=1",
                ..Req::default()
            },
            |r| root_is(r, "/query"),
        ),
        (
            "request-method",
            Req {
                method: "POST",
                ..Req::default()
            },
            |r| root_is(r, "/post"),
        ),
        (
            "useragent",
            Req {
                headers: vec![("user-agent", "curl/8")],
                ..Req::default()
            },
            |r| root_is(r, "/curl"),
        ),
        (
            "referer",
            Req {
                headers: vec![("Referer", "r")],
                ..Req::default()
            },
            |r| root_is(r, "/referer"),
        ),
        (
            "cookie",
            Req {
                headers: vec![("Cookie", "a=b; session=1")],
                ..Req::default()
            },
            |r| root_is(r, "/cookie"),
        ),
        (
            "language",
            Req {
                headers: vec![("Accept-Language", "de-DE")],
                ..Req::default()
            },
            |r| root_is(r, "/de"),
        ),
        (
            "request header",
            Req {
                headers: vec![("x-test", "1")],
                ..Req::default()
            },
            |r| root_is(r, "/header"),
        ),
        ("scheme is http", Req::default(), |r| !root_is(r, "/https")),
        (
            "later block wins",
            Req {
                host: "a.example",
                query: "q=1",
                ..Req::default()
            },
            |r| root_is(r, "/query"),
        ),
    ];
    for (desc, req, ok) in cases {
        let r = req.resolve(&c);
        assert!(
            ok(&r),
            "{desc}: {:?} {:?}",
            r.settings.paths.document_root,
            r.captures
        );
    }
}

const CHAINS: &str = r#"
$HTTP["host"] == "a" {
  server.document-root = "/a"
  $HTTP["url"] =^ "/x" {
    server.document-root = "/a/x"
    $HTTP["url"] =~ "^/x/(.*)$" { server.tag = "deep" }
  }
  else $HTTP["url"] =^ "/y" { server.document-root = "/a/y" }
  else { server.document-root = "/a/other" }
}
else if $HTTP["host"] == "b" { server.document-root = "/b" }
elseif $HTTP["host"] == "c" { server.document-root = "/c" }
elsif $HTTP["host"] == "d" { server.document-root = "/d" }
else $HTTP["host"] =~ "^(e)" { server.document-root = "/e" }
else { server.document-root = "/none" }
"#;

#[test]
fn else_chains_and_nesting() {
    let c = match load(CHAINS) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let cases: Vec<(&str, &'static str, &'static str, &str, &str)> = vec![
        ("nested if", "a", "/x/1", "/a/x", "deep"),
        ("nested else if", "a", "/y", "/a/y", ""),
        ("nested else", "a", "/z", "/a/other", ""),
        ("else if", "b", "/", "/b", ""),
        ("elseif", "c", "/", "/c", ""),
        ("elsif", "d", "/", "/d", ""),
        ("else with regex", "e", "/", "/e", ""),
        ("final else", "zz", "/x/1", "/none", ""),
    ];
    for (desc, host, url, root, tag) in cases {
        let r = Req {
            host,
            url,
            ..Req::default()
        }
        .resolve(&c);
        assert_eq!(
            r.settings.paths.document_root.as_deref(),
            Some(Path::new(root)),
            "{desc}"
        );
        if !tag.is_empty() {
            assert_eq!(r.settings.identity.tag, tag, "{desc}");
            assert_eq!(
                r.captures,
                ["/x/1", "1"],
                "{desc}: innermost regex captures"
            );
        }
    }
}

#[test]
fn append_in_block_extends_outer_value() {
    let c = load(
        "index-file.names = (\"a\")\nvar.v = \"1\"\n$HTTP[\"host\"] == \"h\" {\n index-file.names += (\"b\")\n var.v += \"2\"\n server.tag = v\n}",
    );
    let c = match c {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let r = Req {
        host: "h",
        ..Req::default()
    }
    .resolve(&c);
    assert_eq!(r.settings.files.index_file_names, ["a", "b"]);
    assert_eq!(r.settings.identity.tag, "12");
    assert_eq!(c.global.files.index_file_names, ["a"]);
}

#[test]
fn socket_blocks_make_listeners() {
    let text = r#"
server.port = 8080
server.bind = "127.0.0.1"
server.document-root = "/main"
$SERVER["socket"] == "127.0.0.1:8081" { server.document-root = "/second" }
$SERVER["socket"] == "[::1]:8082" { }
$SERVER["socket"] == ":8083" { }
$SERVER["socket"] == "/tmp/glint.sock" { }
$SERVER["socket"] == "127.0.0.1:8080" { server.tag = "same as global" }
$SERVER["socket"] =~ "8081$" { server.name = "by regex" }
"#;
    let c = match load(text) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let specs: Vec<&str> = c.listeners.iter().map(|l| l.spec.as_str()).collect();
    assert_eq!(
        specs,
        [
            "127.0.0.1:8080",
            "127.0.0.1:8081",
            "[::1]:8082",
            ":8083",
            "/tmp/glint.sock"
        ]
    );
    assert_eq!(
        c.listeners[2].addr,
        ListenAddr::Tcp {
            host: "::1".into(),
            port: 8082
        }
    );
    assert_eq!(
        c.listeners[4].addr,
        ListenAddr::Unix(PathBuf::from("/tmp/glint.sock"))
    );
    let r0 = Req::default().resolve(&c);
    assert_eq!(
        r0.settings.paths.document_root.as_deref(),
        Some(Path::new("/main"))
    );
    assert_eq!(r0.settings.identity.tag, "same as global");
    let r1 = Req {
        listener: 1,
        ..Req::default()
    }
    .resolve(&c);
    assert_eq!(
        r1.settings.paths.document_root.as_deref(),
        Some(Path::new("/second"))
    );
    assert_eq!(
        r1.settings.identity.server_name.as_deref(),
        Some("by regex")
    );
}

#[test]
fn parse_socket_table() {
    let cases: Vec<(&str, Option<ListenAddr>)> = vec![
        (
            "1.2.3.4:80",
            Some(ListenAddr::Tcp {
                host: "1.2.3.4".into(),
                port: 80,
            }),
        ),
        (
            ":8080",
            Some(ListenAddr::Tcp {
                host: String::new(),
                port: 8080,
            }),
        ),
        (
            "[::]:443",
            Some(ListenAddr::Tcp {
                host: "::".into(),
                port: 443,
            }),
        ),
        (
            "localhost:1",
            Some(ListenAddr::Tcp {
                host: "localhost".into(),
                port: 1,
            }),
        ),
        (
            "1.2.3.4",
            Some(ListenAddr::Tcp {
                host: "1.2.3.4".into(),
                port: 80,
            }),
        ),
        ("/run/s", Some(ListenAddr::Unix(PathBuf::from("/run/s")))),
        ("::1:80", None),
        ("[::1", None),
        ("1.2.3.4:99999", None),
        ("", None),
    ];
    for (spec, want) in cases {
        assert_eq!(parse_socket(spec).ok(), want, "{spec}");
    }
}

#[test]
fn resolve_reuses_cached_settings() {
    let c = match load(CONDS) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let a = Req::default().resolve(&c);
    let b = Req::default().resolve(&c);
    assert!(Rc::ptr_eq(&a.settings, &b.settings));
    let plain = match load("server.port = 1") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let g = Req::default().resolve(&plain);
    assert!(Rc::ptr_eq(&g.settings, &plain.global));
}

/// Configurations compare equal when their dumps and global settings agree
/// (origins name the file the text came from, so they are left out).
fn assert_round_trip(desc: &str, c: &Config) {
    let text = c.dump();
    let again = match load(&text) {
        Ok(a) => a,
        Err(e) => panic!("{desc}: dump does not parse: {e}\n{text}"),
    };
    let strip = |s: &Settings| {
        let mut s = s.clone();
        s.paths.document_root_origin = None;
        s
    };
    assert_eq!(strip(&again.global), strip(&c.global), "{desc}");
    assert_eq!(again.listeners, c.listeners, "{desc}");
    assert_eq!(again.dump(), text, "{desc}");
}

#[test]
fn dump_round_trips() {
    let cases: Vec<(&str, &str)> = vec![
        ("defaults", ""),
        ("conditions", CONDS),
        ("else chains", CHAINS),
        (
            "quotes and nested arrays",
            r#"server.tag = "say \"hi\""
scgi.server = ( "/s" => ( "l" => ( "host" => "127.0.0.1", "port" => 3000 ) ) )
scgi.protocol = "scgi"
$SERVER["socket"] == ":81" { server.document-root = "/x" }"#,
        ),
        (
            "mod_maxminddb's and the core's xattr and HTTP/1.1 options",
            r#"maxminddb.activate = "enable"
maxminddb.env = ( "geo-cc" => "country/iso_code", "SUB" => "subdivisions/-1/iso_code" )
mimetype.use-xattr = "enable"
mimetype.xattr-name = "user.Content-Type"
server.protocol-http11 = "disable""#,
        ),
    ];
    for (desc, text) in cases {
        match load(text) {
            Ok(c) => assert_round_trip(desc, &c),
            Err(e) => panic!("{desc}: {e}"),
        }
    }
    assert_round_trip("from_settings", &Config::from_settings(Settings::default()));
}

#[test]
fn includes_and_globs() {
    let dir = std::env::temp_dir().join(format!("glint-config-inc-{}", std::process::id()));
    let sub = dir.join("conf.d");
    let _ = std::fs::create_dir_all(&sub);
    let files = [
        (
            dir.join("main.conf"),
            "server.modules = ()\ninclude \"conf.d/*.conf\"\ninclude \"conf.d/none-*.conf\"\n",
        ),
        (sub.join("10-a.conf"), "server.modules += (\"mod_a\")\n"),
        (sub.join("20-b.conf"), "server.modules += (\"mod_b\")\n"),
        (sub.join("x.txt"), "this is not = config(\n"),
        (sub.join(".hidden.conf"), "broken(\n"),
    ];
    for (p, t) in &files {
        let _ = std::fs::write(p, t);
    }
    let c = Config::load(&dir.join("main.conf"));
    let _ = std::fs::remove_dir_all(&dir);
    // mod_a is not a module glint provides: the error names the included
    // file and line that named it, not the main file's assignment.
    match c {
        Ok(c) => panic!("loaded with modules {:?}", c.global.modules),
        Err(e) => {
            let shown = e.to_string();
            assert!(
                shown.ends_with("10-a.conf:1:20: module mod_a is not provided by glint"),
                "{shown}"
            );
        }
    }
}

#[test]
fn glob_patterns_name_the_files_sorted() {
    let dir = std::env::temp_dir().join(format!("glint-config-glob-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for d in ["c1", "c2", "d"] {
        let _ = std::fs::create_dir_all(dir.join(d));
    }
    for f in [
        "10-a.conf",
        "20-b.conf",
        "a.txt",
        ".hidden.conf",
        "c1/x.conf",
        "c2/x.conf",
        "d/x.conf",
    ] {
        let _ = std::fs::write(dir.join(f), "");
    }
    let names = |pat: &str| -> Vec<String> {
        match parser::expand(&dir.join(pat)) {
            Ok(v) => v
                .iter()
                .map(|p| p.strip_prefix(&dir).unwrap_or(p).display().to_string())
                .collect(),
            Err(e) => vec![format!("error: {e}")],
        }
    };
    let cases: [(&str, &[&str]); 8] = [
        ("*.conf", &["10-a.conf", "20-b.conf"]),
        ("?0-b.conf", &["20-b.conf"]),
        ("[0-9]*", &["10-a.conf", "20-b.conf"]),
        ("[!0-9]*", &["a.txt", "c1", "c2", "d"]),
        ("c[12]/*.conf", &["c1/x.conf", "c2/x.conf"]),
        ("*x.conf", &[]),
        (".*.conf", &[".hidden.conf"]),
        ("plain.conf", &["plain.conf"]),
    ];
    let got: Vec<_> = cases.iter().map(|(p, _)| names(p)).collect();
    let _ = std::fs::remove_dir_all(&dir);
    for ((pat, want), got) in cases.iter().zip(got) {
        assert_eq!(got, *want, "{pat}");
    }
}

#[test]
fn nesting_limits() {
    let deep = "$HTTP[\"url\"] =^ \"/\" {".repeat(70) + &"}".repeat(70);
    let e = load(&deep).err().map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("t.conf:1:1366: conditions nested too deeply"),
        "conditions"
    );
    let dir = std::env::temp_dir().join(format!("glint-config-self-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join("self.conf");
    let _ = std::fs::write(&file, "include \"self.conf\"\n");
    let e = Config::load(&file).err().map(|e| e.message);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(e.as_deref(), Some("includes nested too deeply"), "includes");
    let e = load("server.max-request-size = \"99999999999999999999999\"")
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("t.conf:1:1: server.max-request-size: integer 99999999999999999999999 is too large"),
        "huge digit string"
    );
}

#[test]
fn gateway_scopes_name_the_innermost_server_value() {
    let c = match load(
        r#"scgi.server = ( "/a" => ( ( "host" => "127.0.0.1", "port" => 1 ) ) )
$HTTP["host"] == "b" {
  scgi.server = ( "/a" => ( ( "host" => "127.0.0.1", "port" => 2 ) ) )
  $HTTP["url"] =~ "^/deep" {
    scgi.server = ( "/a" => ( ( "host" => "127.0.0.1", "port" => 3 ) ) )
  }
}
$HTTP["host"] == "c" { server.tag = "c" }
$HTTP["host"] == "d" {
  scgi.server = ( "/a" => ( ( "host" => "127.0.0.1", "port" => 2 ) ) )
  fastcgi.server = ( ".php" => ( ( "socket" => "/tmp/php.sock" ) ) )
}"#,
    ) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    // The global value, then each distinct one a block sets.
    assert_eq!(c.scgi_servers.len(), 3);
    assert_eq!(c.fastcgi_servers, vec![None, c.fastcgi_servers[1].clone()]);
    assert_eq!(
        (
            c.global.backends.scgi_scope,
            c.global.backends.fastcgi_scope
        ),
        (0, 0)
    );
    let scopes = |host: &'static str, url: &'static str| {
        let r = Req {
            host,
            url,
            ..Req::default()
        }
        .resolve(&c);
        let s = &r.settings;
        assert_eq!(
            c.scgi_servers[s.backends.scgi_scope as usize], s.backends.scgi_server,
            "{host}{url}"
        );
        assert_eq!(
            c.fastcgi_servers[s.backends.fastcgi_scope as usize], s.backends.fastcgi_server,
            "{host}{url}"
        );
        (s.backends.scgi_scope, s.backends.fastcgi_scope)
    };
    assert_eq!(scopes("a", "/x"), (0, 0));
    assert_eq!(scopes("b", "/x"), (1, 0));
    assert_eq!(scopes("b", "/deep"), (2, 0));
    assert_eq!(scopes("c", "/x"), (0, 0));
    // The same value in two blocks is one scope.
    assert_eq!(scopes("d", "/x"), (1, 1));
}

/// Every option lighttpd 1.4.69 reads (from the `config_plugin_keys_t`
/// tables of its sources), for the test below.
const LIGHTTPD_1_4_69_OPTIONS: &[&str] = &[
    "accesslog.escaping",
    "accesslog.filename",
    "accesslog.format",
    "accesslog.syslog-level",
    "accesslog.use-syslog",
    "ajp13.balance",
    "ajp13.debug",
    "ajp13.map-extensions",
    "ajp13.server",
    "alias.url",
    "auth.backend",
    "auth.backend.dbi",
    "auth.backend.gssapi.keytab",
    "auth.backend.gssapi.principal",
    "auth.backend.gssapi.store-creds",
    "auth.backend.htdigest.userfile",
    "auth.backend.htpasswd.userfile",
    "auth.backend.ldap.allow-empty-pw",
    "auth.backend.ldap.base-dn",
    "auth.backend.ldap.bind-dn",
    "auth.backend.ldap.bind-pw",
    "auth.backend.ldap.ca-file",
    "auth.backend.ldap.filter",
    "auth.backend.ldap.groupmember",
    "auth.backend.ldap.hostname",
    "auth.backend.ldap.starttls",
    "auth.backend.ldap.timeout",
    "auth.backend.pam.opts",
    "auth.backend.plain.groupfile",
    "auth.backend.plain.userfile",
    "auth.backend.sasl.opts",
    "auth.cache",
    "auth.extern-authn",
    "auth.require",
    "cgi.assign",
    "cgi.execute-x-only",
    "cgi.limits",
    "cgi.local-redir",
    "cgi.upgrade",
    "cgi.x-sendfile",
    "cgi.x-sendfile-docroot",
    "compress.allowed-encodings",
    "compress.cache-dir",
    "compress.filetype",
    "compress.max-filesize",
    "compress.max-loadavg",
    "connection.kbytes-per-second",
    "debug.log-condition-handling",
    "debug.log-file-not-found",
    "debug.log-request-handling",
    "debug.log-request-header",
    "debug.log-request-header-on-error",
    "debug.log-response-header",
    "debug.log-ssl-noise",
    "debug.log-state-handling",
    "debug.log-timeouts",
    "deflate.allowed-encodings",
    "deflate.cache-dir",
    "deflate.compression-level",
    "deflate.max-compress-size",
    "deflate.max-loadavg",
    "deflate.mimetypes",
    "deflate.min-compress-size",
    "deflate.output-buffer-size",
    "deflate.params",
    "deflate.work-block-size",
    "dir-listing.activate",
    "dir-listing.auto-layout",
    "dir-listing.cache",
    "dir-listing.encode-header",
    "dir-listing.encode-readme",
    "dir-listing.encoding",
    "dir-listing.exclude",
    "dir-listing.external-css",
    "dir-listing.external-js",
    "dir-listing.hide-dotfiles",
    "dir-listing.hide-header-file",
    "dir-listing.hide-readme-file",
    "dir-listing.set-footer",
    "dir-listing.show-header",
    "dir-listing.show-readme",
    "etag.use-inode",
    "etag.use-mtime",
    "etag.use-size",
    "evhost.path-pattern",
    "expire.mimetypes",
    "expire.url",
    "extforward.forwarder",
    "extforward.headers",
    "extforward.params",
    "fastcgi.balance",
    "fastcgi.debug",
    "fastcgi.map-extensions",
    "fastcgi.server",
    "gzip.level",
    "gzip.strategy",
    "index-file.names",
    "magnet.attract-physical-path-to",
    "magnet.attract-raw-url-to",
    "magnet.attract-response-start-to",
    "maxminddb.activate",
    "maxminddb.db",
    "maxminddb.env",
    "mimetype.assign",
    "mimetype.use-xattr",
    "mimetype.xattr-name",
    "proxy.balance",
    "proxy.debug",
    "proxy.forwarded",
    "proxy.header",
    "proxy.map-extensions",
    "proxy.replace-http-host",
    "proxy.server",
    "rrdtool.binary",
    "rrdtool.db-name",
    "scgi.balance",
    "scgi.debug",
    "scgi.map-extensions",
    "scgi.protocol",
    "scgi.server",
    // (Not "server.absolute-dir-redirect": lighttpd 1.4.69 reads it only
    // as a key of server.feature-flags, and warns of it as unknown here.)
    "server.bind",
    "server.breakagelog",
    "server.bsd-accept-filter",
    "server.chroot",
    "server.chunkqueue-chunk-sz",
    "server.compat-module-load",
    "server.core-files",
    "server.defer-accept",
    "server.dir-listing",
    "server.document-root",
    "server.error-handler",
    "server.error-handler-404",
    "server.error-intercept",
    "server.errorfile-prefix",
    "server.errorlog",
    "server.errorlog-use-syslog",
    "server.event-handler",
    "server.feature-flags",
    "server.follow-symlink",
    "server.force-lowercase-filenames",
    "server.graceful-restart-bg",
    "server.groupname",
    "server.h2c",
    "server.h2proto",
    "server.http-parseopt-header-strict",
    "server.http-parseopt-host-normalize",
    "server.http-parseopt-host-strict",
    "server.http-parseopts",
    "server.indexfiles",
    "server.kbytes-per-second",
    "server.listen-backlog",
    "server.max-connections",
    "server.max-fds",
    "server.max-keep-alive-idle",
    "server.max-keep-alive-requests",
    "server.max-read-idle",
    "server.max-request-field-size",
    "server.max-request-size",
    "server.max-worker",
    "server.max-write-idle",
    "server.modules",
    "server.name",
    "server.network-backend",
    "server.pid-file",
    "server.port",
    "server.protocol-http11",
    "server.range-requests",
    "server.reject-expect-100-with-417",
    "server.set-v6only",
    "server.socket-perms",
    "server.stat-cache-engine",
    "server.stream-request-body",
    "server.stream-response-body",
    "server.syslog-facility",
    "server.systemd-socket-activation",
    "server.tag",
    "server.upload-dirs",
    "server.upload-temp-file-size",
    "server.use-ipv6",
    "server.username",
    "server.v4mapped",
    "setenv.add-environment",
    "setenv.add-request-header",
    "setenv.add-response-header",
    "setenv.set-environment",
    "setenv.set-request-header",
    "setenv.set-response-header",
    "simple-vhost.debug",
    "simple-vhost.default-host",
    "simple-vhost.document-root",
    "simple-vhost.server-root",
    "sockproxy.balance",
    "sockproxy.debug",
    "sockproxy.server",
    "ssi.conditional-requests",
    "ssi.content-type",
    "ssi.exec",
    "ssi.extension",
    "ssi.recursion-max",
    "ssl.acme-tls-1",
    "ssl.ca-crl-file",
    "ssl.ca-dn-file",
    "ssl.ca-file",
    "ssl.cipher-list",
    "ssl.disable-client-renegotiation",
    "ssl.engine",
    "ssl.openssl.ssl-conf-cmd",
    "ssl.pemfile",
    "ssl.privkey",
    "ssl.read-ahead",
    "ssl.stapling-file",
    "ssl.stek-file",
    "ssl.verifyclient.activate",
    "ssl.verifyclient.ca-crl-file",
    "ssl.verifyclient.ca-dn-file",
    "ssl.verifyclient.ca-file",
    "ssl.verifyclient.depth",
    "ssl.verifyclient.enforce",
    "ssl.verifyclient.exportcert",
    "ssl.verifyclient.username",
    "static-file.disable-pathinfo",
    "static-file.etags",
    "static-file.exclude-extensions",
    "status.config-url",
    "status.enable-sort",
    "status.statistics-url",
    "status.status-url",
    "url.access-allow",
    "url.access-deny",
    "url.redirect",
    "url.redirect-code",
    "url.rewrite",
    "url.rewrite-final",
    "url.rewrite-if-not-file",
    "url.rewrite-once",
    "url.rewrite-repeat",
    "url.rewrite-repeat-if-not-file",
    "userdir.active",
    "userdir.basepath",
    "userdir.exclude-user",
    "userdir.include-user",
    "userdir.letterhomes",
    "userdir.path",
    "vhostdb.backend",
    "vhostdb.cache",
    "vhostdb.dbi",
    "vhostdb.ldap",
    "vhostdb.mysql",
    "vhostdb.pgsql",
    "webdav.activate",
    "webdav.is-readonly",
    "webdav.log-xml",
    "webdav.opts",
    "webdav.sqlite-db-name",
    "wstunnel.balance",
    "wstunnel.debug",
    "wstunnel.frame-type",
    "wstunnel.map-extensions",
    "wstunnel.origins",
    "wstunnel.ping-interval",
    "wstunnel.server",
];

/// Fail closed: every lighttpd option is either one glint implements, one
/// it ignores for a stated reason, one it takes at its default only, or one
/// it refuses. None may fall through as "unknown" and be silently ignored.
#[test]
fn every_lighttpd_option_is_decided() {
    let mut undecided = Vec::new();
    for key in LIGHTTPD_1_4_69_OPTIONS {
        // A value of the wrong type still shows that glint knows the option.
        let mut s = Settings::default();
        let origin = Origin::default();
        let known = [
            Value::Str("x".into()),
            Value::Int(1),
            Value::Array(Vec::new()),
        ]
        .iter()
        .any(|v| {
            matches!(
                super::options::apply(&mut s, key, v, &origin),
                Ok(super::options::Applied::Known)
                    | Ok(super::options::Applied::KnownWarn(_))
                    | Err(_)
            )
        });
        let decided = known
            || !matches!(
                super::support::classify(key, &Value::Str("x".into())),
                Ok(super::support::Support::Unknown)
            );
        if !decided {
            undecided.push(*key);
        }
    }
    assert!(
        undecided.is_empty(),
        "options falling through as unknown: {undecided:?}"
    );
}

#!/usr/bin/env python3
"""Side-by-side benchmark of glint against lighttpd, nginx and h2o, and
the floor (benches/floor.rs: canned answers, one recv and one send per
request) that shows what the kernel's socket work alone costs.

Python 3.11 standard library only.  Every server runs on this machine, pinned
to CPU 0 with taskset; the load generators (ab, wrk, and this script's own
idle-connection client) run on CPU 1.  Only 127.0.0.1 is ever contacted.

    python3 benches/compare.py [--quick] [--rounds N] [--servers glint,lighttpd,nginx,h2o,floor]

See benches/README.md for what every figure means.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import random
import re
import resource
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOST = "127.0.0.1"  # the only address this script ever talks to
REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benches" / "results"
ALL_SERVERS = ["glint", "lighttpd", "nginx", "h2o", "floor"]
FLOOR = "floor"  # not a peer: the canned-answer server of benches/floor.rs
BASELINE = "lighttpd"

# command -> Debian package that provides it
TOOLS = {
    "lighttpd": "lighttpd",
    "nginx": "nginx-light",
    "h2o": "h2o",
    "ab": "apache2-utils",
    "wrk": "wrk",
    "taskset": "util-linux",
}
APT_LINE = "apt-get install -y lighttpd nginx-light h2o apache2-utils wrk util-linux"

INDEX_SIZE = 469       # the index.html of field report 004
JPEG_SIZE = 25_600     # the 25 KB test.jpg of field report 001
MAX_CONNS = 20_000     # every server is configured to accept at least this many
KEEPALIVE_IDLE_S = 60  # keep-alive idle timeout given to every server
NOFILE_WANT = 65_536
NOFILE = NOFILE_WANT   # what raise_nofile() got; the servers inherit it

CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# workloads

def workloads(quick: bool, tls: bool = False) -> list[dict]:
    div = 10 if quick else 1
    dur = 2 if quick else 5
    if tls:
        return tls_workloads(div, dur)
    w = [
        dict(id="ab-index-c1", tool="ab", path="/index.html", n=5000 // div, c=1, k=False),
        dict(id="ab-jpg-c5", tool="ab", path="/test.jpg", n=10000 // div, c=5, k=False),
        dict(id="ab-jpg-c50", tool="ab", path="/test.jpg", n=10000 // div, c=50, k=False),
        dict(id="ab-jpg-c100", tool="ab", path="/test.jpg", n=10000 // div, c=100, k=False),
        dict(id="ab-k-index-c100", tool="ab", path="/index.html", n=20000 // div, c=100, k=True),
        dict(id="wrk-index-c100", tool="wrk", path="/index.html", c=100, d=dur),
        dict(id="wrk-jpg-c100", tool="wrk", path="/test.jpg", c=100, d=dur),
    ]
    for x in w:
        if x["tool"] == "ab":
            x["title"] = f"ab {'-k ' if x['k'] else ''}-n {x['n']} -c {x['c']} {x['path']}"
        else:
            x["title"] = f"wrk -t1 -c{x['c']} -d{x['d']}s {x['path']}"
    return w


def tls_workloads(div: int, dur: int) -> list[dict]:
    """The HTTPS rows (issue 13), all TLS 1.3: a new connection and a full
    handshake per request (ab), keep-alive (wrk), and resumed handshakes
    (this script's own client, a session ticket from the connection before)."""
    w = [
        dict(id="tls-ab-index-c10", tool="ab", path="/index.html", n=4000 // div, c=10, k=False, tls=True),
        dict(id="tls-resume-index-c1", tool="resume", path="/index.html", n=4000 // div, c=1, k=False, tls=True),
        dict(id="tls-wrk-index-c100", tool="wrk", path="/index.html", c=100, d=dur, tls=True),
        dict(id="tls-wrk-jpg-c100", tool="wrk", path="/test.jpg", c=100, d=dur, tls=True),
    ]
    for x in w:
        if x["tool"] == "ab":
            x["title"] = f"ab -f TLS1.3 -n {x['n']} -c {x['c']} https:{x['path']} (full handshake each)"
        elif x["tool"] == "resume":
            x["title"] = f"resumed TLS 1.3 handshakes, -n {x['n']} -c 1 https:{x['path']}"
        else:
            x["title"] = f"wrk -t1 -c{x['c']} -d{x['d']}s https:{x['path']}"
    return w


# --------------------------------------------------------------------------
# prerequisites

def missing_tools() -> list[str]:
    return [cmd for cmd in TOOLS if shutil.which(cmd) is None
            and not Path("/usr/sbin", cmd).exists()]


def tool_path(cmd: str) -> str:
    p = shutil.which(cmd)
    if p:
        return p
    q = Path("/usr/sbin", cmd)
    return str(q) if q.exists() else cmd


def install_tools() -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update"], APT_LINE.split()):
        log("+ " + " ".join(cmd))
        subprocess.run(cmd, check=True, env=env, timeout=900)


# --------------------------------------------------------------------------
# the document root

def make_docroot(root: Path) -> dict:
    """Copy www/index.html and www/test.jpg from the repo, or generate them."""
    root.mkdir(parents=True, exist_ok=True)
    origin = {}
    rng = random.Random(469_25600)  # same bytes on every run
    src = REPO / "www" / "index.html"
    if src.is_file():
        shutil.copyfile(src, root / "index.html")
        origin["index.html"] = "www/index.html"
    else:
        head = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                "<title>glint test page</title></head>\n<body>\n"
                "<h1>It works</h1>\n<p>This page is the 469-byte index.html of the "
                "lighttpd field report, served by the benchmark.</p>\n<p>")
        tail = "</p>\n</body></html>\n"
        fill = INDEX_SIZE - len(head) - len(tail)
        body = head + ("lorem ipsum dolor sit amet " * 40)[:fill] + tail
        assert len(body.encode()) == INDEX_SIZE
        (root / "index.html").write_text(body)
        origin["index.html"] = f"generated ({INDEX_SIZE} bytes)"
    src = REPO / "www" / "test.jpg"
    if src.is_file():
        shutil.copyfile(src, root / "test.jpg")
        origin["test.jpg"] = "www/test.jpg"
    else:
        header = (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        trailer = b"\xff\xd9"
        payload = bytes(rng.getrandbits(8) for _ in range(JPEG_SIZE - len(header) - len(trailer)))
        (root / "test.jpg").write_bytes(header + payload + trailer)
        origin["test.jpg"] = f"generated ({JPEG_SIZE} bytes, random behind a JPEG header)"
    # servers that drop privileges to nobody must still read the files
    for p in [root, *root.iterdir()]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    origin["sizes"] = {p.name: p.stat().st_size for p in root.iterdir()}
    return origin


# --------------------------------------------------------------------------
# server configurations (one worker, access log off, keep-alive 60 s, ETag,
# Last-Modified, sendfile where the server has it, error log to a file)

def conf_lighttpd(tmp: Path, docroot: Path, port: int, defer_accept: bool = True,
                  tls: dict | None = None) -> str:
    """lighttpd.conf (gateways.py and glint's -f runs use it too). `tls`
    (see make_cert) makes the listener HTTPS with mod_openssl."""
    defer = ("# TCP_DEFER_ACCEPT: accept only once the request arrived\nserver.defer-accept = 1"
             if defer_accept else "# server.defer-accept: off (the default)")
    modules = '"mod_openssl", "mod_staticfile"' if tls else '"mod_staticfile"'
    ssl = (f'ssl.engine = "enable"\nssl.pemfile = "{tls["pem"]}"\n'
           'ssl.openssl.ssl-conf-cmd = ( "MinProtocol" => "TLSv1.3" )\n') if tls else ""
    return f"""# generated by benches/compare.py
server.document-root = "{docroot}"
server.bind = "{HOST}"
server.port = {port}
{ssl}server.errorlog = "{tmp}/lighttpd-error.log"
server.pid-file = "{tmp}/lighttpd.pid"
server.modules = ( {modules} )
# no mod_accesslog: access log off
server.network-backend = "sendfile"
server.max-worker = 0
# lighttpd allows at most max-fds/2 connections; max-fds cannot pass RLIMIT_NOFILE
server.max-fds = {NOFILE}
server.max-connections = {min(MAX_CONNS, NOFILE // 2)}
server.listen-backlog = 4096
{defer}
server.max-keep-alive-idle = {KEEPALIVE_IDLE_S}
server.max-keep-alive-requests = 1000000
server.max-read-idle = {KEEPALIVE_IDLE_S}
static-file.etags = "enable"
index-file.names = ( "index.html" )
mimetype.assign = ( ".html" => "text/html", ".jpg" => "image/jpeg" )
"""


def conf_glint(tmp: Path, docroot: Path, port: int, defer_accept: bool, tls: dict | None) -> str:
    """glint's -f configuration: what its command line sets (docroot, bind,
    port, --max-connections 20000 and the descriptors for them), plus the
    listener options the command line has no flag for."""
    ssl = (f'ssl.engine = "enable"\nssl.pemfile = "{tls["pem"]}"\n'
           'ssl.openssl.ssl-conf-cmd = ( "MinProtocol" => "TLSv1.3" )\n') if tls else ""
    return f"""# generated by benches/compare.py
server.document-root = "{docroot}"
server.bind = "{HOST}"
server.port = {port}
{ssl}server.max-connections = {MAX_CONNS}
server.max-fds = {NOFILE}
{"server.defer-accept = 1" if defer_accept else "# server.defer-accept: off (the default)"}
server.max-keep-alive-idle = {KEEPALIVE_IDLE_S}
server.max-keep-alive-requests = 1000000
server.max-read-idle = {KEEPALIVE_IDLE_S}
index-file.names = ( "index.html" )
"""


def conf_nginx(tmp: Path, docroot: Path, port: int, defer_accept: bool = True,
               tls: dict | None = None) -> str:
    deferred = " deferred" if defer_accept else ""
    ssl = ""
    if tls:
        ssl = (f"        ssl_certificate {tls['cert']};\n        ssl_certificate_key {tls['key']};\n"
               "        ssl_protocols TLSv1.3;\n")
    return f"""# generated by benches/compare.py
worker_processes 1;
daemon off;
master_process on;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
worker_rlimit_nofile {NOFILE};
events {{
    worker_connections {MAX_CONNS};
    use epoll;
}}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;   # Debian's nginx.conf pairs it with sendfile: headers and body in one segment
    # lighttpd (stat cache, fd cache for small files) and h2o (file cache)
    # keep open files and stat results between requests; this is nginx's way
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    keepalive_timeout {KEEPALIVE_IDLE_S}s;
    keepalive_requests 1000000;
    etag on;
    server_tokens off;
    types {{ text/html html; image/jpeg jpg; }}
    default_type application/octet-stream;
    client_body_temp_path {tmp}/nginx-body;
    proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fastcgi;
    uwsgi_temp_path {tmp}/nginx-uwsgi;
    scgi_temp_path {tmp}/nginx-scgi;
    server {{
        listen {HOST}:{port}{" ssl" if tls else ""} backlog=4096{deferred};   # deferred: TCP_DEFER_ACCEPT
{ssl}        root {docroot};
        index index.html;
    }}
}}
"""


def conf_h2o(tmp: Path, docroot: Path, port: int, tls: dict | None = None) -> str:
    # h2o 2.2 has no TCP_DEFER_ACCEPT setting, and no sendfile: it reads files with pread and writes them
    # itself.  Access log off = no access-log directive.
    ssl = ""
    if tls:
        ssl = (f"  ssl:\n    certificate-file: {tls['cert']}\n    key-file: {tls['key']}\n"
               "    minimum-version: TLSv1.3\n")
    return f"""# generated by benches/compare.py
listen:
  host: {HOST}
  port: {port}
{ssl}num-threads: 1
max-connections: {MAX_CONNS}
http1-request-timeout: {KEEPALIVE_IDLE_S}
error-log: {tmp}/h2o-error.log
file.etag: ON
hosts:
  default:
    paths:
      /:
        file.dir: {docroot}
        file.index: [ 'index.html' ]
"""


# --------------------------------------------------------------------------
# /proc readings

def group_pids(pgid: int) -> list[int]:
    """Every process whose process group is pgid (the server and its children)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        fields = s[s.rindex(")") + 2:].split()
        # fields[0] is field 3 (state); pgrp is field 5
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(d))
    return sorted(out)


def by_task(pids: list[int], read) -> dict[tuple[int, int], int]:
    """`read("/proc/PID/task/TID")` for every thread of `pids` (None: skipped)."""
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            v = read(f"/proc/{pid}/task/{tid}")
            if v is not None:
                out[(pid, int(tid))] = v
    return out


def _task_cpu_ns(base: str) -> int | None:
    try:
        with open(base + "/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(base + "/stat") as f:
            s = f.read()
        fields = s[s.rindex(")") + 2:].split()
        ticks = int(fields[11]) + int(fields[12])  # fields 14 and 15
        return ticks * 1_000_000_000 // CLK_TCK
    except (OSError, ValueError, IndexError):
        return None


def cpu_ns_by_task(pids: list[int]) -> dict[tuple[int, int], int]:
    """On-CPU time of every thread, in ns: first field of /proc/PID/task/TID/schedstat
    (falls back to utime+stime from /proc/PID/task/TID/stat, in clock ticks)."""
    return by_task(pids, _task_cpu_ns)


def cpu_delta_ns(before: dict, after: dict) -> int:
    return sum(v - before.get(k, 0) for k, v in after.items())


def pss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def pss_split(pids: list[int]) -> dict:
    """Pss_Anon and Pss_File (KiB) of smaps_rollup, summed: anonymous pages
    (heap, stacks, written data) are the process's own; file-backed ones are
    the page cache's pages of the binary and libraries it has mapped."""
    out = {"anon": 0, "file": 0, "shmem": 0}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    for key, name in (("Pss_Anon:", "anon"), ("Pss_File:", "file"), ("Pss_Shmem:", "shmem")):
                        if line.startswith(key):
                            out[name] += int(line.split()[1])
        except OSError:
            pass
    return out


def uss_kib(pids: list[int]) -> int:
    """Private_Clean + Private_Dirty: memory only these processes hold (no share
    of libc), steadier than PSS when other processes come and go."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith(("Private_Clean:", "Private_Dirty:")):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def pss_by_comm(pids: list[int]) -> dict[str, int]:
    """PSS per command name (h2o's idle crash-handler helper is a perl process)."""
    out: dict[str, int] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        out[f"{comm}[{pid}]"] = pss_kib([pid])
    return out


def loadavg() -> float | None:
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError):
        return None


def tcp_out_segs() -> int | None:
    """TCP segments this machine has sent (OutSegs of /proc/net/snmp): on
    loopback, both the server's and the client's."""
    try:
        with open("/proc/net/snmp") as f:
            rows = [line.split() for line in f if line.startswith("Tcp:")]
        return int(rows[1][rows[0].index("OutSegs")])
    except (OSError, ValueError, IndexError):
        return None


def cpu0_times() -> tuple[int, int]:
    """(busy, total) jiffies of the server CPU from /proc/stat."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu0 "):
                v = [int(x) for x in line.split()[1:]]
                idle = v[3] + v[4]
                return sum(v) - idle, sum(v)
    return 0, 0


# --------------------------------------------------------------------------
# servers

def free_port(start: int) -> int:
    for port in range(start, start + 500):
        s = socket.socket()
        try:
            s.bind((HOST, port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port")


def client_tls_context() -> "ssl.SSLContext":
    """The benchmark's TLS client: TLS 1.3 only, no certificate check (the
    servers present the script's own self-signed certificate)."""
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    return ctx


def http_get(port: int, path: str, timeout: float = 5.0, tls: bool = False) -> tuple[int, dict, bytes]:
    with socket.create_connection((HOST, port), timeout=timeout) as raw:
        s = client_tls_context().wrap_socket(raw, server_hostname="localhost") if tls else raw
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: bench\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


class Server:
    def __init__(self, name: str, argv: list[str], port: int, errlog: Path, tmp: Path, tls: bool = False):
        self.name, self.argv, self.port, self.errlog, self.tmp = name, argv, port, errlog, tmp
        self.tls = tls
        self.proc: subprocess.Popen | None = None
        self.error: str | None = None
        self.stdout_path = tmp / f"{name}-stdout.log"

    def start(self, timeout: float = 20.0) -> bool:
        out = open(self.stdout_path, "wb")
        log(f"[{self.name}] starting: {' '.join(self.argv)}")
        try:
            self.proc = subprocess.Popen(
                ["taskset", "-c", SERVER_CPU, *self.argv], stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            self.error = f"cannot start: {e}"
            return False
        finally:
            out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.error = f"exited with {self.proc.returncode} at start: {self.tail_logs()}"
                return False
            try:
                status, _, _ = http_get(self.port, "/index.html", timeout=2, tls=self.tls)
                if status == 200:
                    return True
            except (OSError, ValueError, IndexError):
                pass
            time.sleep(0.1)
        self.error = f"not answering on port {self.port} after {timeout}s: {self.tail_logs()}"
        self.stop()
        return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pids(self) -> list[int]:
        if not self.alive():
            return []
        return group_pids(self.proc.pid)

    def tail_logs(self) -> str:
        txt = ""
        for p in (self.stdout_path, self.errlog):
            try:
                txt += p.read_text(errors="replace")[-600:]
            except OSError:
                pass
        return " ".join(txt.split())[-800:]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = self.proc.pid
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # children (nginx worker) may outlive the leader for a moment
        for pid in group_pids(pgid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def stop_process(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 20.0) -> bool:
    """Sends `sig` to `proc` and waits up to `timeout` s for it to exit,
    killing it after that. True when it exited on the signal."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False


def glint_binary(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).resolve()
    if os.environ.get("GLINT_BIN"):
        return Path(os.environ["GLINT_BIN"]).resolve()
    p = REPO / "target" / "release" / "glint"
    if not p.exists():
        log(f"+ cargo build --release   (in {REPO}, {p} is missing)")
        subprocess.run(["cargo", "build", "--release", "--bin", "glint"], cwd=REPO,
                       check=True, timeout=1800)
    return p


def make_cert(tmp: Path) -> dict:
    """One ECDSA P-256 certificate (self-signed, CN localhost) for every
    server: `pem` holds certificate and key (lighttpd's and glint's
    ssl.pemfile), `cert` and `key` the two apart (nginx, h2o)."""
    cert, key, pem = tmp / "cert.pem", tmp / "key.pem", tmp / "server.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "30", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    pem.write_bytes(cert.read_bytes() + key.read_bytes())
    for p in (cert, key, pem):
        p.chmod(0o644)  # nginx's and h2o's workers read them as another user
    return {"cert": str(cert), "key": str(key), "pem": str(pem)}


def floor_binary(tmp: Path) -> Path:
    """benches/floor.rs built with rustc alone (it uses only std): a second."""
    out = tmp / "floor"
    if not out.exists():
        subprocess.run(["rustc", "--edition", "2021", "-C", "opt-level=3", "-C", "panic=abort",
                        str(REPO / "benches" / "floor.rs"), "-o", str(out)],
                       check=True, capture_output=True, timeout=300)
    return out


def glint_names(args) -> dict[str, Path]:
    """The glint binaries of this run by server name: `glint`, then
    `glint-b`, `glint-c`, ... for each --glint-bin-b."""
    out = {"glint": glint_binary(args.glint_bin)}
    for i, b in enumerate(getattr(args, "glint_bin_b", None) or []):
        out[f"glint-{chr(ord('b') + i)}"] = Path(b).resolve()
    return out


def is_glint(name: str) -> bool:
    return name == "glint" or name.startswith("glint-")


def make_server(name: str, tmp: Path, docroot: Path, port: int, args) -> Server:
    defer = getattr(args, "defer_accept", "on") == "on"
    tls = getattr(args, "tls_files", None)
    if is_glint(name):
        # run a private copy: others may rebuild target/release/glint mid-run
        binary = tmp / name
        shutil.copy2(glint_names(args)[name], binary)
        errlog = tmp / f"{name}-error.log"
        if args.glint_lighttpd_conf:
            conf = tmp / f"{name}.conf"
            conf.write_text(conf_lighttpd(tmp, docroot, port, defer, tls).replace("lighttpd-error", f"{name}-error")
                            .replace("lighttpd.pid", f"{name}.pid"))
            argv = [str(binary), "-D", "-f", str(conf)]
        elif defer or tls:
            # the command line has no flag for server.defer-accept or ssl.*
            conf = tmp / f"{name}.conf"
            conf.write_text(conf_glint(tmp, docroot, port, defer, tls))
            argv = [str(binary), "-D", "-f", str(conf)]
        else:
            argv = [str(binary), "-D", "--document-root", str(docroot), "--bind", HOST,
                    "--port", str(port), "--max-connections", str(MAX_CONNS)]
        return Server(name, argv, port, errlog, tmp, tls=bool(tls))
    if name == "lighttpd":
        conf = tmp / "lighttpd.conf"
        conf.write_text(conf_lighttpd(tmp, docroot, port, defer, tls))
        return Server(name, [tool_path("lighttpd"), "-D", "-f", str(conf)], port,
                      tmp / "lighttpd-error.log", tmp, tls=bool(tls))
    if name == "nginx":
        conf = tmp / "nginx.conf"
        conf.write_text(conf_nginx(tmp, docroot, port, defer, tls))
        return Server(name, [tool_path("nginx"), "-p", str(tmp), "-e", str(tmp / "nginx-error.log"),
                             "-c", str(conf)], port, tmp / "nginx-error.log", tmp, tls=bool(tls))
    if name == FLOOR:
        if tls:
            raise ValueError("the floor speaks no TLS")
        return Server(name, [str(floor_binary(tmp)), "--bind", HOST, "--port", str(port),
                             "--document-root", str(docroot)], port, tmp / "floor-error.log", tmp)
    if name == "h2o":
        conf = tmp / "h2o.conf"
        conf.write_text(conf_h2o(tmp, docroot, port, tls))
        return Server(name, [tool_path("h2o"), "-c", str(conf)], port, tmp / "h2o-error.log", tmp,
                      tls=bool(tls))
    raise ValueError(name)


def server_version(name: str, args, binary: Path | None = None) -> str:
    try:
        if is_glint(name):
            b = Path(binary or args.glint_bin or os.environ.get("GLINT_BIN")
                     or REPO / "target" / "release" / "glint").resolve()
            v = subprocess.run([str(b), "-v"], capture_output=True, text=True, timeout=10)
            ver = ((v.stdout + v.stderr).strip().splitlines() or ["glint"])[0]
            built = _dt.datetime.fromtimestamp(b.stat().st_mtime, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            repo = b.parent.parent.parent
            r = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%h %s"],
                               capture_output=True, text=True, timeout=10)
            head = f", {repo} at {r.stdout.strip()}" if r.returncode == 0 else ""
            return f"{ver} (binary built {built}{head})"
        if name == FLOOR:
            return "benches/floor.rs: canned answers, one recv and one send per request"
        cmd = {"lighttpd": ["-v"], "nginx": ["-v"], "h2o": ["--version"]}[name]
        r = subprocess.run([tool_path(name), *cmd], capture_output=True, text=True, timeout=10)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception as e:  # noqa: BLE001 - only informative
        return f"{name} (version unknown: {e})"


# --------------------------------------------------------------------------
# load generators

def client_cmd(argv: list[str]) -> list[str]:
    return ["taskset", "-c", CLIENT_CPU, *argv]


def parse_ab(out: str, csv_path: Path) -> dict:
    def num(pattern, default=None, cast=float):
        m = re.search(pattern, out, re.M)
        return cast(m.group(1)) if m else default
    r = {
        "completed": num(r"^Complete requests:\s+(\d+)", 0, int),
        "failed": num(r"^Failed requests:\s+(\d+)", 0, int),
        "non2xx": num(r"^Non-2xx responses:\s+(\d+)", 0, int),
        "keepalive_reqs": num(r"^Keep-Alive requests:\s+(\d+)", 0, int),
        "rps": num(r"^Requests per second:\s+([\d.]+)", 0.0),
        "elapsed_s": num(r"^Time taken for tests:\s+([\d.]+)", 0.0),
    }
    m = re.search(r"^SSL/TLS Protocol:\s+(\S+)", out, re.M)
    if m:
        r["tls"] = m.group(1)  # e.g. TLSv1.3,TLS_AES_256_GCM_SHA384,256,256
    m = re.search(r"^Server Temp Key:\s+(.+)$", out, re.M)
    if m:
        r["tls_key_exchange"] = m.group(1).strip()
    m = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", out)
    if m:
        r["failed_by_kind"] = dict(zip(("connect", "receive", "length", "exceptions"), map(int, m.groups())))
    p99 = None
    try:
        for line in csv_path.read_text().splitlines()[1:]:
            pct, _, ms = line.partition(",")
            if pct.strip() == "99":
                p99 = float(ms)
            elif pct.strip() == "100":
                r["max_ms"] = float(ms)
    except (OSError, ValueError):
        pass
    if p99 is None:
        p99 = num(r"^\s+99%\s+(\d+)", None)
    r["p99_ms"] = p99
    return r


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def parse_wrk(out: str) -> dict:
    def num(pattern, default=0, cast=int):
        m = re.search(pattern, out, re.M)
        return cast(m.group(1)) if m else default
    m = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s|m|h)\s*$", out, re.M)
    p99 = float(m.group(1)) * _UNITS[m.group(2)] if m else None
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {
        "completed": num(r"^\s+(\d+) requests in"),
        "failed": sum(int(x) for x in sock.groups()) if sock else 0,
        "non2xx": num(r"Non-2xx or 3xx responses:\s+(\d+)"),
        "rps": num(r"^Requests/sec:\s+([\d.]+)", 0.0, float),
        "elapsed_s": num(r"requests in ([\d.]+)s", 0.0, float),
        "p99_ms": p99,
    }


def run_load(wl: dict, port: int, tmp: Path) -> dict:
    scheme = "https" if wl.get("tls") else "http"
    url = f"{scheme}://{HOST}:{port}{wl['path']}"
    assert url.startswith(f"{scheme}://127.0.0.1:")
    if wl["tool"] == "resume":
        argv = [sys.executable, str(Path(__file__).resolve()), "--tls-resume-client",
                f"{port}:{wl['n']}:{wl['path']}"]
        return run_client(client_cmd(argv), 60 + wl["n"] / 50, parse_resume)
    if wl["tool"] == "ab":
        csv_path = tmp / "ab-percentiles.csv"
        csv_path.unlink(missing_ok=True)
        argv = ["ab", "-q", "-r", "-s", "10", "-n", str(wl["n"]), "-c", str(wl["c"]),
                "-e", str(csv_path)] + (["-k"] if wl["k"] else []) + (["-f", "TLS1.3"] if wl.get("tls") else []) + [url]
        timeout = 30 + wl["n"] / 200  # generous: even 200 req/s finishes in time
    else:
        argv = ["wrk", "-t1", f"-c{wl['c']}", f"-d{wl['d']}s", "--latency", "--timeout", "10s", url]
        timeout = wl["d"] + 30
    if wl["tool"] == "ab":
        return run_client(client_cmd(argv), timeout, lambda out: parse_ab(out, tmp / "ab-percentiles.csv"))
    return run_client(client_cmd(argv), timeout, parse_wrk)


def resume_client(spec: str) -> int:
    """--tls-resume-client PORT:N:PATH — N TLS 1.3 connections one after
    the other, each offering the session ticket of the one before (the first
    is a full handshake), one `GET PATH` with `Connection: close` on each.
    Prints what it did for parse_resume."""
    port_s, n_s, path = spec.split(":", 2)
    port, n = int(port_s), int(n_s)
    ctx = client_tls_context()
    session = None
    done = reused = errors = non2xx = 0
    first_error = ""
    req = f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode()
    t0 = time.monotonic()
    for _ in range(n):
        try:
            with socket.create_connection((HOST, port), timeout=10) as raw:
                # as ab, wrk and browsers do: else the request waits behind the
                # unacknowledged Finished for the server's delayed ACK (40 ms)
                # when the server sends nothing after a resumed handshake
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with ctx.wrap_socket(raw, server_hostname="localhost", session=session) as s:
                    s.sendall(req)
                    buf = b""
                    while True:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        buf += chunk
                    reused += s.session_reused
                    # TLS 1.3 tickets come after the handshake: take the newest
                    session = s.session or session
            status = int(buf.split(b" ", 2)[1]) if buf.startswith(b"HTTP/") else 0
            done += 1
            non2xx += not 200 <= status < 300
        except (OSError, ValueError, IndexError) as e:
            errors += 1
            first_error = first_error or repr(e)
    elapsed = time.monotonic() - t0
    print(f"completed {done} reused {reused} errors {errors} non2xx {non2xx} elapsed {elapsed:.6f}")
    if first_error:
        print(f"first error {first_error}")
    return 0


def parse_resume(out: str) -> dict:
    m = re.search(r"completed (\d+) reused (\d+) errors (\d+) non2xx (\d+) elapsed ([\d.]+)", out)
    if not m:
        return {"completed": 0, "failed": 0, "non2xx": 0, "rps": 0.0, "elapsed_s": 0.0, "p99_ms": None}
    done, reused, errors, non2xx, elapsed = int(m[1]), int(m[2]), int(m[3]), int(m[4]), float(m[5])
    r = {"completed": done, "failed": errors, "non2xx": non2xx, "resumed": reused,
         "rps": done / elapsed if elapsed else 0.0, "elapsed_s": elapsed, "p99_ms": None}
    e = re.search(r"^first error (.*)$", out, re.M)
    if e:
        r["first_error"] = e.group(1)
    if done and reused < done - 1:
        r["warning"] = f"only {reused} of {done} handshakes resumed a session"
    return r


def run_client(argv: list[str], timeout: float, parse) -> dict:
    """Runs a load client; `parse(stdout)` makes the result, to which this adds
    the client's CPU seconds, the wall time, the exit code and any error."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        out, rc = p.stdout, p.returncode
        err = p.stderr.strip()
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, err = -1, f"timed out after {timeout:.0f}s"
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = parse(out)
    r["client_cpu_s"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    r["wall_s"] = wall
    r["rc"] = rc
    if rc != 0:
        r["error"] = (err or out)[-400:]
    return r


# --------------------------------------------------------------------------
# idle keep-alive connections

def response_complete(buf: bytes) -> int | None:
    """Status of the HTTP response in buf once its Content-Length body is all there."""
    head, sep, body = buf.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    return status if len(body) >= length else None


def idle_tls_connections(srv: Server, n: int, socks: list, fail) -> None:
    """The TLS form of idle_connections' loop: one connection after the
    other (a full handshake each), one answered GET on each, kept open."""
    ctx = client_tls_context()
    req = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n"
    t0 = time.monotonic()
    errors = 0
    while len(socks) < n and errors < 200 and time.monotonic() - t0 < 300:
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.settimeout(10)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # see resume_client
        try:
            raw.connect((HOST, srv.port))
            s = ctx.wrap_socket(raw, server_hostname="localhost")
            s.sendall(req)
            buf = b""
            status = None
            while status is None:
                chunk = s.recv(65536)
                if not chunk:
                    raise OSError("closed by server before the response ended")
                buf += chunk
                status = response_complete(buf)
            if status != 200:
                raise OSError(f"status {status}")
            socks.append(s)
        except (OSError, ValueError, IndexError) as e:
            errors += 1
            fail(raw, f"tls: {e!r}")


def idle_connections(srv: Server, n: int, batch: int = 250, batch_timeout: float = 10.0) -> dict:
    """Open n keep-alive connections, one answered GET on each, keep them open
    and read the server's PSS.  Each batch has one deadline, so a server that
    leaves some requests unanswered costs at most batch_timeout per batch."""
    req = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n"
    socks: list[socket.socket] = []
    errors = 0
    first_error = None
    t0 = time.monotonic()

    def fail(s: socket.socket, why: str) -> None:
        nonlocal errors, first_error
        errors += 1
        first_error = first_error or why
        s.close()

    try:
        if srv.tls:
            idle_tls_connections(srv, n, socks, fail)
        while not srv.tls and len(socks) < n and errors < 200 and time.monotonic() - t0 < 120:
            pending: dict[socket.socket, bytes] = {}
            for _ in range(min(batch, n - len(socks))):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.settimeout(5)
                try:
                    s.connect((HOST, srv.port))
                    s.sendall(req)
                    s.setblocking(False)
                    pending[s] = b""
                except OSError as e:
                    fail(s, f"connect/send: {e!r}")
            if not pending:
                break
            sel = selectors.DefaultSelector()
            for s in pending:
                sel.register(s, selectors.EVENT_READ)
            deadline = time.monotonic() + batch_timeout
            while pending and time.monotonic() < deadline:
                for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    s = key.fileobj
                    try:
                        chunk = s.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError as e:
                        sel.unregister(s)
                        del pending[s]
                        fail(s, f"recv: {e!r}")
                        continue
                    if not chunk:
                        sel.unregister(s)
                        del pending[s]
                        fail(s, "closed by server before the response ended")
                        continue
                    buf = pending[s] + chunk
                    pending[s] = buf
                    try:
                        status = response_complete(buf)
                    except (ValueError, IndexError):
                        status = -1
                    if status is None:
                        continue
                    sel.unregister(s)
                    del pending[s]
                    if status == 200:
                        socks.append(s)
                    else:
                        fail(s, f"status {status}")
            for s in list(pending):
                sel.unregister(s)
                fail(s, f"no complete response within {batch_timeout:.0f}s")
            pending.clear()
            sel.close()
        time.sleep(1.0)  # let the server settle after the last batch
        pids = srv.pids()
        return {"held": len(socks), "wanted": n, "errors": errors, "first_error": first_error,
                "pss_kib": pss_kib(pids), "uss_kib": uss_kib(pids), "by_process": pss_by_comm(pids),
                "pss_split": pss_split(pids), "pids": len(pids), "setup_s": time.monotonic() - t0}
    finally:
        linger = (1).to_bytes(4, "little") + (0).to_bytes(4, "little")
        for s in socks:
            try:
                # RST instead of FIN: leaves no TIME_WAIT behind on the client
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            except OSError:
                pass
            s.close()
        time.sleep(0.5)


# --------------------------------------------------------------------------
# one measured run

def measure(srv: Server, wl: dict, tmp: Path) -> dict:
    pids = srv.pids()
    if not pids:
        return {"error": "server not running"}
    c0 = cpu_ns_by_task(pids)
    b0, t0 = cpu0_times()
    s0 = tcp_out_segs()
    r = run_load(wl, srv.port, tmp)
    s1 = tcp_out_segs()
    pids2 = srv.pids()
    c1 = cpu_ns_by_task(sorted(set(pids) | set(pids2)))
    b1, t1 = cpu0_times()
    cpu_ns = cpu_delta_ns(c0, c1)
    done = r.get("completed") or 0
    if s0 is not None and s1 is not None and done:
        r["segs_per_req"] = (s1 - s0) / done
    r["server_cpu_s"] = cpu_ns / 1e9
    r["cpu_us_per_req"] = cpu_ns / 1000 / done if done else None
    r["server_busy_pct"] = 100 * cpu_ns / 1e9 / r["wall_s"] if r["wall_s"] else None
    r["client_busy_pct"] = 100 * r["client_cpu_s"] / r["wall_s"] if r["wall_s"] else None
    # everything that ran on the server CPU (softirqs, and other people's
    # jobs if they land there): a check on noise, not a per-server figure
    r["cpu0_busy_pct"] = 100 * (b1 - b0) / (t1 - t0) if t1 > t0 else None
    if r["cpu0_busy_pct"] is not None and r["server_busy_pct"] is not None:
        r["other_on_cpu0_pct"] = max(0.0, r["cpu0_busy_pct"] - r["server_busy_pct"])
    r["loadavg"] = loadavg()
    r["errors_total"] = (r.get("failed") or 0) + (r.get("non2xx") or 0)
    if wl.get("k") and done and (r.get("keepalive_reqs") or 0) < 0.9 * done:
        r["warning"] = f"only {r.get('keepalive_reqs')} of {done} requests kept the connection alive"
    if not srv.alive():
        r["error"] = (r.get("error", "") + f" server died: {srv.tail_logs()}").strip()
    return r


# --------------------------------------------------------------------------
# reporting

METRICS = [  # key, label, format, lower-is-better
    ("rps", "requests/s", "{:,.0f}"),
    ("cpu_us_per_req", "server CPU µs/request", "{:.1f}"),
    ("p99_ms", "p99 latency ms", "{:.2f}"),
    ("segs_per_req", "TCP segments/request (both ways)", "{:.2f}"),
    ("errors_total", "failed + non-2xx", "{:.0f}"),
    ("server_busy_pct", "server CPU busy %", "{:.0f}"),
]
MEM_METRICS = [
    ("pss_idle_kib", "PSS idle, KiB", "{:,.0f}"),
    ("pss_warm_kib", "PSS after the first requests, KiB", "{:,.0f}"),
    ("pss_warm_anon_kib", "… of it anonymous (Pss_Anon), KiB", "{:,.0f}"),
    ("pss_warm_file_kib", "… of it file-backed (Pss_File), KiB", "{:,.0f}"),
    ("pss_conns_kib", "PSS with idle keep-alive conns, KiB", "{:,.0f}"),
    ("per_conn_b", "PSS per idle keep-alive conn, bytes", "{:,.0f}"),
    ("uss_idle_kib", "USS (private) idle, KiB", "{:,.0f}"),
    ("uss_conns_kib", "USS with idle keep-alive conns, KiB", "{:,.0f}"),
    ("conns_held", "idle keep-alive conns held", "{:,.0f}"),
]


def median(vals):
    vals = [v for v in vals if isinstance(v, (int, float))]
    return statistics.median(vals) if vals else None


def summarise(raw: dict, servers: list[str], wls: list[dict]) -> dict:
    summ = {}
    for wl in wls:
        for key, _, _ in METRICS:
            for s in servers:
                runs = raw["runs"].get(s, {}).get(wl["id"], [])
                summ.setdefault(wl["id"], {}).setdefault(key, {})[s] = median([r.get(key) for r in runs])
    mem = {}
    for s in servers:
        m = raw["memory"].get(s, {})
        mem.setdefault("pss_idle_kib", {})[s] = m.get("pss_idle_kib")
        conns = m.get("conns", [])
        mem.setdefault("pss_conns_kib", {})[s] = median([c.get("pss_kib") for c in conns])
        mem.setdefault("conns_held", {})[s] = median([c.get("held") for c in conns])
        mem.setdefault("uss_idle_kib", {})[s] = m.get("uss_idle_kib")
        mem.setdefault("uss_conns_kib", {})[s] = median([c.get("uss_kib") for c in conns])
        mem.setdefault("pss_warm_kib", {})[s] = m.get("pss_warm_kib")
        split = m.get("pss_warm_split") or {}
        mem.setdefault("pss_warm_anon_kib", {})[s] = split.get("anon")
        mem.setdefault("pss_warm_file_kib", {})[s] = split.get("file")
        warm = m.get("pss_warm_kib") or m.get("pss_idle_kib")
        per = [(c["pss_kib"] - warm) * 1024 / c["held"] for c in conns
               if c.get("held") and c.get("pss_kib") is not None and warm is not None]
        mem.setdefault("per_conn_b", {})[s] = median(per)
    summ["memory"] = mem
    return summ


def cell(val, base, fmt) -> str:
    if val is None:
        return "—"
    txt = fmt.format(val)
    if base is None:
        return txt
    if base == 0:
        return txt + (" (=)" if val == 0 else "")
    return f"{txt} ({val / base:.2f}×)"


def baseline_of(servers: list[str]) -> str | None:
    return BASELINE if BASELINE in servers else (servers[0] if servers else None)


def render_table(summ: dict, servers: list[str], wls: list[dict]) -> str:
    base = baseline_of(servers)
    lines = ["| workload | metric | " + " | ".join(servers) + " |",
             "|---|---|" + "---:|" * len(servers)]
    for wl in wls:
        for key, label, fmt in METRICS:
            row = summ[wl["id"]][key]
            b = row.get(base) if key != "server_busy_pct" else None
            cells = [cell(row.get(s), b, fmt) if key not in ("errors_total", "server_busy_pct")
                     else cell(row.get(s), None, fmt) for s in servers]
            lines.append(f"| `{wl['title']}` | {label} | " + " | ".join(cells) + " |")
    for key, label, fmt in MEM_METRICS:
        row = summ["memory"][key]
        b = row.get(base) if key != "conns_held" else None
        cells = [cell(row.get(s), b, fmt) for s in servers]
        lines.append(f"| memory | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_console(summ: dict, servers: list[str], wls: list[dict]) -> str:
    base = baseline_of(servers)
    out = [f"medians over rounds; (ratio×) is to {base}"]
    w0 = 44
    out.append(" " * w0 + "".join(f"{s:>22}" for s in servers))
    for wl in wls:
        out.append(wl["title"])
        for key, label, fmt in METRICS:
            row = summ[wl["id"]][key]
            b = row.get(base) if key not in ("errors_total", "server_busy_pct") else None
            out.append(f"  {label:<{w0 - 2}}" + "".join(f"{cell(row.get(s), b, fmt):>22}" for s in servers))
    out.append("memory")
    for key, label, fmt in MEM_METRICS:
        row = summ["memory"][key]
        b = row.get(base) if key != "conns_held" else None
        out.append(f"  {label:<{w0 - 2}}" + "".join(f"{cell(row.get(s), b, fmt):>22}" for s in servers))
    return "\n".join(out)


COLORS = {"glint": "#d9534f", "glint-b": "#8e3b38", "glint-c": "#e8a09e",
          "lighttpd": "#f0ad4e", "nginx": "#5cb85c", "h2o": "#5bc0de", "floor": "#999999"}


def esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def render_svg(summ: dict, servers: list[str], wls: list[dict], subtitle: str) -> str:
    vals = {(w["id"], s): summ[w["id"]]["cpu_us_per_req"].get(s) for w in wls for s in servers}
    vmax = max([v for v in vals.values() if v] or [1.0])
    # a round axis maximum
    mag = 10 ** len(str(int(vmax))) / 10
    top = next(m * mag for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * mag >= vmax)
    bar_w, gap, group_gap = 18, 3, 26
    group_w = len(servers) * (bar_w + gap) - gap
    left, right, plot_top, plot_h = 70, 20, 70, 300
    width = left + right + len(wls) * (group_w + group_gap)
    height = plot_top + plot_h + 120
    y = lambda v: plot_top + plot_h - plot_h * v / top  # noqa: E731
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="{left}" y="22" font-size="15" font-weight="bold">Server CPU time per request (µs, lower is better)</text>',
         f'<text x="{left}" y="40" fill="#555">{esc(subtitle)}</text>']
    for i in range(6):
        v = top * i / 5
        yy = y(v)
        o.append(f'<line x1="{left}" x2="{width - right}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{v:g}</text>')
    o.append(f'<line x1="{left}" x2="{left}" y1="{plot_top}" y2="{plot_top + plot_h}" stroke="#333"/>')
    o.append(f'<line x1="{left}" x2="{width - right}" y1="{plot_top + plot_h}" y2="{plot_top + plot_h}" stroke="#333"/>')
    for gi, wl in enumerate(wls):
        gx = left + group_gap / 2 + gi * (group_w + group_gap)
        for si, s in enumerate(servers):
            v = vals[(wl["id"], s)]
            x = gx + si * (bar_w + gap)
            if v is None:
                o.append(f'<text x="{x + bar_w / 2:.1f}" y="{plot_top + plot_h - 4}" text-anchor="middle" fill="#999">–</text>')
                continue
            o.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bar_w}" height="{plot_top + plot_h - y(v):.1f}" '
                     f'fill="{COLORS.get(s, "#888")}"><title>{esc(s)} {esc(wl["title"])}: {v:.1f} µs</title></rect>')
            o.append(f'<text x="{x + bar_w / 2:.1f}" y="{y(v) - 3:.1f}" text-anchor="middle" font-size="8">{v:.1f}</text>' if v < 10 else
                     f'<text x="{x + bar_w / 2:.1f}" y="{y(v) - 3:.1f}" text-anchor="middle" font-size="8">{v:.0f}</text>')
        lx = gx + group_w / 2
        ly = plot_top + plot_h + 14
        parts = wl["title"].split(" /")
        o.append(f'<text x="{lx:.1f}" y="{ly}" text-anchor="middle" font-size="9">{esc(parts[0])}</text>')
        if len(parts) > 1:
            o.append(f'<text x="{lx:.1f}" y="{ly + 12}" text-anchor="middle" font-size="9">/{esc(parts[1])}</text>')
    lx = left
    ly = height - 30
    for s in servers:
        o.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{COLORS.get(s, "#888")}"/>')
        o.append(f'<text x="{lx + 16}" y="{ly}">{esc(s)}</text>')
        lx += 90
    o.append("</svg>")
    return "\n".join(o) + "\n"


# --------------------------------------------------------------------------
# main

SERVER_CPU, CLIENT_CPU = "0", "1"


def raise_nofile() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for want in (max(NOFILE_WANT, hard), hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return want
        except (ValueError, OSError):
            continue
    return soft


def main() -> int:
    global SERVER_CPU, CLIENT_CPU, NOFILE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="counts / 10, wrk for 2 s, 1,000 idle connections")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--servers", default=",".join(ALL_SERVERS))
    ap.add_argument("--install", action="store_true", help="apt-get install the missing tools")
    ap.add_argument("--glint-bin", help="glint binary (default: target/release/glint of this repo, built if missing; or $GLINT_BIN)")
    ap.add_argument("--glint-lighttpd-conf", action="store_true",
                    help="start glint with -f and the same lighttpd.conf as lighttpd instead of command-line flags")
    ap.add_argument("--glint-bin-b", action="append", metavar="PATH",
                    help="a second glint binary, measured in the same run as server glint-b (alternating "
                         "with the others round by round); repeat for glint-c, ...")
    ap.add_argument("--defer-accept", choices=("off", "on"), default="off",
                    help="TCP_DEFER_ACCEPT for glint (server.defer-accept via -f), lighttpd (server.defer-accept) "
                         "and nginx (listen ... deferred); h2o 2.2 has none. Default off: every server's default")
    ap.add_argument("--tls", action="store_true",
                    help="the HTTPS rows instead: TLS 1.3, one ECDSA P-256 certificate for all (results/tls.*)")
    ap.add_argument("--tls-resume-client", metavar="PORT:N:PATH", help=argparse.SUPPRESS)
    ap.add_argument("--idle-conns", type=int, help="idle keep-alive connections to hold (default 10,000; 1,000 with --quick)")
    ap.add_argument("--out", help="output path without extension (default results/latest, with --tls results/tls)")
    ap.add_argument("--render", metavar="JSON", help="only rewrite the .md and .svg from a saved .json of a run")
    args = ap.parse_args()
    if args.tls_resume_client:
        return resume_client(args.tls_resume_client)
    args.out = args.out or str(RESULTS / ("tls" if args.tls else "latest"))
    if args.render:
        raw = json.loads(Path(args.render).read_text())
        write_reports(raw, Path(args.out), write_json=False)
        return 0

    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    bad = [s for s in servers if s not in ALL_SERVERS]
    if bad or not servers:
        ap.error(f"unknown server(s) {bad}; choose from {ALL_SERVERS}")
    if args.tls and FLOOR in servers:
        servers.remove(FLOOR)  # it answers in clear text only
    extra = [n for n in glint_names(args) if n != "glint"] if args.glint_bin_b else []
    if extra:
        at = servers.index("glint") + 1 if "glint" in servers else 0
        servers[at:at] = extra
    if not 1 <= args.rounds <= 20:
        ap.error("--rounds must be 1..20")
    idle_n = args.idle_conns if args.idle_conns is not None else (1000 if args.quick else 10_000)
    idle_n = max(0, min(idle_n, 15_000))

    missing = missing_tools()
    if missing:
        log(f"missing: {', '.join(missing)}")
        if not args.install:
            print(APT_LINE)
            return 2
        install_tools()
        if missing_tools():
            log(f"still missing after install: {missing_tools()}")
            return 2

    ncpu = os.cpu_count() or 1
    if ncpu < 2:
        log("warning: one CPU only; server and client share it")
        CLIENT_CPU = "0"
    try:
        os.sched_setaffinity(0, {int(CLIENT_CPU)})  # this script is a client too
    except OSError:
        pass
    nofile = NOFILE = raise_nofile()
    if nofile < idle_n + 1000:
        idle_n = max(0, nofile - 1000)
        log(f"warning: RLIMIT_NOFILE is {nofile}; holding only {idle_n} idle connections")

    wls = workloads(args.quick, args.tls)
    tmp = Path(tempfile.mkdtemp(prefix="srvbench-"))
    tmp.chmod(0o755)
    docroot = tmp / "www"
    started: list[Server] = []
    args.tls_files = make_cert(tmp) if args.tls else None

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    raw = {
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "quick": args.quick, "rounds": args.rounds, "servers": servers,
        "idle_conns_wanted": idle_n, "defer_accept": args.defer_accept, "tls": args.tls,
        "machine": {"kernel": platform.release(), "cpus": ncpu, "cpu_model": cpu_model(),
                    "server_cpu": SERVER_CPU, "client_cpu": CLIENT_CPU, "nofile": nofile,
                    "clk_tck": CLK_TCK},
        "tools": {"ab": tool_version(["ab", "-V"]), "wrk": tool_version(["wrk", "-v"])},
        "workloads": wls, "versions": {}, "headers": {}, "errors": {},
        "runs": {}, "memory": {}, "order": [],
    }
    try:
        raw["docroot"] = make_docroot(docroot)
        log(f"docroot {docroot}: {raw['docroot']}")
        servs: dict[str, Server] = {}
        port = 28080
        binaries = glint_names(args) if any(is_glint(n) for n in servers) else {}
        for name in servers:
            raw["versions"][name] = server_version(name, args, binaries.get(name))
            port = free_port(port + 1)
            try:
                srv = make_server(name, tmp, docroot, port, args)
            except Exception as e:  # noqa: BLE001 - e.g. glint build failed
                raw["errors"][name] = f"cannot prepare: {e}"
                log(f"[{name}] {raw['errors'][name]}")
                continue
            started.append(srv)
            if not srv.start():
                raw["errors"][name] = srv.error
                log(f"[{name}] FAILED: {srv.error}")
                continue
            time.sleep(0.5)
            pids = srv.pids()
            raw["memory"][name] = {"pss_idle_kib": pss_kib(pids), "uss_idle_kib": uss_kib(pids),
                                   "pss_idle_split": pss_split(pids), "pids_idle": len(pids),
                                   "pss_idle_by_process": pss_by_comm(pids), "conns": []}
            status, headers, body = http_get(port, "/test.jpg", tls=bool(args.tls))
            raw["headers"][name] = {"status": status, "body_len": len(body),
                                    **{k: headers.get(k) for k in ("etag", "last-modified", "content-type",
                                                                     "content-length", "server")}}
            log(f"[{name}] up on {port}, pids {pids}, idle PSS {raw['memory'][name]['pss_idle_kib']} KiB, "
                f"/test.jpg -> {raw['headers'][name]}")
            if not headers.get("etag") or not headers.get("last-modified"):
                log(f"[{name}] warning: no ETag or Last-Modified")
            servs[name] = srv
        live = [s for s in servers if s in servs]
        if not live:
            log("no server started")
            return 1
        # warm-up: page cache, stat caches, lazily allocated buffers
        for name in live:
            for path in ("/index.html", "/test.jpg"):
                run_load(dict(tool="ab", path=path, n=500, c=10, k=False, tls=args.tls), servs[name].port, tmp)
        time.sleep(2.5)  # past the file caches' second, and a tick or two
        for name in live:
            pids = servs[name].pids()
            raw["memory"][name]["pss_warm_kib"] = pss_kib(pids)
            raw["memory"][name]["pss_warm_split"] = pss_split(pids)
            log(f"[{name}] PSS after the first requests {raw['memory'][name]['pss_warm_kib']:,} KiB "
                f"{raw['memory'][name]['pss_warm_split']}")

        for rnd in range(args.rounds):
            order = start_round(raw, live, rnd, args.rounds)
            for wl, name, srv in live_runs(raw, servs, order, wls):
                r = measure(srv, wl, tmp)
                r["round"] = rnd + 1
                raw["runs"].setdefault(name, {}).setdefault(wl["id"], []).append(r)
                log(f"  {wl['title']:<36} {name:<9} {r.get('rps', 0):>10,.0f} req/s  "
                    f"{r.get('cpu_us_per_req') or 0:7.1f} µs/req  p99 {r.get('p99_ms') or 0:7.2f} ms  "
                    f"err {r.get('errors_total', '?')}  srv {r.get('server_busy_pct') or 0:3.0f}%  "
                    f"cli {r.get('client_busy_pct') or 0:3.0f}%" + (f"  ! {r['error']}" if r.get("error") else "")
                    + (f"  ! {r['warning']}" if r.get("warning") else ""))
                time.sleep(0.3)
            if idle_n:
                for name in order:
                    srv = servs[name]
                    if not srv.alive():
                        continue
                    c = idle_connections(srv, idle_n)
                    c["round"] = rnd + 1
                    raw["memory"][name]["conns"].append(c)
                    log(f"  {idle_n} idle keep-alive conns    {name:<9} held {c['held']}, PSS {c['pss_kib']:,} KiB"
                        + (f", {c['errors']} errors ({c['first_error']})" if c["errors"] else ""))
                    if not srv.alive():
                        raw["errors"].setdefault(name, f"died holding idle connections: {srv.tail_logs()}")

        for name in live:
            raw["memory"][name]["pss_end_kib"] = pss_kib(servs[name].pids())
            raw["error_logs"] = raw.get("error_logs", {})
            raw["error_logs"][name] = servs[name].tail_logs()
    finally:
        for srv in started:
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    raw["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    summ = summarise(raw, servers, wls)
    raw["medians"] = summ
    print(render_console(summ, servers, wls))

    write_reports(raw, Path(args.out))
    return 0 if not raw["errors"] else 3


def start_round(raw: dict, live: list[str], rnd: int, rounds: int) -> list[str]:
    """The servers' order in round `rnd` (rotated, so that each goes first in
    turn), recorded in `raw` and logged."""
    order = live[rnd % len(live):] + live[:rnd % len(live)]
    raw["order"].append(order)
    log(f"== round {rnd + 1}/{rounds}: {', '.join(order)}")
    return order


def live_runs(raw: dict, servs: dict, order: list[str], wls: list[dict]):
    """Each (workload, server name, server) of a round, workload by workload;
    a server that has died is passed over and its death recorded in `raw`."""
    for wl in wls:
        for name in order:
            srv = servs[name]
            if not srv.alive():
                raw["errors"].setdefault(name, f"died: {srv.tail_logs()}")
                continue
            yield wl, name, srv


def write_reports(raw: dict, out: Path, write_json: bool = True) -> None:
    servers, wls = raw["servers"], raw["workloads"]
    summ = raw["medians"]
    m = raw["machine"]
    subtitle = (f"{raw['started'][:10]}, {raw['rounds']} round(s){', quick' if raw['quick'] else ''}, "
                f"server on CPU {m['server_cpu']}, client on CPU {m['client_cpu']}, medians over rounds")
    out.parent.mkdir(parents=True, exist_ok=True)
    if write_json:
        out.with_suffix(".json").write_text(json.dumps(raw, indent=1, default=str) + "\n")
    out.with_suffix(".svg").write_text(render_svg(summ, servers, wls, subtitle))
    raw["out_svg"] = str(out.with_suffix(".svg"))
    out.with_suffix(".md").write_text(render_md(raw, summ, servers, wls, raw["idle_conns_wanted"]))
    log(f"wrote {out}.md, {out}.svg" + (f", {out}.json" if write_json else ""))


PEERS = ("lighttpd", "nginx", "h2o")
GOAL_BEST_PEER = 0.85  # issue 18: server CPU at most 0.85x the best peer's on every row
GOAL_AB = 1.03         # issue 12: no row more than 3 % slower than the other glint
GOAL_FLOOR = 1.10      # issue 31: the seeds' rows within 1.10x of the floor


def per_round(raw: dict, name: str, wl_id: str, key: str = "cpu_us_per_req") -> dict[int, float]:
    return {r.get("round"): r[key] for r in raw["runs"].get(name, {}).get(wl_id, [])
            if isinstance(r.get(key), (int, float))}


def round_ratios(raw: dict, a: str, b: str, wl_id: str) -> list[float]:
    """a's figure over b's, round by round (the servers ran back to back)."""
    ra, rb = per_round(raw, a, wl_id), per_round(raw, b, wl_id)
    return [ra[k] / rb[k] for k in ra if k in rb and rb[k]]


def verdict(med: float, lo: float, hi: float, goal: float, n: int = 3) -> str:
    """A row counts only when its spread (over `n` rounds, at least 3) is
    smaller than its distance from the goal (issue 18); lower is better."""
    if n < 3:
        return "undecided: fewer than 3 rounds"
    if hi - lo >= abs(med - goal):
        return "undecided: spread ≥ distance to goal"
    return "meets" if med <= goal else "short"


def render_best_peer(raw: dict, summ: dict, servers: list[str], wls: list[dict]) -> list[str]:
    peers = [p for p in PEERS if p in servers]
    glints = [s for s in servers if is_glint(s)]
    if not peers or not glints:
        return []
    out = [f"Server CPU µs/request against the best peer (lowest median of {', '.join(peers)}), "
           f"goal ≤ {GOAL_BEST_PEER}×; the spread is the min–max of the round-by-round ratios, and a row "
           "counts only when it is smaller than the row's distance from the goal:", "",
           "| workload | server | µs/request | best peer | its µs/request | ratio | spread | verdict |",
           "|---|---|---:|---|---:|---:|---:|---|"]
    for wl in wls:
        row = summ[wl["id"]]["cpu_us_per_req"]
        cands = [(row[p], p) for p in peers if row.get(p) is not None]
        if not cands:
            continue
        best_v, best = min(cands)
        for g in glints:
            gv = row.get(g)
            rr = round_ratios(raw, g, best, wl["id"])
            if gv is None or not rr:
                continue
            ratio = gv / best_v
            lo, hi = min(rr), max(rr)
            out.append(f"| `{wl['title']}` | {g} | {gv:.1f} | {best} | {best_v:.1f} | {ratio:.2f}× | "
                       f"{lo:.2f}–{hi:.2f} | {verdict(ratio, lo, hi, GOAL_BEST_PEER, len(rr))} |")
    return out + [""]


def render_floor(raw: dict, summ: dict, servers: list[str], wls: list[dict]) -> list[str]:
    """Every server's CPU per request over the floor's, row by row."""
    if FLOOR not in servers:
        return []
    others = [s for s in servers if s != FLOOR]
    out = ["Server CPU µs/request over the floor's (benches/floor.rs, canned answers: what the kernel's "
           f"socket work costs); goal for glint ≤ {GOAL_FLOOR}× (issue 31), with the min–max of the "
           "round-by-round ratios:", "",
           "| workload | floor µs/request | " + " | ".join(others) + " | glint spread | glint verdict |",
           "|---|---:|" + "---:|" * len(others) + "---:|---|"]
    for wl in wls:
        row = summ[wl["id"]]["cpu_us_per_req"]
        fv = row.get(FLOOR)
        if not fv:
            continue
        cells = [f"{row[s] / fv:.2f}×" if row.get(s) is not None else "—" for s in others]
        rr = round_ratios(raw, "glint", FLOOR, wl["id"])
        spread, verd = "—", "—"
        if rr and row.get("glint") is not None:
            lo, hi = min(rr), max(rr)
            spread = f"{lo:.2f}–{hi:.2f}"
            verd = verdict(row["glint"] / fv, lo, hi, GOAL_FLOOR, len(rr))
        out.append(f"| `{wl['title']}` | {fv:.1f} | " + " | ".join(cells) + f" | {spread} | {verd} |")
    return out + [""]


def render_ab(raw: dict, summ: dict, servers: list[str], wls: list[dict]) -> list[str]:
    others = [s for s in servers if is_glint(s) and s != "glint"]
    if "glint" not in servers or not others:
        return []
    out = ["## glint against the other glint binaries of this run", "",
           "Server CPU µs/request; ratio = glint / other (above 1: glint is slower); the spread is the "
           f"min–max of the round-by-round ratios (the two ran back to back in every round). Goal (issue 12): "
           f"no row above {GOAL_AB}×.", "",
           "| workload | glint | other | its µs/request | glint µs/request | ratio | spread | verdict |",
           "|---|---|---|---:|---:|---:|---:|---|"]
    for o in others:
        for wl in wls:
            row = summ[wl["id"]]["cpu_us_per_req"]
            rr = round_ratios(raw, "glint", o, wl["id"])
            if row.get("glint") is None or not row.get(o) or not rr:
                continue
            ratio = row["glint"] / row[o]
            lo, hi = min(rr), max(rr)
            out.append(f"| `{wl['title']}` | glint | {o} | {row[o]:.1f} | {row['glint']:.1f} | {ratio:.3f}× | "
                       f"{lo:.3f}–{hi:.3f} | {verdict(ratio, lo, hi, GOAL_AB, len(rr))} |")
    return out + [""]


def run_flags(raw: dict) -> str:
    f = " --quick" if raw["quick"] else ""
    f += f" --rounds {raw['rounds']}"
    if raw.get("tls"):
        f += " --tls"
    if raw.get("defer_accept"):
        f += f" --defer-accept {raw['defer_accept']}"
    for s in raw["servers"]:
        if is_glint(s) and s != "glint":
            f += " --glint-bin-b …"
    return f


def render_md(raw: dict, summ: dict, servers: list[str], wls: list[dict], idle_n: int) -> str:
    base = baseline_of(servers)
    m = raw["machine"]
    what = "HTTPS (TLS 1.3, ECDSA P-256)" if raw.get("tls") else "static files"
    defer = {"on": "TCP_DEFER_ACCEPT on for glint, lighttpd and nginx (h2o 2.2 has none)",
             "off": "TCP_DEFER_ACCEPT off everywhere (every server's default)"}.get(raw.get("defer_accept"),
                                                                                 "TCP_DEFER_ACCEPT as configured")
    lines = [
        f"# glint vs lighttpd, nginx, h2o: {what} on loopback",
        "",
        f"Generated by `benches/compare.py{run_flags(raw)}` "
        f"from {raw['started']} to {raw['finished']}; {defer}. Medians over {raw['rounds']} round(s); "
        f"each cell is `value (ratio to {base})`. Servers pinned to CPU {m['server_cpu']}, "
        f"ab/wrk to CPU {m['client_cpu']}; {m['cpus']} × {m['cpu_model']}, Linux {m['kernel']}.",
        "How to read it: `benches/README.md`.",
        "",
        "| server | version |", "|---|---|",
        *[f"| {s} | {raw['versions'].get(s, '?')} |" for s in servers],
        f"| ab | {raw['tools']['ab']} |", f"| wrk | {raw['tools']['wrk']} |",
        "",
        render_table(summ, servers, wls),
        "",
        f"Memory: PSS of all the server's processes from `/proc/PID/smaps_rollup`, idle right after start "
        f"(one request answered), after the first requests (the warm-up's 1,000, then 2.5 s), split into "
        f"anonymous and file-backed pages, and while this script held {idle_n:,} idle keep-alive "
        f"{'TLS ' if raw.get('tls') else ''}connections (one `GET /index.html` answered on each); per "
        "connection = (that − after the first requests) / connections held.",
        "",
        *render_best_peer(raw, summ, servers, wls),
        *render_floor(raw, summ, servers, wls),
        *render_ab(raw, summ, servers, wls),
        f"![server CPU per request]({Path(raw.get('out_svg', 'latest.svg')).name})",
        "",
        "Spread of server CPU µs/request over the rounds (min–max): where the ranges of two servers "
        "overlap, the difference between their medians is within the noise.",
        "",
        "| workload | " + " | ".join(servers) + " |",
        "|---|" + "---:|" * len(servers),
    ]
    for wl in wls:
        cells = []
        for s in servers:
            v = [r.get("cpu_us_per_req") for r in raw["runs"].get(s, {}).get(wl["id"], [])]
            v = [x for x in v if x is not None]
            cells.append(f"{min(v):.1f}–{max(v):.1f}" if v else "—")
        lines.append(f"| `{wl['title']}` | " + " | ".join(cells) + " |")
    lines.append("")
    other = [r.get("other_on_cpu0_pct") for per in raw["runs"].values() for runs in per.values() for r in runs]
    other = sorted(v for v in other if v is not None)
    loads = [r.get("loadavg") for per in raw["runs"].values() for runs in per.values() for r in runs]
    loads = [v for v in loads if v is not None]
    if other:
        lines += [f"Noise: other work on the server CPU during the runs (CPU 0 busy % from `/proc/stat` "
                  f"minus the server's own): median {statistics.median(other):.0f} %, max {other[-1]:.0f} %; "
                  f"1-min load average {min(loads):.1f}–{max(loads):.1f}. "
                  "Where that is high, requests/s and latency suffer more than CPU µs/request.", ""]
    if raw["errors"]:
        lines += ["## Errors", ""] + [f"- **{k}**: {v}" for k, v in raw["errors"].items()] + [""]
    warns = []
    for srv_name, per_wl in raw["runs"].items():
        for wl_id, runs in per_wl.items():
            for r in runs:
                for key in ("warning", "error"):
                    if r.get(key):
                        warns.append(f"- {srv_name}, {wl_id}, round {r.get('round')}: {key}: {r[key]}")
    for srv_name, m in raw["memory"].items():
        for c in m.get("conns", []):
            if c.get("held", 0) < c.get("wanted", 0) or c.get("errors"):
                warns.append(f"- {srv_name}, idle connections, round {c.get('round')}: held {c.get('held')} "
                             f"of {c.get('wanted')}, {c.get('errors')} errors ({c.get('first_error')})")
    if warns:
        lines += ["## Warnings", ""] + warns + [""]
    hdr = raw.get("headers", {})
    if hdr:
        lines += ["## Response headers of `/test.jpg` (sanity check of equivalent settings)", "",
                  "| server | ETag | Last-Modified | Content-Type | Content-Length |", "|---|---|---|---|---|"]
        for s, h in hdr.items():
            lines.append(f"| {s} | {h.get('etag')} | {h.get('last-modified')} | {h.get('content-type')} | {h.get('content-length')} |")
        lines.append("")
    return "\n".join(lines)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def tool_version(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return ((r.stdout or r.stderr).strip().splitlines() or ["?"])[0]
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    sys.exit(main())

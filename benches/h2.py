#!/usr/bin/env python3
"""HTTP/2 benchmark of glint against lighttpd 1.4.69, nginx 1.22 and h2o 2.2.

Follows benches/compare.py's conventions and reuses its helpers (the docroot
of www/index.html and www/test.jpg, the /proc readings, the server process
handling): every server pinned to CPU 0, h2load (nghttp2-client) and this
script on CPU 1, the server order rotated each round, medians over rounds,
server CPU per request from the schedstat of every thread of the server's
process group.

    python3 benches/h2.py [--rounds N] [--n 100000] [--servers glint,lighttpd,nginx,h2o]
                          [--glint-bin-b PATH]

`--glint-bin-b` adds a second glint binary (server `glint-b`, measured in
the same rounds as the others) for an A/B of a change.

Workloads: `h2load -n N -c 10 -m 10` and `-m 100` on /index.html and
/test.jpg, over TLS (one ECDSA P-256 certificate for every server, TLS 1.3
with TLS_AES_128_GCM_SHA256 for all) and over cleartext with prior
knowledge (h2c; not nginx, whose h2c listener would serve only HTTP/2).
Then the PSS of each server holding 1,000 idle HTTP/2 connections (h2c and
TLS), each having answered one GET.

Writes benches/results/h2-latest.{md,json} (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare as cmp  # noqa: E402

HOST = cmp.HOST
SERVERS = ["glint", "lighttpd", "nginx", "h2o"]
TLS13_SUITE = "TLS_AES_128_GCM_SHA256"


def make_cert(tmp: Path) -> Path:
    """One self-signed ECDSA P-256 certificate (key in the same file) for all."""
    key, crt, both = tmp / "key.pem", tmp / "cert.pem", tmp / "both.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "3", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(crt)],
                   check=True, capture_output=True, timeout=60)
    both.write_text(crt.read_text() + key.read_text())
    for p in (key, crt, both):
        p.chmod(0o644)
    return tmp


def conf_lighttpd(tmp: Path, docroot: Path, port: int, tls_port: int, certs: Path, errname: str) -> str:
    base = cmp.conf_lighttpd(tmp, docroot, port).replace("lighttpd-error", errname)
    base = base.replace("lighttpd.pid", errname + ".pid")
    return base + f"""server.modules += ( "mod_openssl" )
$SERVER["socket"] == "{HOST}:{tls_port}" {{
    ssl.engine = "enable"
    ssl.pemfile = "{certs}/both.pem"
}}
"""


def conf_nginx(tmp: Path, docroot: Path, port: int, tls_port: int, certs: Path) -> str:
    base = cmp.conf_nginx(tmp, docroot, port)
    tls = f"""    server {{
        listen {HOST}:{tls_port} ssl http2 backlog=4096 deferred;
        ssl_certificate {certs}/cert.pem;
        ssl_certificate_key {certs}/key.pem;
        root {docroot};
        index index.html;
    }}
}}
"""
    return base.rstrip().rstrip("}") + tls


def conf_h2o(tmp: Path, docroot: Path, port: int, tls_port: int, certs: Path) -> str:
    base = cmp.conf_h2o(tmp, docroot, port)
    tls = f"""listen:
  host: {HOST}
  port: {tls_port}
  ssl:
    certificate-file: {certs}/cert.pem
    key-file: {certs}/key.pem
http2-idle-timeout: {cmp.KEEPALIVE_IDLE_S}
"""
    return tls + base


def make_server(name: str, tmp: Path, docroot: Path, port: int, tls_port: int, certs: Path, glint_bin,
                glint_bin_b=None):
    if name in ("glint", "glint-b"):
        binary = tmp / name
        import shutil
        shutil.copy2(cmp.glint_binary(glint_bin_b if name == "glint-b" else glint_bin), binary)
        conf = tmp / f"{name}.conf"
        conf.write_text(conf_lighttpd(tmp, docroot, port, tls_port, certs, f"{name}-error"))
        return cmp.Server(name, [str(binary), "-D", "-f", str(conf)], port, tmp / f"{name}-error.log", tmp)
    if name == "lighttpd":
        conf = tmp / "lighttpd.conf"
        conf.write_text(conf_lighttpd(tmp, docroot, port, tls_port, certs, "lighttpd-error"))
        return cmp.Server(name, [cmp.tool_path("lighttpd"), "-D", "-f", str(conf)], port,
                          tmp / "lighttpd-error.log", tmp)
    if name == "nginx":
        conf = tmp / "nginx.conf"
        conf.write_text(conf_nginx(tmp, docroot, port, tls_port, certs))
        return cmp.Server(name, [cmp.tool_path("nginx"), "-p", str(tmp), "-e", str(tmp / "nginx-error.log"),
                                 "-c", str(conf)], port, tmp / "nginx-error.log", tmp)
    if name == "h2o":
        conf = tmp / "h2o.conf"
        conf.write_text(conf_h2o(tmp, docroot, port, tls_port, certs))
        return cmp.Server(name, [cmp.tool_path("h2o"), "-c", str(conf)], port, tmp / "h2o-error.log", tmp)
    raise ValueError(name)


def workloads(n: int) -> list[dict]:
    out = []
    for proto in ("tls", "h2c"):
        for path in ("/index.html", "/test.jpg"):
            for m in (10, 100):
                out.append({"key": f"{proto} {path} -m {m}", "proto": proto, "path": path, "m": m, "n": n})
    return out


def parse_h2load(out: str) -> dict:
    r: dict = {}
    m = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", out)
    if m:
        r["rps"] = float(m.group(3))
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", out)
    if m:
        r["completed"] = int(m.group(4))
        r["failed"] = int(m.group(5)) + int(m.group(6)) + int(m.group(7))
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if m:
        r["non2xx"] = int(m.group(2)) + int(m.group(3)) + int(m.group(4))
    m = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", out)
    if m:
        r["mean_ms"] = to_ms(m.group(3))
    m = re.search(r"Cipher: (\S+)", out)
    if m:
        r["cipher"] = m.group(1)
    return r


def to_ms(v: str) -> float | None:
    m = re.match(r"([\d.]+)(us|ms|s)$", v)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]


def run(srv, wl: dict, tls_port: int) -> dict:
    pids = srv.pids()
    if not pids:
        return {"error": "server not running"}
    port = tls_port if wl["proto"] == "tls" else srv.port
    scheme = "https" if wl["proto"] == "tls" else "http"
    url = f"{scheme}://{HOST}:{port}{wl['path']}"
    argv = ["h2load", "-t", "1", "-n", str(wl["n"]), "-c", "10", "-m", str(wl["m"])]
    if wl["proto"] == "tls":
        argv += ["--tls13-ciphers", TLS13_SUITE]
    argv.append(url)
    c0 = cmp.cpu_ns_by_task(pids)
    r = cmp.run_client(cmp.client_cmd(argv), 120, parse_h2load)
    c1 = cmp.cpu_ns_by_task(sorted(set(pids) | set(srv.pids())))
    cpu_ns = cmp.cpu_delta_ns(c0, c1)
    done = r.get("completed") or 0
    r["cpu_us_per_req"] = cpu_ns / 1000 / done if done else None
    r["server_busy_pct"] = 100 * cpu_ns / 1e9 / r["wall_s"] if r.get("wall_s") else None
    r["errors_total"] = (r.get("failed") or 0) + (r.get("non2xx") or 0) + (wl["n"] - done)
    if not srv.alive():
        r["error"] = (r.get("error", "") + " server died").strip()
    return r


# --------------------------------------------------------------------------
# idle HTTP/2 connections

def h2_frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


# GET /index.html, literal fields without indexing (no HPACK state needed).
def _lit(n: bytes, v: bytes) -> bytes:
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


GET_BLOCK = (_lit(b":method", b"GET") + _lit(b":scheme", b"https") + _lit(b":authority", b"localhost")
             + _lit(b":path", b"/index.html"))
HELLO = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0)
         + h2_frame(1, 0x5, 1, GET_BLOCK))


def answered(buf: bytes) -> bool:
    """An END_STREAM on stream 1 arrived (HEADERS or DATA)."""
    i = 0
    while i + 9 <= len(buf):
        n = int.from_bytes(buf[i:i + 3], "big")
        kind, flags, sid = buf[i + 3], buf[i + 4], int.from_bytes(buf[i + 5:i + 9], "big") & 0x7FFFFFFF
        if i + 9 + n > len(buf):
            return False
        if sid == 1 and kind in (0, 1) and flags & 1:
            return True
        i += 9 + n
    return False


def idle_h2(srv, port: int, n: int, tls: bool) -> dict:
    ctx = None
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
    socks, errors = [], 0
    for i in range(n):
        try:
            s = socket.create_connection((HOST, port), timeout=10)
            if ctx:
                s = ctx.wrap_socket(s, server_hostname="localhost")
                if s.selected_alpn_protocol() != "h2":
                    raise OSError("no h2 by ALPN")
            s.sendall(HELLO)
            buf = b""
            deadline = time.monotonic() + 10
            while not answered(buf) and time.monotonic() < deadline:
                d = s.recv(65536)
                if not d:
                    raise OSError("closed")
                buf += d
            # ACK the server's SETTINGS so it has nothing more to wait for.
            s.sendall(h2_frame(4, 1, 0))
            socks.append(s)
        except OSError:
            errors += 1
    time.sleep(1.0)
    pids = srv.pids()
    r = {"pss_conns_kib": cmp.pss_kib(pids), "uss_conns_kib": cmp.uss_kib(pids),
         "conns_open": len(socks), "errors": errors}
    for s in socks:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        except OSError:
            pass
    return r


# --------------------------------------------------------------------------

METRICS = [
    ("rps", "requests/s", "{:,.0f}"),
    ("cpu_us_per_req", "server CPU µs/request", "{:.2f}"),
    ("mean_ms", "mean request time ms", "{:.2f}"),
    ("errors_total", "failed + non-2xx", "{:.0f}"),
    ("server_busy_pct", "server CPU busy %", "{:.0f}"),
]


def median(vals):
    vals = [v for v in vals if isinstance(v, (int, float))]
    return statistics.median(vals) if vals else None


def render(raw: dict) -> str:
    servers = raw["servers"]
    lines = [f"# HTTP/2: glint vs {', '.join(s for s in servers if s != 'glint')}", "",
             f"Run {raw['date']} on {raw['cpu']} (2 cores, shared with other sessions: compare ratios).",
             f"Command: `{raw['command']}`", "",
             "Versions: " + "; ".join(f"{k}: {v}" for k, v in raw["versions"].items()), "",
             "Each cell: median over the rounds, and in parentheses the ratio to lighttpd. "
             "`vs best peer` is glint's server CPU per request divided by the lowest peer's "
             "on that row (the issue's goal: ≤ 0.85). lighttpd announces "
             "SETTINGS_MAX_CONCURRENT_STREAMS 8, so its `-m 100` rows run 8 streams per connection; "
             "glint, nginx (128) and h2o (100) take all 100.", ""]
    head = "| workload | metric | " + " | ".join(servers) + " | vs best peer |"
    lines += [head, "|" + "---|" * (len(servers) + 3)]
    for wl in raw["workloads"]:
        for key, label, fmt in METRICS:
            cells, vals = [], {}
            for s in servers:
                v = median([r.get(key) for r in raw["runs"].get(s, {}).get(wl, [])])
                vals[s] = v
            base = vals.get("lighttpd")
            for s in servers:
                v = vals[s]
                if v is None:
                    cells.append("—")
                    continue
                c = fmt.format(v)
                if base and key in ("rps", "cpu_us_per_req", "mean_ms") and s != "lighttpd":
                    c += f" ({v / base:.2f}×)"
                cells.append(c)
            best = ""
            if key == "cpu_us_per_req" and vals.get("glint"):
                peers = [v for s, v in vals.items() if not s.startswith("glint") and v]
                if peers:
                    best = f"{vals['glint'] / min(peers):.2f}×"
            lines.append(f"| {wl} | {label} | " + " | ".join(cells) + f" | {best} |")
    lines += ["", "## Memory: 1,000 idle HTTP/2 connections (each answered one GET)", "",
              "Each figure from a server started for it (median over the rounds); the idle row is "
              "the same servers before the connections.", "",
              "| | " + " | ".join(servers) + " |", "|" + "---|" * (len(servers) + 1)]
    for key, label in [("pss_idle_kib", "PSS idle (fresh, after the start-up GET), KiB"),
                       ("pss_h2c_kib", "PSS with 1,000 h2c, KiB"), ("uss_h2c_kib", "USS with 1,000 h2c, KiB"),
                       ("pss_tls_kib", "PSS with 1,000 TLS h2, KiB"), ("uss_tls_kib", "USS with 1,000 TLS h2, KiB"),
                       ("conns_h2c", "h2c conns held"), ("conns_tls", "TLS conns held")]:
        cells = []
        base = median(raw["memory"].get("lighttpd", {}).get(key, []))
        for s in servers:
            v = median(raw["memory"].get(s, {}).get(key, []))
            if v is None:
                cells.append("—")
            else:
                c = f"{v:,.0f}"
                if base and s != "lighttpd" and key.startswith(("pss", "uss")):
                    c += f" ({v / base:.2f}×)"
                cells.append(c)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if raw.get("errors"):
        lines += ["", "## Errors", ""] + [f"- {e}" for e in raw["errors"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=100_000, help="requests per h2load run")
    ap.add_argument("--idle", type=int, default=1000, help="idle HTTP/2 connections for the memory rows")
    ap.add_argument("--servers", default=",".join(SERVERS))
    ap.add_argument("--glint-bin")
    ap.add_argument("--glint-bin-b", metavar="PATH",
                    help="a second glint binary, measured as server glint-b in the same rounds")
    ap.add_argument("--out", default=str(cmp.RESULTS / "h2-latest"))
    args = ap.parse_args()
    servers = [s for s in args.servers.split(",") if s in SERVERS]
    if args.glint_bin_b:
        servers.insert(servers.index("glint") + 1 if "glint" in servers else 0, "glint-b")
    for tool in ("h2load", "openssl", "taskset"):
        if not cmp.shutil.which(tool):
            print(f"missing {tool} (apt-get install nghttp2-client openssl util-linux)")
            return 2
    try:
        os.sched_setaffinity(0, {int(cmp.CLIENT_CPU)})
    except OSError:
        pass
    cmp.NOFILE = cmp.raise_nofile()
    tmp = Path(tempfile.mkdtemp(prefix="h2bench-"))
    tmp.chmod(0o755)  # nginx's worker and h2o run as nobody when started as root
    docroot = tmp / "www"
    cmp.make_docroot(docroot)
    certs = make_cert(tmp)
    wls = workloads(args.n)
    raw = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cmp.cpu_model(),
           "command": "python3 benches/h2.py " + " ".join(sys.argv[1:]), "servers": servers,
           "workloads": [w["key"] for w in wls], "runs": {}, "memory": {}, "errors": [],
           "versions": {s: cmp.server_version("glint" if s == "glint-b" else s, argparse.Namespace(
               glint_bin=args.glint_bin_b if s == "glint-b" else args.glint_bin)) for s in servers}}
    raw["versions"]["h2load"] = cmp.tool_version(["h2load", "--version"])
    live = {}
    port = 28400
    try:
        for s in servers:
            d = tmp / s
            d.mkdir()
            d.chmod(0o755)
            p = cmp.free_port(port)
            tp = cmp.free_port(p + 1)
            port = tp + 1
            srv = make_server(s, d, docroot, p, tp, certs, args.glint_bin, args.glint_bin_b)
            if srv.start():
                live[s] = (srv, tp)
            else:
                raw["errors"].append(f"{s}: {srv.error}")
        # Warm-up: every file, both transports.
        for s, (srv, tp) in live.items():
            for wl in wls:
                if s == "nginx" and wl["proto"] == "h2c":
                    continue
                run(srv, dict(wl, n=500), tp)
        for rnd in range(args.rounds):
            order = list(live)[rnd % max(1, len(live)):] + list(live)[:rnd % max(1, len(live))]
            cmp.log(f"round {rnd + 1}/{args.rounds}: {order}")
            for wl in wls:
                for s in order:
                    if s == "nginx" and wl["proto"] == "h2c":
                        continue
                    srv, tp = live[s]
                    r = run(srv, wl, tp)
                    raw["runs"].setdefault(s, {}).setdefault(wl["key"], []).append(r)
                    cmp.log(f"  {s:8} {wl['key']:24} {r.get('rps', 0):>9,.0f} req/s "
                            f"{(r.get('cpu_us_per_req') or 0):6.2f} µs/req  errors {r.get('errors_total')}"
                            + (f"  {r['error']}" if r.get("error") else ""))
    finally:
        for srv, _ in live.values():
            srv.stop()
    # Memory: each figure from a server started for it, so that no earlier
    # load's high-water mark (what an allocator keeps after a burst) counts.
    for rnd in range(args.rounds):
        for s in servers[rnd % len(servers):] + servers[:rnd % len(servers)]:
            m = raw["memory"].setdefault(s, {})
            for proto in ("h2c", "tls"):
                if s == "nginx" and proto == "h2c":
                    continue
                d = tmp / f"{s}-mem"
                d.mkdir(exist_ok=True)
                d.chmod(0o755)
                p = cmp.free_port(port)
                tp = cmp.free_port(p + 1)
                port = tp + 1
                srv = make_server(s, d, docroot, p, tp, certs, args.glint_bin, args.glint_bin_b)
                if not srv.start():
                    raw["errors"].append(f"{s} (memory): {srv.error}")
                    continue
                try:
                    time.sleep(0.5)
                    m.setdefault("pss_idle_kib", []).append(cmp.pss_kib(srv.pids()))
                    r = idle_h2(srv, tp if proto == "tls" else srv.port, args.idle, tls=proto == "tls")
                    m.setdefault(f"pss_{proto}_kib", []).append(r["pss_conns_kib"])
                    m.setdefault(f"uss_{proto}_kib", []).append(r["uss_conns_kib"])
                    m.setdefault(f"conns_{proto}", []).append(r["conns_open"])
                    cmp.log(f"  {s:8} PSS idle {m['pss_idle_kib'][-1]:,} KiB, with {args.idle} {proto} h2 "
                            f"{r['pss_conns_kib']:,} KiB ({r['conns_open']} open, {r['errors']} errors)")
                finally:
                    srv.stop()
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(raw, indent=1))
    out.with_suffix(".md").write_text(render(raw))
    print(render(raw))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compression benchmark: glint's mod_deflate against lighttpd 1.4.69's
mod_deflate (with a cache dir) and nginx 1.22's gzip + gzip_static.

Python 3.11 standard library only; reuses benches/compare.py's process and
CPU accounting (servers pinned to CPU 0, clients on CPU 1, on-CPU time of
every thread of the server's process group from /proc/PID/task/TID/schedstat).

    python3 benches/compress.py [--rounds 3] [--seconds 3] [--servers glint,lighttpd,nginx]
    python3 benches/compress.py --stall          # the event loop's longest stall

For a set of text assets (HTML, CSS, JS, JSON, SVG; 1-200 KB), per server
and per coding: the body bytes on the wire, the server CPU per request cold
(the first request of each asset, including work its compression threads do
afterwards) and warm (wrk, keep-alive, cycling through the assets), and the
same for precompressed siblings (.br/.gz next to each asset). See
benches/README.md ("benches/compress.py").
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare as C  # noqa: E402  (the shared helpers)

HOST = C.HOST
RESULTS = C.RESULTS
MIMETYPES = ["text/html", "text/css", "text/javascript", "application/javascript",
             "application/json", "image/svg+xml"]
RUSTDOC = sorted(Path.home().glob(".rustup/toolchains/*/share/doc/rust/html"))

# (name in the docroot, candidates under the Rust documentation, fallback size)
ASSETS = [
    ("home.html", ["index.html"], 10_730),
    ("ownership.html", ["book/ch04-01-what-is-ownership.html"], 56_185),
    ("std.html", ["std/index.html"], 53_286),
    ("option.html", ["std/option/index.html"], 60_000),
    ("normalize.css", ["static.files/normalize-*.css"], 1_853),
    ("rustdoc.css", ["static.files/rustdoc-*.css"], 69_666),
    ("main.js", ["static.files/main-*.js"], 44_172),
    ("search.js", ["static.files/search-*.js"], 90_715),
    ("stringdex.js", ["static.files/stringdex-*.js"], 72_779),
    ("logo.svg", ["static.files/rust-logo-*.svg"], 3_297),
    ("figure.svg", ["book/img/trpl04-03.svg"], 10_097),
]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_json(size: int) -> bytes:
    """A JSON document like an API's answer (deterministic)."""
    items, i = [], 0
    while True:
        items.append({"id": i, "name": f"item-{i:05d}", "tags": ["alpha", "beta", "gamma"][: i % 3 + 1],
                      "price": round(3.5 + (i * 7919 % 1000) / 100, 2), "active": i % 2 == 0,
                      "owner": {"login": f"user{i % 97}", "url": f"https://example.org/users/{i % 97}"}})
        b = json.dumps({"total": i + 1, "items": items}, indent=1).encode()
        if len(b) >= size:
            return b
        i += 1


def synthetic(size: int, seed: int) -> bytes:
    words = [b"<div class=\"section\">", b"</div>\n", b"the", b"of", b"function", b"return",
             b"color: #333;", b"margin: 0 auto;", b"<a href=\"/docs/\">", b"</a>", b"value", b"\n  "]
    x, out = seed * 2654435761 % 2**32 or 1, bytearray()
    while len(out) < size:
        x = (x * 1103515245 + 12345) % 2**31
        out += words[x % len(words)] + b" "
    return bytes(out[:size])


def collect_assets() -> list[tuple[str, bytes, str]]:
    """(name, bytes, where from) for every asset; the Rust documentation's
    files where the toolchain has them, else generated text of their size."""
    out = []
    for i, (name, cands, size) in enumerate(ASSETS):
        got = None
        for base in RUSTDOC:
            for c in cands:
                hits = sorted(base.glob(c))
                if hits and 1_000 <= hits[0].stat().st_size <= 200_000:
                    got = (hits[0].read_bytes(), str(hits[0].relative_to(base)))
                    break
            if got:
                break
        if got is None:
            got = (synthetic(size, i + 1), "generated")
        out.append((name, got[0], got[1]))
    out.append(("api.json", make_json(30_000), "generated JSON"))
    return out


def write_docroot(root: Path, assets) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_bytes(b"<!DOCTYPE html><title>bench</title>ok\n")
    (root / "small.txt").write_bytes(b"small and quick\n")
    for d in ("warm", "pre"):
        (root / d).mkdir(exist_ok=True)
        for name, data, _ in assets:
            (root / d / name).write_bytes(data)
    # Precompressed siblings, made as a site's build would (best settings).
    for name, data, _ in assets:
        p = root / "pre" / name
        (root / "pre" / (name + ".gz")).write_bytes(gzip.compress(data, 9, mtime=0))
        subprocess.run(["brotli", "-q", "11", "-f", "-o", str(p) + ".br", str(p)], check=True)
        st = p.stat()
        for sfx in (".gz", ".br"):
            os.utime(str(p) + sfx, (st.st_atime, st.st_mtime + 1))


def mime_lines_lighttpd() -> str:
    return ('mimetype.assign = ( ".html" => "text/html", ".css" => "text/css", ".js" => "text/javascript", '
            '".json" => "application/json", ".svg" => "image/svg+xml", ".txt" => "text/plain" )')


def deflate_lines(cache: Path) -> str:
    mt = ", ".join(f'"{m}"' for m in MIMETYPES)
    return f'deflate.cache-dir = "{cache}"\ndeflate.mimetypes = ( {mt} )\n'


def conf_glint(tmp: Path, docroot: Path, port: int) -> str:
    return f"""# generated by benches/compress.py
server.document-root = "{docroot}"
server.bind = "{HOST}"
server.port = {port}
server.max-keep-alive-requests = 1000000
server.max-keep-alive-idle = 60
{mime_lines_lighttpd()}
{deflate_lines(tmp / "glint-cache")}
$HTTP["url"] =^ "/pre/" {{
  glint.static-precompressed = ( "br", "gzip" )
}}
"""


def conf_lighttpd(tmp: Path, docroot: Path, port: int) -> str:
    return f"""# generated by benches/compress.py
server.document-root = "{docroot}"
server.bind = "{HOST}"
server.port = {port}
server.errorlog = "{tmp}/lighttpd-error.log"
server.pid-file = "{tmp}/lighttpd.pid"
server.modules = ( "mod_deflate", "mod_staticfile" )
server.network-backend = "sendfile"
server.max-worker = 0
server.defer-accept = 1
server.max-keep-alive-idle = 60
server.max-keep-alive-requests = 1000000
static-file.etags = "enable"
index-file.names = ( "index.html" )
{mime_lines_lighttpd()}
{deflate_lines(tmp / "lighttpd-cache")}
# lighttpd before 1.4.74 compresses nothing unless this is set (its
# default list came in 1.4.74, commit 7b12db66); this is that default.
deflate.allowed-encodings = ( "zstd", "br", "gzip", "deflate" )
"""


def conf_nginx(tmp: Path, docroot: Path, port: int) -> str:
    types = " ".join(m for m in MIMETYPES if m != "text/html")
    return f"""# generated by benches/compress.py
worker_processes 1;
daemon off;
master_process on;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 4096; use epoll; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    keepalive_timeout 60s;
    keepalive_requests 1000000;
    etag on;
    server_tokens off;
    types {{ text/html html; text/css css; text/javascript js; application/json json;
            image/svg+xml svg; text/plain txt; }}
    default_type application/octet-stream;
    # zlib level 6, as lighttpd's and glint's default (nginx's own is 1)
    gzip on;
    gzip_comp_level 6;
    gzip_min_length 256;
    gzip_vary on;
    gzip_types {types};
    client_body_temp_path {tmp}/nginx-body;
    proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fastcgi;
    uwsgi_temp_path {tmp}/nginx-uwsgi;
    scgi_temp_path {tmp}/nginx-scgi;
    server {{
        listen {HOST}:{port} backlog=4096 deferred;
        root {docroot};
        index index.html;
        location /pre/ {{ gzip_static on; }}
    }}
}}
"""


def make_server(name: str, tmp: Path, docroot: Path, port: int, glint_bin: str | None) -> C.Server:
    if name == "glint":
        binary = tmp / "glint"
        shutil.copy2(C.glint_binary(glint_bin), binary)
        conf = tmp / "glint.conf"
        conf.write_text(conf_glint(tmp, docroot, port))
        return C.Server(name, [str(binary), "-D", "-f", str(conf)], port, tmp / "glint-error.log", tmp)
    if name == "lighttpd":
        conf = tmp / "lighttpd.conf"
        conf.write_text(conf_lighttpd(tmp, docroot, port))
        return C.Server(name, [C.tool_path("lighttpd"), "-D", "-f", str(conf)], port,
                        tmp / "lighttpd-error.log", tmp)
    if name == "nginx":
        conf = tmp / "nginx.conf"
        conf.write_text(conf_nginx(tmp, docroot, port))
        return C.Server(name, [C.tool_path("nginx"), "-p", str(tmp), "-e", str(tmp / "nginx-error.log"),
                               "-c", str(conf)], port, tmp / "nginx-error.log", tmp)
    raise ValueError(name)


# --------------------------------------------------------------------------
# one client request, HTTP/1.1, body de-chunked (not decoded)

def fetch(port: int, path: str, ae: str | None, timeout: float = 10.0):
    req = f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n"
    if ae:
        req += f"Accept-Encoding: {ae}\r\n"
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall((req + "\r\n").encode())
        data = b""
        while True:
            chunk = s.recv(262144)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding") == "chunked":
        out, rest = b"", body
        while True:
            size_line, _, rest = rest.partition(b"\r\n")
            n = int(size_line.split(b";")[0], 16)
            if n == 0:
                break
            out += rest[:n]
            rest = rest[n + 2:]
        body = out
    return int(lines[0].split()[1]), headers, body, len(head) + 4


MODES = {
    # mode: (Accept-Encoding, directory, servers that have it)
    "identity": (None, "warm", ("glint", "lighttpd", "nginx")),
    "gzip": ("gzip", "warm", ("glint", "lighttpd", "nginx")),
    "br": ("br", "warm", ("glint", "lighttpd")),
    "zstd": ("zstd", "warm", ("glint", "lighttpd")),
    "precompressed br": ("br", "pre", ("glint",)),
    "precompressed gzip": ("gzip", "pre", ("glint", "nginx")),
}


def cpu_now(srv: C.Server) -> dict:
    return C.cpu_ns_by_task(srv.pids())


def settle(srv: C.Server, quiet_ms: float = 300, limit_s: float = 30) -> None:
    """Waits until the server's threads have been idle for `quiet_ms` (its
    compression threads finished), at most `limit_s`."""
    deadline = time.monotonic() + limit_s
    last = cpu_now(srv)
    while time.monotonic() < deadline:
        time.sleep(quiet_ms / 1000)
        now = cpu_now(srv)
        if C.cpu_delta_ns(last, now) < quiet_ms * 1e6 * 0.02:  # under 2 % busy
            return
        last = now


def cold_run(srv: C.Server, root: Path, assets, mode: str, tag: str) -> dict:
    """The first request of each asset (copied under a fresh path, so no
    cache has it), and the work the server does for it afterwards."""
    ae, src, _ = MODES[mode]
    # Under /pre/ for the precompressed modes: where the servers look for siblings.
    rel = f"pre/cold-{tag}" if src == "pre" else f"cold-{tag}"
    d = root / rel
    shutil.copytree(root / src, d, ignore=shutil.ignore_patterns("cold-*"))
    settle(srv)
    before = cpu_now(srv)
    body_bytes, encoded = 0, 0
    for name, data, _ in assets:
        status, h, body, _ = fetch(srv.port, f"/{rel}/{name}", ae)
        if status != 200:
            raise RuntimeError(f"{srv.name} {mode} {name}: status {status}")
        body_bytes += len(body)
        encoded += "content-encoding" in h
    settle(srv)
    after = cpu_now(srv)
    return {"cpu_us_per_req": C.cpu_delta_ns(before, after) / 1e3 / len(assets),
            "body_bytes": body_bytes, "encoded": encoded}


def warm_up(srv: C.Server, assets, mode: str) -> dict:
    """Asks for every asset until each comes compressed with a length (a
    cache copy), then returns the bytes of one answer of each."""
    ae, src, _ = MODES[mode]
    total, heads, encoded = 0, 0, 0
    for name, data, _ in assets:
        deadline = time.monotonic() + 30
        while True:
            status, h, body, head_len = fetch(srv.port, f"/{src}/{name}", ae)
            done = ae is None or ("content-encoding" in h and "content-length" in h)
            # nginx's gzip has no cache: its answers are chunked streams
            if ae and srv.name == "nginx" and "content-encoding" in h:
                done = True
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        total += len(body)
        heads += head_len
        encoded += "content-encoding" in h
    return {"body_bytes": total, "head_bytes": heads, "encoded": encoded}


def wrk_script(tmp: Path, paths: list[str], ae: str | None) -> Path:
    p = tmp / f"wrk-{abs(hash((tuple(paths), ae)))}.lua"
    hdr = f'{{["Accept-Encoding"] = "{ae}"}}' if ae else "{}"
    p.write_text("local paths = {" + ", ".join(f'"{x}"' for x in paths) + "}\n"
                 "local i = 0\n"
                 "request = function()\n"
                 "  i = i % #paths + 1\n"
                 f"  return wrk.format(\"GET\", paths[i], {hdr})\n"
                 "end\n")
    return p


def warm_run(srv: C.Server, tmp: Path, assets, mode: str, seconds: int) -> dict:
    ae, src, _ = MODES[mode]
    script = wrk_script(tmp, [f"/{src}/{n}" for n, _, _ in assets], ae)
    argv = ["wrk", "-t1", "-c10", f"-d{seconds}s", "--timeout", "10s", "-s", str(script),
            f"http://{HOST}:{srv.port}/"]
    settle(srv)
    before = cpu_now(srv)
    r = C.run_client(C.client_cmd(argv), seconds + 30, C.parse_wrk)
    after = cpu_now(srv)
    done = max(r.get("completed", 0), 1)
    r["cpu_us_per_req"] = C.cpu_delta_ns(before, after) / 1e3 / done
    return r


# --------------------------------------------------------------------------
# the event loop's longest stall

def stall_probe(port: int, stop: threading.Event) -> list[float]:
    """Small keep-alive requests one after another until `stop`; their times in ms."""
    times = []
    s = socket.create_connection((HOST, port), timeout=10)
    req = b"GET /small.txt HTTP/1.1\r\nHost: bench\r\n\r\n"
    while not stop.is_set():
        t = time.perf_counter()
        s.sendall(req)
        buf = b""
        while b"\r\n\r\n" not in buf or not buf.endswith(b"small and quick\n"):
            buf += s.recv(4096)
        times.append((time.perf_counter() - t) * 1e3)
        time.sleep(0.001)
    s.close()
    return times


def stall(args) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="glint-stall-"))
    os.chmod(tmp, 0o755)
    try:
        root = tmp / "www"
        assets = collect_assets()
        write_docroot(root, [])
        # 7 MB of HTML: the Rust documentation's pages, concatenated (the
        # assets repeated where the toolchain has no documentation).
        big, n = bytearray(), 0
        pages = [p for base in RUSTDOC for p in sorted((base / "std").rglob("*.html"))]
        while len(big) < 7_000_000:
            big += pages[n].read_bytes() if n < len(pages) else assets[n % len(assets)][1]
            n += 1
        big = big[:7_000_000]
        for d in ("cached", "stream"):
            (root / d).mkdir(exist_ok=True)
        results = {}
        for name in args.servers.split(","):
            if name == "nginx":
                continue
            port = C.free_port(28300)
            srv = make_server(name, tmp, root, port, args.glint_bin)
            if name == "glint":
                conf = Path(srv.argv[-1])
                conf.write_text(conf.read_text() + '$HTTP["url"] =^ "/stream/" { deflate.cache-dir = "" }\n')
            if not srv.start():
                log(f"{name}: {srv.error}")
                continue
            try:
                for case, d, ae in (("first request, br", "cached", "br"), ("first request, gzip", "cached", "gzip"),
                                    ("no cache, br", "stream", "br"), ("no cache, gzip", "stream", "gzip")):
                    if name == "lighttpd" and d == "stream":
                        continue  # lighttpd compresses the same way with or without its cache
                    fname = f"big-{ae}-{time.monotonic_ns()}.html"
                    (root / d / fname).write_bytes(bytes(big))
                    stop = threading.Event()
                    out: list = []
                    t = threading.Thread(target=lambda: out.extend(stall_probe(port, stop)))
                    t.start()
                    time.sleep(0.3)
                    t0 = time.perf_counter()
                    status, h, body, _ = fetch(port, f"/{d}/{fname}", ae, timeout=60)
                    took = (time.perf_counter() - t0) * 1e3
                    # The cache job, where there is one, runs on (7 MB at
                    # brotli 5: about 0.3 s).
                    time.sleep(1.5)
                    stop.set()
                    t.join()
                    q = sorted(out)
                    results[f"{name}: {case}"] = {
                        "requests": len(q), "max_ms": q[-1], "p99_ms": q[int(len(q) * 0.99) - 1],
                        "median_ms": statistics.median(q), "big_answer_ms": took,
                        "big_encoding": h.get("content-encoding", "identity"), "big_bytes": len(body)}
                    log(f"{name}: {case}: {results[f'{name}: {case}']}")
            finally:
                srv.stop()
        pin = ("server on CPUs 0-1 (its compression thread free to use the other core)" if args.unpinned
               else "server pinned to CPU 0 (its compression thread too)")
        lines = ["", f"## The event loop's longest stall ({'unpinned' if args.unpinned else 'pinned'})", "",
                 f"`python3 benches/compress.py --stall{' --unpinned' if args.unpinned else ''} --servers {args.servers}`: "
                 "small keep-alive requests (`GET /small.txt`, one after another, 1 ms apart) "
                 f"while a 7 MB HTML file is requested once; {pin}; client on CPU 1.", "",
                 "| server, case | small requests | median ms | p99 ms | longest ms | the 7 MB answer |",
                 "|---|---|---|---|---|---|"]
        for k, v in results.items():
            lines.append(f"| {k} | {v['requests']} | {v['median_ms']:.2f} | {v['p99_ms']:.2f} | "
                         f"{v['max_ms']:.2f} | {v['big_encoding']}, {v['big_bytes']:,} B in {v['big_answer_ms']:.0f} ms |")
        text = "\n".join(lines) + "\n"
        print(text)
        if args.out:
            with open(args.out, "a") as f:
                f.write(text)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3, help="wrk duration per warm run")
    ap.add_argument("--servers", default="glint,lighttpd,nginx")
    ap.add_argument("--glint-bin")
    ap.add_argument("--stall", action="store_true", help="measure the longest stall of the loop instead")
    ap.add_argument("--unpinned", action="store_true",
                    help="with --stall: the server may use both CPUs (its compression thread the other one)")
    ap.add_argument("--out", help="markdown file to write (default benches/results/compress.md)")
    args = ap.parse_args()
    missing = [t for t in ("wrk", "taskset", "brotli", "lighttpd", "nginx") if shutil.which(t) is None]
    if missing:
        log(f"missing: {missing}; apt-get install -y wrk util-linux brotli lighttpd nginx-light")
        return 2
    if os.cpu_count() and os.cpu_count() >= 2:
        os.sched_setaffinity(0, {int(C.CLIENT_CPU)})
    if args.stall:
        if args.unpinned:
            C.SERVER_CPU = "0,1"  # the compression thread may take the other core
        return stall(args)
    servers = args.servers.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="glint-compress-bench-"))
    os.chmod(tmp, 0o755)  # nginx's worker runs as another user
    srvs: dict[str, C.Server] = {}
    try:
        root = tmp / "www"
        assets = collect_assets()
        write_docroot(root, assets)
        for i, name in enumerate(servers):
            port = C.free_port(28280 + 10 * i)
            srv = make_server(name, tmp, root, port, args.glint_bin)
            if not srv.start():
                log(f"{name}: {srv.error}")
                continue
            srvs[name] = srv
        raw: dict = {n: {m: {"cold": [], "warm": [], "bytes": None} for m in MODES} for n in srvs}
        for name, srv in srvs.items():
            for mode, (_, _, who) in MODES.items():
                if name in who:
                    raw[name][mode]["bytes"] = warm_up(srv, assets, mode)
        order = list(srvs)
        for rnd in range(args.rounds):
            for mode, (_, _, who) in MODES.items():
                for name in order:
                    if name not in who:
                        continue
                    srv = srvs[name]
                    log(f"round {rnd + 1}/{args.rounds}: {name} {mode}")
                    raw[name][mode]["cold"].append(cold_run(srv, root, assets, mode, f"{name}-{rnd}-{mode.replace(' ', '-')}"))
                    raw[name][mode]["warm"].append(warm_run(srv, tmp, assets, mode, args.seconds))
            order = order[1:] + order[:1]
        versions = {n: C.server_version(n, args) for n in srvs}
        md = render(raw, assets, versions, args)
        out = Path(args.out) if args.out else RESULTS / "compress.md"
        out.write_text(md)
        (out.with_suffix(".json")).write_text(json.dumps(
            {"raw": raw, "versions": versions, "assets": [(n, len(d), w) for n, d, w in assets]}, indent=1))
        print(md)
        return 0
    finally:
        for s in srvs.values():
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def render(raw, assets, versions, args) -> str:
    total = sum(len(d) for _, d, _ in assets)
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# Compression: glint against lighttpd and nginx ({when})", "",
             f"`python3 benches/compress.py --rounds {args.rounds} --seconds {args.seconds} "
             f"--servers {args.servers}`; medians over the rounds, one run, ratios from this run only.", ""]
    lines += [f"- {n}: {v}" for n, v in versions.items()]
    lines += ["", f"Assets ({len(assets)} files, {total:,} bytes): " +
              ", ".join(f"{n} {len(d):,} B ({w})" for n, d, w in assets), "",
              "Server CPU per request (µs, all threads of the server's processes, schedstat); "
              "bytes = the bodies of one answer of each asset. Cold: the first request of each "
              "asset under a fresh path, and everything the server does for it until it is idle "
              "again (glint's and lighttpd's cache copies included). Warm: `wrk -t1 -c10` cycling "
              "through the assets, keep-alive, after the caches are filled.", "",
              "| coding | server | bytes (cold) | bytes (warm) | × identity | CPU µs/req cold | CPU µs/req warm | warm × best peer |",
              "|---|---|---|---|---|---|---|---|"]
    ident = {n: raw[n]["identity"]["bytes"]["body_bytes"] for n in raw if raw[n]["identity"]["bytes"]}
    for mode in MODES:
        warm = {n: med([w["cpu_us_per_req"] for w in raw[n][mode]["warm"]]) for n in raw if raw[n][mode]["warm"]}
        for n in raw:
            r = raw[n][mode]
            if not r["warm"]:
                continue
            cold_b = med([c["body_bytes"] for c in r["cold"]])
            warm_b = r["bytes"]["body_bytes"]
            peers = [v for k, v in warm.items() if k != n and v]
            best = min(peers) if peers else None
            ratio = f"{warm[n] / best:.2f}×" if best else "–"
            lines.append(f"| {mode} | {n} | {cold_b:,.0f} | {warm_b:,} | {warm_b / ident.get(n, warm_b):.3f} | "
                         f"{med([c['cpu_us_per_req'] for c in r['cold']]):.1f} | {warm[n]:.1f} | {ratio} |")
    lines += ["", "Warm runs (median requests/s):", ""]
    for n in raw:
        cells = []
        for mode in MODES:
            w = raw[n][mode]["warm"]
            if w:
                cells.append(f"{mode} {med([x['rps'] for x in w]):,.0f}/s")
        lines.append(f"- {n}: " + ", ".join(cells))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

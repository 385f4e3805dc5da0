#!/usr/bin/env python3
"""HTTP/3 benchmark of glint against Debian's Caddy 2.6, HTTP/2 beside it.

Follows benches/h2.py (and reuses its and benches/compare.py's helpers):
both servers pinned to CPU 0, the load generator and this script on CPU 1,
the server order rotated each round, medians over rounds, server CPU per
request from the CPU time of every thread of the server's process group.

    python3 benches/h3.py [--rounds N] [--n 20000] [--idle 200]

The load: Debian's h2load has no HTTP/3 (it is built without ngtcp2), so
HTTP/3 goes through ngtcp2's own client (`gtlsclient`, Debian's
ngtcp2-client, C): 10 of them at once, each one connection asking for its
share of the requests as fast as the server's stream limit lets it (100
streams at a time for both servers). HTTP/2 over TLS beside it with
h2load `-c 10 -m 100`, the same concurrency. The files: the seed files
(www/index.html, 469 bytes, and www/test.jpg, 25 KB). Before the timed runs
each server's HTTP/3 answers are checked (status 200 and the file's
length, 20 requests read by a verbose gtlsclient). glint serves a
self-signed ECDSA P-256 certificate; Caddy its internal CA's (also ECDSA
P-256), as `tls internal` makes it.

Memory per idle connection: PSS of a fresh server, then with `--idle` idle
HTTP/3 connections (aioquic, each having answered one GET) and, from a
second fresh server, `--idle` idle HTTP/2 connections over TLS; the
difference divided by the count.

Writes benches/results/h3.{md,json} (or --out).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare as cmp  # noqa: E402
import h2 as h2b  # noqa: E402

HOST = cmp.HOST
SERVERS = ["glint", "caddy"]


def conf_glint(tmp: Path, docroot: Path, port: int, tls_port: int, certs: Path) -> str:
    return h2b.conf_lighttpd(tmp, docroot, port, tls_port, certs, "glint-error").replace(
        'ssl.engine = "enable"', 'ssl.engine = "enable"\n    glint.h3 = "enable"')


def conf_caddy(tmp: Path, docroot: Path, port: int, tls_port: int) -> str:
    return f"""{{
    admin off
    skip_install_trust
    auto_https disable_redirects
    default_sni localhost
    storage file_system {tmp}/caddy-data
    servers {{
        protocols h1 h2 h3
    }}
}}
http://{HOST}:{port} {{
    bind {HOST}
    root * {docroot}
    file_server
}}
https://localhost:{tls_port}, https://{HOST}:{tls_port} {{
    bind {HOST}
    tls internal
    root * {docroot}
    file_server
}}
"""


def make_server(name: str, tmp: Path, docroot: Path, port: int, tls_port: int, certs: Path, glint_bin):
    if name == "glint":
        import shutil
        binary = tmp / "glint"
        shutil.copy2(cmp.glint_binary(glint_bin), binary)
        conf = tmp / "glint.conf"
        conf.write_text(conf_glint(tmp, docroot, port, tls_port, certs))
        return cmp.Server(name, [str(binary), "-D", "-f", str(conf)], port, tmp / "glint-error.log", tmp)
    conf = tmp / "Caddyfile"
    conf.write_text(conf_caddy(tmp, docroot, port, tls_port))
    os.environ.setdefault("XDG_DATA_HOME", str(tmp / "xdg"))
    return cmp.Server(name, [cmp.tool_path("caddy"), "run", "--adapter", "caddyfile", "--config", str(conf)],
                      port, tmp / "caddy-stdout.log", tmp)


def workloads(n: int) -> list[dict]:
    return [{"key": f"{proto} {path}", "proto": proto, "path": path, "m": 100, "n": n}
            for path in ("/index.html", "/test.jpg") for proto in ("h3", "h2")]


CONNS = 10


def gtls_argv(port: int, path: str, n: int, quiet: bool = True) -> list[str]:
    argv = ["gtlsclient", "--exit-on-all-streams-close", "--no-quic-dump", "--no-http-dump",
            "-n", str(n), HOST, str(port), f"https://localhost:{port}{path}"]
    return argv[:1] + ["-q"] + argv[1:] if quiet else argv


def run_gtls(port: int, path: str, n: int) -> dict:
    """`CONNS` gtlsclient processes at once, `n / CONNS` requests each on
    one connection (as many streams at a time as the server allows)."""
    per = max(1, n // CONNS)
    script = " & ".join(" ".join(gtls_argv(port, path, per)) for _ in range(CONNS))
    script = f"fail=0; {script} & for j in $(jobs -p); do wait $j || fail=$((fail+1)); done; echo failed=$fail"

    def parse(out: str) -> dict:
        failed = int(out.rsplit("failed=", 1)[-1].strip() or CONNS) if "failed=" in out else CONNS
        return {"completed": per * (CONNS - failed), "failed": per * failed}

    r = cmp.run_client(cmp.client_cmd(["sh", "-c", script]), 300, parse)
    if r.get("wall_s") and r.get("completed"):
        r["rps"] = r["completed"] / r["wall_s"]
    return r


def check_h3(port: int, path: str, size: int, n: int = 20) -> int:
    """Answers that are not `200` with the file's length, of `n` (one
    connection, verbose output read)."""
    p = subprocess.run(gtls_argv(port, path, n, quiet=False), capture_output=True, text=True,
                       timeout=60)
    out = p.stdout + p.stderr  # the response heads go to stderr
    ok = out.count("[:status: 200]")
    lens = out.count(f"[content-length: {size}]")
    return n - min(ok, lens)


def run(srv, wl: dict, tls_port: int) -> dict:
    pids = srv.pids()
    if not pids:
        return {"error": "server not running"}
    c0 = cmp.cpu_ns_by_task(pids)
    if wl["proto"] == "h3":
        r = run_gtls(tls_port, wl["path"], wl["n"])
    else:
        argv = ["h2load", "-t", "1", "-n", str(wl["n"]), "-c", str(CONNS), "-m", str(wl["m"]),
                f"https://{HOST}:{tls_port}{wl['path']}"]
        r = cmp.run_client(cmp.client_cmd(argv), 180, h2b.parse_h2load)
    c1 = cmp.cpu_ns_by_task(sorted(set(pids) | set(srv.pids())))
    cpu_ns = cmp.cpu_delta_ns(c0, c1)
    done = r.get("completed") or 0
    r["cpu_us_per_req"] = cpu_ns / 1000 / done if done else None
    r["server_busy_pct"] = 100 * cpu_ns / 1e9 / r["wall_s"] if r.get("wall_s") else None
    r["errors_total"] = (r.get("failed") or 0) + (r.get("non2xx") or 0) + (wl["n"] - done)
    if not srv.alive():
        r["error"] = (r.get("error", "") + " server died").strip()
    return r


async def idle_h3(srv, port: int, n: int) -> dict:
    """`n` aioquic connections, one GET each, held while PSS is read."""
    from aioquic.asyncio.client import connect
    from aioquic.h3.connection import H3_ALPN
    from aioquic.quic.configuration import QuicConfiguration

    sys.path.insert(0, str(cmp.REPO / "tests" / "h3"))
    import h3attack  # noqa: E402

    held, errors = [], 0
    for _ in range(n):
        cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, idle_timeout=120)
        cfg.verify_mode = ssl.CERT_NONE
        cfg.server_name = "localhost"
        cm = connect(HOST, port, configuration=cfg, create_protocol=h3attack.Client)
        try:
            c = await asyncio.wait_for(cm.__aenter__(), 10)
            st = (await c.wait([c.get("/index.html")], 10))[0]
            if st != 200:
                errors += 1
            held.append(cm)
        except (OSError, asyncio.TimeoutError):
            errors += 1
    await asyncio.sleep(1.0)
    pids = srv.pids()
    r = {"pss_conns_kib": cmp.pss_kib(pids), "conns_open": len(held), "errors": errors}
    for cm in held:
        try:
            await cm.__aexit__(None, None, None)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
    return r


def per_conn(raw: dict, s: str, proto: str):
    m = raw["memory"].get(s, {})
    vals = []
    for base, conns, held in zip(m.get(f"pss_idle_{proto}_kib", []), m.get(f"pss_{proto}_kib", []),
                                 m.get(f"conns_{proto}", [])):
        if held:
            vals.append((conns - base) / held)
    return h2b.median(vals)


def render(raw: dict) -> str:
    servers = raw["servers"]
    lines = ["# HTTP/3: glint vs Caddy 2.6 (HTTP/2 beside it)", "",
             f"Run {raw['date']} on {raw['cpu']} (2 cores, shared with other sessions and their builds "
             "and tests: the absolute figures are noisy, compare the ratios of the same run).",
             f"Command: `{raw['command']}`", "",
             "Versions: " + "; ".join(f"{k}: {v}" for k, v in raw["versions"].items()), "",
             "Each cell: median over the rounds; in parentheses glint's ratio to Caddy. "
             f"{raw['n']} requests per run: HTTP/3 by 10 gtlsclient connections at once (100 streams at "
             "a time each), HTTP/2 over TLS by h2load `-c 10 -m 100`. For HTTP/3, `mean request time` is "
             "not measured (gtlsclient does not say) and `failed` counts the requests of clients that "
             "exited with an error. "
             "The issue's goal: glint's server CPU per request at most 0.85× Caddy's.", "",
             "| workload | metric | " + " | ".join(servers) + " |", "|" + "---|" * (len(servers) + 2)]
    for wl in raw["workloads"]:
        for key, label, fmt in h2b.METRICS:
            vals = {s: h2b.median([r.get(key) for r in raw["runs"].get(s, {}).get(wl, [])]) for s in servers}
            cells = []
            for s in servers:
                v = vals[s]
                if v is None:
                    cells.append("—")
                    continue
                c = fmt.format(v)
                if s == "glint" and vals.get("caddy") and key in ("rps", "cpu_us_per_req", "mean_ms"):
                    c += f" ({v / vals['caddy']:.2f}×)"
                cells.append(c)
            lines.append(f"| {wl} | {label} | " + " | ".join(cells) + " |")
    lines += ["", f"## Memory per idle connection ({raw['idle']} connections, each answered one GET)", "",
              "(PSS with the connections − PSS of the fresh server) / connections held, KiB; "
              "each from a server started for it.", "",
              "| | " + " | ".join(servers) + " |", "|" + "---|" * (len(servers) + 1)]
    for proto, label in (("h3", "HTTP/3 (QUIC)"), ("h2", "HTTP/2 over TLS")):
        vals = {s: per_conn(raw, s, proto) for s in servers}
        cells = []
        for s in servers:
            v = vals[s]
            c = "—" if v is None else f"{v:,.1f}"
            if s == "glint" and v is not None and vals.get("caddy"):
                c += f" ({v / vals['caddy']:.2f}×)"
            cells.append(c)
        lines.append(f"| {label} KiB/connection | " + " | ".join(cells) + " |")
    if raw.get("errors"):
        lines += ["", "## Errors", ""] + [f"- {e}" for e in raw["errors"]]
    return "\n".join(lines) + "\n"


def measure_memory(raw, servers, tmp, docroot, certs, args, port) -> int:
    for rnd in range(args.rounds):
        for s in servers[rnd % len(servers):] + servers[:rnd % len(servers)]:
            m = raw["memory"].setdefault(s, {})
            for proto in ("h3", "h2"):
                d = tmp / f"{s}-mem-{rnd}-{proto}"
                d.mkdir()
                d.chmod(0o755)
                p = cmp.free_port(port)
                tp = cmp.free_port(p + 1)
                port = tp + 1
                srv = make_server(s, d, docroot, p, tp, certs, args.glint_bin)
                if not srv.start():
                    raw["errors"].append(f"{s} (memory): {srv.error}")
                    continue
                try:
                    time.sleep(0.5)
                    m.setdefault(f"pss_idle_{proto}_kib", []).append(cmp.pss_kib(srv.pids()))
                    if proto == "h3":
                        r = asyncio.run(idle_h3(srv, tp, args.idle))
                    else:
                        r = h2b.idle_h2(srv, tp, args.idle, tls=True)
                    m.setdefault(f"pss_{proto}_kib", []).append(r["pss_conns_kib"])
                    m.setdefault(f"conns_{proto}", []).append(r["conns_open"])
                    cmp.log(f"  {s:6} {proto}: PSS {m[f'pss_idle_{proto}_kib'][-1]:,} -> "
                            f"{r['pss_conns_kib']:,} KiB with {r['conns_open']} ({r['errors']} errors)")
                finally:
                    srv.stop()
    return port


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=20_000, help="requests per h2load run")
    ap.add_argument("--idle", type=int, default=200, help="idle connections for the memory rows")
    ap.add_argument("--glint-bin")
    ap.add_argument("--out", default=str(cmp.RESULTS / "h3"))
    args = ap.parse_args()
    for tool in ("h2load", "gtlsclient", "openssl", "taskset", "caddy"):
        if not cmp.shutil.which(tool):
            print(f"missing {tool} (apt-get install nghttp2-client ngtcp2-client openssl util-linux caddy)")
            return 2
    try:
        os.sched_setaffinity(0, {int(cmp.CLIENT_CPU)})
    except OSError:
        pass
    cmp.NOFILE = cmp.raise_nofile()
    tmp = Path(tempfile.mkdtemp(prefix="h3bench-"))
    tmp.chmod(0o755)
    docroot = tmp / "www"
    cmp.make_docroot(docroot)
    certs = h2b.make_cert(tmp)
    wls = workloads(args.n)
    caddy_v = subprocess.run(["caddy", "version"], capture_output=True, text=True).stdout.strip()
    raw = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cmp.cpu_model(),
           "command": "python3 benches/h3.py " + " ".join(sys.argv[1:]), "servers": SERVERS, "n": args.n,
           "idle": args.idle, "workloads": [w["key"] for w in wls], "runs": {}, "memory": {}, "errors": [],
           "versions": {"glint": cmp.server_version("glint", argparse.Namespace(glint_bin=args.glint_bin)),
                        "caddy": caddy_v, "h2load": cmp.tool_version(["h2load", "--version"]),
                        "gtlsclient": "ngtcp2-client " + subprocess.run(
                            ["dpkg-query", "-W", "-f", "${Version}", "ngtcp2-client"],
                            capture_output=True, text=True).stdout}}
    live, port = {}, 28600
    try:
        for s in SERVERS:
            d = tmp / s
            d.mkdir()
            d.chmod(0o755)
            p = cmp.free_port(port)
            tp = cmp.free_port(p + 1)
            port = tp + 1
            srv = make_server(s, d, docroot, p, tp, certs, args.glint_bin)
            if srv.start():
                live[s] = (srv, tp)
            else:
                raw["errors"].append(f"{s}: {srv.error}")
        for s, (srv, tp) in live.items():
            for path, size in (("/index.html", cmp.INDEX_SIZE), ("/test.jpg", (docroot / "test.jpg").stat().st_size)):
                bad = check_h3(tp, path, size)
                if bad:
                    raw["errors"].append(f"{s}: {bad} of 20 HTTP/3 answers for {path} not 200 with {size} bytes")
            for wl in wls:
                r = run(srv, dict(wl, n=1000), tp)
                if r.get("error") or r.get("errors_total"):
                    raw["errors"].append(f"{s} warm-up {wl['key']}: {r.get('error')} {r.get('errors_total')}")
        for rnd in range(args.rounds):
            order = list(live)[rnd % max(1, len(live)):] + list(live)[:rnd % max(1, len(live))]
            cmp.log(f"round {rnd + 1}/{args.rounds}: {order}")
            for wl in wls:
                for s in order:
                    srv, tp = live[s]
                    r = run(srv, wl, tp)
                    raw["runs"].setdefault(s, {}).setdefault(wl["key"], []).append(r)
                    cmp.log(f"  {s:6} {wl['key']:16} {r.get('rps', 0):>9,.0f} req/s "
                            f"{(r.get('cpu_us_per_req') or 0):7.2f} µs/req  errors {r.get('errors_total')}"
                            + (f"  {r['error']}" if r.get("error") else ""))
    finally:
        for srv, _ in live.values():
            srv.stop()
    measure_memory(raw, SERVERS, tmp, docroot, certs, args, port)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(raw, indent=1))
    out.with_suffix(".md").write_text(render(raw))
    print(render(raw))
    return 0


if __name__ == "__main__":
    sys.exit(main())

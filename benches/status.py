#!/usr/bin/env python3
"""What scraping glint's status pages every second costs under load.

Python 3 standard library only.  glint (target/release/glint) runs pinned to
CPU 0; wrk and this script run on CPU 1.  Only 127.0.0.1 is contacted.

    python3 benches/status.py [--seconds 20] [--glint-bin PATH]

Two figures, from the same run:

1. Per-scrape CPU: with 100 keep-alive connections open (100 rows in the
   connection table), the script asks for /metrics, /server-status?auto and
   /server-status (HTML) 500 times each on one keep-alive connection and reads
   glint's CPU time (utime + stime of /proc/PID/stat) before and after.
   Scraping all three once a second costs their sum per second: divided by
   the CPU glint spends per second under `wrk -c100` (one saturated core at
   most), that is the share of glint's CPU that scraping takes.
2. Throughput with and without scraping: `wrk -t1 -c100 -d{seconds}s` on
   index.html, alternately without and with a scraper asking for the three
   pages every second (3 rounds each); the ratio of the medians.  On a shared
   machine this ratio is noisy by a few percent; figure 1 is the precise one.

Writes benches/results/status.json and status.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benches" / "results"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGES = ["/metrics", "/server-status?auto", "/server-status"]


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def start_glint(binary: str, root: Path, conf_dir: Path) -> tuple[subprocess.Popen, int]:
    conf = conf_dir / "glint.conf"
    conf.write_text(
        f'server.document-root = "{root}"\n'
        'server.bind = "127.0.0.1"\nserver.port = 0\n'
        "server.max-connections = 4096\nserver.max-keep-alive-requests = 1000000\n"
        'server.modules = ( "mod_status" )\n'
        'status.status-url = "/server-status"\nglint.metrics-url = "/metrics"\n'
    )
    p = subprocess.Popen(
        ["taskset", "-c", "0", binary, "-D", "-f", str(conf)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    assert p.stderr is not None
    for line in p.stderr:
        m = re.search(r"listening on [^ ]*:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, int(m.group(1))
    raise SystemExit("glint did not start")


class KeepAlive:
    """One keep-alive HTTP/1.1 connection that reads Content-Length answers."""

    def __init__(self, port: int):
        self.s = socket.create_connection((HOST, port))
        self.buf = b""

    def get(self, path: str) -> bytes:
        self.s.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.s.recv(65536)
        head, rest = self.buf.split(b"\r\n\r\n", 1)
        n = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        while len(rest) < n:
            rest += self.s.recv(65536)
        self.buf = rest[n:]
        return rest[:n]


def per_scrape_cpu(pid: int, port: int, n: int = 500) -> dict[str, float]:
    idle = [KeepAlive(port) for _ in range(100)]
    for c in idle:
        c.get("/index.html")
    c = KeepAlive(port)
    out = {}
    for page in PAGES:
        c.get(page)
        before = cpu_seconds(pid)
        t0 = time.perf_counter()
        for _ in range(n):
            c.get(page)
        wall = time.perf_counter() - t0
        out[page] = (cpu_seconds(pid) - before) / n
        out[page + " wall"] = wall / n
    for k in idle:
        k.s.close()
    return out


def wrk(port: int, seconds: int) -> float:
    r = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t1", "-c100", f"-d{seconds}s", f"http://{HOST}:{port}/index.html"],
        capture_output=True, text=True, check=True,
    )
    return float(re.search(r"Requests/sec:\s*([\d.]+)", r.stdout).group(1))


def scraper(port: int, stop: threading.Event, count: list[int]) -> None:
    c = KeepAlive(port)
    while not stop.wait(1.0):
        for page in PAGES:
            c.get(page)
        count[0] += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--glint-bin", default=os.environ.get("GLINT_BIN", str(REPO / "target/release/glint")))
    a = ap.parse_args()
    os.sched_setaffinity(0, {1})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "www"
        root.mkdir()
        (root / "index.html").write_bytes(b"x" * 469)
        p, port = start_glint(a.glint_bin, root, Path(tmp))
        try:
            scrape = per_scrape_cpu(p.pid, port)
            plain, scraped, cpu_load = [], [], []
            for _ in range(a.rounds):
                before, t0 = cpu_seconds(p.pid), time.perf_counter()
                plain.append(wrk(port, a.seconds))
                cpu_load.append((cpu_seconds(p.pid) - before) / (time.perf_counter() - t0))
                stop, count = threading.Event(), [0]
                t = threading.Thread(target=scraper, args=(port, stop, count))
                t.start()
                scraped.append(wrk(port, a.seconds))
                stop.set()
                t.join()
        finally:
            p.terminate()
            p.wait()
    per_second = sum(scrape[pg] for pg in PAGES)
    load = statistics.median(cpu_load)
    share = per_second / load if load > 0 else float("nan")
    res = {
        "command": " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "cpu_per_scrape_s": {pg: scrape[pg] for pg in PAGES},
        "wall_per_scrape_s": {pg: scrape[pg + " wall"] for pg in PAGES},
        "glint_cpu_per_s_under_wrk": load,
        "scrape_share_of_glint_cpu": share,
        "wrk_rps_plain": plain,
        "wrk_rps_scraped": scraped,
        "throughput_ratio_scraped_over_plain": statistics.median(scraped) / statistics.median(plain),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "status.json").write_text(json.dumps(res, indent=2) + "\n")
    md = [
        "# Scraping glint's status pages every second under load",
        "",
        f"`{res['command']}` on {res['date']}; glint pinned to CPU 0, wrk and the scraper on CPU 1;",
        "a shared 2-core machine (other work ran meanwhile: figures are noisy).",
        "",
        "| page (100 connections open) | glint CPU per scrape |",
        "|---|---|",
    ]
    md += [f"| `{pg}` | {scrape[pg] * 1e6:.0f} µs |" for pg in PAGES]
    md += [
        "",
        f"glint's CPU under `wrk -t1 -c100`: {load:.2f} s per second.",
        f"**Scraping all three pages once a second: {share * 100:.3f} % of glint's CPU.**",
        "",
        f"wrk requests/s without scraping {plain}, with {scraped}: ratio of medians "
        f"{res['throughput_ratio_scraped_over_plain']:.3f} (noise of a few % on this machine).",
        "",
    ]
    (RESULTS / "status.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()

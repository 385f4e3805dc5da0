#!/usr/bin/env python3
"""How much code one keep-alive request runs, and over how many cache lines.

    python3 benches/code_lines.py BINARY [BINARY...] [--n 5000] [--lighttpd]

Each binary (glint, or lighttpd with --lighttpd) serves www/index.html on
a free loopback port under `valgrind --tool=callgrind --cache-sim=yes
--dump-instr=yes`; after 500 requests of warm-up the counters are zeroed,
`ab -k -c 100 -n N` runs, and the counters are dumped. Printed per
request: instructions, simulated L1 instruction-cache misses (callgrind's
model of this machine's 32 KiB, 8-way cache), and the code a request runs:
the distinct instructions executed at least once per two requests, their
bytes, and the 64-byte lines they lie on. Lines over bytes is how thinly
the hot code is spread among cold code (1.0: packed); more lines than the
cache holds means every request fetches its code again. Deterministic:
the figures do not move with the machine's noise. Kernel time is not
counted. Needs valgrind, ab (apache2-utils), objdump.
"""

import argparse
import bisect
import collections
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare as cmp  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
POS = re.compile(r"^[0-9+\-*]")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def value(tok: str, prev: int) -> int:
    if tok == "*":
        return prev
    if tok[0] in "+-":
        return prev + int(tok, 0)
    return int(tok, 0)


def executed(profile: Path) -> tuple[dict[int, int], dict[str, int]]:
    """Instruction address -> times executed (self cost, calls' inclusive
    lines left out), and the profile's summary events."""
    counts: dict[int, int] = collections.Counter()
    positions, events, summary = ["instr"], [], {}
    addr = line = 0
    skip = False
    for raw in profile.open(errors="replace"):
        if raw.startswith("positions:"):
            positions = raw.split()[1:]
        elif raw.startswith("events:"):
            events = raw.split()[1:]
        elif raw.startswith(("summary:", "totals:")) and not summary:
            summary = dict(zip(events, map(int, raw.split()[1:])))
        elif raw.startswith("calls="):
            skip = True
        elif POS.match(raw):
            t = raw.split()
            addr = value(t[0], addr)
            if len(positions) > 1 and len(t) > 1:
                line = value(t[1], line)
            if skip:
                skip = False
                continue
            if len(t) > len(positions):
                counts[addr] += int(t[len(positions)])
    return counts, summary


def lengths(binary: Path, addrs: list[int]) -> dict[int, int]:
    """Instruction lengths in the executable's .text (others count 4)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)],
                         capture_output=True, text=True, check=True).stdout
    starts = sorted(int(m.group(1), 16) for m in re.finditer(r"(?m)^\s+([0-9a-f]+):\t", out))
    lens = {}
    for a in addrs:
        i = bisect.bisect_left(starts, a)
        if i < len(starts) - 1 and starts[i] == a:
            lens[a] = min(starts[i + 1] - a, 15)
    return lens


def measure(binary: Path, lighttpd: bool, n: int, tmp: Path) -> dict:
    port = free_port()
    conf = tmp / f"{binary.name}-{port}.conf"
    conf.write_text(f'server.document-root = "{REPO / "www"}"\nserver.port = {port}\n'
                    f'server.bind = "127.0.0.1"\nserver.errorlog = "{tmp}/error-{port}.log"\n'
                    'server.max-keep-alive-requests = 1000000\n'
                    'mimetype.assign = ( ".html" => "text/html" )\n'
                    + ("server.max-worker = 0\n" if lighttpd else ""))
    out = tmp / f"cg-{port}.out"
    vg = subprocess.Popen(["valgrind", "--tool=callgrind", "--cache-sim=yes", "--dump-instr=yes",
                           f"--callgrind-out-file={out}", str(binary), "-D", "-f", str(conf)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/index.html"
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        subprocess.run(["ab", "-q", "-k", "-n", "500", "-c", "10", url], capture_output=True, timeout=300)
        subprocess.run(["callgrind_control", "-d", str(vg.pid)], capture_output=True, timeout=60)
        time.sleep(1)
        r = subprocess.run(["ab", "-k", "-n", str(n), "-c", "100", url], capture_output=True,
                           text=True, timeout=900)
        if "Failed requests:        0" not in r.stdout:
            sys.exit(f"{binary}: ab failed:\n{r.stdout[-800:]}")
        subprocess.run(["callgrind_control", "-d", str(vg.pid)], capture_output=True, timeout=60)
        time.sleep(1)
    finally:
        cmp.stop_process(vg, signal.SIGINT, 60)
    parts = sorted(tmp.glob(f"cg-{port}.out.*"), key=lambda p: int(p.suffix[1:]))
    counts, summary = executed(parts[-1])
    hot = [a for a, c in counts.items() if c >= n / 2]
    lens = lengths(binary, hot)
    hot_bytes = sum(lens.get(a, 4) for a in hot)
    lines = {a >> 6 for a in hot}
    return {
        "instructions": summary.get("Ir", 0) / n,
        "l1i_misses": summary.get("I1mr", 0) / n,
        "hot_instructions": len(hot),
        "hot_bytes": hot_bytes,
        "lines": len(lines),
        "spread": len(lines) * 64 / max(hot_bytes, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--lighttpd", action="store_true",
                    help="also measure the lighttpd on PATH (Debian's)")
    a = ap.parse_args()
    for tool in ("valgrind", "ab", "objdump", "callgrind_control"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is needed")
    runs = [(Path(b).resolve(), False) for b in a.binaries]
    if a.lighttpd:
        runs.append((Path(shutil.which("lighttpd") or "/usr/sbin/lighttpd"), True))
    tmp = Path(tempfile.mkdtemp(prefix="glint-lines-"))
    print(f"# ab -k -c 100 -n {a.n} /index.html under callgrind, per request")
    print("| binary | instructions | L1i misses | hot instructions | their bytes | 64-byte lines | lines x 64 / bytes |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for binary, is_lighttpd in runs:
        m = measure(binary, is_lighttpd, a.n, tmp)
        print(f"| {binary} | {m['instructions']:,.0f} | {m['l1i_misses']:,.1f} | {m['hot_instructions']:,} "
              f"| {m['hot_bytes']:,} | {m['lines']:,} | {m['spread']:.2f} |", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

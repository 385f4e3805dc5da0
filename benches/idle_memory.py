#!/usr/bin/env python3
"""Idle memory of a freshly started server after its first request(s).

Starts the server in the foreground (-D -f CONF), waits for its port,
sends one GET per --url with curl, then reads /proc/PID/smaps_rollup
(Pss, Pss_File, Pss_Anon) and, for the mappings of the server's own
executable, the resident pages per mapping (from /proc/PID/smaps and
/proc/PID/pagemap). Repeats --runs times and prints the median run.

    benches/idle_memory.py --bin target/release/glint --conf g.conf \\
        --url http://127.0.0.1:28781/
    benches/idle_memory.py --bin /usr/sbin/lighttpd --conf l.conf \\
        --url http://127.0.0.1:28782/ --url https://127.0.0.1:28784/

--pages FILE writes the resident page offsets of the executable's text
(file offsets, one per line) for a look with nm.
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse


def wait_port(host, port, deadline):
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                out[parts[0][:-1]] = int(parts[1])
    return out


def exe_vmas(pid, exe):
    """(start, end, perms, offset, fields) of each mapping of exe."""
    vmas, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
                cur = None
                if len(parts) >= 6 and os.path.realpath(parts[5]) == exe:
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    cur = [lo, hi, parts[1], int(parts[2], 16), {}]
                    vmas.append(cur)
            elif cur is not None and parts[0].endswith(":") and len(parts) >= 2:
                if parts[1].isdigit():
                    cur[4][parts[0][:-1]] = int(parts[1])
    return vmas


def present_pages(pid, lo, hi):
    n = (hi - lo) // 4096
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(lo // 4096 * 8)
        data = f.read(n * 8)
    return [i for i in range(n)
            if int.from_bytes(data[i * 8:i * 8 + 8], "little") >> 63]


def one_run(args, exe):
    proc = subprocess.Popen([args.bin, "-D", "-f", args.conf],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        for url in args.url:
            u = urllib.parse.urlsplit(url)
            if not wait_port(u.hostname, u.port, deadline):
                sys.exit(f"{args.bin}: port {u.port} did not open")
        for url in args.url:
            subprocess.run(["curl", "-ksS", "-o", "/dev/null", "--max-time", "10", url],
                           check=True)
        time.sleep(0.3)  # the answer is out; let the loop go back to its wait
        r = rollup(proc.pid)
        vmas = exe_vmas(proc.pid, exe)
        text = [v for v in vmas if "x" in v[2]]
        pages = []
        for v in text:
            pages += [v[3] + i * 4096 for i in present_pages(proc.pid, v[0], v[1])]
        return r, vmas, pages
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--conf", required=True)
    ap.add_argument("--url", action="append", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pages")
    args = ap.parse_args()
    exe = os.path.realpath(args.bin)
    runs = [one_run(args, exe) for _ in range(args.runs)]
    runs.sort(key=lambda x: x[0]["Pss"])
    r, vmas, pages = runs[len(runs) // 2]
    pss = [x[0]["Pss"] for x in runs]
    print(f"{args.bin} {args.conf} {' '.join(args.url)}")
    print(f"  Pss {r['Pss']} kB (runs: {' '.join(map(str, pss))}; "
          f"median {statistics.median(pss)})  Pss_File {r.get('Pss_File')}  "
          f"Pss_Anon {r.get('Pss_Anon')}  Rss {r['Rss']}")
    for lo, hi, perms, off, f in vmas:
        print(f"  exe {perms} off {off:#x} size {(hi - lo) // 1024} kB: "
              f"Rss {f.get('Rss')} Pss {f.get('Pss')} Anon {f.get('Anonymous')}")
    exe_pss = sum(f.get("Pss", 0) for *_, f in vmas)
    print(f"  executable's mappings: Pss {exe_pss} kB; other files (libraries): "
          f"{r.get('Pss_File', 0) - exe_pss + sum(f.get('Anonymous', 0) for *_, f in vmas)} kB")
    print(f"  text pages resident: {len(pages)} ({len(pages) * 4} kB)")
    if args.pages:
        with open(args.pages, "w") as f:
            f.writelines(f"{p:#x}\n" for p in pages)


if __name__ == "__main__":
    main()

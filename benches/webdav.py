#!/usr/bin/env python3
"""WebDAV side by side: glint's mod_webdav, lighttpd's mod_webdav and
Apache's mod_dav (Debian packages: lighttpd lighttpd-mod-webdav apache2),
each serving its own copy of the same share on loopback, in one run.

Workloads, each timed with curl (one connection, as a sync client does):
  PUT of a 100 MB file, GET of it back, PROPFIND Depth 1 of a directory of
  10,000 files. For each: wall time (and MB/s), the server's CPU time
  (utime+stime from /proc), and its peak memory during the request
  (VmHWM after writing 5 to /proc/PID/clear_refs, so the peak is the
  request's, not the start's). Rounds alternate the servers; medians.

  python3 benches/webdav.py [--rounds 3] [--glint-bin target/release/glint]

Servers run in the foreground as one process each (Apache with -X), pinned
to CPU 0, curl to CPU 1. glint syncs a PUT's file before renaming it into
place (lighttpd and Apache do not): the PUT row includes that fdatasync.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

MB = 1024 * 1024
SIZE = 100 * MB
FILES = 10_000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc, limit=20):
    end = time.time() + limit
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early: {proc.args}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"server did not listen on {port}")


def lighttpd_conf(base, port, root):
    return f"""server.document-root = "{root}"
server.bind = "127.0.0.1"
server.port = {port}
server.errorlog = "{base}/error.log"
server.modules += ( "mod_webdav" )
webdav.activate = "enable"
webdav.sqlite-db-name = "{base}/webdav.db"
"""


def apache_conf(base, port, root):
    mods = "/usr/lib/apache2/modules"
    return f"""ServerRoot "{base}"
Listen 127.0.0.1:{port}
LoadModule mpm_event_module {mods}/mod_mpm_event.so
LoadModule authz_core_module {mods}/mod_authz_core.so
LoadModule dav_module {mods}/mod_dav.so
LoadModule dav_fs_module {mods}/mod_dav_fs.so
User www-data
Group www-data
PidFile {base}/apache.pid
ErrorLog {base}/error.log
DocumentRoot "{root}"
DavLockDB "{base}/davlock"
<Directory "{root}">
  Dav On
  Require all granted
</Directory>
"""


def start(name, args, base, port, root):
    os.makedirs(root, exist_ok=True)
    if name == "glint" or name == "lighttpd":
        conf = os.path.join(base, "server.conf")
        with open(conf, "w") as f:
            f.write(lighttpd_conf(base, port, root))
        cmd = [args.glint_bin if name == "glint" else "lighttpd", "-D", "-f", conf]
    else:
        conf = os.path.join(base, "apache.conf")
        with open(conf, "w") as f:
            f.write(apache_conf(base, port, root))
        subprocess.run(["chown", "-R", "www-data:www-data", base], check=True)
        cmd = ["apache2", "-X", "-f", conf]
    proc = subprocess.Popen(
        ["taskset", "-c", "0"] + cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(port, proc)
    return proc


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def measure(pid, curl_args):
    reset_peak(pid)
    t0, c0 = time.perf_counter(), cpu_ticks(pid)
    r = subprocess.run(
        ["taskset", "-c", "1", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}"] + curl_args,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    cpu = (cpu_ticks(pid) - c0) / os.sysconf("SC_CLK_TCK")
    return r.stdout.strip(), wall, cpu, peak_kib(pid)


def one_round(name, args, work, src):
    base = tempfile.mkdtemp(prefix=f"davbench-{name}-", dir=work)
    root = os.path.join(base, "root")
    many = os.path.join(root, "many")
    os.makedirs(many)
    for i in range(FILES):
        with open(os.path.join(many, f"file{i:05}.txt"), "w") as f:
            f.write("x")
    port = free_port()
    proc = start(name, args, base, port, root)
    url = f"http://127.0.0.1:{port}/"
    rows = {}
    try:
        measure(proc.pid, ["-X", "PROPFIND", "-H", "Depth: 0", url])  # warm-up
        rows["PUT 100 MB"] = measure(proc.pid, ["-T", src, url + "big.bin"])
        rows["GET 100 MB"] = measure(proc.pid, [url + "big.bin"])
        rows["PROPFIND Depth 1, 10,000 files"] = measure(
            proc.pid, ["-X", "PROPFIND", "-H", "Depth: 1", url + "many/"]
        )
        got = os.path.getsize(os.path.join(root, "big.bin"))
        if got != SIZE:
            raise SystemExit(f"{name}: PUT stored {got} bytes")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(base, ignore_errors=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--glint-bin", default="target/release/glint")
    ap.add_argument("--out", default="benches/results/webdav.md")
    args = ap.parse_args()
    args.glint_bin = os.path.abspath(args.glint_bin)
    servers = ["glint", "lighttpd", "apache2"]
    work = tempfile.mkdtemp(prefix="davbench-", dir="/var/tmp")
    os.chmod(work, 0o755)
    src = os.path.join(work, "src.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(SIZE))
    results = {s: {} for s in servers}
    for r in range(args.rounds):
        order = servers[r % 3:] + servers[: r % 3]
        for s in order:
            for k, v in one_round(s, args, work, src).items():
                results[s].setdefault(k, []).append(v)
            print(f"round {r + 1}: {s} done", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    write_table(args, servers, results)


def write_table(args, servers, results):
    cmd = "python3 benches/webdav.py " + " ".join(sys.argv[1:])
    lines = [
        "# WebDAV: glint vs lighttpd mod_webdav vs Apache mod_dav",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, `{cmd}`, "
        f"{args.rounds} rounds, medians; servers on CPU 0, curl on CPU 1, "
        "loopback, files under /var/tmp. Peak memory: the server's VmHWM "
        "during the request (reset before it). glint syncs a PUT's file "
        "before renaming it; the others do not.",
        "",
        "| workload | metric | " + " | ".join(servers) + " |",
        "|---|---|" + "---:|" * len(servers),
    ]
    for work in results[servers[0]]:
        med = {
            s: [statistics.median(x[i] for x in results[s][work]) for i in (1, 2, 3)]
            for s in servers
        }
        codes = {s: sorted({x[0] for x in results[s][work]}) for s in servers}
        mbps = "100 MB" in work
        lines.append(
            f"| {work} | wall s | " + " | ".join(f"{med[s][0]:.3f}" for s in servers) + " |"
        )
        if mbps:
            lines.append(
                f"| {work} | MB/s | "
                + " | ".join(f"{100 / med[s][0]:.0f}" for s in servers)
                + " |"
            )
        lines.append(
            f"| {work} | server CPU s | " + " | ".join(f"{med[s][1]:.2f}" for s in servers) + " |"
        )
        lines.append(
            f"| {work} | server peak memory KiB | "
            + " | ".join(f"{med[s][2]:,.0f}" for s in servers)
            + " |"
        )
        lines.append(
            f"| {work} | status | " + " | ".join("/".join(codes[s]) for s in servers) + " |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

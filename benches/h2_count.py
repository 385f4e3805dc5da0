#!/usr/bin/env python3
"""Instructions and system calls per HTTP/2 request, server by server.

    python3 benches/h2_count.py [--glint-bin BIN] [--servers glint,h2o,lighttpd]
                                [--n 20000] [--c 10] [--rows /index.html:10,...]
                                [--no-strace] [--no-callgrind]

Deterministic where CPU time on a shared machine is not: each server (one
process, foreground, h2c on loopback, the configuration benches/h2.py gives
it) runs under `valgrind --tool=callgrind`; after a warm-up the counters are
zeroed, `h2load -n N -c C -m M` runs, and the counters are dumped:
instructions per request = Ir / N. Then the same server runs natively under
`strace -c -f` attached for the h2load run alone: system calls per request,
and writes (sendto/writev/sendmsg/write/sendfile) per request. The profiles
stay in the printed directory (`callgrind_annotate --auto=no FILE`).
Needs valgrind, strace and nghttp2-client.
"""

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare as cmp  # noqa: E402
import h2  # noqa: E402

WARM = 2000
WRITES = ("sendto", "writev", "sendmsg", "write", "sendfile", "sendfile64")


def server_cmd(name: str, tmp: Path, docroot: Path, port: int, glint_bin: str) -> list[str]:
    if name == "glint":
        conf = tmp / "glint.conf"
        conf.write_text(h2.conf_lighttpd(tmp, docroot, port, port + 1, tmp, "glint-error")
                        .split('server.modules += ( "mod_openssl" )')[0])
        return [str(Path(glint_bin).resolve()), "-D", "-f", str(conf)]
    if name == "lighttpd":
        conf = tmp / "lighttpd.conf"
        conf.write_text(cmp.conf_lighttpd(tmp, docroot, port))
        return [cmp.tool_path("lighttpd"), "-D", "-f", str(conf)]
    if name == "h2o":
        conf = tmp / "h2o.conf"
        conf.write_text(cmp.conf_h2o(tmp, docroot, port))
        return [cmp.tool_path("h2o"), "-c", str(conf)]
    raise ValueError(name)


def wait_up(port: int, deadline_s: float = 60) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://{cmp.HOST}:{port}/"],
                           capture_output=True, timeout=30)
        if r.returncode == 0:
            return
        time.sleep(0.3)
    raise RuntimeError(f"server on {port} did not come up")


def h2load(port: int, path: str, n: int, c: int, m: int) -> str:
    r = subprocess.run(["h2load", "-n", str(n), "-c", str(c), "-m", str(m),
                        f"http://{cmp.HOST}:{port}{path}"], capture_output=True, text=True, timeout=900)
    out = r.stdout
    if f"{n} succeeded" not in out:
        raise RuntimeError("h2load: " + out[-800:])
    return out


def stop(p: subprocess.Popen) -> None:
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(timeout=30)


def cg_run(name, tmp, docroot, glint_bin, path, m, n, c, tag) -> tuple[int, Path]:
    """One server life under callgrind: started, `n` requests of the row,
    stopped; its whole instruction count."""
    port = cmp.free_port(19300)
    out = tmp / f"cg-{name}-{path.strip('/')}-m{m}-{tag}.out"
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--vgdb=no", f"--callgrind-out-file={out}"]
                         + server_cmd(name, tmp, docroot, port, glint_bin),
                         stdout=open(tmp / f"vg-{name}.log", "w"), stderr=subprocess.STDOUT)
    try:
        wait_up(port)
        out.chmod(0o666)  # h2o, started as root, ends as nobody
        h2load(port, path, n, c, m)
    finally:
        stop(p)
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1]), out
    raise RuntimeError(f"no totals in {out}")


def callgrind(name, tmp, docroot, glint_bin, rows, n, c) -> dict:
    """Instructions per request as the difference of two lives of the
    server, one with WARM requests and one with WARM + n: start-up,
    warm-up and shut-down cancel out. (callgrind_control needs vgdb, which
    cannot wake a server asleep in epoll_wait here.)"""
    res = {}
    for path, m in rows:
        base, _ = cg_run(name, tmp, docroot, glint_bin, path, m, WARM, c, "base")
        full, prof = cg_run(name, tmp, docroot, glint_bin, path, m, WARM + n, c, "full")
        res[(path, m)] = ((full - base) / n, str(prof))
    return res


def strace(name, tmp, docroot, glint_bin, rows, n, c) -> dict:
    port = cmp.free_port(19300)
    p = subprocess.Popen(server_cmd(name, tmp, docroot, port, glint_bin),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = {}
    try:
        wait_up(port)
        for path, m in rows:
            h2load(port, path, 500, c, m)
            log = tmp / f"strace-{name}-{path.strip('/')}-m{m}.txt"
            s = subprocess.Popen(["strace", "-c", "-f", "-o", str(log), "-p", str(p.pid)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)  # strace attached (it prints nothing to wait on)
            h2load(port, path, n, c, m)
            s.send_signal(signal.SIGINT)
            s.wait(timeout=60)
            calls, writes = 0, 0
            for line in log.read_text().splitlines():
                f = line.split()
                if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
                    k = int(f[3])
                    calls += k
                    if f[-1] in WRITES:
                        writes += k
            res[(path, m)] = (calls / n, writes / n, str(log))
    finally:
        stop(p)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--glint-bin", default="target/release/glint")
    ap.add_argument("--servers", default="glint")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--c", type=int, default=10)
    ap.add_argument("--rows", default="/index.html:10,/index.html:100,/test.jpg:10,/test.jpg:100")
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--no-callgrind", action="store_true")
    a = ap.parse_args()
    rows = [(r.split(":")[0], int(r.split(":")[1])) for r in a.rows.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="h2count-"))
    tmp.chmod(0o755)
    docroot = tmp / "www"
    cmp.make_docroot(docroot)
    print(f"# h2load -n {a.n} -c {a.c}; files in {tmp}")
    print("| server | row | instructions/request | syscalls/request | writes/request |")
    print("|---|---|---|---|---|")
    for name in a.servers.split(","):
        cg = {} if a.no_callgrind else callgrind(name, tmp, docroot, a.glint_bin, rows, a.n, a.c)
        st = {} if a.no_strace else strace(name, tmp, docroot, a.glint_bin, rows, a.n, a.c)
        for row in rows:
            ir = f"{cg[row][0]:,.0f}" if row in cg else "—"
            sc = f"{st[row][0]:.2f}" if row in st else "—"
            wr = f"{st[row][1]:.2f}" if row in st else "—"
            print(f"| {name} | h2c {row[0]} -m {row[1]} | {ir} | {sc} | {wr} |", flush=True)


if __name__ == "__main__":
    main()

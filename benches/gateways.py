#!/usr/bin/env python3
"""Gateway rows of the side-by-side benchmark: glint vs lighttpd (and nginx)
in front of the SAME SCGI / FastCGI backends.

Python 3.11 standard library only (it reuses the /proc and process helpers of
benches/compare.py).  Web servers are pinned to CPU 0, ab and the backends to
CPU 1 (--backends-cpu).  Only 127.0.0.1 and unix sockets are ever used.

    python3 benches/gateways.py [--quick] [--rounds N] [--repeat N] [--servers glint,lighttpd,nginx] [--base-port P]

Workloads (field reports in /work/shared/seeds):
  000  the seed's own stack: Quixote's demo (quixote.demo.create_publisher) on
       Quixote's SCGI server over TCP, and on the same handler over a unix
       socket (tests/backends/quixote_unix.py): ab -n 1000 -c 5 and -c 50 on
       its front page, /scgi-test/ (/scgi-unix/)
  000  a minimal SCGI app (tests/backends/scgi_app.py) over TCP and over a
       unix socket: ab -n 1000 -c 5 and -c 50 on /scgi-app/hello (/scgi-sock/hello)
  002  flup WSGI app over FastCGI on a unix socket: ab -n 10000 -c 100 /wsgi/hello
  004  php-cgi spawned by the server (bin-path, max-procs 1, PHP_FCGI_CHILDREN 4):
       ab -n 1000 -c 1 and -c 50 /hello.php, ab -n 1000 -c 1 /phpinfo.php (the seed's page)
--quick divides every request count by 10; --repeat N runs each 1,000-request
ab command N times back to back per measurement (steadier CPU figures).
See benches/README.md.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare as cmp  # noqa: E402  (same directory; stdlib only)

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benches" / "results"
BACKENDS = REPO / "tests" / "backends"
ALL_SERVERS = ["glint", "lighttpd", "nginx"]
BASELINE = "lighttpd"
SERVER_CPU, CLIENT_CPU = "0", "1"
# where the backends run (--backends-cpu): by default with ab, so that the web
# server's CPU is its alone and its CPU per request is its own work (a backend
# on the same CPU swung it ±30 % round to round)
BACKEND_CPUS = CLIENT_CPU
# a server's own processes, by /proc/PID/comm; php-cgi children of the server are not counted
SERVER_COMMS = {"glint": ("glint",), "lighttpd": ("lighttpd",), "nginx": ("nginx",)}

PIP_LINE = "pip install scgi flup 'quixote>=3,<4'"
APT_LINE = "apt-get install -y php-cgi lighttpd apache2-utils nginx-light util-linux"
PHP_ENV = {"PHP_FCGI_CHILDREN": "4", "PHP_FCGI_MAX_REQUESTS": "10000"}


log = cmp.log


def workloads(quick: bool, repeat: int = 1) -> list[dict]:
    div = 10 if quick else 1
    w = [
        dict(id="quixote-tcp-c5", seed="000", path="/scgi-test/", n=1000, c=5, what="Quixote demo, SCGI over TCP"),
        dict(id="quixote-tcp-c50", seed="000", path="/scgi-test/", n=1000, c=50, what="Quixote demo, SCGI over TCP"),
        dict(id="quixote-unix-c5", seed="000", path="/scgi-unix/", n=1000, c=5,
             what="Quixote demo, SCGI over unix socket"),
        dict(id="quixote-unix-c50", seed="000", path="/scgi-unix/", n=1000, c=50,
             what="Quixote demo, SCGI over unix socket"),
        dict(id="scgi-tcp-c5", seed="000", path="/scgi-app/hello", n=1000, c=5, what="SCGI over TCP"),
        dict(id="scgi-tcp-c50", seed="000", path="/scgi-app/hello", n=1000, c=50, what="SCGI over TCP"),
        dict(id="scgi-unix-c5", seed="000", path="/scgi-sock/hello", n=1000, c=5, what="SCGI over unix socket"),
        dict(id="scgi-unix-c50", seed="000", path="/scgi-sock/hello", n=1000, c=50, what="SCGI over unix socket"),
        dict(id="flup-fcgi-c100", seed="002", path="/wsgi/hello", n=10000, c=100, what="flup WSGI over FastCGI (unix)"),
        dict(id="php-c1", seed="004", path="/hello.php", n=1000, c=1, what="php-cgi via bin-path"),
        dict(id="php-c50", seed="004", path="/hello.php", n=1000, c=50, what="php-cgi via bin-path"),
        # the seed's own page: phpinfo(), ~70 KB of HTML streamed through the gateway
        dict(id="phpinfo-c1", seed="004", path="/phpinfo.php", n=1000, c=1, what="php-cgi phpinfo()"),
    ]
    for x in w:
        x["n"] = max(100, x["n"] // div)
        # the long rows (10,000 requests) need no repeating
        x["repeat"] = repeat if x["n"] <= 1000 else 1
        times = f" (×{repeat})" if repeat > 1 else ""
        x["title"] = f"{x['seed']} {x['what']}: ab -n {x['n']} -c {x['c']} {x['path']}{times}"
    return w


# --------------------------------------------------------------------------
# prerequisites

def check_prereqs(servers: list[str]) -> bool:
    ok = True
    need = {"ab": "apache2-utils", "php-cgi": "php-cgi", "taskset": "util-linux"}
    if "lighttpd" in servers:
        need["lighttpd"] = "lighttpd"
    if "nginx" in servers:
        need["nginx"] = "nginx-light"
    miss = [c for c in need if shutil.which(c) is None and not Path("/usr/sbin", c).exists()]
    if miss:
        log(f"missing commands: {', '.join(miss)}")
        print(APT_LINE)
        ok = False
    for mod in ("scgi", "flup", "quixote.demo"):
        r = subprocess.run([sys.executable, "-c", f"import {mod}"], capture_output=True, timeout=30)
        if r.returncode != 0:
            log(f"missing Python package: {mod}")
            print(PIP_LINE)
            ok = False
            break
    return ok


# --------------------------------------------------------------------------
# backends, shared by every web server (except php-cgi, which each server spawns)

class Backend:
    def __init__(self, name: str, argv: list[str], tmp: Path, env: dict | None = None, ready_line: bool = True):
        self.name = name
        self.log_path = tmp / f"backend-{name}.log"
        # this script pins itself to the client CPU; backends go where
        # --backends-cpu says (default: with ab, off the web server's CPU)
        allcpus = BACKEND_CPUS
        logf = open(self.log_path, "wb")
        # a backend without a ready line writes stdout to its log: a pipe nobody reads would fill
        stdout = subprocess.PIPE if ready_line else logf
        self.proc = subprocess.Popen(["taskset", "-c", allcpus, *argv], stdin=subprocess.DEVNULL, stdout=stdout,
                                     stderr=logf, start_new_session=True,
                                     env=dict(os.environ, **(env or {})))
        logf.close()  # the child has its own descriptor

    def ready_line(self, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                buf += chunk
                if b"\n" in buf:
                    line = buf.split(b"\n", 1)[0].decode()
                    if line.startswith("ready "):
                        return line[6:].strip()
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"backend {self.name} gave no ready line: {buf!r} {self.tail()}")

    def wait_unix(self, path: Path, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(str(path))
                return
            except OSError:
                time.sleep(0.05)
            finally:
                s.close()
        raise RuntimeError(f"backend {self.name} does not listen on {path}: {self.tail()}")

    def wait_tcp(self, port: int, timeout: float = 15.0) -> None:
        """Until the backend listens on 127.0.0.1:port, read from /proc/net/tcp:
        a probe connection without a request would cost an SCGI server a child."""
        want = f"0100007F:{port:04X}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            with open("/proc/net/tcp") as f:
                for line in f:
                    fields = line.split()
                    if len(fields) > 3 and fields[1] == want and fields[3] == "0A":
                        return
            time.sleep(0.05)
        raise RuntimeError(f"backend {self.name} does not listen on port {port}: {self.tail()}")

    @staticmethod
    def kernel_port() -> int:
        """A free port from the kernel's ephemeral range (bind to port 0)."""
        s = socket.socket()
        try:
            s.bind((HOST, 0))
            return s.getsockname()[1]
        finally:
            s.close()

    @staticmethod
    def open_to_all(path: Path) -> None:
        # nginx's worker runs as nobody / www-data: it needs write permission on the socket
        os.chmod(path, 0o666)

    def tail(self) -> str:
        try:
            return " ".join(self.log_path.read_text(errors="replace")[-500:].split())
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=5)
                return
            except subprocess.TimeoutExpired:
                continue


# --------------------------------------------------------------------------
# web servers

class GwServer(cmp.Server):
    """compare.Server, but pids() is only the web server's own processes: the
    php-cgi processes it spawned (same process group) are backends, not counted."""

    def pids(self) -> list[int]:
        out = []
        for pid in super().pids():
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith(SERVER_COMMS.get(self.name, ("glint",))):
                out.append(pid)
        return out

    def descendants(self) -> list[int]:
        """The server's child processes and theirs (glint and lighttpd start
        php-cgi in a session of its own, so it is not in the server's group)."""
        if self.proc is None:
            return []
        kids: dict[int, list[int]] = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    s = Path(f"/proc/{d}/stat").read_text()
                    kids.setdefault(int(s[s.rindex(")") + 2:].split()[1]), []).append(int(d))
                except (OSError, ValueError, IndexError):
                    pass
        out, todo = [], [self.proc.pid]
        while todo:
            for c in kids.get(todo.pop(), []):
                out.append(c)
                todo.append(c)
        return sorted(out)

    def backend_pids(self) -> list[int]:
        own = set(self.pids())
        return [p for p in self.descendants() if p not in own]

    def stop(self) -> None:
        left = self.backend_pids()
        super().stop()
        time.sleep(0.2)
        for pid in left:  # php-cgi the server did not take down with it
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def conf_lighttpd(name: str, tmp: Path, docroot: Path, port: int, be: dict) -> str:
    """lighttpd.conf, given verbatim (but for log/pid/socket names) to glint too."""
    base = cmp.conf_lighttpd(tmp, docroot, port)
    base = base.replace('server.modules = ( "mod_staticfile" )',
                        'server.modules = ( "mod_scgi", "mod_fastcgi", "mod_staticfile" )')
    base = base.replace("lighttpd-error", f"{name}-error").replace("lighttpd.pid", f"{name}.pid")
    base = base.replace("# generated by benches/compare.py", "# generated by benches/gateways.py")
    env = ", ".join(f'"{k}" => "{v}"' for k, v in PHP_ENV.items())
    return base + f"""static-file.exclude-extensions = ( ".php" )
scgi.server = (
  # seed 000: Quixote's demo, over TCP (as conf/examples/seed000-scgi.conf) and over a unix socket
  "/scgi-test" => ( "localhost" => ( "host" => "{HOST}", "port" => {be['quixote_port']}, "check-local" => "disable" ) ),
  "/scgi-unix" => ( "localhost" => ( "socket" => "{be['quixote_sock']}", "check-local" => "disable" ) ),
  # seed 000: a minimal SCGI app, over TCP and over a unix socket
  "/scgi-app" => ( "tcp" => ( "host" => "{HOST}", "port" => {be['scgi_port']}, "check-local" => "disable" ) ),
  "/scgi-sock" => ( "unix" => ( "socket" => "{be['scgi_sock']}", "check-local" => "disable" ) )
)
fastcgi.server = (
  # seed 002: flup WSGI app on a unix socket
  "/wsgi" => ( "flup" => ( "socket" => "{be['flup_sock']}", "check-local" => "disable" ) ),
  # seed 004: php-cgi spawned by the server itself
  ".php" => ( "php" => ( "bin-path" => "{be['php_wrap']}", "socket" => "{tmp}/{name}-php.socket",
              "max-procs" => 1, "bin-environment" => ( {env} ),
              "bin-copy-environment" => ( "PATH" ), "broken-scriptfilename" => "enable" ) )
)
"""


def conf_nginx(tmp: Path, docroot: Path, port: int, be: dict) -> str:
    base = cmp.conf_nginx(tmp, docroot, port).replace("# generated by benches/compare.py",
                                                      "# generated by benches/gateways.py")
    locs = f"""        index index.html;
        # seed 000: Quixote's demo (its SCGI handler splits SCRIPT_NAME itself, as
        # behind Apache's mod_scgi: it needs the whole path there)
        location /scgi-test {{
            include /etc/nginx/scgi_params; scgi_param SCRIPT_NAME $document_uri;
            scgi_pass {HOST}:{be['quixote_port']};
        }}
        location /scgi-unix {{
            include /etc/nginx/scgi_params; scgi_param SCRIPT_NAME $document_uri;
            scgi_pass unix:{be['quixote_sock']};
        }}
        # seed 000: the minimal SCGI app
        location /scgi-app {{ include /etc/nginx/scgi_params; scgi_pass {HOST}:{be['scgi_port']}; }}
        location /scgi-sock {{ include /etc/nginx/scgi_params; scgi_pass unix:{be['scgi_sock']}; }}
        # seed 002
        location /wsgi {{
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_NAME /wsgi;
            fastcgi_pass unix:{be['flup_sock']};
        }}
        # seed 004: nginx cannot spawn; php-cgi -b started by the benchmark with the same environment
        location ~ \\.php$ {{
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
            fastcgi_pass unix:{be['nginx_php_sock']};
        }}
"""
    return base.replace("        index index.html;\n", locs)


def make_server(name: str, tmp: Path, docroot: Path, port: int, be: dict, glint_bin: Path | None) -> GwServer:
    if cmp.is_glint(name):
        # glint, or a second glint binary (glint-b, ...) with the same configuration
        binary = tmp / name
        shutil.copy2(glint_bin, binary)
        conf = tmp / f"{name}.conf"
        conf.write_text(conf_lighttpd(name, tmp, docroot, port, be))
        return GwServer(name, [str(binary), "-D", "-f", str(conf)], port, tmp / f"{name}-error.log", tmp)
    if name == "lighttpd":
        conf = tmp / "lighttpd.conf"
        conf.write_text(conf_lighttpd("lighttpd", tmp, docroot, port, be))
        return GwServer(name, [cmp.tool_path("lighttpd"), "-D", "-f", str(conf)], port,
                        tmp / "lighttpd-error.log", tmp)
    if name == "nginx":
        conf = tmp / "nginx.conf"
        conf.write_text(conf_nginx(tmp, docroot, port, be))
        return GwServer(name, [cmp.tool_path("nginx"), "-p", str(tmp), "-e", str(tmp / "nginx-error.log"),
                               "-c", str(conf)], port, tmp / "nginx-error.log", tmp)
    raise ValueError(name)


# --------------------------------------------------------------------------
# load

def parse_ab(out: str, csv_path: Path) -> dict:
    """compare.py's ab parser, plus the successful responses per second."""
    r = cmp.parse_ab(out, csv_path)
    r["ab_rps"] = r.pop("rps")
    ok = max(0, r["completed"] - r["failed"] - r["non2xx"])
    r["ok_2xx"] = ok
    r["ok_rps"] = ok / r["elapsed_s"] if r["elapsed_s"] else 0.0
    return r


def run_ab(path: str, n: int, c: int, port: int, tmp: Path) -> dict:
    url = f"http://{HOST}:{port}{path}"
    assert url.startswith("http://127.0.0.1:")
    csv_path = tmp / "ab-percentiles.csv"
    csv_path.unlink(missing_ok=True)
    # -l: the answers of the echo apps differ in length (REMOTE_PORT…); that is no failure
    argv = ["taskset", "-c", CLIENT_CPU, "ab", "-q", "-r", "-l", "-s", "30", "-n", str(n), "-c", str(c),
            "-e", str(csv_path), url]
    timeout = 60 + n / 50
    return cmp.run_client(argv, timeout, lambda out: parse_ab(out, csv_path))


def run_ab_repeated(path: str, n: int, c: int, port: int, tmp: Path, repeat: int) -> dict:
    """The seed's ab command `repeat` times back to back, as one measurement:
    a 1,000-request run at 8,000 requests/s lasts 0.12 s, too short for a
    CPU figure that does not swing with the first milliseconds."""
    runs = [run_ab(path, n, c, port, tmp) for _ in range(max(1, repeat))]
    if len(runs) == 1:
        return runs[0]
    r = dict(runs[-1])
    for k in ("completed", "failed", "non2xx", "ok_2xx", "elapsed_s", "wall_s", "client_cpu_s"):
        r[k] = sum(x.get(k) or 0 for x in runs)
    r["ok_rps"] = r["ok_2xx"] / r["elapsed_s"] if r["elapsed_s"] else 0.0
    r["ab_rps"] = r["completed"] / r["elapsed_s"] if r["elapsed_s"] else 0.0
    p99 = [x["p99_ms"] for x in runs if x.get("p99_ms") is not None]
    r["p99_ms"] = statistics.median(p99) if p99 else None
    longest = [x["max_ms"] for x in runs if x.get("max_ms") is not None]
    r["max_ms"] = max(longest) if longest else None
    errors = [x["error"] for x in runs if x.get("error")]
    if errors:
        r["error"] = " | ".join(errors)[-400:]
    else:
        r.pop("error", None)
    r["rc"] = max(x.get("rc", 0) for x in runs)
    return r


def _task_sleeps(base: str) -> int | None:
    try:
        with open(base + "/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def sleeps_by_task(pids: list[int]) -> dict[tuple[int, int], int]:
    """voluntary_ctxt_switches of every thread: how often it went to sleep
    (each sleep is a wake-up later, and wake-ups cost most of a gateway
    request's server CPU on this machine)."""
    return cmp.by_task(pids, _task_sleeps)


def measure(srv: GwServer, wl: dict, tmp: Path) -> dict:
    pids = srv.pids()
    if not pids:
        return {"error": "server not running"}
    s0 = sleeps_by_task(pids)
    c0 = cmp.cpu_ns_by_task(pids)
    b0, t0 = cmp.cpu0_times()
    r = run_ab_repeated(wl["path"], wl["n"], wl["c"], srv.port, tmp, wl.get("repeat", 1))
    c1 = cmp.cpu_ns_by_task(sorted(set(pids) | set(srv.pids())))
    s1 = sleeps_by_task(sorted(set(pids) | set(srv.pids())))
    b1, t1 = cmp.cpu0_times()
    cpu_ns = cmp.cpu_delta_ns(c0, c1)
    done = r.get("completed") or 0
    r["server_cpu_s"] = cpu_ns / 1e9
    r["server_pids"] = len(pids)
    r["cpu_us_per_req"] = cpu_ns / 1000 / done if done else None
    r["cpu_us_per_ok"] = cpu_ns / 1000 / r["ok_2xx"] if r.get("ok_2xx") else None
    r["sleeps_per_req"] = cmp.cpu_delta_ns(s0, s1) / done if done else None
    r["server_busy_pct"] = 100 * cpu_ns / 1e9 / r["wall_s"] if r["wall_s"] else None
    r["client_busy_pct"] = 100 * r["client_cpu_s"] / r["wall_s"] if r["wall_s"] else None
    r["loadavg"] = cmp.loadavg()
    # everything else that ran on the server CPU (a neighbour's compile, php-cgi, softirqs)
    if t1 > t0 and r["server_busy_pct"] is not None:
        r["other_on_cpu0_pct"] = max(0.0, 100 * (b1 - b0) / (t1 - t0) - r["server_busy_pct"])
    if not srv.alive():
        r["error"] = (r.get("error", "") + f" server died: {srv.tail_logs()}").strip()
    return r


def log_kinds(srv: GwServer, top: int = 6) -> list[tuple[int, str]]:
    """The error log's lines grouped by their text with times, numbers and
    temp paths blanked: what kind of errors the server logged, how often."""
    counts: dict[str, int] = {}
    for p in (srv.stdout_path, srv.errlog):
        try:
            text = p.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            key = re.sub(r"^[\d/: -]+", "", line)
            key = re.sub(r"\*\d+|#\d+|\d+", "N", key.replace(str(srv.tmp), "TMP"))
            key = re.sub(r"client: .*", "…", key)[:160]
            counts[key] = counts.get(key, 0) + 1
    return sorted(((n, k) for k, n in counts.items()), reverse=True)[:top]


def probe(port: int, path: str) -> tuple[int, str]:
    try:
        status, _, body = cmp.http_get(port, path, timeout=10)
        return status, body[:120].decode("latin-1")
    except (OSError, ValueError, IndexError) as e:
        return -1, repr(e)


# --------------------------------------------------------------------------
# reporting

METRICS = [  # key, label, format, ratio to baseline?
    ("ok_rps", "2xx responses/s", "{:,.0f}", True),
    ("non2xx", "non-2xx", "{:.0f}", False),
    ("failed", "failed (ab)", "{:.0f}", False),
    ("cpu_us_per_req", "server CPU µs/request", "{:.1f}", True),
    ("sleeps_per_req", "server sleeps/request", "{:.2f}", True),
    ("p99_ms", "p99 latency ms", "{:.1f}", True),
    ("max_ms", "longest request ms", "{:.0f}", False),
]


median = cmp.median


def summarise(raw: dict) -> dict:
    summ = {}
    for wl in raw["workloads"]:
        for key, *_ in METRICS + [("server_busy_pct",), ("client_busy_pct",), ("cpu_us_per_ok",)]:
            for s in raw["servers"]:
                runs = raw["runs"].get(s, {}).get(wl["id"], [])
                summ.setdefault(wl["id"], {}).setdefault(key, {})[s] = median([r.get(key) for r in runs])
    return summ


def cell(val, base, fmt, ratio: bool) -> str:
    if val is None:
        return "—"
    txt = fmt.format(val)
    if not ratio or base is None or base == 0:
        return txt
    return f"{txt} ({val / base:.2f}×)"


def render_table(raw: dict, summ: dict) -> str:
    servers = raw["servers"]
    base = BASELINE if BASELINE in servers else servers[0]
    lines = ["| workload | metric | " + " | ".join(servers) + " |", "|---|---|" + "---:|" * len(servers)]
    for wl in raw["workloads"]:
        for key, label, fmt, ratio in METRICS:
            row = summ[wl["id"]][key]
            cells = [cell(row.get(s), row.get(base), fmt, ratio) for s in servers]
            lines.append(f"| {wl['title']} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


GOAL_CPU = 0.85  # issue 18: at most 0.85x lighttpd's server CPU per request ...
GOAL_OK = 1.0    # ... with at least its successful answers per second


def render_goal(raw: dict, summ: dict) -> list[str]:
    """Each glint against lighttpd, with the round-by-round ratios' spread:
    a row counts only when its spread is smaller than its distance from the
    goal (issue 18)."""
    servers = raw["servers"]
    if BASELINE not in servers:
        return []
    out = [f"Against {BASELINE}, round by round (the servers ran back to back in each round): "
           f"goal CPU ≤ {GOAL_CPU}× and 2xx/s ≥ {GOAL_OK}×; spread = min–max of the per-round ratios; "
           "a verdict stands only where the spread is smaller than the distance from the goal:", "",
           "| workload | server | CPU ratio | spread | verdict | 2xx/s ratio | spread | verdict |",
           "|---|---|---:|---:|---|---:|---:|---|"]
    for wl in raw["workloads"]:
        for g in [s for s in servers if cmp.is_glint(s)]:
            cells = []
            for key, goal, lower in (("cpu_us_per_req", GOAL_CPU, True), ("ok_rps", GOAL_OK, False)):
                row = summ[wl["id"]][key]
                rr = cmp.round_ratios(raw, g, BASELINE, wl["id"]) if key == "cpu_us_per_req" else \
                    _round_ratios(raw, g, BASELINE, wl["id"], key)
                if row.get(g) is None or not row.get(BASELINE) or not rr:
                    cells += ["—", "—", "—"]
                    continue
                ratio = row[g] / row[BASELINE]
                lo, hi = min(rr), max(rr)
                if lower:
                    v = cmp.verdict(ratio, lo, hi, goal, len(rr))
                else:  # higher is better: mirror around the goal
                    v = cmp.verdict(-ratio, -hi, -lo, -goal, len(rr))
                cells += [f"{ratio:.2f}×", f"{lo:.2f}–{hi:.2f}", v]
            out.append(f"| {wl['title']} | {g} | " + " | ".join(cells) + " |")
    return out + [""]


def _round_ratios(raw: dict, a: str, b: str, wl_id: str, key: str) -> list[float]:
    ra, rb = cmp.per_round(raw, a, wl_id, key), cmp.per_round(raw, b, wl_id, key)
    return [ra[k] / rb[k] for k in ra if k in rb and rb[k]]


def render_ab(raw: dict, summ: dict) -> list[str]:
    servers = raw["servers"]
    others = [s for s in servers if cmp.is_glint(s) and s != "glint"]
    if "glint" not in servers or not others:
        return []
    out = ["## glint against the other glint binaries of this run", "",
           f"Server CPU µs/request, glint / other (above 1: glint is slower); spread = min–max of the "
           f"round-by-round ratios. Goal (issue 12): no row above {cmp.GOAL_AB}×.", "",
           "| workload | other | its µs/request | glint µs/request | ratio | spread | verdict |",
           "|---|---|---:|---:|---:|---:|---|"]
    for o in others:
        for wl in raw["workloads"]:
            row = summ[wl["id"]]["cpu_us_per_req"]
            rr = cmp.round_ratios(raw, "glint", o, wl["id"])
            if row.get("glint") is None or not row.get(o) or not rr:
                continue
            ratio = row["glint"] / row[o]
            lo, hi = min(rr), max(rr)
            out.append(f"| {wl['title']} | {o} | {row[o]:.1f} | {row['glint']:.1f} | {ratio:.3f}× | "
                       f"{lo:.3f}–{hi:.3f} | {cmp.verdict(ratio, lo, hi, cmp.GOAL_AB, len(rr))} |")
    return out + [""]


def render_md(raw: dict, summ: dict) -> str:
    servers = raw["servers"]
    base = BASELINE if BASELINE in servers else servers[0]
    m = raw["machine"]
    out = [
        "# glint vs lighttpd (and nginx) in front of SCGI and FastCGI backends",
        "",
        f"Generated by `benches/gateways.py{' --quick' if raw['quick'] else ''} --rounds {raw['rounds']}"
        f"{' --repeat ' + str(raw['repeat']) if raw.get('repeat', 1) > 1 else ''}` "
        f"from {raw['started']} to {raw['finished']}. Medians over {raw['rounds']} round(s), server order "
        f"rotated each round; cells are `value (ratio to {base})`. Web servers pinned to CPU {m['server_cpu']}, "
        f"ab to CPU {m['client_cpu']}, backends to CPU {m.get('backend_cpus', 'any (unpinned)')}; {m['cpus']} × {m['cpu_model']}, Linux {m['kernel']}. "
        "All servers talk to the same backend processes (php-cgi: each server spawns its own, "
        "nginx gets one started by the script). How to read it: `benches/README.md`.",
        "",
        "| program | version |", "|---|---|",
        *[f"| {s} | {raw['versions'].get(s, '?')} |" for s in servers],
        *[f"| {k} | {v} |" for k, v in raw["tools"].items()],
        "",
        render_table(raw, summ),
        "",
        *render_goal(raw, summ),
        *render_ab(raw, summ),
        "2xx responses/s = (ab's complete − failed − non-2xx) / ab's time taken. "
        "Server CPU µs/request = utime+stime (schedstat) of the web server's own processes only, "
        "divided by ab's complete requests (2xx or not); the backends' CPU is not in it.",
        "",
        "Server CPU busy % (server CPU time / wall time; ~100 % = the web server was the limit, "
        "low = it waited for the backend or ab):",
        "",
        "| workload | " + " | ".join(servers) + " |", "|---|" + "---:|" * len(servers),
    ]
    for wl in raw["workloads"]:
        row = summ[wl["id"]]["server_busy_pct"]
        out.append(f"| {wl['title']} | " + " | ".join(cell(row.get(s), None, "{:.0f}", False) for s in servers) + " |")
    out += ["", "Spread of server CPU µs/request over the rounds (min–max):", "",
            "| workload | " + " | ".join(servers) + " |", "|---|" + "---:|" * len(servers)]
    for wl in raw["workloads"]:
        cells = []
        for s in servers:
            v = [r.get("cpu_us_per_req") for r in raw["runs"].get(s, {}).get(wl["id"], [])
                 if r.get("cpu_us_per_req") is not None]
            cells.append(f"{min(v):.1f}–{max(v):.1f}" if v else "—")
        out.append(f"| {wl['title']} | " + " | ".join(cells) + " |")
    out += ["", "Spread of 2xx responses/s over the rounds (min–max):", "",
            "| workload | " + " | ".join(servers) + " |", "|---|" + "---:|" * len(servers)]
    for wl in raw["workloads"]:
        cells = []
        for s in servers:
            v = [r.get("ok_rps") for r in raw["runs"].get(s, {}).get(wl["id"], []) if r.get("ok_rps") is not None]
            cells.append(f"{min(v):,.0f}–{max(v):,.0f}" if v else "—")
        out.append(f"| {wl['title']} | " + " | ".join(cells) + " |")
    out.append("")
    other = sorted(r["other_on_cpu0_pct"] for per in raw["runs"].values() for runs in per.values()
                   for r in runs if r.get("other_on_cpu0_pct") is not None)
    loads = [r["loadavg"] for per in raw["runs"].values() for runs in per.values() for r in runs if r.get("loadavg")]
    if other:
        out += [f"Noise: other work on CPU {m['server_cpu']} during the runs (its busy % from `/proc/stat` minus "
                f"the web server's own; includes the backends when they may run there): median {statistics.median(other):.0f} %, "
                f"max {other[-1]:.0f} %; 1-min load average {min(loads):.1f}–{max(loads):.1f}.", ""]
    if raw["errors"]:
        out += ["## Errors", ""] + [f"- **{k}**: {v}" for k, v in raw["errors"].items()] + [""]
    notes = []
    for s, per in raw["runs"].items():
        for wl_id, runs in per.items():
            for r in runs:
                bad = (r.get("failed") or 0) + (r.get("non2xx") or 0)
                if bad or r.get("error"):
                    notes.append(f"- {s}, {wl_id}, round {r.get('round')}: {r.get('non2xx')} non-2xx, "
                                 f"{r.get('failed')} failed {r.get('failed_by_kind', '')}"
                                 + (f"; ab: {r['error'][:200]}" if r.get("error") else ""))
    if notes:
        out += ["## Non-2xx and failed requests, per run", ""] + notes + [""]
    kinds = raw.get("error_log_kinds", {})
    if any(kinds.values()):
        out += ["## What the servers logged (most frequent lines, numbers blanked)", "",
                "| server | lines | text |", "|---|---:|---|"]
        for s, ks in kinds.items():
            for n, k in ks:
                out.append(f"| {s} | {n:,} | `{k.replace('|', '/')}` |")
        out.append("")
    logs = raw.get("error_logs", {})
    if any(logs.values()):
        out += ["## Tail of the error logs", ""]
        for s, t in logs.items():
            if t:
                out.append(f"- **{s}**: `{t[-500:]}`")
        out.append("")
    return "\n".join(out)


def write_reports(raw: dict, out: Path, write_json: bool = True) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if write_json:
        out.with_suffix(".json").write_text(json.dumps(raw, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(render_md(raw, raw["medians"]))
    log(f"wrote {out}.md" + (f", {out}.json" if write_json else ""))


# --------------------------------------------------------------------------
# main

def main() -> int:
    global CLIENT_CPU, BACKEND_CPUS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="request counts / 10")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5,
                    help="run each 1,000-request ab command this many times back to back per measurement "
                         "(default 5: one run of 1,000 lasts a quarter of a second, too short to judge)")
    ap.add_argument("--servers", default=",".join(ALL_SERVERS))
    ap.add_argument("--base-port", type=int, default=28181, help="web servers listen from this port up (default 28181)")
    ap.add_argument("--glint-bin", help="glint binary (default: target/release/glint here, built if missing; or $GLINT_BIN)")
    ap.add_argument("--glint-bin-b", action="append", metavar="PATH",
                    help="a second glint binary (server glint-b, same configuration), measured in the same run, "
                         "alternating with the others; repeat for glint-c, ...")
    ap.add_argument("--backends-cpu", default=None, metavar="LIST",
                    help="taskset CPU list for the backends (default: ab's CPU, 1; 'all' for every CPU, "
                         "sharing the web server's)")
    ap.add_argument("--only", metavar="ID,...",
                    help="run only these workloads (ids: quixote-tcp-c5, php-c50, ...; default all)")
    ap.add_argument("--out", default=str(RESULTS / "gateways"), help="output path without extension")
    ap.add_argument("--render", metavar="JSON", help="only rewrite the .md from a saved .json")
    args = ap.parse_args()
    if args.render:
        raw = json.loads(Path(args.render).read_text())
        write_reports(raw, Path(args.out), write_json=False)
        return 0
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    if not servers or any(s not in ALL_SERVERS for s in servers):
        ap.error(f"choose servers from {ALL_SERVERS}")
    if not 1 <= args.rounds <= 20:
        ap.error("--rounds must be 1..20")
    if not check_prereqs(servers):
        return 2
    ncpu = os.cpu_count() or 1
    if ncpu < 2:
        CLIENT_CPU = "0"
    cmp.SERVER_CPU, cmp.CLIENT_CPU = SERVER_CPU, CLIENT_CPU
    BACKEND_CPUS = CLIENT_CPU
    if args.backends_cpu == "all":
        BACKEND_CPUS = f"0-{ncpu - 1}"
    elif args.backends_cpu:
        BACKEND_CPUS = args.backends_cpu
    try:
        os.sched_setaffinity(0, {int(CLIENT_CPU)})
    except OSError:
        pass
    cmp.NOFILE = cmp.raise_nofile()
    glint_bin = cmp.glint_binary(args.glint_bin) if "glint" in servers else None
    binaries = {"glint": glint_bin}
    for i, b in enumerate(args.glint_bin_b or []):
        name = f"glint-{chr(ord('b') + i)}"
        binaries[name] = Path(b).resolve()
        at = servers.index("glint") + 1 + i if "glint" in servers else i
        servers.insert(at, name)

    wls = workloads(args.quick, args.repeat)
    if args.only:
        want = {x.strip() for x in args.only.split(",") if x.strip()}
        unknown = want - {w["id"] for w in wls}
        if unknown:
            ap.error(f"unknown workload ids {sorted(unknown)}; known: {[w['id'] for w in wls]}")
        wls = [w for w in wls if w["id"] in want]
    tmp = Path(tempfile.mkdtemp(prefix="gwbench-"))
    tmp.chmod(0o755)
    docroot = tmp / "www"
    docroot.mkdir()
    (docroot / "index.html").write_text("<html><body>gateway bench</body></html>\n")
    (docroot / "hello.php").write_text('<?php echo "Hello\\n";\n')
    (docroot / "phpinfo.php").write_text('<?php phpinfo();\n')
    for p in [docroot, *docroot.iterdir()]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    backends: list[Backend] = []
    started: list[GwServer] = []

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    raw = {
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "quick": args.quick, "rounds": args.rounds, "repeat": args.repeat, "servers": servers,
        "machine": {"kernel": platform.release(), "cpus": ncpu, "cpu_model": cmp.cpu_model(),
                    "server_cpu": SERVER_CPU, "client_cpu": CLIENT_CPU, "backend_cpus": BACKEND_CPUS},
        "tools": {"ab": cmp.tool_version(["ab", "-V"]),
                  "php-cgi": cmp.tool_version(["php-cgi", "-v"]),
                  "python": sys.version.split()[0],
                  "scgi/flup/quixote": subprocess.run(
                      [sys.executable, "-c", "import importlib.metadata as m; "
                       "print('scgi', m.version('scgi'), '/ flup', m.version('flup'), "
                       "'/ quixote', m.version('quixote'))"],
                      capture_output=True, text=True, timeout=30).stdout.strip() or "?"},
        "workloads": wls, "versions": {}, "errors": {}, "probes": {}, "runs": {}, "order": [],
    }
    try:
        # ---- backends (one set for all servers)
        be: dict = {}
        # seed 000's stack: Quixote's own SCGI server with its demo (no --max-children:
        # quixote 3.8 passes it on as a string and the first request fails; 5 is the default)
        be["quixote_port"] = Backend.kernel_port()
        b = Backend("quixote-tcp", [sys.executable, "-m", "quixote.server.scgi_server", "--host", HOST,
                                    "--port", str(be["quixote_port"]), "--script-name", "/scgi-test"],
                    tmp, ready_line=False)
        backends.append(b)
        b.wait_tcp(be["quixote_port"])
        be["quixote_sock"] = tmp / "quixote.socket"
        b = Backend("quixote-unix", [sys.executable, str(BACKENDS / "quixote_unix.py"), str(be["quixote_sock"]),
                                     "/scgi-unix"], tmp)
        backends.append(b)
        b.ready_line()
        Backend.open_to_all(be["quixote_sock"])
        b = Backend("scgi-tcp", [sys.executable, str(BACKENDS / "scgi_app.py"), "tcp"], tmp)
        backends.append(b)
        be["scgi_port"] = int(b.ready_line())
        be["scgi_sock"] = tmp / "scgi.socket"
        b = Backend("scgi-unix", [sys.executable, str(BACKENDS / "scgi_app.py"), "unix", str(be["scgi_sock"])], tmp)
        backends.append(b)
        b.ready_line()
        Backend.open_to_all(be["scgi_sock"])
        be["flup_sock"] = tmp / "flup.socket"
        b = Backend("flup", [sys.executable, str(BACKENDS / "fcgi_app.py"), str(be["flup_sock"])], tmp)
        backends.append(b)
        b.wait_unix(be["flup_sock"])
        Backend.open_to_all(be["flup_sock"])
        php = shutil.which("php-cgi")
        # bin-path wrapper: the server is pinned to CPU 0 and its children inherit
        # that; the backend must not be pinned, so widen the mask, then exec php-cgi
        be["php_wrap"] = tmp / "php-cgi-unpinned"
        be["php_wrap"].write_text(f"#!/bin/sh\nexec taskset -c {BACKEND_CPUS} {php} \"$@\"\n")
        be["php_wrap"].chmod(0o755)
        if "nginx" in servers:
            be["nginx_php_sock"] = tmp / "nginx-php.socket"
            b = Backend("php-for-nginx", [php, "-b", str(be["nginx_php_sock"])], tmp, env=PHP_ENV)
            backends.append(b)
            b.wait_unix(be["nginx_php_sock"])
            Backend.open_to_all(be["nginx_php_sock"])
        log(f"backends: quixote tcp port {be['quixote_port']}, quixote unix {be['quixote_sock']}, "
            f"scgi tcp port {be['scgi_port']}, scgi unix {be['scgi_sock']}, flup {be['flup_sock']}")

        # ---- web servers
        servs: dict[str, GwServer] = {}
        port = args.base_port - 1
        for name in servers:
            raw["versions"][name] = cmp.server_version(
                name, argparse.Namespace(glint_bin=str(glint_bin) if glint_bin else None), binaries.get(name))
            port = cmp.free_port(port + 1)
            srv = make_server(name, tmp, docroot, port, be, binaries.get(name))
            started.append(srv)
            if not srv.start():
                raw["errors"][name] = srv.error
                log(f"[{name}] FAILED: {srv.error}")
                continue
            probes = {}
            for path in sorted({w["path"] for w in wls}):
                probes[path] = probe(port, path)
            raw["probes"][name] = probes
            bad = {p: v for p, v in probes.items() if v[0] != 200}
            log(f"[{name}] up on {port}, own pids {srv.pids()}, backend children {srv.backend_pids()}"
                + (f"; NOT 200: {bad}" if bad else "; every path answers 200"))
            if bad:
                raw["errors"][name] = f"probe not 200: {bad}"
            servs[name] = srv
        live = [s for s in servers if s in servs]
        if not live:
            return 1
        for name in live:  # warm-up: php-cgi started, python imports done
            for path in sorted({w["path"] for w in wls}):
                run_ab(path, 50, 5, servs[name].port, tmp)

        for rnd in range(args.rounds):
            order = cmp.start_round(raw, live, rnd, args.rounds)
            for wl, name, srv in cmp.live_runs(raw, servs, order, wls):
                dead = [b.name for b in backends if not b.alive()]
                if dead:
                    raise RuntimeError(f"backend(s) died: {dead}")
                r = measure(srv, wl, tmp)
                r["round"] = rnd + 1
                raw["runs"].setdefault(name, {}).setdefault(wl["id"], []).append(r)
                log(f"  {wl['id']:<15} {name:<9} {r.get('ok_rps', 0):>8,.0f} 2xx/s  "
                    f"non2xx {r.get('non2xx')}  failed {r.get('failed')}  "
                    f"{r.get('cpu_us_per_req') or 0:7.1f} µs/req  p99 {r.get('p99_ms') or 0:7.1f} ms  "
                    f"srv {r.get('server_busy_pct') or 0:3.0f}%" + (f"  ! {r['error'][:150]}" if r.get("error") else ""))
                time.sleep(0.5)
        raw["error_logs"] = {name: servs[name].tail_logs() for name in live}
        raw["error_log_kinds"] = {name: log_kinds(servs[name]) for name in live}
    finally:
        for srv in started:
            srv.stop()
        for b in backends:
            b.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    raw["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    raw["medians"] = summarise(raw)
    print(render_table(raw, raw["medians"]))
    write_reports(raw, Path(args.out))
    return 0 if not raw["errors"] else 3


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Builds glint with profile-guided optimisation (PGO): the release build
laid out by what a static-file server actually runs.

    python3 benches/pgo.py [--out target/pgo/glint] [--keep]

Three steps, each a plain cargo command with RUSTFLAGS:
1. `cargo build --release` with `-Cprofile-generate` (target/pgo/gen);
2. that binary serves a docroot (benches/compare.py's: the 469-byte
   index.html and the 25 KB JPEG, plus a 200 KB file, a directory and a
   missing path) on a plain and a TLS socket while ab and h2load send it
   the traffic a small site gets: HTTP/1.0 and keep-alive HTTP/1.1,
   h2c and HTTP/2 over TLS, conditional, range, HEAD and 404 requests,
   and a mod_magnet script in front of one directory;
   then it stops (SIGTERM) and writes its profile;
3. `llvm-profdata merge`, and `cargo build --release` with
   `-Cprofile-use` (target/pgo/use), copied to --out.

The optimiser then knows which branches a request takes: hot blocks
together, cold ones (errors, other modules' phases) out of the way. The
request path's code that one request runs spreads over 1.7x its own size
in the plain release build (callgrind, benches/results/pgo.md), more than
a 32 KiB instruction cache holds; this is what PGO changes. Nothing in the
sources depends on it: `cargo build --release` stays the build the README
gives, this one is for whoever wants the last tenth.

Needs: llvm-profdata of the toolchain's LLVM (`rustup component add
llvm-tools`), ab (apache2-utils), h2load (nghttp2-client), openssl.
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare as cmp  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def log(msg: str) -> None:
    print(f"[pgo] {msg}", file=sys.stderr, flush=True)


def profdata_tool() -> str:
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True,
                             text=True, check=True).stdout.strip()
    host = next(line.split()[1] for line in subprocess.run(
        ["rustc", "-vV"], capture_output=True, text=True, check=True).stdout.splitlines()
        if line.startswith("host:"))
    tool = Path(sysroot) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"
    if not tool.exists():
        sys.exit(f"{tool} is missing: rustup component add llvm-tools")
    return str(tool)


def build(target_dir: Path, rustflags: str) -> Path:
    env = dict(os.environ)
    env["RUSTFLAGS"] = (env.get("RUSTFLAGS", "") + " " + rustflags).strip()
    env["CARGO_TARGET_DIR"] = str(target_dir)
    log(f"RUSTFLAGS='{env['RUSTFLAGS']}' cargo build --release  (target {target_dir})")
    subprocess.run(["cargo", "build", "--release", "--bin", "glint"], cwd=REPO, env=env,
                   check=True, timeout=3600)
    return target_dir / "release" / "glint"


def run(argv: list[str], timeout: float = 120) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        log(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()[-300:]}")


def train(binary: Path, tmp: Path) -> None:
    """The traffic the profile is made of."""
    docroot = tmp / "www"
    cmp.make_docroot(docroot)
    (docroot / "big.bin").write_bytes(os.urandom(200_000))
    (docroot / "dir").mkdir(exist_ok=True)
    (docroot / "dir" / "index.html").write_text("<p>a directory's index</p>\n")
    (docroot / "lua").mkdir(exist_ok=True)
    (docroot / "lua" / "index.html").write_text("<p>past a mod_magnet script</p>\n")
    script = tmp / "check.lua"
    script.write_text('local path = lighty.r.req_attr["uri.path"]\n'
                      'if path == "/lua/blocked" then\n  return 403\nend\n')
    tls = cmp.make_cert(tmp)
    port = cmp.free_port(20000)
    tport = cmp.free_port(port + 1)
    conf = tmp / "glint.conf"
    conf.write_text(cmp.conf_glint(tmp, docroot, port, True, None)
                    + f'server.modules += ( "mod_openssl" )\n'
                    f'$SERVER["socket"] == "{cmp.HOST}:{tport}" {{\n'
                    f'  ssl.engine = "enable"\n  ssl.pemfile = "{tls["pem"]}"\n}}\n'
                    f'server.errorlog = "{tmp}/error.log"\n'
                    'server.modules += ( "mod_magnet" )\n'
                    f'$HTTP["url"] =~ "^/lua/" {{\n'
                    f'  magnet.attract-raw-url-to = ( "{script}" )\n}}\n')
    proc = subprocess.Popen([str(binary), "-D", "-f", str(conf)], cwd=tmp,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if cmp.http_get(port, "/index.html", timeout=2)[0] == 200:
                    break
            except (OSError, ValueError, IndexError):
                time.sleep(0.1)
        else:
            sys.exit("the instrumented glint did not answer")
        h = f"http://{cmp.HOST}:{port}"
        s = f"https://localhost:{tport}"
        for path in ("/index.html", "/test.jpg"):
            log(f"ab and h2load on {path}")
            run(["ab", "-q", "-n", "4000", "-c", "10", h + path])
            run(["ab", "-q", "-k", "-n", "20000", "-c", "50", h + path])
            run(["h2load", "-n", "20000", "-c", "10", "-m", "10", h + path])
            run(["h2load", "-n", "5000", "-c", "10", "-m", "100", h + path])
            run(["h2load", "-n", "5000", "-c", "10", "-m", "10", s + path])
            run(["ab", "-q", "-n", "500", "-c", "10", s + path])
        log("a mod_magnet script")
        run(["ab", "-q", "-k", "-n", "20000", "-c", "50", h + "/lua/index.html"])
        run(["ab", "-q", "-n", "2000", "-c", "10", h + "/lua/index.html"])
        log("other requests")
        for _ in range(50):
            for args in (["-I", h + "/index.html"], [h + "/missing"], [h + "/dir"],
                         [h + "/dir/"], ["-H", "Range: bytes=0-99", h + "/big.bin"],
                         ["-z", "Jan 1 2000", h + "/index.html"], [h + "/big.bin"],
                         ["--http1.0", h + "/index.html"], ["-k", s + "/index.html"]):
                run(["curl", "-s", "-o", "/dev/null", *args], timeout=20)
    finally:
        if not cmp.stop_process(proc):
            sys.exit("the instrumented glint did not stop on SIGTERM: no profile")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(REPO / "target" / "pgo" / "glint"))
    ap.add_argument("--keep", action="store_true", help="keep the profile directory")
    a = ap.parse_args()
    for tool in ("ab", "h2load", "curl", "openssl"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is needed (apt-get install apache2-utils nghttp2-client curl openssl)")
    profdata = profdata_tool()
    base = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "pgo"
    tmp = Path(tempfile.mkdtemp(prefix="glint-pgo-"))
    # The same path each time, so that cargo rebuilds only glint for the
    # instrumented binary; the profile's path names its content, so that
    # every crate is rebuilt with a new profile and none with a stale one.
    raw = base / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    gen = build(base / "gen", f"-Cprofile-generate={raw}")
    train(gen, tmp)
    merged = tmp / "glint.profdata"
    subprocess.run([profdata, "merge", "-o", str(merged), str(raw)], check=True, timeout=600)
    digest = hashlib.sha256(merged.read_bytes()).hexdigest()[:16]
    named = base / f"glint-{digest}.profdata"
    shutil.copyfile(merged, named)
    log(f"profile: {named} ({named.stat().st_size} bytes)")
    used = build(base / "use", f"-Cprofile-use={named}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(used, out)
    out.chmod(0o755)
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print(out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Regenerates src/link/hot-text.txt: the functions that start-up and the first
requests run, in the groups build.rs lays out first in the release binary.

    benches/link_profile.py target/release/glint

Runs the binary under callgrind (valgrind) for each workload below, takes
the functions of the executable that ran (their mangled names with the
trailing hash as a wildcard, so that the list holds across builds; the
exact name where the wildcard would also take in functions that did not
run, as the instances of one generic function share a name but for the
hash), and writes each workload's new functions as groups: first what ran inside the
event loop (main's serve()) for every workload, then what ran before it,
at start-up, whose pages main drops once the loop starts. A function
renamed or added since the last run is merely laid out with the rest of
the text; rerun this after changes to the request path or start-up.
"""
import functools
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HASH = re.compile(r"17h[0-9a-f]{16}E(\.llvm\.\d+)?$")
RECURSION = re.compile(r"'\d+$")  # callgrind's mark of a recursive call
AWS_LC = re.compile(r"^aws_lc_\d+_\d+_\d+_")  # aws-lc's version prefix
V0_CRATE = re.compile(r"Cs[0-9A-Za-z]+_")
V0_BACKREF = re.compile(r"(?<![1-9])B[0-9A-Za-z]{0,3}_")
# Names the linker script may hold unquoted (legacy Rust mangling and C;
# callgrind names code without a symbol by its address).
BARE = re.compile(r"^(?!0x)[A-Za-z0-9_.$]+$")

PLAIN = """server.document-root = "{www}"
server.port = {port}
server.bind = "127.0.0.1"
index-file.names = ("index.html")
"""
TLS = """$SERVER["socket"] == "127.0.0.1:{tport}" {{
    ssl.engine = "enable"
    ssl.pemfile = "{pem}"
}}
"""

# The event loop: main's serve(). What runs inside it (the loop, requests)
# is laid out first; what runs before it (start-up: main drops those pages
# from the idle process, release_startup_pages) after all of that.
LOOP = "_ZN5glint5serve17h*"

# (group name, TLS socket?, curl argument lists); each curl runs on its own.
WORKLOADS = [
    ("plain socket, one GET", False, [["{h}/"]]),
    ("other plain requests", False, [
        ["{h}/", "{h}/index.html"],             # keep-alive
        ["-I", "{h}/"],
        ["{h}/missing"],
        ["{h}/dir"],
        ["-H", "Range: bytes=0-9", "{h}/index.html"],
        ["-z", "Jan 1 2000", "{h}/index.html"],
        ["-H", "If-Modified-Since: Thu, 01 Jan 2099 00:00:00 GMT", "{h}/index.html"],
        ["-H", "If-None-Match: *", "{h}/index.html"],
    ]),
    ("TLS socket, one GET", True, [["{s}/"], ["--http1.1", "{s}/"]]),
    ("other TLS requests", True, [
        ["--http2", "{s}/", "{s}/index.html"],
        ["--http1.1", "{s}/", "{s}/missing"],
    ]),
]


def pattern(name):
    """A name as a glob that outlives the build: legacy Rust mangling ends in
    a hash; v0 names (std's) hold crate disambiguators (Cs..._) and back
    references (B..._) that move with them; aws-lc prefixes its own
    names with its version."""
    name = RECURSION.sub("", name)
    name = HASH.sub("17h*", name)
    name = AWS_LC.sub("aws_lc_*_", name)
    if name.startswith("_R"):
        name = V0_CRATE.sub("Cs*_", name)
        name = V0_BACKREF.sub("B*_", name)
    return name

# aws-lc's assembly: one .text per object, not one section per function,
# and callgrind's CPU (no AVX-512, no ADX) picks other variants than the
# hardware does, so the objects a TLS 1.3 handshake (X25519 or P-256,
# ECDSA P-256, SHA-256/384, AES-GCM) and one request run are listed by
# hand, both variants of each, and laid out after the TLS functions.
# (aesni-gcm-avx512.o is left out: 700 kB of which a request touches a part.)
TLS_ASM = """curve25519_x25519 curve25519_x25519_alt curve25519_x25519base
curve25519_x25519base_alt p256_montjscalarmul p256_montjscalarmul_alt
bignum_montinv_p256 p256-x86_64-asm p256_beeu-x86_64-asm sha256-x86_64
sha512-x86_64 x86_64-mont x86_64-mont5 ghash-x86_64 aesni-x86_64
aesni-gcm-x86_64 rdrand-x86_64""".split()


@functools.lru_cache(maxsize=None)
def functions_per_pattern(exe):
    """How many functions of exe (nm, read once) each pattern matches."""
    nm = subprocess.run(["nm", "--defined-only", exe], capture_output=True, text=True).stdout
    count = {}
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            key = pattern(parts[2])
            count[key] = count.get(key, 0) + 1
    return count


def exact_where_shared(names, exe):
    """pattern(n) for each name, but the name itself where the pattern also
    matches another function of exe: a generic function's instances differ
    only in their hash (hashbrown's reserve_rehash has dozens), and the
    pattern would put every instance, run or not, among the hot code."""
    shared = functions_per_pattern(exe)
    out = set()
    for n in names:
        key = pattern(n)
        out.add(RECURSION.sub("", n) if shared.get(key, 0) > 1 else key)
    return out


def test_certificate(tmp):
    """A P-256 certificate and key for localhost in tmp/both.pem."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
                    "/CN=localhost", "-keyout", f"{tmp}/key.pem", "-out", f"{tmp}/cert.pem"],
                   check=True, capture_output=True)
    with open(f"{tmp}/both.pem", "w") as f:
        for part in ("cert.pem", "key.pem"):
            with open(f"{tmp}/{part}") as p:
                f.write(p.read())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, deadline):
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"port {port} did not open")


def executed(out, exe):
    """Functions of exe with a cost in a callgrind output file."""
    obs, fns, names, ob = {}, {}, set(), None

    def ref(table, text):
        m = re.match(r"\((\d+)\)(?: (.*))?$", text)
        if not m:
            return text
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1))

    with open(out) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("ob="):
                ob = ref(obs, line[3:])
            elif line.startswith("cob="):
                ref(obs, line[4:])
            elif line.startswith("fn="):
                name = ref(fns, line[3:])
                if ob and os.path.realpath(ob) == exe and name:
                    names.add(name)
            elif line.startswith("cfn="):
                ref(fns, line[4:])
    return names


def run(exe, tmp, tls, requests, loop_only):
    port, tport = free_port(), free_port()
    conf = os.path.join(tmp, "glint.conf")
    with open(conf, "w") as f:
        f.write(PLAIN.format(www=os.path.join(ROOT, "www"), port=port))
        if tls:
            f.write(TLS.format(tport=tport, pem=os.path.join(tmp, "both.pem")))
    out = os.path.join(tmp, "callgrind.out")
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}"]
        + (["--collect-atstart=no", f"--toggle-collect={LOOP}"] if loop_only else [])
        + [exe, "-D", "-f", conf],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, time.monotonic() + 120)
        if tls:
            wait_port(tport, time.monotonic() + 60)
        for args in requests:
            args = [a.format(h=f"http://127.0.0.1:{port}", s=f"https://127.0.0.1:{tport}")
                    for a in args]
            subprocess.run(["curl", "-ksS", "--max-time", "60"] + args,
                           stdout=subprocess.DEVNULL, check=True)
        time.sleep(2.5)  # the loop's once-a-second tick runs, on an idle server too
        # Shutdown's code is not the loop's: nothing is counted from here on.
        subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    return executed(out, exe)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    exe = os.path.realpath(sys.argv[1])
    seen, groups = set(), []
    with tempfile.TemporaryDirectory() as tmp:
        test_certificate(tmp)
        start_up = []
        for name, tls, requests in WORKLOADS:
            # Twice: what the loop's tick runs depends on timing.
            loop = set()
            for _ in range(2):
                ran = {n for n in run(exe, tmp, tls, requests, True) if BARE.match(n)}
                loop |= exact_where_shared(ran, exe)
            new = sorted(loop - seen)
            seen |= loop
            groups.append((f"the loop: {name}", new))
            if name.startswith("TLS"):
                groups.append(("TLS assembly", [f"file:*-{o}.o" for o in TLS_ASM]))
            print(f"the loop, {name}: {len(new)} functions", file=sys.stderr)
            ran = exact_where_shared(
                {n for n in run(exe, tmp, tls, requests, False) if BARE.match(n)}, exe)
            new = sorted(ran - seen)
            seen |= ran
            start_up.append((f"start-up: {name}", new))
            print(f"start-up, {name}: {len(new)} functions", file=sys.stderr)
        groups += [g for g in start_up if g[1]]
    with open(os.path.join(ROOT, "src", "link", "hot-text.txt"), "w") as f:
        f.write("# Generated by benches/link_profile.py; see build.rs. One group per\n"
                "# workload: function names, with * where a name holds a hash;\n"
                "# file:PATTERN for the .text of whole objects.\n")
        for name, new in groups:
            f.write(f"\n## {name}\n")
            f.writelines(n + "\n" for n in new)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes fuzz/seeds/<target>/ from the string literals of the unit tests.

Run from fuzz/: python3 seeds/extract.py. Each literal becomes one seed file
named by its hash, so running it again adds nothing twice.
"""
import hashlib
import pathlib
import re
import struct

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEEDS = pathlib.Path(__file__).resolve().parent

LIT = re.compile(r'(b?)"((?:[^"\\]|\\.)*)"', re.S)


def unescape(s):
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "x":
                out.append(int(s[i + 2 : i + 4], 16))
                i += 4
                continue
            if n == "\n":  # line continuation: skip the newline and indentation
                i += 2
                while i < len(s) and s[i] in " \t":
                    i += 1
                continue
            out += {"n": b"\n", "r": b"\r", "t": b"\t", "0": b"\0", "\\": b"\\", '"': b'"', "'": b"'"}.get(
                n, n.encode()
            )
            i += 2
            continue
        out += c.encode()
        i += 1
    return bytes(out)


def literals(path):
    text = (ROOT / path).read_text()
    tests = text[text.find("#[cfg(test)]") :] if "#[cfg(test)]" in text else text
    return [unescape(m.group(2)) for m in LIT.finditer(tests)]


def write(target, data):
    d = SEEDS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


for lit in literals("src/http/request.rs"):
    if b" HTTP/" in lit or b"\r\n" in lit:
        write("request_head", b"\x00" + lit)  # first byte even: max_head 8192
        write("request_head", b"\x01" + lit)  # odd: a small max_head
for lit in literals("src/path.rs"):
    if lit.startswith(b"/") or lit.startswith(b"a/"):
        write("path_normalize", lit)
for lit in literals("src/http/range.rs"):
    if b"=" in lit:
        for n in (0, 1, 100, 25190, 5 << 30):
            # The target's length encoding: low two bits 2 take the rest as is.
            write("range", struct.pack("<Q", (n << 2) | 2) + lit)
for lit in literals("src/config/tests.rs"):
    if (b"=" in lit or b"{" in lit) and b"include_shell" not in lit:
        write("config", lit)
for conf in sorted((ROOT / "conf").rglob("*.conf")):
    write("config", conf.read_bytes())

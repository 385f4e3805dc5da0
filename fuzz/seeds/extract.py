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

# upstream_answer: the first byte holds flags (bit 0 HEAD, 1 upgrade sent,
# 2 keep-alive sent, 3-5 remap state; bit 7 the chunked decoder instead).
for lit in literals("src/httpup/tests/response.rs"):
    if lit.startswith(b"HTTP/"):
        for flags in (0x04, 0x05, 0x06, 0x3E):
            write("upstream_answer", bytes([flags]) + lit)
for lit in literals("src/httpup/tests/chunked.rs"):
    if b"\n" in lit:
        write("upstream_answer", b"\x80" + lit)
        write("upstream_answer", b"\x83" + lit)

# proxy_protocol: v1 lines, forwarding header values, and v2 headers.
for lit in literals("src/forwarded/tests/proxy_protocol.rs"):
    if lit.startswith(b"PROXY"):
        write("proxy_protocol", lit)
for lit in literals("src/forwarded/tests/client.rs"):
    if b"for=" in lit or lit.count(b".") >= 3:
        write("proxy_protocol", lit)


def v2(cmd, fam, block):
    return b"\r\n\r\n\0\r\nQUIT\n" + bytes([cmd, fam]) + struct.pack(">H", len(block)) + block


def tlv(t, v):
    return bytes([t]) + struct.pack(">H", len(v)) + v


IP4 = bytes([10, 1, 2, 3, 10, 0, 0, 1, 0x13, 0x88, 0x01, 0xBB])
IP6 = bytes(range(32)) + b"\xd4\x31\x00\x50"
UNIX = b"/run/a.sock".ljust(108, b"\0") + b"/run/b.sock".ljust(108, b"\0")
SSL = b"\x07\0\0\0\0" + tlv(0x21, b"TLSv1.3") + tlv(0x22, b"alice") + tlv(0x23, b"TLS_AES_128_GCM_SHA256")
for block in (IP4, IP4 + tlv(0x01, b"h2") + tlv(0x02, b"example.com") + tlv(0x05, b"id") + tlv(0x20, SSL)):
    write("proxy_protocol", v2(0x21, 0x11, block) + b"GET / HTTP/1.1\r\n")
write("proxy_protocol", v2(0x21, 0x21, IP6 + tlv(0x03, b"\0\0\0\0")))
write("proxy_protocol", v2(0x21, 0x31, UNIX))
write("proxy_protocol", v2(0x20, 0x00, b""))
write("proxy_protocol", v2(0x21, 0x12, IP4))

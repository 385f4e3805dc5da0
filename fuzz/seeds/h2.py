#!/usr/bin/env python3
"""Writes fuzz/seeds/h2_conn/ and fuzz/seeds/hpack/: a few whole client
conversations and the RFC 7541 Appendix C blocks, in each target's input
format (see the comments of fuzz_targets/h2_conn.rs and hpack.rs).

Run from fuzz/: python3 seeds/h2.py
"""
import hashlib
import pathlib
import struct

SEEDS = pathlib.Path(__file__).resolve().parent


def write(target, data):
    d = SEEDS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def lit(name, value):
    # Literal without indexing, new name, raw strings (all short here).
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def block(fields):
    return b"".join(lit(n, v) for n, v in fields)


GET = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"example.com"), (b":path", b"/")]
POST = [(b":method", b"POST"), (b":scheme", b"https"), (b":path", b"/up"), (b"content-length", b"5"), (b"priority", b"u=1, i")]

talk = b"".join([
    frame(0x4, 0, 0, struct.pack(">HI", 4, 100) + struct.pack(">HI", 1, 0)),
    frame(0x1, 0x5, 1, block(GET)),
    # RFC 7541 C.3.1, then C.3.2 (indexed against the first).
    frame(0x1, 0x5, 3, bytes.fromhex("828684410f7777772e6578616d706c652e636f6d")),
    frame(0x1, 0x5, 5, bytes.fromhex("828684be58086e6f2d6361636865")),
    frame(0x1, 0x4, 7, block(POST)),
    frame(0x0, 0x8, 7, b"\x02he\x00\x00"),
    frame(0x0, 0x0, 7, b"llo"),
    frame(0x1, 0x5, 7, block([(b"x-sum", b"1")])),
    frame(0x1, 0x1, 9, block(GET)[:10]),
    frame(0x9, 0x4, 9, block(GET)[10:]),
    frame(0x6, 0, 0, b"pingpong"),
    frame(0x8, 0, 0, struct.pack(">I", 1 << 20)),
    frame(0x10, 0, 0, struct.pack(">I", 11) + b"u=0"),
    frame(0x1, 0x5, 11, block(GET)),
    frame(0x3, 0, 11, struct.pack(">I", 8)),
    frame(0x2, 0, 13, struct.pack(">IB", 0, 16)),
    frame(0x7, 0, 0, struct.pack(">II", 0, 0)),
])
for ctl in (0x00, 0x01, 0x0a, 0x3f, 0xff):
    write("h2_conn", bytes([ctl]) + talk)

c3 = ["828684410f7777772e6578616d706c652e636f6d", "828684be58086e6f2d6361636865",
      "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565"]
c4 = ["828684418cf1e3c2e5f23a6ba0ab90f4ff", "828684be5886a8eb10649cbf",
      "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf"]
c6 = ["488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
      "4883640effc1c0bf",
      "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007"]


def blocks(hexes):
    return b"".join(bytes([len(bytes.fromhex(h))]) + bytes.fromhex(h) for h in hexes)


for ctl in (0x02, 0x03):
    write("hpack", bytes([ctl]) + blocks(c3))
    write("hpack", bytes([ctl]) + blocks(c4))
    write("hpack", bytes([ctl | 4]) + blocks(c6))
for h in ("f1e3c2e5f23a6ba0ab90f4ff", "a8eb10649cbf", "640eff", "9bd9ab"):
    write("hpack", b"\x80" + bytes.fromhex(h))

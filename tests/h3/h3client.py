"""A scripted HTTP/3 client on aioquic, for tests/h3.rs.

Reads a JSON spec from argv[1]:
  {"port": N, "host": "127.0.0.1", "sni": "localhost",
   "requests": [{"method": "GET", "path": "/", "headers": [[n, v]...],
                 "body_hex": "..." or "body_len": N,
                 "keep": bytes of the body to report (4096)}],
   "sigint_pid": P (optional: SIGINT once the first answer's head came),
   "new_after_goaway": true (optional: one more request after GOAWAY),
   "timeout": seconds}
sends every request at once on one connection, and prints JSON:
  {"answers": [{"status", "headers", "body_len", "sha256", "body" (first
   4 KiB, latin-1), "reset": code or null}], "goaway": id or null,
   "close": {"code", "reason"} or null, "alpn": "h3"}
"""

import asyncio
import hashlib
import json
import os
import signal
import ssl
import sys

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, FrameType, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamDataReceived, StreamReset


def varint(b, i):
    """A QUIC varint at b[i:]: (value, next index), or None if cut short."""
    if i >= len(b):
        return None
    n = 1 << (b[i] >> 6)
    if i + n > len(b):
        return None
    v = b[i] & 0x3F
    for k in range(1, n):
        v = (v << 8) | b[i + k]
    return v, i + n


class GoawayH3(H3Connection):
    """H3Connection that notes the server's GOAWAY (aioquic skips it as an
    unknown frame), read from the server's control stream as it comes."""

    goaway = None
    ctrl = b""

    def watch_control(self, data):
        self.ctrl += data
        i = 1 if self.ctrl[:1] == b"\x00" else None
        if i is None:
            return
        while True:
            t = varint(self.ctrl, i)
            if t is None:
                return
            ln = varint(self.ctrl, t[1])
            if ln is None or ln[1] + ln[0] > len(self.ctrl):
                return
            if t[0] == FrameType.GOAWAY:
                self.goaway = varint(self.ctrl, ln[1])[0]
            i = ln[1] + ln[0]
    # Streams of HEAD requests: their answers' content-length is the GET's
    # (RFC 9110 §9.3.2), which aioquic's check does not allow for.
    heads = set()

    def _check_content_length(self, stream):
        if stream.stream_id not in self.heads:
            super()._check_content_length(stream)



class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = GoawayH3(self._quic)
        self.h3.heads = set()
        self.answers = {}
        self.waiters = {}
        self.closed = None
        self.on_head = None

    def quic_event_received(self, event):
        if isinstance(event, ConnectionTerminated):
            self.closed = {"code": event.error_code, "reason": event.reason_phrase}
            for w in self.waiters.values():
                if not w.done():
                    w.set_result(None)
            return
        if isinstance(event, StreamDataReceived) and event.stream_id == 3:
            # The server's first unidirectional stream: its control stream.
            self.h3.watch_control(event.data)
        if isinstance(event, StreamReset) and event.stream_id in self.answers:
            self.answers[event.stream_id]["reset"] = event.error_code
            w = self.waiters.get(event.stream_id)
            if w and not w.done():
                w.set_result(None)
        for ev in self.h3.handle_event(event):
            a = self.answers.get(ev.stream_id)
            if a is None:
                continue
            if isinstance(ev, HeadersReceived):
                hs = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in ev.headers]
                if a["status"] is None:
                    a["status"] = int(dict(hs).get(":status", "0"))
                    a["headers"] = hs
                    if self.on_head:
                        self.on_head()
                else:
                    a["trailers"] = hs
            elif isinstance(ev, DataReceived):
                a["_hash"].update(ev.data)
                a["body_len"] += len(ev.data)
                keep = a["_keep"]
                if len(a["_body"]) < keep:
                    a["_body"] += ev.data[: keep - len(a["_body"])]
            if getattr(ev, "stream_ended", False):
                w = self.waiters.get(ev.stream_id)
                if w and not w.done():
                    w.set_result(None)

    def send(self, req):
        sid = self._quic.get_next_available_stream_id()
        body = bytes.fromhex(req.get("body_hex", ""))
        if "body_len" in req:
            body = bytes(i % 251 for i in range(req["body_len"]))
        method = req.get("method", "GET")
        if method == "HEAD":
            self.h3.heads.add(sid)
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", req.get("authority", "localhost").encode()),
            (b":path", req.get("path", "/").encode()),
        ] + [(k.encode(), v.encode()) for k, v in req.get("headers", [])]
        self.h3.send_headers(stream_id=sid, headers=headers, end_stream=not body)
        if body:
            self.h3.send_data(stream_id=sid, data=body, end_stream=True)
        self.answers[sid] = {
            "status": None,
            "headers": [],
            "body_len": 0,
            "_hash": hashlib.sha256(),
            "_body": b"",
            "_keep": req.get("keep", 4096),
            "reset": None,
        }
        self.waiters[sid] = asyncio.get_running_loop().create_future()
        self.transmit()
        return sid


async def run(spec):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    cfg.verify_mode = ssl.CERT_NONE
    cfg.server_name = spec.get("sni", "localhost")
    out = {"answers": [], "goaway": None, "close": None}
    async with connect(
        spec.get("host", "127.0.0.1"),
        spec["port"],
        configuration=cfg,
        create_protocol=Client,
        wait_connected=True,
    ) as client:
        out["alpn"] = client._quic.tls.alpn_negotiated
        pid = spec.get("sigint_pid")
        if pid:
            fired = []

            def once():
                if not fired:
                    fired.append(1)
                    os.kill(pid, signal.SIGINT)

            client.on_head = once
        sids = [client.send(r) for r in spec["requests"]]
        await asyncio.wait_for(
            asyncio.gather(*(client.waiters[s] for s in sids)), spec.get("timeout", 20)
        )
        if spec.get("new_after_goaway"):
            for _ in range(100):
                if client.h3.goaway is not None or client.closed:
                    break
                await asyncio.sleep(0.05)
            if not client.closed:
                late = client.send({"path": "/"})
                sids.append(late)
                try:
                    await asyncio.wait_for(client.waiters[late], 5)
                except asyncio.TimeoutError:
                    pass
        if spec.get("wait_close"):
            for _ in range(int(spec["wait_close"] * 20)):
                if client.closed:
                    break
                await asyncio.sleep(0.05)
        for s in sids:
            a = client.answers[s]
            a["sha256"] = a.pop("_hash").hexdigest()
            a["body"] = a.pop("_body").decode("latin-1")
            a.pop("_keep", None)
            out["answers"].append(a)
        out["goaway"] = client.h3.goaway
        out["close"] = client.closed
    return out


def main():
    spec = json.loads(sys.argv[1])
    out = asyncio.run(run(spec))
    print(json.dumps(out))


if __name__ == "__main__":
    main()

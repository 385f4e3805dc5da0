"""A WebSocket client for mod_wstunnel (the `websockets` package): the
server's backend echoes bytes, and messages may come back cut or joined
differently (wstunnel keeps no message boundaries), so what comes back is
gathered until it is as long as what was sent. Sends a text, a 100 kB
text and a text of multi-byte characters, pings, and closes; prints one
JSON line: the bytes echoed match, the frame kinds seen, the subprotocol,
and the close code the server answered with.

argv: URL [binary|text] [ORIGIN]; with WS_ASCII=1 in the environment
the third text is ASCII (lighttpd cuts characters between text frames)."""
import asyncio
import json
import os
import sys

import websockets


async def main():
    url = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "text"
    origin = sys.argv[3] if len(sys.argv) > 3 else None
    protos = ["binary"] if mode == "binary" else None
    out = {"kinds": set()}
    async with websockets.connect(
        url, open_timeout=5, origin=origin, subprotocols=protos,
        max_size=None, ping_interval=None, compression=None,
    ) as ws:
        out["subprotocol"] = ws.subprotocol
        sent = b""
        third = "ascii only " if os.environ.get("WS_ASCII") else "€uro ✓ 😀"
        for m in ["hi", "x" * 100_000, third * 5_000]:
            await ws.send(m.encode() if mode == "binary" else m)
            sent += m.encode()
        got = b""
        while len(got) < len(sent):
            m = await asyncio.wait_for(ws.recv(), 5)
            out["kinds"].add(type(m).__name__)
            got += m if isinstance(m, bytes) else m.encode()
        out["echoed"] = got == sent
        out["bytes"] = len(got)
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, 5)
        out["pong"] = True
        await asyncio.wait_for(ws.close(), 5)
        out["close_code"] = ws.close_code
    out["kinds"] = sorted(out["kinds"])
    print(json.dumps(out), flush=True)


asyncio.run(main())

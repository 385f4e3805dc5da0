"""A WebSocket client: sends a text, a 100 kB text and a binary message to
argv[1] and checks each comes back; prints "echoed N"."""
import asyncio
import sys

import websockets


async def main():
    async with websockets.connect(sys.argv[1], open_timeout=5) as ws:
        n = 0
        for message in ["hi", "x" * 100_000, b"\x00\x01binary"]:
            await ws.send(message)
            back = await asyncio.wait_for(ws.recv(), 5)
            assert back == message, (len(back), len(message))
            n += 1
        print("echoed", n, flush=True)


asyncio.run(main())

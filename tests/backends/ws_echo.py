"""A WebSocket echo server on the `websockets` package; prints "ready PORT"."""
import asyncio

import websockets


async def echo(ws):
    async for message in ws:
        await ws.send(message)


async def main():
    async with websockets.serve(echo, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print("ready", port, flush=True)
        await asyncio.Future()


asyncio.run(main())

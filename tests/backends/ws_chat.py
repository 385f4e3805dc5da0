"""A WebSocket chat room on the `websockets` package: every message a
client sends goes to every client connected (the sender included), as
"<n>: <text>" where n counts the room's messages. Prints "ready PORT"."""
import asyncio

import websockets

ROOM = set()
COUNT = 0


async def chat(ws):
    global COUNT
    ROOM.add(ws)
    try:
        async for message in ws:
            COUNT += 1
            line = f"{COUNT}: {message}"
            for peer in list(ROOM):
                try:
                    await peer.send(line)
                except websockets.ConnectionClosed:
                    pass
    finally:
        ROOM.discard(ws)


async def main():
    async with websockets.serve(chat, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print("ready", port, flush=True)
        await asyncio.Future()


asyncio.run(main())

"""A client of the streaming API written with Python `websockets` (not this project's code), for
test/integration/stream.test.ts: connects to argv[1], subscribes to argv[2] resuming after sequence argv[3]
(-1: no resume), prints the subscribe response and then each of the first argv[4] notifications as one JSON
line, and exits."""
import asyncio
import json
import sys

from websockets.asyncio.client import connect


async def main(url: str, channel: str, since: int, count: int) -> None:
    async with connect(url, max_size=2**24) as ws:
        params = {"channels": [channel]}
        if since >= 0:
            params["since"] = {channel: since}
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "public/subscribe", "params": params}))
        seen = 0
        while seen < count:
            msg = json.loads(await asyncio.wait_for(ws.recv(), timeout=60))
            print(json.dumps(msg), flush=True)
            if msg.get("method") == "subscription":
                seen += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))

import asyncio
import aiohttp

URLS = ["https://example.com", "https://example.org"]

async def fetch(session, url):
    async with session.get(url) as resp:
        return url, resp.status, len(await resp.text())

async def main():
    timeout = aiohttp.ClientTimeout(total=20)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for result in await asyncio.gather(*(fetch(session, u) for u in URLS)):
            print(result)

asyncio.run(main())

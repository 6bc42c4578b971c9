"""One attack on a running homeport-server, and a bystander's view of it (benchmarks/abuse).

    python3 abuse.py ATTACK SERVER_PORT FRONT_PORT SECONDS

ATTACK is forged-headers, streams, slow-bodies, hashing-flood or registration-flood. The attacker
connects from 127.0.0.20-29; the bystander asks for the identity route every 50 ms (each time on
a new connection, as a new client would) from 127.0.0.9, and four people sign in with the right
password every 3 s each from 127.0.0.5-8, all at FRONT_PORT (nginx for forged-headers, the server otherwise).
Prints one line: identity ok, identity total, identity p99 ms, sign-ins ok, sign-ins total,
sign-in p99 ms, and what the attacker achieved.
"""

import asyncio
import json
import random
import sys
import time

ATTACK, SERVER, FRONT, SECONDS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ATTACKERS = [f"127.0.0.{n}" for n in range(20, 30)]
BYSTANDER_PASSWORD = "the bystander's own good password"
APP = "/_allauth/app/v1/auth/"


async def request(port, method, path, source, headers=None, body=b"", timeout=30.0):
    """One request on a new connection: (status, body), or (0, b"") when it failed or timed out."""
    try:
        return await asyncio.wait_for(_request(port, method, path, source, headers or {}, body), timeout)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
        return 0, b""


async def _request(port, method, path, source, headers, body):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for name, value in headers.items():
            for one in value if isinstance(value, list) else [value]:
                head += f"{name}: {one}\r\n"
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        writer.write(head.encode() + b"\r\n" + body)
        await writer.drain()
        data = await reader.read()
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
        return status, data.split(b"\r\n\r\n", 1)[-1]
    finally:
        writer.close()


async def sign_in(port, email, password, source, headers=None):
    body = json.dumps({"email": email, "password": password}).encode()
    status, text = await request(port, "POST", APP + "login", source, headers, body)
    token = None
    if status == 200:
        token = json.loads(text).get("meta", {}).get("session_token")
    return status, token


async def sign_up(port, email, password, source):
    body = json.dumps({"email": email, "password": password}).encode()
    status, text = await request(port, "POST", APP + "signup", source, body=body)
    return json.loads(text).get("meta", {}).get("session_token") if status == 200 else None


def p99(samples):
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


class Bystander:
    def __init__(self):
        self.identity, self.identity_ok = [], 0
        self.signins, self.signins_ok = [], 0

    async def probe(self, end):
        while time.monotonic() < end:
            started = time.perf_counter()
            status, _ = await request(FRONT, "GET", "/api/v1/server-identity", "127.0.0.9", timeout=10)
            self.identity.append((time.perf_counter() - started) * 1000)
            self.identity_ok += status == 200
            await asyncio.sleep(0.05)

    async def sign_ins(self, end, source):
        await asyncio.sleep(random.random() * 3)
        while time.monotonic() < end:
            started = time.perf_counter()
            status, _ = await sign_in(FRONT, "bystander@example.com", BYSTANDER_PASSWORD, source)
            self.signins.append((time.perf_counter() - started) * 1000)
            self.signins_ok += status == 200
            await asyncio.sleep(max(0, 3 - (time.perf_counter() - started)))


async def forged_headers(end, note):
    """Wrong-password sign-ins through nginx, each naming another client in both headers."""
    answers = {}

    async def one():
        while time.monotonic() < end:
            n = random.randrange(1, 250)
            headers = {"Forwarded": f"for=198.51.100.{n}", "X-Forwarded-For": f"203.0.113.{n}"}
            body = json.dumps({"email": f"someone{n}@example.com", "password": "wrong password"}).encode()
            status, text = await request(FRONT, "POST", APP + "login", ATTACKERS[0], headers, body)
            kind = "refused" if status == 429 or b"too_many_login_attempts" in text else str(status)
            answers[kind] = answers.get(kind, 0) + 1

    await asyncio.gather(*(one() for _ in range(50)))
    note.append("forged sign-ins " + ", ".join(f"{k}: {v}" for k, v in sorted(answers.items())))


async def streams(end, note, token):
    """One token holds as many notification streams as it can, from ten addresses."""
    opened = refused = 0

    async def hold(source):
        nonlocal opened, refused
        while time.monotonic() < end:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", SERVER, local_addr=(source, 0))
                writer.write(
                    f"GET /api/v1/notifications/stream HTTP/1.1\r\nHost: x\r\nX-Session-Token: {token}\r\n\r\n".encode()
                )
                await writer.drain()
                first = await asyncio.wait_for(reader.read(64), 10)
                if b" 200 " in first[:16]:
                    opened += 1
                    while time.monotonic() < end and await asyncio.wait_for(reader.read(4096), end - time.monotonic()):
                        pass
                else:
                    refused += 1
                    await asyncio.sleep(1)
                writer.close()
            except (OSError, asyncio.TimeoutError):
                await asyncio.sleep(0.2)

    await asyncio.gather(*(hold(source) for source in ATTACKERS for _ in range(100)))
    note.append(f"{opened} streams opened, {refused} refused")


async def slow_bodies(end, note):
    """A complete head and a body trickled a byte a second, a hundred connections from each of ten addresses."""
    opened = 0

    async def trickle(source):
        nonlocal opened
        while time.monotonic() < end:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", SERVER, local_addr=(source, 0))
                opened += 1
                writer.write(
                    (
                        f"POST {APP}login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        "Content-Length: 100000\r\n\r\n"
                    ).encode()
                )
                while time.monotonic() < end:
                    writer.write(b" ")
                    await writer.drain()
                    await asyncio.sleep(1)
                    if reader.at_eof():
                        break
                writer.close()
            except OSError:
                await asyncio.sleep(0.2)

    await asyncio.gather(*(trickle(source) for source in ATTACKERS for _ in range(100)))
    note.append(f"{opened} slow bodies opened")


async def hashing_flood(end, note):
    """A hundred connections of wrong-password sign-ins from one address."""
    tried = {}

    async def one():
        while time.monotonic() < end:
            status, _ = await sign_in(SERVER, f"flood{random.randrange(1000)}@example.com", "wrong", ATTACKERS[0])
            tried[status] = tried.get(status, 0) + 1

    await asyncio.gather(*(one() for _ in range(100)))
    note.append("attacker's answers " + ", ".join(f"{k}: {v}" for k, v in sorted(tried.items())))


async def registration_flood(end, note, token):
    """One account registers devices as fast as it can and asks for test pushes (400 k rows already there)."""
    answers = {}

    async def register():
        while time.monotonic() < end:
            device = "%064x" % random.getrandbits(256)
            body = json.dumps({"token": device, "environment": "sandbox"}).encode()
            status, _ = await request(
                SERVER, "POST", "/api/v1/push/devices", ATTACKERS[0], {"X-Session-Token": token}, body
            )
            answers[status] = answers.get(status, 0) + 1

    async def test_pushes():
        while time.monotonic() < end:
            await request(SERVER, "POST", "/api/v1/push/test", ATTACKERS[1], {"X-Session-Token": token}, b"{}")
            await asyncio.sleep(0.1)

    await asyncio.gather(*(register() for _ in range(50)), test_pushes())
    note.append("registrations " + ", ".join(f"{k}: {v}" for k, v in sorted(answers.items())))


async def main():
    await sign_up(SERVER, "bystander@example.com", BYSTANDER_PASSWORD, "127.0.0.1")
    token = await sign_up(SERVER, "attacker@example.com", "the attacker's password", "127.0.0.1")
    end = time.monotonic() + SECONDS
    bystander, note = Bystander(), []
    attack = {
        "forged-headers": lambda: forged_headers(end, note),
        "streams": lambda: streams(end, note, token),
        "slow-bodies": lambda: slow_bodies(end, note),
        "hashing-flood": lambda: hashing_flood(end, note),
        "registration-flood": lambda: registration_flood(end, note, token),
    }[ATTACK]
    # The attack gets a head start, so that the bystander meets it at its height.
    attacking = asyncio.ensure_future(attack())
    await asyncio.sleep(2)
    end_watch = time.monotonic() + SECONDS - 2
    await asyncio.gather(
        bystander.probe(end_watch), *(bystander.sign_ins(end_watch, f"127.0.0.{n}") for n in range(5, 9))
    )
    await attacking
    print(
        bystander.identity_ok, len(bystander.identity), f"{p99(bystander.identity):.1f}",
        bystander.signins_ok, len(bystander.signins), f"{p99(bystander.signins):.0f}",
        "; ".join(note) or "-",
    )


asyncio.run(main())

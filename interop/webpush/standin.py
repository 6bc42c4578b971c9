"""A stand-in Web Push service (RFC 8030) for the push tests: what a browser's push service or a
UnifiedPush distributor does with what Homeport sends, checked with libraries Homeport does not
use. Each body is decrypted with http_ece (RFC 8188/8291, `aes128gcm`) with the keys of a
subscription made here; each request's VAPID token (RFC 8292) is verified with py_vapid (the
signature, by the `k` it carries) and PyJWT (the claims: `aud` this service's origin, `exp` in
the future and at most 24 hours on, `sub` mailto: or https:).

    python standin.py DIRECTORY

Listens on 127.0.0.1 on a free port and writes the port to DIRECTORY/port once it listens.

    POST /subscribe          a new subscription: {"id", "endpoint", "keys": {"p256dh", "auth"}}
    POST /push/ID            a push to subscription ID: 201 once checked and decrypted (or what
                             /control queued for it); 400 with the reason when a check fails,
                             404 for an unknown ID
    POST /control            {"id": ID, "statuses": [410, 429, …], "retry_after": seconds}: the
                             next pushes to ID are answered with these statuses, in turn
    GET  /messages           {"delivered": [{"id", "payload" (the decrypted JSON), "ttl",
                             "urgency", "topic", "vapid_sub", "vapid_k"}], "refused": [{"id",
                             "status", "reason"}]}
"""

import base64
import json
import os
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid02

lock = threading.Lock()
subscriptions = {}
answers = {}
delivered = []
refused = []
TOPIC_ALPHABET = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def vapid_claims(header: str, origin: str):
    """The VAPID token's claims and key, or raises ValueError with the reason."""
    scheme, _, params = header.partition(" ")
    if scheme.lower() != "vapid":
        raise ValueError(f"Authorization scheme {scheme!r}, not vapid")
    fields = {}
    for part in params.split(","):
        name, _, value = part.strip().partition("=")
        fields[name] = value
    if "t" not in fields or "k" not in fields:
        raise ValueError("Authorization lacks t= or k=")
    # py_vapid's own parser takes "t=…,k=…" without the space RFC 8292 writes.
    if not Vapid02.verify(f"vapid t={fields['t']},k={fields['k']}"):
        raise ValueError("the VAPID signature does not verify with k")
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(fields["k"]))
    claims = jwt.decode(fields["t"], public, algorithms=["ES256"], audience=origin,
                        options={"require": ["aud", "exp", "sub"]})
    if claims["exp"] > time.time() + 86400:
        raise ValueError("exp is more than 24 hours away")
    if not (claims["sub"].startswith("mailto:") or claims["sub"].startswith("https://")):
        raise ValueError(f"sub {claims['sub']!r} is not mailto: or https:")
    return claims, fields["k"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def json(self, status, value):
        self.answer(status, json.dumps(value).encode(), [("Content-Type", "application/json")])

    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def origin(self):
        return f"http://{self.headers['Host']}"

    def do_GET(self):
        if self.path == "/messages":
            with lock:
                self.json(200, {"delivered": delivered, "refused": refused})
        else:
            self.answer(404)

    def do_POST(self):
        body = self.body()
        if self.path == "/subscribe":
            key = ec.generate_private_key(ec.SECP256R1())
            auth = secrets.token_bytes(16)
            ident = secrets.token_urlsafe(12)
            public = key.public_key().public_bytes(serialization.Encoding.X962,
                                                   serialization.PublicFormat.UncompressedPoint)
            with lock:
                subscriptions[ident] = (key, auth)
            self.json(200, {"id": ident, "endpoint": f"{self.origin()}/push/{ident}",
                            "keys": {"p256dh": b64url(public), "auth": b64url(auth)}})
        elif self.path == "/control":
            request = json.loads(body)
            with lock:
                answers[request["id"]] = [(status, request.get("retry_after")) for status in request["statuses"]]
            self.json(200, {})
        elif self.path.startswith("/push/"):
            self.push(self.path[len("/push/"):], body)
        else:
            self.answer(404)

    def refuse(self, ident, status, reason):
        with lock:
            refused.append({"id": ident, "status": status, "reason": reason})
        self.answer(status, reason.encode(), [("Content-Type", "text/plain")])

    def push(self, ident, body):
        with lock:
            subscription = subscriptions.get(ident)
            queued = answers.get(ident) or []
            next_answer = queued.pop(0) if queued else None
        if subscription is None:
            return self.refuse(ident, 404, "no such subscription")
        if next_answer is not None:
            status, retry_after = next_answer
            with lock:
                refused.append({"id": ident, "status": status, "reason": "asked by /control"})
            headers = [("Retry-After", str(retry_after))] if retry_after is not None else []
            return self.answer(status, b"", headers)
        if self.headers.get("Content-Encoding") != "aes128gcm":
            return self.refuse(ident, 400, f"Content-Encoding {self.headers.get('Content-Encoding')!r}")
        ttl = self.headers.get("TTL")
        if ttl is None or not ttl.isdigit():
            return self.refuse(ident, 400, f"TTL {ttl!r}")
        urgency = self.headers.get("Urgency")
        if urgency is not None and urgency not in ("very-low", "low", "normal", "high"):
            return self.refuse(ident, 400, f"Urgency {urgency!r}")
        topic = self.headers.get("Topic")
        if topic is not None and (len(topic) > 32 or not set(topic) <= TOPIC_ALPHABET):
            return self.refuse(ident, 400, f"Topic {topic!r}")
        if len(body) > 4096:
            return self.refuse(ident, 413, f"{len(body)} bytes")
        try:
            claims, k = vapid_claims(self.headers.get("Authorization", ""), self.origin())
        except Exception as error:  # noqa: BLE001 — any failure is the reason to refuse
            return self.refuse(ident, 401, f"VAPID: {error}")
        key, auth = subscription
        try:
            plaintext = http_ece.decrypt(body, private_key=key, auth_secret=auth, version="aes128gcm")
            payload = json.loads(plaintext)
        except Exception as error:  # noqa: BLE001
            return self.refuse(ident, 400, f"decryption: {error!r}")
        with lock:
            delivered.append({"id": ident, "payload": payload, "ttl": int(ttl), "urgency": urgency, "topic": topic,
                              "vapid_sub": claims["sub"], "vapid_k": k})
        self.answer(201, b"", [("Location", f"{self.origin()}/message/{secrets.token_urlsafe(8)}")])


def main():
    directory = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(os.path.join(directory, "port.tmp"), "w") as file:
        file.write(str(server.server_address[1]))
    os.rename(os.path.join(directory, "port.tmp"), os.path.join(directory, "port"))
    server.serve_forever()


if __name__ == "__main__":
    main()

"""A local stand-in for Apple's push service (APNs), for Homeport's tests and benchmarks.

It speaks HTTP/2 over TLS (hypercorn + h2) with a throwaway CA it makes itself, and checks
every request the way APNs does, with libraries that are not Homeport's (PyJWT and
cryptography): the provider token's ES256 signature against the auth key's public key only,
its `kid`, `iss` and `iat` age, the topic, the push type, the priority, the apns-id, the
payload's size and JSON. Every request is appended to DIR/requests.jsonl.

Behaviour per device token comes from DIR/script.json, read on every request:
  {"tokens": {"<hex>": [{"status": 410, "reason": "Unregistered", "timestamp": 1700000000000}, ...]},
   "expire_tokens_older_than": 3600}
Each token's list is answered in order (the last entry repeats); a token not listed gets 200.
An entry with "hold": "NAME" is answered only once DIR/NAME exists (a test's barrier: the
request stays in flight until the test releases it), at most a minute; DIR/NAME.arrived says
that it arrived.
A provider token whose `iat` is older than "expire_tokens_older_than" seconds (Apple: an hour)
gets 403 ExpiredProviderToken.

Usage: python standin.py DIR PORT
It writes DIR/ca.pem (trust it), DIR/auth-key.p8 (the developer account's APNs key, PKCS#8),
DIR/auth-key.pub, and then DIR/ready once it listens.
"""

import asyncio
import datetime
import json
import os
import sys
import time
import uuid

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypercorn.asyncio import serve
from hypercorn.config import Config

TEAM_ID = "TEAM123456"
KEY_ID = "KEY1234567"
TOPIC = os.environ.get("APNS_TOPIC", "net.example.books")


def make_tls(directory):
    """A CA, a server certificate for 127.0.0.1 and localhost signed by it, and the APNs auth key."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Homeport test APNs CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    import ipaddress
    server = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name).public_key(server_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    with open(os.path.join(directory, "ca.pem"), "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(directory, "server.pem"), "wb") as f:
        f.write(server.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(directory, "server.key"), "wb") as f:
        f.write(server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    auth_key = ec.generate_private_key(ec.SECP256R1())
    with open(os.path.join(directory, "auth-key.p8"), "wb") as f:
        f.write(auth_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public_pem = auth_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    with open(os.path.join(directory, "auth-key.pub"), "wb") as f:
        f.write(public_pem)
    return public_pem


class StandIn:
    def __init__(self, directory, public_pem):
        self.directory = directory
        self.public_key = serialization.load_pem_public_key(public_pem)
        self.log = open(os.path.join(directory, "requests.jsonl"), "a", buffering=1)
        self.answered = {}

    def script(self):
        try:
            with open(os.path.join(self.directory, "script.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def check(self, headers, body, script):
        """(status, reason, record): what APNs would say about this request."""
        record = {"time": time.time()}
        authorization = headers.get("authorization", "")
        if not authorization.startswith("bearer "):
            return 403, "MissingProviderToken", record
        token = authorization[len("bearer "):]
        record["jwt"] = token
        try:
            header = jwt.get_unverified_header(token)
            claims = jwt.decode(token, self.public_key, algorithms=["ES256"], options={"verify_iat": False})
        except jwt.PyJWTError as error:
            record["invalid"] = "signature: %s" % error
            return 403, "InvalidProviderToken", record
        record.update({"kid": header.get("kid"), "alg": header.get("alg"), "iss": claims.get("iss"),
                       "iat": claims.get("iat")})
        if header.get("kid") != KEY_ID or claims.get("iss") != TEAM_ID or set(claims) != {"iss", "iat"}:
            record["invalid"] = "kid, iss or claims"
            return 403, "InvalidProviderToken", record
        iat = claims.get("iat")
        if not isinstance(iat, int) or iat > time.time() + 60:
            record["invalid"] = "iat"
            return 403, "InvalidProviderToken", record
        if time.time() - iat > script.get("expire_tokens_older_than", 3600):
            return 403, "ExpiredProviderToken", record
        record["topic"] = headers.get("apns-topic")
        record["push_type"] = headers.get("apns-push-type")
        record["priority"] = headers.get("apns-priority")
        record["expiration"] = headers.get("apns-expiration")
        record["collapse_id"] = headers.get("apns-collapse-id")
        if record["topic"] != TOPIC:
            return 400, "BadTopic" if record["topic"] else "MissingTopic", record
        if record["push_type"] != "alert":
            return 400, "InvalidPushType", record
        if record["priority"] not in ("5", "10"):
            return 400, "BadPriority", record
        try:
            record["apns_id"] = str(uuid.UUID(headers.get("apns-id", "")))
        except ValueError:
            return 400, "BadMessageId", record
        if not (record["expiration"] or "").isdigit():
            return 400, "BadExpirationDate", record
        record["payload_size"] = len(body)
        if len(body) > 4096:
            return 413, "PayloadTooLarge", record
        try:
            payload = json.loads(body)
        except ValueError:
            return 400, "PayloadEmpty" if not body else "BadPayload", record
        if not isinstance(payload, dict) or not isinstance(payload.get("aps"), dict):
            return 400, "BadPayload", record
        record["payload"] = payload
        return 200, None, record

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"]
        device = path[len("/3/device/"):] if path.startswith("/3/device/") else ""
        script = self.script()
        if scope["method"] != "POST" or not device:
            status, reason, record = 405 if device else 404, "MethodNotAllowed" if device else "BadPath", {}
        else:
            status, reason, record = self.check(headers, body, script)
        client = scope.get("client") or ("", 0)
        record.update({"device": device, "http_version": scope.get("http_version"), "client_port": client[1]})
        timestamp = None
        if status == 200:
            answers = script.get("tokens", {}).get(device)
            if answers:
                index = self.answered.get(device, 0)
                self.answered[device] = index + 1
                answer = answers[min(index, len(answers) - 1)]
                status, reason, timestamp = answer.get("status", 200), answer.get("reason"), answer.get("timestamp")
                if answer.get("hold"):
                    released = os.path.join(self.directory, os.path.basename(answer["hold"]))
                    open(released + ".arrived", "w").close()
                    for _ in range(3000):
                        if os.path.exists(released):
                            break
                        await asyncio.sleep(0.02)
                    record["held"] = answer["hold"]
        record.update({"status": status, "reason": reason})
        self.log.write(json.dumps(record) + "\n")
        response_headers = [(b"apns-id", headers.get("apns-id", str(uuid.uuid4())).encode())]
        payload = b""
        if status != 200:
            answer = {"reason": reason}
            if timestamp is not None:
                answer["timestamp"] = timestamp
            payload = json.dumps(answer).encode()
            response_headers.append((b"content-type", b"application/json"))
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": payload})


def main():
    directory, port = sys.argv[1], int(sys.argv[2])
    public_pem = make_tls(directory)
    config = Config()
    # 127.0.0.2 is not in the certificate: a client must refuse it.
    config.bind = ["127.0.0.1:%d" % port, "127.0.0.2:%d" % port]
    config.certfile = os.path.join(directory, "server.pem")
    config.keyfile = os.path.join(directory, "server.key")
    config.alpn_protocols = ["h2"]
    config.accesslog = None
    config.errorlog = os.path.join(directory, "errors.log")
    config.h2_max_concurrent_streams = 1000
    config.keep_alive_timeout = 3600
    # Hypercorn ends a connection after 1,000 requests by default, cutting off the streams in
    # flight; APNs keeps one open for as many as a sender makes.
    config.keep_alive_max_requests = 1 << 30
    app = StandIn(directory, public_pem)

    async def run():
        server = asyncio.ensure_future(serve(app, config))
        await asyncio.sleep(0.3)
        open(os.path.join(directory, "ready"), "w").close()
        await server

    asyncio.run(run())


if __name__ == "__main__":
    main()

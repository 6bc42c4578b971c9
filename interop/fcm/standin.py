"""A stand-in Firebase Cloud Messaging (HTTP v1) for the push tests: Google's OAuth token endpoint
and FCM's send call, checked with libraries Homeport does not use. The service account's
assertion is verified with google-auth (signature by the account's key, `aud` the token
endpoint, `iss` the account, the FCM scope); each send needs a live access token it issued, and
its message is checked for what FCM requires (a token, string-only data, an Android TTL "Ns").

    python standin.py DIRECTORY

Makes an RSA key and writes DIRECTORY/service-account.json (mode 0600) as Google's console would
(its token_uri this stand-in's /token); listens on 127.0.0.1 and writes the port to
DIRECTORY/port.

    POST /token                                   the assertion grant: {"access_token", "expires_in"}
    POST /v1/projects/PROJECT/messages:send       200 {"name"}, or what /control queued for the token,
                                                  as FCM's error body ({"error": {"code", "status",
                                                  "details": [{"errorCode"}]}}); 401 without a live token
    POST /control   {"token": T, "answers": ["UNREGISTERED"|"QUOTA_EXCEEDED"|"INVALID_ARGUMENT"|
                    "SENDER_ID_MISMATCH"|"UNAVAILABLE"|"PAGE_404" (an HTML 404, not FCM's), …],
                    "retry_after": s} or {"revoke": true}
    GET  /messages  {"delivered": [{"token", "data", "notification", "android"}], "refused":
                    [{"token", "status", "reason"}], "tokens_issued": n}
"""

import json
import os
import re
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import jwt as google_jwt

PROJECT = "homeport-test"
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
CLIENT_EMAIL = "homeport-push@homeport-test.iam.gserviceaccount.com"
ERRORS = {
    "UNREGISTERED": (404, "NOT_FOUND"),
    "QUOTA_EXCEEDED": (429, "RESOURCE_EXHAUSTED"),
    "INVALID_ARGUMENT": (400, "INVALID_ARGUMENT"),
    "SENDER_ID_MISMATCH": (403, "PERMISSION_DENIED"),
    "UNAVAILABLE": (503, "UNAVAILABLE"),
}

lock = threading.Lock()
state = {"tokens": {}, "issued": 0, "answers": {}, "delivered": [], "refused": []}
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
key_id = secrets.token_hex(20)
public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def answer(self, status, value, headers=()):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, header in headers:
            self.send_header(name, header)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def do_GET(self):
        if self.path == "/messages":
            with lock:
                self.answer(200, {"delivered": state["delivered"], "refused": state["refused"],
                                  "tokens_issued": state["issued"]})
        else:
            self.answer(404, {})

    def do_POST(self):
        body = self.body()
        if self.path == "/token":
            return self.token(body)
        if self.path == "/control":
            request = json.loads(body)
            with lock:
                if request.get("revoke"):
                    state["tokens"].clear()
                else:
                    state["answers"][request["token"]] = [(name, request.get("retry_after"))
                                                          for name in request["answers"]]
            return self.answer(200, {})
        if self.path == f"/v1/projects/{PROJECT}/messages:send":
            return self.send_message(body)
        self.answer(404, {})

    def token(self, body):
        form = urllib.parse.parse_qs(body.decode())
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return self.answer(400, {"error": "unsupported_grant_type"})
        audience = f"http://{self.headers['Host']}/token"
        try:
            claims = google_jwt.decode(form["assertion"][0], certs={key_id: public_pem}, audience=audience)
        except Exception as error:  # noqa: BLE001 — any failure refuses the grant
            return self.answer(400, {"error": "invalid_grant", "error_description": str(error)})
        if claims.get("iss") != CLIENT_EMAIL or SCOPE not in claims.get("scope", "").split():
            return self.answer(400, {"error": "invalid_scope"})
        token = "ya29." + secrets.token_urlsafe(32)
        with lock:
            state["tokens"][token] = time.time() + 3600
            state["issued"] += 1
        self.answer(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def refuse(self, token, name, reason, retry_after=None):
        if name == "PAGE_404":
            # Not FCM's answer: a proxy's or a wrong address's page.
            with lock:
                state["refused"].append({"token": token, "status": 404, "reason": reason})
            page = b"<html><body><h1>404 Not Found</h1></body></html>"
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        status, word = ERRORS[name]
        with lock:
            state["refused"].append({"token": token, "status": status, "reason": reason})
        headers = [("Retry-After", str(retry_after))] if retry_after is not None else []
        self.answer(status, {"error": {"code": status, "message": reason, "status": word, "details": [
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": name}]}}, headers)

    def send_message(self, body):
        bearer = self.headers.get("Authorization", "")
        with lock:
            live = bearer.startswith("Bearer ") and state["tokens"].get(bearer[7:], 0) > time.time()
        if not live:
            with lock:
                state["refused"].append({"token": None, "status": 401, "reason": "no live access token"})
            return self.answer(401, {"error": {"code": 401, "status": "UNAUTHENTICATED",
                                               "message": "Request had invalid authentication credentials."}})
        try:
            message = json.loads(body)["message"]
            token = message["token"]
        except Exception:  # noqa: BLE001
            return self.refuse(None, "INVALID_ARGUMENT", "no message.token")
        with lock:
            queued = state["answers"].get(token) or []
            planned = queued.pop(0) if queued else None
        if planned is not None:
            return self.refuse(token, planned[0], "asked by /control", planned[1])
        data = message.get("data", {})
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            return self.refuse(token, "INVALID_ARGUMENT", "data values must be strings")
        android = message.get("android", {})
        if "ttl" in android and not re.fullmatch(r"\d+(\.\d+)?s", android["ttl"]):
            return self.refuse(token, "INVALID_ARGUMENT", f"android.ttl {android['ttl']!r}")
        if android.get("priority") not in (None, "HIGH", "NORMAL"):
            return self.refuse(token, "INVALID_ARGUMENT", f"android.priority {android.get('priority')!r}")
        with lock:
            state["delivered"].append({"token": token, "data": data, "notification": message.get("notification"),
                                       "android": android})
        self.answer(200, {"name": f"projects/{PROJECT}/messages/{secrets.token_hex(8)}"})


def main():
    directory = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    account = {
        "type": "service_account", "project_id": PROJECT, "private_key_id": key_id,
        "private_key": key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()).decode(),
        "client_email": CLIENT_EMAIL, "client_id": "1", "token_uri": f"http://127.0.0.1:{port}/token",
    }
    path = os.path.join(directory, "service-account.json")
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(account, file)
    with open(os.path.join(directory, "port.tmp"), "w") as file:
        file.write(str(port))
    os.rename(os.path.join(directory, "port.tmp"), os.path.join(directory, "port"))
    server.serve_forever()


if __name__ == "__main__":
    main()

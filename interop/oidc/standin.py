"""A stand-in OpenID Connect provider for the token tests: publishes a discovery document and a
key set, and mints ID tokens with PyJWT (an independent JOSE library) on request, well-formed or
hostile, so the server's checks meet tokens it did not write itself.

    python standin.py DIRECTORY

Listens on 127.0.0.1 on a free port and writes the port to DIRECTORY/port once it listens.

    GET  /.well-known/openid-configuration   the discovery document
    GET  /jwks                               the published keys
    GET  /stats                              {"discovery": n, "jwks": n}: how often each was fetched
    POST /mint     {"claims": {...}, "key": "rsa"|"ec"|"rogue"|"weak"|"hs256-public"|"none",
                    "kid": "..." (or null for none; the key's own by default), "header": {...}}
    POST /rotate   publishes a new RSA key (minted with "rsa" from then on) and drops the old one
    POST /control  {"issuer": "...", "jwks_status": 500, "discovery_status": 500, "jwks_body": "...",
                    "now": seconds (the time tokens from /token are issued at), "login": {claims of who signs
                    in at /authorize}, "authorize_error": "access_denied", "client_secret": "...",
                    "token_status": 500, "nonce": "another", "iss_supported": true (RFC 9207: say so in the
                    discovery document and name the issuer in /authorize's answer), "answer_iss": "..." or
                    null (name another issuer, or none)}
    GET  /authorize  the authorization endpoint: signs in "login" at once and sends the browser back
                     with a code (or "authorize_error")
    POST /token      the token endpoint: the code, its PKCE verifier and redirect_uri, the client's
                     secret (Basic or in the body) when "client_secret" is set; answers an ID token
                     with the request's nonce
"""

import base64
import hashlib
import hmac
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

lock = threading.Lock()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def new_rsa(bits: int = 2048):
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


class Provider:
    def __init__(self) -> None:
        self.keys = {
            "rsa": ("rsa-1", new_rsa()),
            "ec": ("ec-1", ec.generate_private_key(ec.SECP256R1())),
            "rogue": ("rsa-1", new_rsa()),
            "weak": ("weak-1", new_rsa(1024)),
        }
        self.generation = 1
        self.counts = {"discovery": 0, "jwks": 0, "token": 0}
        self.codes: dict = {}
        self.token_auth = ""
        self.control: dict = {}
        self.base = ""

    def jwks(self) -> dict:
        published = []
        for name in ("rsa", "ec", "weak"):
            kid, key = self.keys[name]
            algorithm = RSAAlgorithm if name != "ec" else ECAlgorithm
            entry = json.loads(algorithm.to_jwk(key.public_key()))
            entry.update({"kid": kid, "use": "sig", "alg": "ES256" if name == "ec" else "RS256"})
            published.append(entry)
        # A key for encryption and one of an unknown type, which a client passes over.
        published.append({"kty": "oct", "kid": "secret", "k": b64url(b"not for you")})
        return {"keys": published}

    def mint(self, request: dict) -> str:
        claims = request.get("claims", {})
        name = request.get("key", "rsa")
        header = dict(request.get("header", {}))
        if name == "none":
            header = {"alg": "none", **header}
            return f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}."
        if name == "hs256-public":
            # The attack on libraries that take the key's algorithm from the token: an HMAC
            # "signed" with the provider's public key, which anyone can fetch.
            kid, key = self.keys["rsa"]
            header = {"alg": "HS256", "typ": "JWT", "kid": kid, **header}
            secret = key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            signed = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
            return f"{signed}.{b64url(hmac.new(secret, signed.encode(), hashlib.sha256).digest())}"
        kid, key = self.keys[name]
        if "kid" in request:
            kid = request["kid"]
        if kid is not None:
            header["kid"] = kid
        algorithm = "ES256" if name == "ec" else "RS256"
        return jwt.encode(claims, key, algorithm=algorithm, headers=header or None)

    def rotate(self) -> None:
        self.generation += 1
        self.keys["rsa"] = (f"rsa-{self.generation}", new_rsa())


provider = Provider()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def answer(self, status: int, body, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        with lock:
            control = dict(provider.control)
            if self.path == "/.well-known/openid-configuration":
                provider.counts["discovery"] += 1
                status = control.get("discovery_status", 200)
                document = {
                    "issuer": control.get("issuer", provider.base),
                    "authorization_endpoint": provider.base + "/authorize",
                    "token_endpoint": provider.base + "/token",
                    "jwks_uri": control.get("jwks_uri", provider.base + "/jwks"),
                    "id_token_signing_alg_values_supported": ["RS256", "ES256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                }
                if control.get("iss_supported"):
                    document["authorization_response_iss_parameter_supported"] = True
                return self.answer(status, document)
            if self.path == "/jwks":
                provider.counts["jwks"] += 1
                if "jwks_body" in control:
                    return self.answer(control.get("jwks_status", 200), control["jwks_body"].encode())
                return self.answer(control.get("jwks_status", 200), provider.jwks())
            if self.path == "/stats":
                return self.answer(200, {**provider.counts, "token_auth": provider.token_auth})
            if self.path.startswith("/authorize?"):
                query = dict(urllib.parse.parse_qsl(self.path.split("?", 1)[1]))
                back = query.get("redirect_uri", "")
                if "authorize_error" in control:
                    parameters = {"error": control["authorize_error"], "state": query.get("state", "")}
                else:
                    code = secrets.token_urlsafe(24)
                    provider.codes[code] = {"query": query, "login": control.get("login", {})}
                    parameters = {"code": code, "state": query.get("state", "")}
                # RFC 9207: the answer names its issuer (or, asked, another's, or none).
                if "answer_iss" in control:
                    if control["answer_iss"] is not None:
                        parameters["iss"] = control["answer_iss"]
                elif control.get("iss_supported"):
                    parameters["iss"] = provider.base
                self.send_response(302)
                self.send_header("Location", back + ("&" if "?" in back else "?") + urllib.parse.urlencode(parameters))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        self.answer(404, {"error": "not found"})

    def token(self, body: bytes) -> None:
        form = dict(urllib.parse.parse_qsl(body.decode()))
        control = dict(provider.control)
        provider.counts["token"] += 1
        secret = None
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            client, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            secret = urllib.parse.unquote_plus(secret)
            provider.token_auth = "basic"
        elif "client_secret" in form:
            secret = form["client_secret"]
            provider.token_auth = "post"
        else:
            provider.token_auth = "none"
        if "client_secret" in control and secret != control["client_secret"]:
            return self.answer(401, {"error": "invalid_client"})
        if "token_status" in control:
            return self.answer(control["token_status"], {"error": "server_error"})
        pending = provider.codes.pop(form.get("code", ""), None)
        if pending is None:
            return self.answer(400, {"error": "invalid_grant"})
        query = pending["query"]
        challenge = b64url(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
        if challenge != query.get("code_challenge") or query.get("code_challenge_method") != "S256":
            return self.answer(400, {"error": "invalid_grant", "error_description": "PKCE"})
        if form.get("redirect_uri") != query.get("redirect_uri") or form.get("client_id") != query.get("client_id"):
            return self.answer(400, {"error": "invalid_grant", "error_description": "redirect_uri"})
        now = int(control.get("now", time.time()))
        claims = {"iss": provider.base, "aud": query.get("client_id"), "iat": now, "exp": now + 300,
                  "nonce": control.get("nonce", query.get("nonce")), "jti": secrets.token_hex(8),
                  "sub": "web-1", "email": "web@example.com", "email_verified": True, **pending["login"]}
        kid, key = provider.keys["rsa"]
        id_token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})
        self.answer(200, {"access_token": secrets.token_urlsafe(16), "token_type": "Bearer", "id_token": id_token})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        if self.path == "/token":
            body = self.rfile.read(length)
            with lock:
                return self.token(body)
        request = json.loads(self.rfile.read(length) or b"{}")
        with lock:
            if self.path == "/mint":
                return self.answer(200, provider.mint(request).encode(), "text/plain")
            if self.path == "/rotate":
                provider.rotate()
                return self.answer(200, {"kid": provider.keys["rsa"][0]})
            if self.path == "/control":
                provider.control = request
                return self.answer(200, {})
        self.answer(404, {"error": "not found"})


def main() -> None:
    directory = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    provider.base = f"http://127.0.0.1:{server.server_address[1]}"
    with open(os.path.join(directory, "port.tmp"), "w") as file:
        file.write(str(server.server_address[1]))
    os.rename(os.path.join(directory, "port.tmp"), os.path.join(directory, "port"))
    server.serve_forever()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Sundown: a small journal API that lives behind Homeport's sessions.

Python's standard library only. Sundown never sees a session token: its reverse
proxy (nginx `auth_request` or Caddy `forward_auth`) asks Homeport who each
request is, and hands Sundown the answer in X-Homeport-Account-Id,
X-Homeport-Account-Email, X-Homeport-Account-Email-Verified and
X-Homeport-Groups, replacing whatever the client sent. So Sundown listens where only the proxy reaches it
(loopback), and trusts those fields.

An address is not an identity: an entry is shared with an account, by its id,
which Homeport never reuses. The address the writer types is resolved to an
account through Homeport's product API when the entry is shared, and only a
verified address is taken; a share to an address nobody has yet is refused,
not kept for whoever signs up with it later.

When an entry is shared, Sundown notifies the reader through the product API (a
push to each of their devices, and the in-app stream), with a product key made
by `homeport-server product-keys create sundown`.

    SUNDOWN_PRODUCT_KEY=... python3 sundown.py --listen 127.0.0.1:9000 \\
        --database /var/lib/sundown/journal.sqlite3 \\
        --product-api unix:/run/homeport/product.sock

Routes (all JSON):
    GET  /api/v1/journal                  the caller and the entries they may read
    POST /api/v1/journal                  {"text": "..."}: a new entry (201)
    POST /api/v1/journal/ENTRY/share      {"email": "..."}: share it with that account, and notify it
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import re
import socket
import sqlite3
import sys
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable

CODES = [
    {"code": "sundown:entry.shared", "title": "An entry was shared with you"},
]

# The fields forward auth answers. A field that reads as one of them with "_" for "-" (or in
# another case) is a client's attempt at one: CGI-style stacks would merge it with the real one.
HOMEPORT_FIELDS = {
    "x-homeport-account-id",
    "x-homeport-account-email",
    "x-homeport-account-email-verified",
    "x-homeport-session",
    "x-homeport-groups",
}

JSON = dict[str, Any]


class ProductAPI:
    """Homeport's product API, over TCP (http://HOST:PORT) or a Unix socket (unix:/PATH)."""

    def __init__(self, address: str, key: str) -> None:
        self.address = address
        self.key = key

    def _connection(self) -> http.client.HTTPConnection:
        if self.address.startswith("unix:"):
            path = self.address.removeprefix("unix:")

            class UnixConnection(http.client.HTTPConnection):
                def connect(self) -> None:
                    self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    self.sock.settimeout(self.timeout)
                    self.sock.connect(path)

            return UnixConnection("homeport", timeout=10)
        url = urllib.parse.urlsplit(self.address)
        if url.scheme != "http" or not url.hostname or not url.port or url.path not in ("", "/"):
            raise ValueError("the product API is http://HOST:PORT or unix:/PATH")
        return http.client.HTTPConnection(url.hostname, url.port, timeout=10)

    def call(self, method: str, path: str, body: JSON | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, JSON | None]:
        """The answer's status and its JSON object (None when it is not one)."""
        connection = self._connection()
        try:
            all_headers = {"Authorization": f"Bearer {self.key}", **(headers or {})}
            data = None
            if body is not None:
                all_headers["Content-Type"] = "application/json"
                data = json.dumps(body).encode()
            connection.request(method, path, body=data, headers=all_headers)
            response = connection.getresponse()
            payload = response.read()
            try:
                answer = json.loads(payload)
            except ValueError:
                answer = None
            return response.status, answer if isinstance(answer, dict) else None
        finally:
            connection.close()

    def account(self, email: str) -> tuple[int, JSON | None]:
        """The account that signs in with `email` now: (200, account) or (404, None)."""
        query = urllib.parse.urlencode({"email": email})
        return self.call("GET", f"/product/v1/accounts?{query}")


class Journal:
    """Entries per account, in SQLite; an entry is read by its author and the accounts it is shared with."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        with self.lock:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, account INTEGER NOT NULL,"
                " author TEXT NOT NULL, text TEXT NOT NULL)")
            # Shared with an account id, never an address (an earlier version's `shares` table, by
            # address, is read no more).
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS reader_shares (entry INTEGER NOT NULL, reader INTEGER NOT NULL,"
                " PRIMARY KEY (entry, reader))")

    def add(self, account: int, author: str, text: str) -> int:
        with self.lock:
            cursor = self.db.execute(
                "INSERT INTO entries (account, author, text) VALUES (?, ?, ?)", (account, author, text))
            return int(cursor.lastrowid or 0)

    def readable(self, account: int) -> list[JSON]:
        with self.lock:
            rows = self.db.execute(
                "SELECT id, author, text FROM entries WHERE account = ? OR id IN"
                " (SELECT entry FROM reader_shares WHERE reader = ?) ORDER BY id", (account, account)).fetchall()
        return [{"id": id, "author": author, "text": text} for id, author, text in rows]

    def owned(self, account: int, entry: int) -> bool:
        with self.lock:
            row = self.db.execute("SELECT 1 FROM entries WHERE id = ? AND account = ?", (entry, account)).fetchone()
        return row is not None

    def share(self, entry: int, reader: int) -> None:
        with self.lock:
            self.db.execute("INSERT OR IGNORE INTO reader_shares (entry, reader) VALUES (?, ?)", (entry, reader))


@dataclass(frozen=True)
class Caller:
    """The account the proxy named."""

    id: int
    email: str
    email_verified: bool
    session: str | None
    groups: list[str]


class Refusal(Exception):
    """An answer other than the route's own: its status, code, message and the field at fault."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field


NOT_SIGNED_IN = Refusal(401, "not_authenticated", "Sign in to use this route.")


def make_handler(journal: Journal, product: ProductAPI) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "sundown"

        # Routing: one function a route.

        def do_GET(self) -> None:
            self.route({"/api/v1/journal": self.list_entries})

        def do_POST(self) -> None:
            self.route({"/api/v1/journal": self.write_entry}, share=self.share_entry)

        def route(self, routes: dict[str, Callable[[Caller], tuple[int, JSON]]],
                  share: Callable[[Caller, int], tuple[int, JSON]] | None = None) -> None:
            self.body_read = False
            path = urllib.parse.urlsplit(self.path).path
            matched = re.fullmatch(r"/api/v1/journal/([0-9]{1,18})/share", path)
            try:
                if "Transfer-Encoding" in self.headers:
                    raise Refusal(400, "invalid_field", "Send the body with a Content-Length.", "body")
                if path in routes:
                    status, body = routes[path](self.caller())
                elif share and matched:
                    status, body = share(self.caller(), int(matched.group(1)))
                else:
                    raise Refusal(404, "not_found", "No route serves this path.")
            except Refusal as refusal:
                error = {"code": refusal.code, "message": refusal.message}
                if refusal.field:
                    error["field"] = refusal.field
                status, body = refusal.status, {"error": error}
            self.answer(status, body)

        # The routes.

        def list_entries(self, caller: Caller) -> tuple[int, JSON]:
            return 200, {
                "account": {"id": caller.id, "email": caller.email, "emailVerified": caller.email_verified,
                            "session": caller.session, "groups": caller.groups},
                "entries": journal.readable(caller.id)}

        def write_entry(self, caller: Caller) -> tuple[int, JSON]:
            text = self.body().get("text")
            if not isinstance(text, str) or not 1 <= len(text) <= 10000:
                raise Refusal(400, "invalid_field", "text is 1–10,000 characters.", "text")
            entry = journal.add(caller.id, caller.email, text)
            return 201, {"id": entry, "author": caller.email, "text": text}

        def share_entry(self, caller: Caller, entry: int) -> tuple[int, JSON]:
            address = self.body().get("email")
            if not isinstance(address, str) or "@" not in address:
                raise Refusal(400, "invalid_field", "email is the reader's sign-in address.", "email")
            if not journal.owned(caller.id, entry):
                raise Refusal(404, "not_found", "You wrote no entry with this id.")
            reader = self.verified_account(address)
            journal.share(entry, reader)
            # The sharer is named only by an address they proved is theirs (an unverified one could
            # be anybody's: "ceo@example.com shared an entry" would be a lie on the reader's phone).
            who = caller.email if caller.email_verified else "Someone"
            title = f"{who} shared an entry"
            if len(title) > 200:
                title = "An entry was shared with you"
            status, answer = product.call(
                "POST", "/product/v1/notifications",
                {"accountId": reader, "code": "sundown:entry.shared", "title": title,
                 "thread": f"journal:{entry}", "id": entry, "data": {"entry": str(entry)}},
                # A retry of the same share (a timeout, a second tap) notifies once.
                {"Idempotency-Key": f"share-{entry}-{reader}"})
            if status == 202 and answer:
                return 200, {"shared": entry, "reader": reader, "notification": answer["id"]}
            detail = ((answer or {}).get("error") or {}).get("message", "no answer")
            raise Refusal(502, "notify_failed", f"Homeport did not take the notification ({status}: {detail})")

        # What every route needs.

        def verified_account(self, address: str) -> int:
            """The id of the account that signs in with `address` now, if the address is verified."""
            status, account = product.account(address.strip())
            if status == 404:
                raise Refusal(404, "no_account", "Nobody signs in with this address; ask them to sign up first.",
                              "email")
            if status == 400:
                raise Refusal(400, "invalid_field", "email is the reader's sign-in address.", "email")
            if status != 200 or not account or not isinstance(account.get("id"), int):
                raise Refusal(502, "lookup_failed", f"Homeport did not say who this address is ({status}).")
            if account.get("verified") is not True:
                raise Refusal(409, "address_not_verified",
                              "This address is not verified: ask its owner to verify it before you share with them.",
                              "email")
            return account["id"]

        def caller(self) -> Caller:
            """The account the proxy named, each field once and in its own spelling; else a 401."""
            for name in self.headers.keys():
                if name.lower() != name.lower().replace("_", "-") and name.lower().replace("_", "-") in HOMEPORT_FIELDS:
                    raise NOT_SIGNED_IN
            ids = self.headers.get_all("X-Homeport-Account-Id") or []
            emails = self.headers.get_all("X-Homeport-Account-Email") or []
            verified = self.headers.get_all("X-Homeport-Account-Email-Verified") or []
            groups = self.headers.get_all("X-Homeport-Groups") or []
            if len(ids) != 1 or len(emails) != 1 or len(verified) > 1 or len(groups) > 1 or not ids[0].isdigit():
                raise NOT_SIGNED_IN
            names = [name for name in (groups[0] if groups else "").split(",") if name]
            return Caller(int(ids[0]), emails[0], verified == ["true"], self.headers.get("X-Homeport-Session"), names)

        def body(self) -> JSON:
            length = self.headers.get("Content-Length", "0")
            value: Any = None
            if length.isdigit() and int(length) <= 64 * 1024:
                self.body_read = True
                try:
                    value = json.loads(self.rfile.read(int(length)) or b"null",
                                       object_pairs_hook=unique_keys)
                except ValueError:
                    value = None
            if not isinstance(value, dict):
                raise Refusal(400, "invalid_field", "Send a JSON object that names each key once.", "body")
            return value

        def answer(self, status: int, body: JSON) -> None:
            # A body left unread would be read as the next request on this connection, with
            # account fields nobody checked: the connection ends with this answer instead.
            unread = not self.body_read and (
                self.headers.get("Content-Length", "0") not in ("", "0") or "Transfer-Encoding" in self.headers)
            if unread:
                self.close_connection = True
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            if unread:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            sys.stderr.write(f"sundown: {self.address_string()} {format % args}\n")

    return Handler


def unique_keys(pairs: list[tuple[str, Any]]) -> JSON:
    """A JSON object that names each key once (Python would keep the last of two, Homeport the first)."""
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError("a key named twice")
    return dict(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description="Sundown, a journal API behind Homeport's sessions.")
    parser.add_argument("--listen", default="127.0.0.1:9000", help="HOST:PORT, reached only by the proxy")
    parser.add_argument("--database", default="sundown.sqlite3", help="the journal's SQLite file")
    parser.add_argument("--product-api", default="unix:/run/homeport/product.sock",
                        help="Homeport's product API: http://HOST:PORT or unix:/PATH")
    arguments = parser.parse_args()
    key = os.environ.get("SUNDOWN_PRODUCT_KEY", "").strip()
    if not key:
        parser.error("set SUNDOWN_PRODUCT_KEY to a key from: homeport-server product-keys create sundown")
    host, _, port = arguments.listen.rpartition(":")
    if not host or not port.isdigit():
        parser.error("--listen is HOST:PORT")
    product = ProductAPI(arguments.product_api, key)
    # The codes Sundown notifies with join Homeport's catalogue, so apps can show and mute them.
    status, answer = product.call("PUT", "/product/v1/catalogue", {"codes": CODES})
    if status != 200 or not answer:
        sys.exit(f"sundown: Homeport refused the catalogue ({status}): {answer}")
    server = http.server.ThreadingHTTPServer(
        (host.strip("[]"), int(port)), make_handler(Journal(arguments.database), product))
    print(f"sundown listening on http://{host}:{server.server_address[1]} (catalogue {answer['version']})",
          flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

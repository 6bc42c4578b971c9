#!/usr/bin/env python3
"""Sundown: a small journal API that lives behind Homeport's sessions.

Python's standard library only. Sundown never sees a session token: its reverse
proxy (nginx `auth_request` or Caddy `forward_auth`) asks Homeport who each
request is, and hands Sundown the answer in X-Homeport-Account-Id and
X-Homeport-Account-Email, replacing whatever the client sent. So Sundown
listens where only the proxy reaches it (loopback), and trusts those fields.

When an entry is shared, Sundown notifies the other person through Homeport's
product API (a push to each of their devices, and the in-app stream), with a
product key made by `homeport-server product-keys create sundown`.

    SUNDOWN_PRODUCT_KEY=... python3 sundown.py --listen 127.0.0.1:9000 \
        --database /var/lib/sundown/journal.sqlite3 \
        --product-api unix:/run/homeport/product.sock

Routes (all JSON):
    GET  /api/v1/journal                  the caller and the entries they may read
    POST /api/v1/journal                  {"text": "..."}: a new entry (201)
    POST /api/v1/journal/ENTRY/share      {"email": "..."}: share it and notify them
"""

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

CODES = [
    {"code": "sundown:entry.shared", "title": "An entry was shared with you"},
]


class ProductAPI:
    """Homeport's product API, over TCP (http://HOST:PORT) or a Unix socket (unix:/PATH)."""

    def __init__(self, address, key):
        self.address = address
        self.key = key

    def _connection(self):
        if self.address.startswith("unix:"):
            path = self.address[len("unix:"):]

            class UnixConnection(http.client.HTTPConnection):
                def connect(self):
                    self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    self.sock.settimeout(self.timeout)
                    self.sock.connect(path)

            return UnixConnection("homeport", timeout=10)
        match = re.fullmatch(r"http://([^/:]+|\[[^\]]+\]):(\d+)/?", self.address)
        if not match:
            raise ValueError("the product API is http://HOST:PORT or unix:/PATH")
        return http.client.HTTPConnection(match.group(1).strip("[]"), int(match.group(2)), timeout=10)

    def call(self, method, path, body, headers=None):
        """(status, decoded JSON or None)."""
        connection = self._connection()
        try:
            all_headers = {"Authorization": "Bearer " + self.key, "Content-Type": "application/json"}
            all_headers.update(headers or {})
            connection.request(method, path, body=json.dumps(body).encode(), headers=all_headers)
            response = connection.getresponse()
            data = response.read()
            try:
                return response.status, json.loads(data)
            except ValueError:
                return response.status, None
        finally:
            connection.close()


class Journal:
    """Entries per account, in SQLite; an entry is read by its author and those it is shared with."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        with self.lock:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, account INTEGER NOT NULL,"
                " author TEXT NOT NULL, text TEXT NOT NULL)")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS shares (entry INTEGER NOT NULL, email TEXT NOT NULL,"
                " PRIMARY KEY (entry, email))")

    def add(self, account, author, text):
        with self.lock:
            cursor = self.db.execute(
                "INSERT INTO entries (account, author, text) VALUES (?, ?, ?)", (account, author, text))
            return cursor.lastrowid

    def readable(self, account, email):
        with self.lock:
            rows = self.db.execute(
                "SELECT id, author, text FROM entries WHERE account = ? OR id IN"
                " (SELECT entry FROM shares WHERE email = ?) ORDER BY id", (account, email)).fetchall()
        return [{"id": row[0], "author": row[1], "text": row[2]} for row in rows]

    def owned(self, account, entry):
        with self.lock:
            return self.db.execute(
                "SELECT text FROM entries WHERE id = ? AND account = ?", (entry, account)).fetchone() is not None

    def share(self, entry, email):
        with self.lock:
            self.db.execute("INSERT OR IGNORE INTO shares (entry, email) VALUES (?, ?)", (entry, email))


def make_handler(journal, product):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "sundown"

        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def refuse(self, status, code, message, field=None):
            error = {"code": code, "message": message}
            if field:
                error["field"] = field
            self.answer(status, {"error": error})

        def caller(self):
            """The account the proxy named, once each; None (after a 401) otherwise."""
            ids = self.headers.get_all("X-Homeport-Account-Id") or []
            emails = self.headers.get_all("X-Homeport-Account-Email") or []
            if len(ids) != 1 or len(emails) != 1 or not ids[0].isdigit():
                self.refuse(401, "not_authenticated", "Sign in to use this route.")
                return None
            return int(ids[0]), emails[0]

        def body(self):
            length = self.headers.get("Content-Length", "0")
            if not length.isdigit() or int(length) > 64 * 1024:
                return None
            try:
                value = json.loads(self.rfile.read(int(length)) or b"null")
            except ValueError:
                return None
            return value if isinstance(value, dict) else None

        def do_GET(self):
            if self.path.split("?")[0] != "/api/v1/journal":
                return self.refuse(404, "not_found", "No route serves this path.")
            who = self.caller()
            if who:
                account, email = who
                self.answer(200, {
                    "account": {"id": account, "email": email,
                                "session": self.headers.get("X-Homeport-Session")},
                    "entries": journal.readable(account, email)})

        def do_POST(self):
            path = self.path.split("?")[0]
            share = re.fullmatch(r"/api/v1/journal/([0-9]{1,18})/share", path)
            if path != "/api/v1/journal" and not share:
                return self.refuse(404, "not_found", "No route serves this path.")
            who = self.caller()
            if not who:
                return
            account, email = who
            body = self.body()
            if body is None:
                return self.refuse(400, "invalid_field", "Send a JSON object.", "body")
            if not share:
                text = body.get("text")
                if not isinstance(text, str) or not 1 <= len(text) <= 10000:
                    return self.refuse(400, "invalid_field", "text is 1–10,000 characters.", "text")
                entry = journal.add(account, email, text)
                return self.answer(201, {"id": entry, "author": email, "text": text})
            entry = int(share.group(1))
            reader = body.get("email")
            if not isinstance(reader, str) or "@" not in reader:
                return self.refuse(400, "invalid_field", "email is the reader's sign-in address.", "email")
            if not journal.owned(account, entry):
                return self.refuse(404, "not_found", "You wrote no entry with this id.")
            journal.share(entry, reader.strip().lower())
            status, answer = product.call(
                "POST", "/product/v1/notifications",
                {"email": reader, "code": "sundown:entry.shared", "title": email + " shared an entry",
                 "thread": "journal:%d" % entry, "id": entry, "data": {"entry": str(entry)}},
                # A retry of the same share (a timeout, a second tap) notifies once.
                {"Idempotency-Key": "share-%d-%s" % (entry, reader.strip().lower())})
            if status == 202:
                return self.answer(200, {"shared": entry, "notification": answer["id"]})
            detail = (answer or {}).get("error", {}).get("message", "no answer")
            self.refuse(502, "notify_failed", "Homeport did not take the notification (%d: %s)" % (status, detail))

        def log_message(self, format, *args):
            sys.stderr.write("sundown: %s %s\n" % (self.address_string(), format % args))

    return Handler


def main():
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
    if status != 200:
        sys.exit("sundown: Homeport refused the catalogue (%d): %s" % (status, answer))
    server = http.server.ThreadingHTTPServer((host.strip("[]"), int(port)), make_handler(Journal(arguments.database), product))
    print("sundown listening on http://%s:%d (catalogue %s)" % (host, server.server_address[1], answer["version"]),
          flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

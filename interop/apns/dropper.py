"""A host that takes a TLS connection (ALPN h2) and ends it after the client's first bytes, as
an APNs host that goes away while a batch goes out does: the first connection, and every other
one after it, is closed (the client's next write but one fails with EPIPE); the second, and
every other one, is reset (its next write fails). For Homeport's tests.

Usage: python dropper.py DIR
It writes DIR/ca.pem (trust it; the certificate names 127.0.0.1) and then DIR/port once it
listens on 127.0.0.1.
"""

import os
import socket
import ssl
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from standin import make_tls  # noqa: E402


def main():
    directory = sys.argv[1]
    make_tls(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(directory, "server.pem"), os.path.join(directory, "server.key"))
    context.set_alpn_protocols(["h2"])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    with open(os.path.join(directory, "port.tmp"), "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.rename(os.path.join(directory, "port.tmp"), os.path.join(directory, "port"))
    accepted = 0
    while True:
        raw, _ = listener.accept()
        accepted += 1
        # A client that connects and sends nothing holds up the next one for 5 seconds at most.
        raw.settimeout(5)
        connection = raw
        try:
            connection = context.wrap_socket(raw, server_side=True)
            # The connection preface, the client's settings and the start of its first requests.
            connection.recv(1024)
        except (OSError, ssl.SSLError):
            pass
        if accepted % 2 == 0:
            try:
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        connection.close()


if __name__ == "__main__":
    main()

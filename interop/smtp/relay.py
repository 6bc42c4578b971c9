"""A real SMTP server for the test suite (aiosmtpd): keeps every message it accepts as a file.

    python relay.py PORT DIRECTORY

Recipients at refused.example are refused with 550; every accepted message is written to
DIRECTORY/<n>.eml with its envelope (MAIL FROM and RCPT TO) in X-Envelope-* lines first.
"""
import asyncio
import os
import sys

from aiosmtpd.controller import Controller


class Keeper:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower().endswith("@refused.example"):
            return "550 5.1.1 No such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.count += 1
        path = os.path.join(self.directory, "%d.eml" % self.count)
        head = "X-Envelope-From: %s\r\nX-Envelope-To: %s\r\n" % (envelope.mail_from, ",".join(envelope.rcpt_tos))
        with open(path + ".tmp", "wb") as file:
            file.write(head.encode() + envelope.original_content)
        os.rename(path + ".tmp", path)
        return "250 Message accepted for delivery"


def main():
    port, directory = int(sys.argv[1]), sys.argv[2]
    controller = Controller(Keeper(directory), hostname="127.0.0.1", port=port)
    controller.start()
    print("ready", flush=True)
    try:
        asyncio.get_event_loop().run_forever()
    finally:
        controller.stop()


if __name__ == "__main__":
    main()

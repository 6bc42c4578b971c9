#!/usr/bin/env python3
"""Starts django-allauth as an OpenID Connect provider (`allauth.idp.oidc`, settings in
idp_settings.py) on 127.0.0.1:PORT, the way a household runs one: its own sign-in page, its own
consent page, clients registered as its admin registers them.

Before serving, in WORKDIR (a fresh SQLite database and a fresh RSA signing key each run):
  - one person, EMAIL with the password read from standard input, the address verified;
  - a confidential web client WEB_ID whose secret is read from WEB_SECRET_FILE, allowed the
    scopes openid, email and profile and the given --redirect-uri values (Homeport's
    `PUBLIC_URL/account/provider/callback`);
  - with --app-client-id, a public client (no secret, PKCE) for an app, with --app-redirect-uri.
Then it runs gunicorn in the foreground; the issuer is http://127.0.0.1:PORT.

Usage:
    idp.py --port PORT --workdir DIR --email EMAIL --web-client-id ID --web-client-secret-file FILE
           --redirect-uri URI [--redirect-uri URI]… [--app-client-id ID --app-redirect-uri URI…]
           < password
"""
import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse_arguments():
    parser = argparse.ArgumentParser(description="django-allauth as an OpenID Connect provider, for tests.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--email", required=True, help="the one person; the password comes on standard input")
    parser.add_argument("--web-client-id", required=True)
    parser.add_argument("--web-client-secret-file", type=Path, required=True)
    parser.add_argument("--redirect-uri", action="append", required=True)
    parser.add_argument("--app-client-id")
    parser.add_argument("--app-redirect-uri", action="append", default=[])
    return parser.parse_args()


def signing_key(path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def prepare(arguments, password):
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from allauth.account.models import EmailAddress
    from allauth.idp.oidc.models import Client
    from django.contrib.auth import get_user_model

    person = get_user_model().objects.create_user(username="person", email=arguments.email, password=password)
    EmailAddress.objects.create(user=person, email=arguments.email, verified=True, primary=True)
    web = Client(id=arguments.web_client_id, name="Homeport", type=Client.Type.CONFIDENTIAL)
    web.set_secret(arguments.web_client_secret_file.read_text().strip())
    web.set_scopes(["openid", "email", "profile"])
    web.set_redirect_uris(arguments.redirect_uri)
    web.save()
    if arguments.app_client_id:
        app = Client(id=arguments.app_client_id, name="Homeport app", type=Client.Type.PUBLIC)
        app.set_scopes(["openid", "email", "profile"])
        app.set_redirect_uris(arguments.app_redirect_uri)
        app.save()


def main():
    arguments = parse_arguments()
    password = sys.stdin.readline().rstrip("\n")
    if not password:
        print("idp.py: no password on standard input", file=sys.stderr)
        return 2
    arguments.workdir.mkdir(parents=True, exist_ok=True)
    key = arguments.workdir / "signing-key.pem"
    signing_key(key)
    os.environ.update(DJANGO_SETTINGS_MODULE="idp_settings", ALLAUTH_IDP_KEY=str(key),
                      ALLAUTH_IDP_DB=str(arguments.workdir / "idp.sqlite3"))
    sys.path.insert(0, str(HERE))
    prepare(arguments, password)
    os.execv(sys.executable, [sys.executable, "-m", "gunicorn", "--chdir", str(HERE), "--bind",
                              f"127.0.0.1:{arguments.port}", "--workers", "1", "--threads", "4",
                              "--access-logfile", "-", "wsgi_app:application"])


if __name__ == "__main__":
    sys.exit(main())

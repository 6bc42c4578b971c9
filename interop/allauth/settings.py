"""A minimal django-allauth headless server (app client only): the reference peer that
Homeport's app door is compared with. Test and benchmark use only; never deployed."""
import os

SECRET_KEY = "homeport-interop-peer-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "allauth",
    "allauth.account",
    "allauth.headless",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]
ROOT_URLCONF = "urls"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True, "OPTIONS": {}}]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("ALLAUTH_DB", "/tmp/homeport-allauth.sqlite3"),
    }
}
AUTHENTICATION_BACKENDS = ["allauth.account.auth_backends.AuthenticationBackend"]
HEADLESS_ONLY = True
HEADLESS_CLIENTS = ("app",)
# ALLAUTH_SERVE_SPEC=1 serves allauth's own OpenAPI specification (rendered for the app client), which
# scripts/schemathesis also runs against homeport-server.
HEADLESS_SERVE_SPECIFICATION = bool(os.environ.get("ALLAUTH_SERVE_SPEC"))
# Every page a mail may link to: without account_reset_password, the mail to the owner of an
# address someone signs up with again (verification on) cannot be made, and the peer answers 500.
HEADLESS_FRONTEND_URLS = {
    "account_reset_password": "http://app.invalid/reset",
    "account_reset_password_from_key": "http://app.invalid/reset/{key}",
    "account_confirm_email": "http://app.invalid/verify/{key}",
    "account_signup": "http://app.invalid/signup",
}
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*"]
# ALLAUTH_VERIFY_BY_CODE=1 turns on mandatory verification by a mailed code, the shape of
# homeport-server --email-verification code.
if os.environ.get("ALLAUTH_VERIFY_BY_CODE"):
    ACCOUNT_EMAIL_VERIFICATION = "mandatory"
    ACCOUNT_EMAIL_VERIFICATION_BY_CODE_ENABLED = True
    ACCOUNT_EMAIL_VERIFICATION_SUPPORTS_RESEND = True
else:
    ACCOUNT_EMAIL_VERIFICATION = "none"
EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = os.environ.get("ALLAUTH_MAIL", "/tmp/homeport-allauth-mail")
# Django's default PBKDF2 hasher (1,000,000 iterations in Django 5.2), unless a run lowers it.
# Django's default list, plus plain bcrypt, so a test can make users with either bcrypt hasher
# (the bcrypt package is in requirements.txt) as a site that once used them would have.
if os.environ.get("ALLAUTH_FAST_HASHER"):
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
else:
    PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
        "django.contrib.auth.hashers.Argon2PasswordHasher",
        "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
        "django.contrib.auth.hashers.BCryptPasswordHasher",
        "django.contrib.auth.hashers.ScryptPasswordHasher",
    ]
# ALLAUTH_MFA=1 turns on allauth's MFA app (TOTP and recovery codes) as Homeport serves it: a
# code of the step before or after is accepted, recovery codes are shown once, and an address
# need not be verified first (Homeport's --email-verification none has no verified addresses).
if os.environ.get("ALLAUTH_MFA"):
    INSTALLED_APPS.append("allauth.mfa")
    MFA_SUPPORTED_TYPES = ["recovery_codes", "totp"]
    MFA_TOTP_TOLERANCE = 1
    MFA_RECOVERY_CODES_SHOW_ONCE = True
    MFA_ALLOW_UNVERIFIED_EMAIL = True
    MFA_TOTP_ISSUER = "Homeport"
# ALLAUTH_WEBAUTHN=1 (with ALLAUTH_MFA) serves WebAuthn and recovery codes, passkey sign-in on
# (and sign-up, which allauth's checks allow only with verification by code), as Homeport serves
# passkeys: the relying party is the request's host, and any origin is taken (the tests'
# authenticator runs on no page).
if os.environ.get("ALLAUTH_MFA") and os.environ.get("ALLAUTH_WEBAUTHN"):
    MFA_SUPPORTED_TYPES = ["recovery_codes", "webauthn"]
    MFA_PASSKEY_LOGIN_ENABLED = True
    MFA_PASSKEY_SIGNUP_ENABLED = bool(os.environ.get("ALLAUTH_VERIFY_BY_CODE"))
    MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = True
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
# ALLAUTH_OIDC_URL=ISSUER adds allauth's socialaccount app with its OpenID Connect provider
# ("household", the app's client "homeport-app") against that issuer, as `homeport-server oidc
# add household --issuer ISSUER --app-client-id homeport-app` configures Homeport. New people sign
# up at once when the provider gives an address no account has (allauth's default).
if os.environ.get("ALLAUTH_OIDC_URL"):
    INSTALLED_APPS += ["allauth.socialaccount", "allauth.socialaccount.providers.openid_connect"]
    SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": {
            "APPS": [
                {
                    "provider_id": "household",
                    "name": "Household household",
                    "client_id": "homeport-app",
                    "secret": "",
                    "settings": {"server_url": os.environ["ALLAUTH_OIDC_URL"]},
                }
            ]
        }
    }
    SOCIALACCOUNT_EMAIL_AUTHENTICATION = False

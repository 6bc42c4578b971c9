"""django-allauth as the household's OpenID Connect provider (`allauth.idp.oidc`), with its own
sign-in and consent pages: the real identity provider the web door's browser drive signs in
through (interop/allauth/idp.py starts it). Test use only; never deployed."""
import os
from pathlib import Path

SECRET_KEY = "homeport-interop-idp-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "allauth",
    "allauth.account",
    "allauth.idp.oidc",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]
ROOT_URLCONF = "idp_urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("ALLAUTH_IDP_DB", "/tmp/homeport-allauth-idp.sqlite3"),
    }
}
AUTHENTICATION_BACKENDS = ["allauth.account.auth_backends.AuthenticationBackend"]
LOGIN_URL = "/accounts/login/"
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# The test's own users only; a fast hasher keeps the drive quick.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The signing key, an RSA key idp.py makes for each run. The issuer is the address the provider
# is reached at (allauth's default: the request's scheme and host).
IDP_OIDC_PRIVATE_KEY = Path(os.environ["ALLAUTH_IDP_KEY"]).read_text() if os.environ.get("ALLAUTH_IDP_KEY") else ""
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

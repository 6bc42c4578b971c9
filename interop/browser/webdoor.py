#!/usr/bin/env python3
"""Drives Homeport's web door (/account) in a real browser, end to end.

What a run proves, against a `homeport-server serve` this script starts itself (SQLite in a
temporary directory, `--signup open`, `--email-verification code`, mail written to an outbox):

  1. a person can create an account at /account/signup, confirm the address with the code
     mailed to it (read from the outbox's .eml), and lands signed in on /account;
  2. they can sign out, and sign in again with their password;
  3. "Forgot password?" mails a link; the link opens a form that sets a new password; the link
     then no longer works, the old password is refused and the new one signs in;
  4. with --mfa, two-factor authentication by TOTP (the two-factor pages below): set-up with a
     code computed here from the shown secret, recovery codes shown once, sign-in with a later
     TOTP code, sign-in with a recovery code, and the same recovery code refused a second time;
  5. with --pairing, all of it over HTTPS on 127.0.0.2 with the installation's own certificate
     (`serve --tls-installation`: the browser takes it as a person clicking past the warning
     does), and the account page's pairing QR code, read from the screen with zbarimg, signs the
     `homeport` client in (`homeport login LINK`) with nothing but the link to trust; and
     `homeport login LINK --browser` signs in through the browser (a handoff);
  6. with --identity-provider PYTHON, through a real OpenID Connect provider: django-allauth's
     `allauth.idp.oidc`, started with interop/allauth/idp.py under PYTHON and added with
     `homeport-server oidc add`: "Continue with …", the provider's own sign-in and consent
     pages, back signed in (the verified address links the account), the linked provider
     listed; a handoff to `homeport login --browser` signed in through the provider; an app's
     ID token (the provider's flow with its public client and PKCE) handed to
     `homeport login --provider`; and, with --mfa, the provider alone stopping at the second step.

Every step is done as a person does it in headless Chromium: the real forms are filled in
(found by their fields' names), their buttons clicked, their links followed; the CSRF token
the form carries goes along untouched and the hidden honeypot field stays empty. After each
step the script checks what the person would see (the page's heading, its text, the URL's
path) and that the browser console shows no Content-Security-Policy violation. The first
thing unexpected stops the run with a message naming the step, and exit status 1.

Usage:
    webdoor.py --server-binary PATH [--screenshots DIR] [--mfa] [--pairing] [--identity-provider PYTHON]

With --screenshots DIR, a 1000x800 PNG of each page is written there as NN-step.png (the
NN-*.png files an earlier run left there are removed first). Exit status: 0 all steps passed,
1 a step failed, 2 bad command line. No password, code, key or secret is ever printed.
"""

import argparse
import base64
import email
import email.policy
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# --- The web door (Sources/HomeportServer/Web) -------------------------------------------------

HOME_PATH = "/account"
SIGNUP_PATH = "/account/signup"
LOGIN_PATH = "/account/login"
VERIFY_PATH = "/account/verify-email"
RESET_REQUEST_PATH = "/account/password/reset"
RESET_KEY_PREFIX = "/account/password/reset/key/"
HANDOFF_PREFIX = "/account/handoff/"
IDENTITY_PATH = "/api/v1/server-identity"
ERROR_SELECTOR = "p.error"
HONEYPOT_FIELD = "website"
CSRF_FIELD = "csrf_token"

# --- The two-factor pages (Sources/HomeportServer/TwoFactor/WebDoor+TwoFactor.swift) ---------------------

PAIRING_LINK_ID = "pairing-link"

TOTP_SETUP_PATH = "/account/2fa/totp"
TOTP_AUTHENTICATE_PATH = "/account/2fa/authenticate"
TOTP_SECRET_ID = "totp-secret"
TOTP_URL_ID = "totp-url"
TOTP_QR_ID = "totp-qr"
TOTP_CODE_FIELD = "code"
RECOVERY_CODE_CLASS = "recovery-code"
RECOVERY_CODE_COUNT = 10
RECOVERY_CODE_PATTERN = re.compile(r"^[0-9]{8}$")
TOTP_PERIOD = 30
TOTP_DIGITS = 6

# --- The run ------------------------------------------------------------------------------------

CHROMEDRIVER = "/usr/bin/chromedriver"
WINDOW = (1000, 800)
PAGE_TIMEOUT = 15
SERVER_TIMEOUT = 30
MAIL_TIMEOUT = 10
EMAIL = "ada.browser@example.com"

# --- Secrets: never printed -------------------------------------------------------------------

SECRETS = set()


def secret(value):
    """Remembers `value` as a secret (a code, a key) that no message may show; returns it."""
    SECRETS.add(value)
    return value


def redacted(text):
    """`text` without the key of any reset link, nor any secret seen so far."""
    for prefix in (RESET_KEY_PREFIX, HANDOFF_PREFIX):
        text = re.sub(re.escape(prefix) + r"[^\s\"'<>]+", prefix + "…", text)
    for value in sorted(SECRETS, key=len, reverse=True):
        text = text.replace(value, "•••")
    return text


class StepFailed(Exception):
    """What a person would have seen go wrong, in words."""


# --- The server ---------------------------------------------------------------------------------


def free_port():
    """A loopback port nobody listens on (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(binary, workdir, pairing=False, web_push=False, name=None, database=None):
    """Starts `binary serve` with its data, database and outbox in `workdir` (with `pairing`,
    HTTPS on 127.0.0.2 with the installation's own certificate; with `web_push`, a VAPID key
    and push services on this machine allowed; with `name`, plain HTTP on 127.0.0.1 reached as
    http://NAME:PORT, its public address, without verification by code, on `database` when
    given); returns (process, base URL, outbox directory, log path) once the identity route
    answers."""
    port = free_port()
    host = "127.0.0.2" if pairing else "127.0.0.1"
    base = f"{'https' if pairing else 'http'}://{name or host}:{port}"
    outbox = workdir / "outbox"
    log_path = workdir / f"server-{name or 'main'}.log"
    command = [
        str(binary), "serve",
        "--listen", f"{host}:{port}",
        "--database", f"sqlite:{database or workdir / 'homeport.sqlite'}",
        "--signup", "open",
        "--email-verification", "none" if name else "code",
        "--outbox", str(outbox),
        "--public-url", base,
        "--password-iterations", "1000",
    ] + (["--tls-installation"] if pairing else [])
    if web_push:
        command += ["--vapid-key-file", str(workdir / "vapid.pem"), "--vapid-subject", "mailto:ops@example.net",
                    "--webpush-allow-private-endpoints"]
    environment = dict(os.environ, HOMEPORT_DATA_DIR=str(workdir / "data"))
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment)
    # A name under localhost is the browser's to resolve (this machine's resolver may not).
    wait_for_identity(process, f"{'https' if pairing else 'http'}://{host}:{port}")
    return process, base, outbox, log_path


def poll(condition, timeout, what):
    """Calls `condition()` every 0.1 s until it returns something true, and returns that;
    fails with `what` was awaited once `timeout` seconds have passed."""
    try:
        return WebDriverWait(None, timeout, poll_frequency=0.1).until(lambda _: condition())
    except TimeoutException:
        raise StepFailed(f"waited {timeout} s for {what}") from None


def wait_for_identity(process, base):
    """Polls GET /api/v1/server-identity until it answers 200 (the server is up and its
    database readable); fails if the process exits or SERVER_TIMEOUT passes first."""

    def identity_answers():
        if process.poll() is not None:
            raise StepFailed(f"the server exited ({process.returncode}) before answering")
        try:
            # Only whether it is up: nothing trusts the installation's certificate here.
            with urllib.request.urlopen(base + IDENTITY_PATH, timeout=2, context=ssl._create_unverified_context()) as answer:
                return answer.status == 200 and b'"instanceId"' in answer.read()
        except (urllib.error.URLError, OSError):
            return False

    poll(identity_answers, SERVER_TIMEOUT, f"GET {IDENTITY_PATH} to answer")


def stop_server(process):
    """SIGTERM (a graceful stop), then SIGKILL if it is still there after 10 s."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def log_tail(log_path, lines=20):
    """The last lines of the server's log (which never holds a credential)."""
    try:
        text = Path(log_path).read_text(errors="replace").splitlines()
    except OSError:
        return "(no server log)"
    return "\n".join("  | " + line for line in text[-lines:])


# --- Mail ---------------------------------------------------------------------------------------


class Outbox:
    """The server's outbox directory: each mail is an .eml file."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self.seen = set()

    def mark(self):
        """Remembers the mail there now, so that `next_mail` waits for a new one."""
        self.seen = set(self._files())

    def _files(self):
        return list(self.directory.glob("*.eml")) if self.directory.is_dir() else []

    def next_mail(self, subject):
        """The newest mail written since `mark`, as an email.message; it must have `subject`."""
        new = poll(lambda: [path for path in self._files() if path not in self.seen], MAIL_TIMEOUT,
                   f"a new mail in the outbox ('{subject}')")
        newest = max(new, key=lambda path: (path.stat().st_mtime_ns, path.name))
        self.seen.update(new)
        message = email.message_from_bytes(newest.read_bytes(), policy=email.policy.default)
        if message["Subject"] != subject:
            raise StepFailed(f"the newest mail's subject is '{message['Subject']}', not '{subject}'")
        if message["To"] != EMAIL:
            raise StepFailed(f"the newest mail is addressed to '{message['To']}', not to the account")
        return message


def mail_text(message):
    """The plain-text body of a mail."""
    part = message.get_body(preferencelist=("plain",))
    if part is None:
        raise StepFailed("the mail has no plain-text body")
    return part.get_content()


def verification_code(message):
    """The code in a verification mail (the line after 'Your verification code is:')."""
    match = re.search(r"Your verification code is:\s*\n\s*(\S+)", mail_text(message))
    if not match:
        raise StepFailed("the verification mail holds no code after 'Your verification code is:'")
    return secret(match.group(1))


def reset_link(message, base):
    """The reset link in a password-reset mail; it must point at the public URL."""
    match = re.search(re.escape(base + RESET_KEY_PREFIX) + r"[A-Za-z0-9_\-]+", mail_text(message))
    if not match:
        raise StepFailed(f"the reset mail holds no link starting {base + RESET_KEY_PREFIX}")
    return secret(match.group(0))


# --- TOTP (RFC 6238) ----------------------------------------------------------------------------


def totp(key, step, digits=TOTP_DIGITS):
    """The TOTP code of the base32 `key` for time step `step`: HMAC-SHA1 over the step's
    8-byte big-endian counter, dynamically truncated (RFC 4226), `digits` long."""
    compact = re.sub(r"[\s-]", "", key).upper()
    key = base64.b32decode(compact + "=" * (-len(compact) % 8))
    digest = hmac.new(key, struct.pack(">Q", step), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    number = struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF
    return str(number % 10**digits).zfill(digits)


def current_step(now=None):
    """The TOTP time step of `now` (default: this moment)."""
    return int(time.time() if now is None else now) // TOTP_PERIOD


def check_totp_function():
    """RFC 6238 appendix B's SHA-1 vectors, so that a set-up failure is not this script's."""
    key = base64.b32encode(b"12345678901234567890").decode()
    for when, expected in ((59, "94287082"), (1111111109, "07081804"), (2000000000, "69279037")):
        if totp(key, current_step(when), digits=8) != expected:
            raise StepFailed("this script's TOTP computation does not match RFC 6238's test vectors")


# --- The browser --------------------------------------------------------------------------------


def make_browser(profile_dir, insecure=False):
    """Headless Chromium through /usr/bin/chromedriver, window 1000x800, console kept; with
    `insecure`, it takes an untrusted certificate as a person clicking past the warning does."""
    options = webdriver.ChromeOptions()
    options.accept_insecure_certs = insecure
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--user-data-dir={profile_dir}",
                     "--no-first-run", "--password-store=basic"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    # The window's size holds the (invisible) browser frame too: pin the page's own viewport,
    # so that each screenshot is exactly WINDOW.
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": WINDOW[0], "height": WINDOW[1], "deviceScaleFactor": 1, "mobile": False})
    browser.set_page_load_timeout(PAGE_TIMEOUT)
    return browser


class Door:
    """A person at the web door: opens pages, fills forms, clicks, and checks what they see."""

    def __init__(self, browser, base, outbox, screenshots):
        self.browser = browser
        self.base = base
        self.outbox = outbox
        self.screenshots = screenshots
        self.number = 0
        self.console = []

    # Looking

    def path(self):
        return urllib.parse.urlsplit(self.browser.current_url).path

    def heading(self):
        headings = self.browser.find_elements(By.TAG_NAME, "h1")
        return headings[0].text.strip() if headings else None

    def body_text(self):
        return self.browser.find_element(By.TAG_NAME, "body").text

    def describe(self):
        """What is on screen now, for a failure message (no form values)."""
        text = redacted(" ".join(self.body_text().split()))
        return f"path {redacted(self.path())}, heading {self.heading()!r}, text {text[:300]!r}"

    def see(self, step, *, heading=None, path=None, path_prefix=None, texts=(), error=False):
        """Checks the page a person is on after `step`, the console, and takes its picture."""
        self.number += 1
        if heading is not None and self.heading() != heading:
            raise StepFailed(f"{step}: expected the heading {heading!r}, got {self.describe()}")
        if path is not None and self.path() != path:
            raise StepFailed(f"{step}: expected path {path}, got {self.describe()}")
        if path_prefix is not None and not self.path().startswith(path_prefix):
            raise StepFailed(f"{step}: expected a path under {path_prefix}, got {self.describe()}")
        shown = " ".join(self.body_text().split())
        for text in texts:
            if text not in shown:
                raise StepFailed(f"{step}: expected the text {text!r}, got {self.describe()}")
        errors = [element.text for element in self.browser.find_elements(By.CSS_SELECTOR, ERROR_SELECTOR)]
        if error and not errors:
            raise StepFailed(f"{step}: expected an error message, got {self.describe()}")
        if not error and errors:
            raise StepFailed(f"{step}: unexpected error message {errors!r} ({self.describe()})")
        notes = self.check_console(step)
        self.picture(step)
        print(f"ok {self.number:2d} {step}: {redacted(self.path())} — {self.heading()!r}")
        for note in notes:
            print(f"   console: {note}")

    def wait(self, step, condition, what, timeout=PAGE_TIMEOUT):
        """Waits for `condition(browser)`; fails naming `what` was awaited and what is shown.
        A look at an element of a page being replaced (a form the page's script submits) is
        a look too early: it is taken again at the next poll."""
        try:
            WebDriverWait(self.browser, timeout, poll_frequency=0.1,
                          ignored_exceptions=(StaleElementReferenceException,)).until(condition)
        except TimeoutException:
            raise StepFailed(f"{step}: waited {timeout} s for {what}; the page shows {self.describe()}") from None

    def check_console(self, step):
        """Fails on any Content-Security-Policy violation the console logged since the last
        look; returns its other errors (such as a 4xx page's own status), redacted."""
        entries = self.browser.get_log("browser")
        self.console.extend(entries)
        violations = [entry["message"] for entry in entries if "Content Security Policy" in entry["message"]
                      or "Content-Security-Policy" in entry["message"]]
        if violations:
            raise StepFailed(f"{step}: the console shows CSP violations: {violations}")
        return [redacted(entry["message"]) for entry in entries if entry.get("level") == "SEVERE"]

    def picture(self, step):
        if self.screenshots is None:
            return
        name = re.sub(r"[^a-z0-9]+", "-", step.lower()).strip("-")
        self.browser.save_screenshot(str(self.screenshots / f"{self.number:02d}-{name}.png"))

    # Doing

    def open(self, path):
        self.browser.get(self.base + path)

    def open_url(self, url):
        self.browser.get(url)

    def field(self, step, name):
        """The visible input named `name` (the one a person types into)."""
        inputs = [element for element in self.browser.find_elements(By.NAME, name) if element.is_displayed()]
        if len(inputs) != 1:
            raise StepFailed(
                f"{step}: expected one visible field named {name!r}, found {len(inputs)} ({self.describe()})")
        return inputs[0]

    def fill(self, step, values, guarded=True):
        """Types each value into its field, then submits the form holding the first one with
        its own button, and waits for the next page. `guarded`: the form is the web door's
        (its CSRF token and honeypot are checked); the identity provider's forms are not."""
        first = None
        for name, value in values.items():
            element = self.field(step, name)
            element.clear()
            element.send_keys(value)
            first = first or element
        form = first.find_element(By.XPATH, "./ancestor::form")
        if guarded:
            self.check_guards(step, form)
        self.click(step, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))

    def check_guards(self, step, form):
        """The form carries a CSRF token, and its honeypot is hidden and empty."""
        tokens = form.find_elements(By.NAME, CSRF_FIELD)
        if len(tokens) != 1 or not tokens[0].get_attribute("value"):
            raise StepFailed(f"{step}: the form carries no CSRF token")
        traps = form.find_elements(By.NAME, HONEYPOT_FIELD)
        if len(traps) != 1:
            raise StepFailed(f"{step}: the form has no honeypot field {HONEYPOT_FIELD!r}")
        if traps[0].is_displayed():
            raise StepFailed(f"{step}: the honeypot field is visible to a person")
        if traps[0].get_attribute("value"):
            raise StepFailed(f"{step}: the browser filled in the honeypot field")

    def press(self, step, label, guarded=True):
        """Clicks the button labelled `label` (checking its form's guards, when `guarded`: the
        web door's own forms) and waits."""
        buttons = self.browser.find_elements(By.XPATH, f"//button[normalize-space()='{label}']")
        if len(buttons) != 1:
            raise StepFailed(f"{step}: expected one button {label!r}, found {len(buttons)} ({self.describe()})")
        if guarded:
            self.check_guards(step, buttons[0].find_element(By.XPATH, "./ancestor::form"))
        self.click(step, buttons[0])

    def follow(self, step, label):
        """Clicks the link labelled `label` and waits for the page it leads to."""
        links = self.browser.find_elements(By.LINK_TEXT, label)
        if len(links) != 1:
            raise StepFailed(f"{step}: expected one link {label!r}, found {len(links)} ({self.describe()})")
        self.click(step, links[0])

    def click(self, step, element):
        page = self.browser.find_element(By.TAG_NAME, "html")
        element.click()
        self.wait(step, lambda _: left(page), "the next page")


# Chromedriver answers a look at an element of the document being replaced with this error
# instead of a stale element, now and then (SeleniumHQ/selenium#15401).
REPLACED_DOCUMENT = "Node with given id does not belong to the document"


def left(page):
    """Whether the browser has left the document whose root element is `page`: Selenium's
    `staleness_of`, which also takes chromedriver's error for a node of a document being
    replaced as gone."""
    try:
        page.is_enabled()
        return False
    except StaleElementReferenceException:
        return True
    except WebDriverException as error:
        if REPLACED_DOCUMENT in str(error.msg or error):
            return True
        raise


# --- The steps without two factors --------------------------------------------------------------


def sign_up(door, password):
    door.open(SIGNUP_PATH)
    door.see("sign-up", heading="Create an account", path=SIGNUP_PATH, texts=("Email", "Password"))
    door.outbox.mark()
    door.fill("sign-up", {"email": EMAIL, "password": password})
    door.see("verify", heading="Confirm your address", path=VERIFY_PATH,
             texts=("We have mailed you a code. Enter it here to confirm that the address is yours.",))


def verify_address(door):
    code = verification_code(door.outbox.next_mail("Your verification code"))
    door.fill("verify", {"code": code})
    see_home(door, "home after verification")


def see_home(door, step):
    door.see(step, heading="Your account", path=HOME_PATH, texts=(f"Signed in as {EMAIL}.",))


def sign_out(door, step="sign-in"):
    """Presses "Sign out"; `step` names the sign-in page it leads to."""
    door.press(step, "Sign out")
    door.see(step, heading="Sign in", path=LOGIN_PATH, texts=("Create an account", "Forgot password?"))


def sign_in(door, step, password):
    """Fills the sign-in form already on screen."""
    door.fill(step, {"email": EMAIL, "password": password})


def sign_in_refused(door, password):
    sign_in(door, "sign-in with the old password", password)
    door.see("sign-in with the old password", heading="Sign in", path=LOGIN_PATH, error=True,
             texts=("The email address and/or password you specified are not correct.",))


def reset_password(door, new_password):
    door.follow("reset request", "Forgot password?")
    door.see("reset request", heading="Reset your password", path=RESET_REQUEST_PATH,
             texts=("We will send a link to set a new password.",))
    door.outbox.mark()
    door.fill("reset request", {"email": EMAIL})
    door.see("reset mailed", heading="Check your mail", path=RESET_REQUEST_PATH,
             texts=("If an account uses that address, we have sent it a link to set a new password.",))
    link = reset_link(door.outbox.next_mail("Reset your password"), door.base)
    door.open_url(link)
    door.see("reset form", heading="Set a new password", path_prefix=RESET_KEY_PREFIX, texts=("New password",))
    door.fill("reset form", {"password": new_password})
    door.see("password changed", heading="Password changed", path_prefix=RESET_KEY_PREFIX,
             texts=("Your password is set, and every device that was signed in has been signed out.",))
    door.open_url(link)
    door.see("reset link used up", heading="Link not valid", path_prefix=RESET_KEY_PREFIX,
             texts=("This link is used up or has expired. Ask for a new one.",))
    door.open(LOGIN_PATH)
    door.see("sign-in after reset", heading="Sign in", path=LOGIN_PATH)


def password_flows(door):
    """Sign-up, verification, sign-out, sign-in, reset, sign-in with the new password.
    Returns the password the account has at the end."""
    first, second = secret(secrets.token_urlsafe(12)), secret(secrets.token_urlsafe(12))
    sign_up(door, first)
    verify_address(door)
    sign_out(door)
    sign_in(door, "sign-in", first)
    see_home(door, "home after sign-in")
    sign_out(door, "sign-in again")
    reset_password(door, second)
    sign_in_refused(door, first)
    sign_in(door, "sign-in with the new password", second)
    see_home(door, "home after sign-in with the new password")
    return second


# --- Two factors (the MFA CONTRACT above) -------------------------------------------------------


def element_text(door, step, element_id):
    elements = door.browser.find_elements(By.ID, element_id)
    if len(elements) != 1 or not elements[0].text.strip():
        raise StepFailed(f"{step}: no element #{element_id} with text ({door.describe()})")
    return elements[0].text.strip()


def check_otpauth_url(step, url, key):
    """The otpauth:// URL is a TOTP one for the shown key, SHA1/6 digits/30 s if it says."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qs(parts.query)
    if parts.scheme != "otpauth" or parts.netloc != "totp":
        raise StepFailed(f"{step}: #{TOTP_URL_ID} is not an otpauth://totp/ URL")
    if [value.upper() for value in query.get("secret", [])] != [re.sub(r"[\s-]", "", key).upper()]:
        raise StepFailed(f"{step}: the secret in #{TOTP_URL_ID} is not the one in #{TOTP_SECRET_ID}")
    for name, expected in (("algorithm", "SHA1"), ("digits", str(TOTP_DIGITS)), ("period", str(TOTP_PERIOD))):
        if query.get(name, [expected]) != [expected]:
            raise StepFailed(f"{step}: the otpauth URL asks for {name}={query[name]}, not {expected}")


def check_qr_code(door, step, url):
    """The QR code, as the browser drew it (a screenshot of the page), reads with zbarimg, an
    independent decoder, as what the page shows as text (`url`)."""
    picture = door.browser.get_screenshot_as_png()
    with tempfile.NamedTemporaryFile(suffix=".png") as file:
        file.write(picture)
        file.flush()
        decoded = subprocess.run(["zbarimg", "--quiet", "--raw", file.name], capture_output=True, text=True)
    if decoded.returncode != 0 or decoded.stdout.strip() != url:
        raise StepFailed(f"{step}: the QR code does not read as the text the page shows (zbarimg exit {decoded.returncode})")


def totp_setup(door, password):
    """Signed in: set-up page, the password confirmed and a code from the shown key in one
    form, recovery codes. Returns (key, the step whose code was used, one recovery code)."""
    step = "two-factor set-up"
    door.open(TOTP_SETUP_PATH)
    if door.path() != TOTP_SETUP_PATH or not door.browser.find_elements(By.ID, TOTP_SECRET_ID):
        raise StepFailed(f"{step}: GET {TOTP_SETUP_PATH} shows no set-up page (no #{TOTP_SECRET_ID}); "
                         f"it shows {door.describe()}")
    key = secret(element_text(door, step, TOTP_SECRET_ID))
    check_otpauth_url(step, secret(element_text(door, step, TOTP_URL_ID)), key)
    if not door.browser.find_elements(By.CSS_SELECTOR, f"svg#{TOTP_QR_ID}"):
        raise StepFailed(f"{step}: no inline <svg id={TOTP_QR_ID!r}> QR code ({door.describe()})")
    check_qr_code(door, step, element_text(door, step, TOTP_URL_ID))
    door.see(step, path=TOTP_SETUP_PATH)
    used = current_step()
    door.fill(step, {"password": password, TOTP_CODE_FIELD: secret(totp(key, used))})
    codes = recovery_codes(door, "recovery codes")
    return key, used, codes[0]


def recovery_codes(door, step):
    door.wait(step, lambda browser: browser.find_elements(By.CLASS_NAME, RECOVERY_CODE_CLASS),
              f"elements of class {RECOVERY_CODE_CLASS!r}")
    codes = [secret(element.text.strip())
             for element in door.browser.find_elements(By.CLASS_NAME, RECOVERY_CODE_CLASS)]
    if len(codes) != RECOVERY_CODE_COUNT or len(set(codes)) != len(codes):
        raise StepFailed(f"{step}: expected {RECOVERY_CODE_COUNT} distinct recovery codes, found {len(set(codes))}")
    if not all(RECOVERY_CODE_PATTERN.match(code) for code in codes):
        raise StepFailed(f"{step}: a recovery code is not {RECOVERY_CODE_PATTERN.pattern}")
    door.see(step)
    return codes


def second_step(door, step, password):
    """From the signed-in home page, signs out, signs in with the password, and lands on the
    two-factor form."""
    door.open(HOME_PATH)
    see_home(door, f"home before {step}")
    sign_out(door, f"sign-in before {step}")
    sign_in(door, f"{step}: password", password)
    door.see(f"{step}: second step", path=TOTP_AUTHENTICATE_PATH)
    door.field(step, TOTP_CODE_FIELD)


def sign_in_with_totp(door, password, key, used):
    """The code used at set-up is spent: waits for a later 30-s step, then signs in with it."""
    step = "sign-in with TOTP"
    second_step(door, step, password)
    door.wait(step, lambda _: current_step() > used, "a TOTP step later than set-up's", timeout=TOTP_PERIOD + 5)
    door.fill(step, {TOTP_CODE_FIELD: secret(totp(key, current_step()))})
    see_home(door, f"home after {step}")


def sign_in_with_recovery_code(door, password, code):
    step = "sign-in with a recovery code"
    second_step(door, step, password)
    door.fill(step, {TOTP_CODE_FIELD: code})
    see_home(door, f"home after {step}")


def recovery_code_refused_again(door, password, code):
    step = "the same recovery code again"
    second_step(door, step, password)
    door.fill(step, {TOTP_CODE_FIELD: code})
    door.see(f"{step}: refused", path=TOTP_AUTHENTICATE_PATH, error=True)


def mfa_flows(door, password):
    """Set-up, a TOTP sign-in, a recovery-code sign-in, and that code refused the second time."""
    check_totp_function()
    key, used, code = totp_setup(door, password)
    sign_in_with_totp(door, password, key, used)
    sign_in_with_recovery_code(door, password, code)
    recovery_code_refused_again(door, password, code)


# --- Main ---------------------------------------------------------------------------------------


def pairing_flow(door, binary, password, workdir):
    """Signed in over the installation's own HTTPS: the account page's pairing link, its QR code
    read from the screen, and `homeport login LINK` signing a fresh client in with it alone."""
    step = "pairing"
    door.open(HOME_PATH)
    see_home(door, step)
    link = element_text(door, step, PAIRING_LINK_ID)
    if not link.startswith("homeport://pair?"):
        raise StepFailed(f"{step}: #{PAIRING_LINK_ID} is not a pairing link")
    check_qr_code(door, step, link)
    door.picture(step)
    client = Path(binary).parent / "homeport"
    environment = dict(os.environ, HOMEPORT_HOME=str(workdir / "client"))
    plain = subprocess.run(
        [str(client), "login", door.base, "--email", EMAIL, "--password-stdin"], input=password + "\n",
        capture_output=True, text=True, env=environment, timeout=60)
    if plain.returncode == 0 or "certificate not trusted" not in plain.stderr:
        raise StepFailed(f"{step}: homeport login {door.base} without the link was not refused for its certificate")
    paired = subprocess.run(
        [str(client), "login", link, "--email", EMAIL, "--password-stdin"], input=password + "\n",
        capture_output=True, text=True, env=environment, timeout=60)
    instance = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["s"][0]
    if paired.returncode != 0 or instance not in paired.stdout:
        raise StepFailed(f"{step}: homeport login with the link failed: {redacted(paired.stderr.strip())}")
    whoami = subprocess.run([str(client), "whoami", instance], capture_output=True, text=True, env=environment,
                            timeout=60)
    if whoami.returncode != 0 or f"via {door.base}" not in whoami.stdout:
        raise StepFailed(f"{step}: homeport whoami after pairing failed: {redacted(whoami.stderr.strip())}")


HANDOFF_DEVICE = "Chromium drive"


def server_arguments(door, link):
    """How `homeport login` is told the server: over the installation's own HTTPS, by its
    pairing `link` (or its address, once a pairing made it known); over plain HTTP, by its
    address with --allow-http."""
    if door.base.startswith("http://"):
        return [door.base, "--allow-http"]
    return [link or door.base]


def sign_in_with_password(password):
    """How the handoff's person signs in at the web door: with the account's password."""

    def sign_in_first(door, step):
        door.see(f"{step}: sign in first", heading="Sign in", path=LOGIN_PATH)
        door.fill(f"{step}: sign in first", {"email": EMAIL, "password": password})

    return sign_in_first


def handoff_flow(door, binary, workdir, sign_in_first, step="handoff", device=HANDOFF_DEVICE):
    """`homeport login LINK --browser`: the command prints the handoff's page and listens on
    127.0.0.1; the browser, signed out, signs in first (`sign_in_first(door, step)`, from the
    sign-in page), confirms the page that names the device, and follows the way back to the
    command, which exchanges the code and is signed in."""
    door.open(HOME_PATH)
    target = server_arguments(door, element_text(door, step, PAIRING_LINK_ID))
    sign_out(door, f"sign-in before the {step}")
    client = Path(binary).parent / "homeport"
    environment = dict(os.environ, HOMEPORT_HOME=str(workdir / f"client-{re.sub(r'[^a-z]+', '-', step)}"))
    environment.pop("DISPLAY", None)
    environment.pop("WAYLAND_DISPLAY", None)
    command = subprocess.Popen(
        [str(client), "login", *target, "--browser", "--device-name", device, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=environment)
    try:
        page = None
        for line in command.stderr:
            if line.startswith("https://") or line.startswith("http://"):
                page = line.strip()
                break
        if page is None:
            command.kill()
            raise StepFailed(f"{step}: homeport login --browser printed no page to open: "
                             f"{redacted(command.stderr.read().strip())}")
        door.open_url(page)
        sign_in_first(door, step)
        door.see(f"{step}: confirm the device", heading=f"Sign in {device}?", path_prefix=HANDOFF_PREFIX,
                 texts=(f"An app on {device} asks to sign in", EMAIL))
        door.press(step, f"Sign in {device}")
        door.wait(step, lambda browser: urllib.parse.urlsplit(browser.current_url).path == "/callback",
                  "the way back to the command's listener")
        door.wait(step, lambda browser: "close this window" in browser.find_element(By.TAG_NAME, "body").text,
                  "the command's page")
        output, errors = command.communicate(timeout=60)
        if command.returncode != 0 or '"signedIn" : true' not in output:
            raise StepFailed(f"{step}: homeport login --browser did not sign in: {redacted(errors.strip())}")
        print(f"ok    {step}: the command signed in through the browser")
        return environment
    finally:
        if command.poll() is None:
            command.kill()


# --- The household's identity provider: django-allauth's own (interop/allauth/idp.py) -----------

PROVIDER_ID = "household"
PROVIDER_NAME = "Our household"
PROVIDER_LINK = f"Continue with {PROVIDER_NAME}"
PROVIDER_WEB_CLIENT = "homeport-web"
PROVIDER_APP_CLIENT = "homeport-app"
PROVIDER_CALLBACK_PATH = "/account/provider/callback"
PROVIDERS_PATH = "/account/providers"
IDP_LOGIN_PATH = "/accounts/login/"
IDP_AUTHORIZE_PATH = "/identity/o/authorize"
APP_CALLBACK_PATH = "/app-callback"


# --- Notifications in this browser ---------------------------------------------------------------

NOTIFICATIONS_PATH = "/account/notifications"
NOTIFICATIONS_LINK = "Notifications in this browser"
NOTIFICATIONS_ON = "Notifications are on in this browser."
# Headless Chromium has no push service to reach here: its subscribe call fails, and the page
# says so in these words.
PUSH_SERVICE_UNREACHABLE = "This browser's push service could not be reached"


class WebPushService:
    """interop/webpush/standin.py: a push service that decrypts what the server sends with
    http_ece and checks its VAPID token with py_vapid, standing in for the browser's own."""

    def __init__(self, python, workdir):
        self.directory = workdir / "webpush"
        self.directory.mkdir()
        self.log_path = self.directory / "standin.log"
        script = Path(__file__).resolve().parent.parent / "webpush" / "standin.py"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen([str(python), str(script), str(self.directory)],
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.port = poll(self.listening, SERVER_TIMEOUT, "the Web Push stand-in")

    def listening(self):
        if self.process.poll() is not None:
            raise StepFailed(f"the Web Push stand-in exited: {log_tail(self.log_path)}")
        try:
            return int((self.directory / "port").read_text())
        except (OSError, ValueError):
            return None

    def call(self, method, path):
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                         data=b"{}" if method == "POST" else None,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def page_post(door, path, fields):
    """POSTs `fields` from the page, as its script does (fetch, the section's CSRF token, the
    empty honeypot); the answer's status."""
    return door.browser.execute_async_script("""
        const [path, fields, done] = arguments;
        const section = document.getElementById("browser-notifications");
        const body = new URLSearchParams({csrf_token: section.dataset.csrf, website: "", ...fields});
        fetch(path, {method: "POST", body, credentials: "same-origin"}).then(
            (answer) => done(answer.status), (error) => done(String(error)));
    """, path, fields)


def notifications_flow(door, binary, workdir, service):
    """The account page's "Notifications in this browser": the service worker registers and the
    page asks the browser's push service for a subscription with the server's VAPID key (which
    headless Chromium cannot reach here; the page says so). A subscription from the stand-in
    push service, posted as the page posts its own, then gets the account's notification, which
    the stand-in decrypts; delivered to the service worker, a push is shown to the page."""
    step = "notifications in this browser"
    door.browser.execute_cdp_cmd("Browser.grantPermissions",
                                 {"origin": door.base, "permissions": ["notifications"]})
    door.open(HOME_PATH)
    door.follow(step, NOTIFICATIONS_LINK)
    door.see(step, heading=NOTIFICATIONS_LINK, path=NOTIFICATIONS_PATH,
             texts=("This browser shows this account's notifications",))
    buttons = door.browser.find_elements(By.ID, "notifications-on")
    if len(buttons) != 1:
        raise StepFailed(f"{step}: no 'Turn on notifications' button ({door.describe()})")
    buttons[0].click()
    status = lambda browser: browser.find_element(By.ID, "notifications-status").text.strip()
    door.wait(step, lambda browser: status(browser) not in ("", "Subscribing…"), "the page to say how it went",
              timeout=30)
    said = status(door.browser)
    if not (said == NOTIFICATIONS_ON or said.startswith(PUSH_SERVICE_UNREACHABLE)):
        raise StepFailed(f"{step}: the page says {said!r}")
    scope = door.base + "/account/"
    active = door.browser.execute_async_script("""
        const [scope, done] = arguments;
        navigator.serviceWorker.getRegistration(scope).then(
            (registration) => done(Boolean(registration && registration.active)), () => done(false));
    """, scope)
    if not active:
        raise StepFailed(f"{step}: the service worker is not active for {scope}")
    door.see("subscription asked", heading=NOTIFICATIONS_LINK, path=NOTIFICATIONS_PATH, texts=(said,))

    step = "a push service's subscription"
    subscription = service.call("POST", "/subscribe")
    status_code = page_post(door, NOTIFICATIONS_PATH, {"endpoint": subscription["endpoint"],
                                                        "p256dh": subscription["keys"]["p256dh"],
                                                        "auth": subscription["keys"]["auth"]})
    if status_code != 200:
        raise StepFailed(f"{step}: posting the subscription was answered {status_code}")
    title = "Your book is ready"
    sent = subprocess.run(
        [str(binary), "push", "send", "--database", f"sqlite:{workdir / 'homeport.sqlite'}", "--email", EMAIL,
         "--code", "homeport/core:push.test", "--title", title],
        capture_output=True, text=True, env=dict(os.environ, HOMEPORT_DATA_DIR=str(workdir / "data")), timeout=60)
    if sent.returncode != 0:
        raise StepFailed(f"{step}: homeport-server push send failed: {redacted(sent.stderr.strip())}")
    delivered = poll(lambda: service.call("GET", "/messages")["delivered"], SERVER_TIMEOUT,
                     "the push at the stand-in push service")
    payload = delivered[0]["payload"]
    if payload.get("aps", {}).get("alert", {}).get("title") != title or not payload.get("homeport", {}).get("s"):
        raise StepFailed(f"{step}: the push service decrypted {payload!r}")
    print(f"ok    {step}: the subscription got the notification, decrypted by the push service, with s")

    step = "a push shown by the service worker"
    door.browser.execute_cdp_cmd("ServiceWorker.enable", {})
    refusals = []
    for registration_id in range(8):
        try:
            door.browser.execute_cdp_cmd("ServiceWorker.deliverPushMessage", {
                "origin": door.base, "registrationId": str(registration_id), "data": json.dumps(payload)})
            break
        except WebDriverException as error:
            refusals.append(str(error.msg or error)[:120])
    else:
        raise StepFailed(f"{step}: Chromium delivered the push to no service worker registration: {refusals}")
    door.wait(step, lambda browser: title in browser.find_element(By.ID, "notifications-last").text,
              "the service worker's word of the push")
    door.see(step, heading=NOTIFICATIONS_LINK, path=NOTIFICATIONS_PATH, texts=(f"Last notification: {title}",))


class IdentityProvider:
    """django-allauth as the household's OpenID Connect provider, started by idp.py with one
    person (EMAIL, a password of its own), Homeport's web client and an app's public client."""

    def __init__(self, python, workdir, base):
        self.workdir = workdir / "idp"
        self.workdir.mkdir()
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.password = secret(secrets.token_urlsafe(12))
        self.client_secret = secret(secrets.token_urlsafe(24))
        self.secret_file = workdir / "oidc-household.secret"
        self.secret_file.write_text(self.client_secret + "\n")
        self.secret_file.chmod(0o600)
        self.app_listener = AppRedirectListener()
        self.log_path = self.workdir / "idp.log"
        command = [str(python), str(Path(__file__).resolve().parent.parent / "allauth" / "idp.py"),
                   "--port", str(self.port), "--workdir", str(self.workdir), "--email", EMAIL,
                   "--web-client-id", PROVIDER_WEB_CLIENT, "--web-client-secret-file", str(self.secret_file),
                   "--redirect-uri", base + PROVIDER_CALLBACK_PATH,
                   "--app-client-id", PROVIDER_APP_CLIENT, "--app-redirect-uri", self.app_listener.redirect_uri]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
        self.process.stdin.write((self.password + "\n").encode())
        self.process.stdin.close()
        poll(self.discovery_answers, SERVER_TIMEOUT, "the identity provider's discovery document")

    def discovery_answers(self):
        if self.process.poll() is not None:
            raise StepFailed(f"the identity provider exited ({self.process.returncode}): {log_tail(self.log_path)}")
        try:
            with urllib.request.urlopen(self.issuer + "/.well-known/openid-configuration", timeout=2) as answer:
                return answer.status == 200 and self.issuer.encode() in answer.read()
        except (urllib.error.URLError, OSError):
            return False

    def register(self, binary, workdir):
        """`homeport-server oidc add`, as docs/deploy.md tells an operator, while the server runs."""
        added = subprocess.run(
            [str(binary), "oidc", "add", PROVIDER_ID, "--issuer", self.issuer, "--client-id", PROVIDER_WEB_CLIENT,
             "--client-secret-file", str(self.secret_file), "--app-client-id", PROVIDER_APP_CLIENT,
             "--name", PROVIDER_NAME, "--link-verified-email", "--database", f"sqlite:{workdir / 'homeport.sqlite'}"],
            capture_output=True, text=True, env=dict(os.environ, HOMEPORT_DATA_DIR=str(workdir / "data")), timeout=60)
        if added.returncode != 0:
            raise StepFailed(f"homeport-server oidc add failed: {redacted(added.stderr.strip())}")

    def stop(self):
        self.app_listener.stop()
        stop_server(self.process)


class AppRedirectListener:
    """An app's redirect URI on 127.0.0.1 (RFC 8252): keeps the query the browser brings."""

    def __init__(self):
        import http.server
        import threading

        queries = self.queries = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urllib.parse.urlsplit(self.path)
                if parts.path != APP_CALLBACK_PATH:
                    self.send_error(404)
                    return
                queries.append(urllib.parse.parse_qs(parts.query))
                body = b"<!doctype html><title>App</title><h1>Back in the app</h1>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.redirect_uri = f"http://127.0.0.1:{self.server.server_address[1]}{APP_CALLBACK_PATH}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def sign_in_at_provider(door, step, password=None):
    """On the identity provider's own pages: its sign-in form (when `password`: the browser is
    not signed in there yet), then its consent page ("Authorize"), which sends the browser back."""
    if password is not None:
        door.see(f"{step}: the provider's sign-in", heading="Sign In", path=IDP_LOGIN_PATH)
        door.fill(f"{step}: the provider's sign-in", {"login": EMAIL, "password": password}, guarded=False)
    door.see(f"{step}: the provider asks", path=IDP_AUTHORIZE_PATH, texts=("wants to access your",))
    door.press(f"{step}: the provider asks", "Authorize", guarded=False)


def provider_flows(door, binary, workdir, provider):
    """The web door through a real identity provider: the link on the sign-in page, the
    provider's own sign-in and consent pages, back signed in to the account the verified
    address names; the linked provider listed; a handoff to the command whose person signs in
    through the provider; and an app's ID token (PKCE with the app's public client) handed to
    `homeport login --provider`."""
    step = "provider"
    provider.register(binary, workdir)
    door.open(HOME_PATH)
    sign_out(door, "sign-in before the provider")
    door.follow(step, PROVIDER_LINK)
    sign_in_at_provider(door, step, password=provider.password)
    see_home(door, "home after the provider")
    door.open(PROVIDERS_PATH)
    door.see("linked providers", path=PROVIDERS_PATH, texts=(PROVIDER_NAME,))

    def through_provider(door, step):
        door.see(f"{step}: sign in first", heading="Sign in", path=LOGIN_PATH, texts=(PROVIDER_LINK,))
        door.follow(f"{step}: sign in first", PROVIDER_LINK)
        sign_in_at_provider(door, step)

    environment = handoff_flow(door, binary, workdir, through_provider, step="handoff through the provider",
                               device="Provider drive")
    app_provider_token(door, binary, provider, environment)


def provider_needs_second_factor(door):
    """With two-factor sign-in on, the provider alone does not sign in: back from it, the
    person is at the second step (as after a password)."""
    step = "provider with two factors"
    door.open(LOGIN_PATH)
    door.see(f"sign-in before the {step}", heading="Sign in", path=LOGIN_PATH, texts=(PROVIDER_LINK,))
    door.follow(step, PROVIDER_LINK)
    sign_in_at_provider(door, step)
    door.see(f"{step}: second step", path=TOTP_AUTHENTICATE_PATH)
    door.field(step, TOTP_CODE_FIELD)


def app_provider_token(door, binary, provider, environment):
    """What an app does on the phone: the provider's flow with its public client and PKCE (the
    browser is signed in at the provider already), the code exchanged at the token endpoint,
    and the ID token handed to the server (`homeport login URL --provider ID --id-token-stdin`)."""
    step = "app: provider token"
    verifier = secret(secrets.token_urlsafe(48))
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    query = urllib.parse.urlencode({
        "response_type": "code", "client_id": PROVIDER_APP_CLIENT, "redirect_uri": provider.app_listener.redirect_uri,
        "scope": "openid email profile", "state": state, "nonce": nonce, "code_challenge": challenge,
        "code_challenge_method": "S256"})
    door.open_url(f"{provider.issuer}{IDP_AUTHORIZE_PATH}?{query}")
    sign_in_at_provider(door, step)
    door.wait(step, lambda _: provider.app_listener.queries, "the provider's way back to the app")
    answer = provider.app_listener.queries[-1]
    if answer.get("state") != [state] or "code" not in answer:
        raise StepFailed(f"{step}: the provider came back without the code and the app's state")
    form = urllib.parse.urlencode({
        "grant_type": "authorization_code", "code": secret(answer["code"][0]), "client_id": PROVIDER_APP_CLIENT,
        "redirect_uri": provider.app_listener.redirect_uri, "code_verifier": verifier}).encode()
    try:
        with urllib.request.urlopen(f"{provider.issuer}/identity/o/api/token", data=form, timeout=10) as response:
            tokens = json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise StepFailed(f"{step}: the provider's token endpoint answered {error.code}") from None
    id_token = secret(tokens.get("id_token", ""))
    if not id_token:
        raise StepFailed(f"{step}: the provider's token answer holds no id_token")
    client = Path(binary).parent / "homeport"
    signed = subprocess.run(
        [str(client), "login", *server_arguments(door, None), "--provider", PROVIDER_ID, "--id-token-stdin", "--json"],
        input=id_token + "\n", capture_output=True, text=True, env=environment, timeout=60)
    if signed.returncode != 0 or '"signedIn" : true' not in signed.stdout:
        raise StepFailed(f"{step}: homeport login --provider did not sign in: {redacted(signed.stderr.strip())}")
    print(f"ok    {step}: the app's ID token from the provider signed the command in")


# --- Passkeys (Sources/HomeportServer/Passkeys/WebDoor+Passkeys.swift) -----------------------------

PASSKEYS_PATH = "/account/passkeys"
PASSKEY_NAME = "This laptop"


class VirtualAuthenticator:
    """Chromium's virtual authenticator (the DevTools protocol's WebAuthn domain, as WebDriver's
    virtual authenticator API): a platform authenticator with resident keys that verifies its
    person, as a phone or laptop unlocking a passkey with a fingerprint does."""

    def __init__(self, browser):
        self.browser = browser
        browser.execute_cdp_cmd("WebAuthn.enable", {"enableUI": False})
        self.id = self.add()

    def add(self):
        return self.browser.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
            "protocol": "ctap2", "ctap2Version": "ctap2_1", "transport": "internal", "hasResidentKey": True,
            "hasUserVerification": True, "isUserVerified": True, "automaticPresenceSimulation": True,
        }})["authenticatorId"]

    def credentials(self):
        return self.browser.execute_cdp_cmd(
            "WebAuthn.getCredentials", {"authenticatorId": self.id})["credentials"]

    def clone(self, credential, sign_count):
        """Replaces this authenticator with a copy holding `credential` (its private key
        included) at `sign_count`: a cloned authenticator whose counter is behind, or ahead."""
        self.browser.execute_cdp_cmd("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": self.id})
        self.id = self.add()
        copy = {key: credential[key] for key in ("credentialId", "isResidentCredential", "rpId", "privateKey",
                                                 "userHandle")}
        self.browser.execute_cdp_cmd("WebAuthn.addCredential", {
            "authenticatorId": self.id, "credential": {**copy, "signCount": sign_count}})


def capture_passkey_answers(door):
    """Keeps the credential the page's script hands back next (in the tab's sessionStorage,
    which outlives the page), as an attacker reading it off the wire would."""
    door.browser.execute_script("""
        const submit = HTMLFormElement.prototype.submit;
        HTMLFormElement.prototype.submit = function () {
          if (this.elements.credential) {
            const kept = JSON.parse(sessionStorage.getItem("homeportAnswers") || "[]");
            sessionStorage.setItem("homeportAnswers", JSON.stringify(kept.concat([this.elements.credential.value])));
          }
          return submit.call(this);
        };
    """)


def conditional_sign_in(door, step):
    """Signs in through the address field's autofill (conditional mediation): the field offers
    passkeys, focusing it starts one request with `mediation: "conditional"`, and its answer signs
    in (the virtual authenticator picks its one passkey as a person picks it from the list)."""
    field = door.browser.find_element(By.ID, "email")
    if "webauthn" not in (field.get_attribute("autocomplete") or "").split():
        raise StepFailed(f"{step}: the address field offers no passkeys ({field.get_attribute('autocomplete')})")
    door.browser.execute_script("""
        const get = navigator.credentials.get.bind(navigator.credentials);
        navigator.credentials.get = (options) => {
          sessionStorage.setItem("homeportMediation", String(options.mediation));
          return get(options);
        };
    """)
    field.click()
    door.wait(step, lambda browser: door.path() == HOME_PATH, "the autofill's sign-in")
    door.see(step, heading="Your account", path=HOME_PATH)
    mediation = door.browser.execute_script('return sessionStorage.getItem("homeportMediation");')
    if mediation != "conditional":
        raise StepFailed(f"{step}: the page asked with mediation {mediation!r}, not conditional")


def submit_form(door, step, action, values):
    """Types `values` into the one form posting to `action` and submits it with its button."""
    forms = door.browser.find_elements(By.CSS_SELECTOR, f"form[action='{action}']")
    if len(forms) != 1:
        raise StepFailed(f"{step}: expected one form posting to {action}, found {len(forms)} ({door.describe()})")
    for name, value in values.items():
        field = forms[0].find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)
    door.check_guards(step, forms[0])
    door.click(step, forms[0].find_element(By.CSS_SELECTOR, "button[type=submit]"))


def passkey_flows(door, binary, workdir):
    """On a server whose public address is http://localhost:PORT (a secure context, and a name
    WebAuthn scopes credentials to): a person with a password adds a passkey on the account's
    passkeys page, signs out and back in with it alone; a cloned authenticator (its counter
    behind) is refused and logged; an answer replayed to a fresh challenge is refused; the
    passkey is renamed, then removed; another site on this machine (other.localhost, the same
    accounts) gets nothing from it."""
    password = secret(secrets.token_urlsafe(12))
    email = "passkeys." + EMAIL
    authenticator = VirtualAuthenticator(door.browser)
    door.open(SIGNUP_PATH)
    door.fill("passkeys: sign-up", {"email": email, "password": password})
    door.see("passkeys: signed up", heading="Your account", path=HOME_PATH, texts=("Passkeys",))
    door.follow("passkeys: the passkeys page", "Passkeys")
    door.see("passkeys: the passkeys page", heading="Passkeys", path=PASSKEYS_PATH, texts=("No passkeys yet.",))
    for name, value in (("name", PASSKEY_NAME), ("password", password)):
        door.field("passkeys: add", name).send_keys(value)
    door.press("passkeys: add", "Add a passkey")
    # The account's first second factor: its recovery codes, shown this once.
    door.see("passkeys: added", heading="The passkey was added", texts=("Keep these recovery codes",))
    codes = door.browser.find_elements(By.CLASS_NAME, RECOVERY_CODE_CLASS)
    if len(codes) != RECOVERY_CODE_COUNT:
        raise StepFailed(f"passkeys: expected {RECOVERY_CODE_COUNT} recovery codes, saw {len(codes)}")
    door.open(PASSKEYS_PATH)
    door.see("passkeys: listed", heading="Passkeys", path=PASSKEYS_PATH, texts=(PASSKEY_NAME, "never used"))
    created = authenticator.credentials()
    if len(created) != 1 or not created[0]["isResidentCredential"]:
        raise StepFailed(f"passkeys: the authenticator holds {len(created)} credentials, not one passkey")

    door.follow("passkeys: back", "Back to your account")
    door.press("passkeys: sign out", "Sign out")
    door.see("passkeys: signed out", heading="Sign in", path=LOGIN_PATH, texts=("Sign in with a passkey",))
    capture_passkey_answers(door)
    door.press("passkeys: sign in with the passkey", "Sign in with a passkey")
    door.see("passkeys: signed in with the passkey alone", heading="Your account", path=HOME_PATH,
             texts=(f"Signed in as {email}.",))

    # The password alone no longer signs in: the second step asks for the passkey.
    door.press("passkeys: sign out for the second step", "Sign out")
    # The address field would offer the passkey (and the virtual authenticator pick it): typed
    # here as by a person who dismisses the autofill.
    door.browser.execute_script("PublicKeyCredential.isConditionalMediationAvailable = async () => false;")
    door.fill("passkeys: the password first", {"email": email, "password": password})
    door.see("passkeys: the second step", heading="Two-factor sign-in", path=TOTP_AUTHENTICATE_PATH,
             texts=("Use a passkey",))
    door.press("passkeys: the passkey as the second step", "Use a passkey")
    door.see("passkeys: signed in with the password and the passkey", heading="Your account", path=HOME_PATH)
    used = authenticator.credentials()[0]
    if used["signCount"] < 1:
        raise StepFailed("passkeys: the authenticator's counter did not move")

    # A clone: the same key, its counter behind the one the server saw.
    door.press("passkeys: sign out again", "Sign out")
    authenticator.clone(used, 0)
    door.press("passkeys: a cloned authenticator", "Sign in with a passkey")
    door.see("passkeys: a cloned authenticator is refused", heading="Sign in", error=True,
             texts=("That passkey could not sign you in.",))
    if "cloned authenticator" not in (workdir / "server-localhost.log").read_text(errors="replace"):
        raise StepFailed("passkeys: the server did not log the cloned authenticator")

    # The answer an attacker read off the wire, to a fresh challenge: refused.
    answers = door.browser.execute_script('return JSON.parse(sessionStorage.getItem("homeportAnswers") || "[]");')
    if len(answers) != 1:
        raise StepFailed(f"passkeys: expected one captured answer, got {len(answers)}")
    door.open(LOGIN_PATH)
    door.browser.execute_async_script("""
        const [answer, done] = arguments;
        const form = document.getElementById("passkey-login");
        const body = new URLSearchParams({csrf_token: form.elements.csrf_token.value, website: ""});
        fetch(form.dataset.options, {method: "POST", body, credentials: "same-origin"}).then(() => {
          form.elements.credential.value = answer;
          HTMLFormElement.prototype.submit.call(form);
          done(true);
        }, (error) => done(String(error)));
    """, answers[0])
    door.wait("passkeys: a replayed answer", lambda browser: browser.find_elements(By.CSS_SELECTOR, ERROR_SELECTOR),
              "the refusal")
    door.see("passkeys: a replayed answer is refused", heading="Sign in", error=True,
             texts=("That passkey could not sign you in.",))

    # The real authenticator again (its counter ahead): signs in; then the passkey is renamed
    # and removed, and signs nobody in after.
    authenticator.clone(used, used["signCount"] + 10)
    door.open(LOGIN_PATH)
    door.press("passkeys: the real authenticator", "Sign in with a passkey")
    door.see("passkeys: the real authenticator signs in", heading="Your account", path=HOME_PATH)
    door.press("passkeys: sign out for the autofill", "Sign out")
    conditional_sign_in(door, "passkeys: signed in from the address field's autofill")
    door.open(PASSKEYS_PATH)
    submit_form(door, "passkeys: rename", "/account/passkeys/rename", {"name": "Old laptop", "password": password})
    door.see("passkeys: renamed", heading="Passkeys", path=PASSKEYS_PATH, texts=("Old laptop",))

    # An app's sign-in handed over by the browser (`homeport login --browser`), the person
    # signing in there with the passkey alone.
    def sign_in_with_the_passkey(door, step):
        door.see(f"{step}: sign in first", heading="Sign in", path=LOGIN_PATH, texts=("Sign in with a passkey",))
        door.press(f"{step}: sign in first", "Sign in with a passkey")

    handoff_flow(door, binary, workdir, sign_in_with_the_passkey, step="handoff with a passkey")
    door.open(HOME_PATH)

    # Another site on this machine, on the same accounts: the passkey is scoped to localhost.
    other_process, other_base, _, _ = start_server(binary, workdir, name="other.localhost",
                                                   database=workdir / "passkeys.sqlite")
    try:
        door.open_url(other_base + LOGIN_PATH)
        door.see("passkeys: another site", heading="Sign in", texts=("Sign in with a passkey",))
        door.browser.find_element(By.ID, "passkey-signin").click()
        door.wait("passkeys: another site", lambda browser: "no passkey for this site" in browser.find_element(
            By.ID, "passkey-status").text, "the page to say there is no passkey here", timeout=PAGE_TIMEOUT * 2)
        door.see("passkeys: another site gets nothing", heading="Sign in", texts=("no passkey for this site",))
    finally:
        stop_server(other_process)

    door.open(PASSKEYS_PATH)
    submit_form(door, "passkeys: remove", "/account/passkeys/remove", {"password": password})
    door.see("passkeys: removed", heading="Passkeys", path=PASSKEYS_PATH, texts=("No passkeys yet.",))
    door.follow("passkeys: back home", "Back to your account")
    door.press("passkeys: signed out at last", "Sign out")
    door.browser.find_element(By.ID, "passkey-signin").click()
    door.wait("passkeys: a removed passkey", lambda browser: browser.find_elements(By.CSS_SELECTOR, ERROR_SELECTOR)
              or "no passkey" in browser.find_element(By.ID, "passkey-status").text, "the refusal")
    print("ok    passkeys: a removed passkey signs nobody in")


def parse_arguments():
    parser = argparse.ArgumentParser(description="Drive Homeport's web door in headless Chromium.")
    parser.add_argument("--server-binary", required=True, type=Path, help="the homeport-server to start")
    parser.add_argument("--screenshots", type=Path, help="write NN-step.png of each page here")
    parser.add_argument("--mfa", action="store_true", help="also run the two-factor steps")
    parser.add_argument("--passkeys", action="store_true",
                        help="also add a passkey and sign in with it, on a second server at http://localhost:PORT, "
                             "with Chromium's virtual authenticator")
    parser.add_argument("--pairing", action="store_true",
                        help="serve HTTPS with the installation's certificate, and pair the client from the QR code")
    parser.add_argument("--webpush-standin", type=Path, metavar="PYTHON",
                        help="also turn on notifications in this browser, against interop/webpush/standin.py run "
                             "by PYTHON (a Python with http_ece and py_vapid: .build/apns-venv/bin/python)")
    parser.add_argument("--identity-provider", type=Path, metavar="PYTHON",
                        help="also sign in through django-allauth's OpenID Connect provider, run by PYTHON "
                             "(a Python with the pinned django-allauth: .build/allauth-venv/bin/python)")
    arguments = parser.parse_args()
    if not os.access(arguments.server_binary, os.X_OK):
        parser.error(f"{arguments.server_binary} is not an executable")
    for python in (arguments.identity_provider, arguments.webpush_standin):
        if python is not None and not os.access(python, os.X_OK):
            parser.error(f"{python} is not an executable")
    return arguments


def prepare_screenshots(directory):
    if directory is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("[0-9][0-9]-*.png"):
        old.unlink()
    return directory


def run(arguments, workdir):
    process = browser = provider = service = None
    log_path = workdir / "server-main.log"
    try:
        binary = arguments.server_binary.resolve()
        process, base, outbox, log_path = start_server(
            binary, workdir, pairing=arguments.pairing, web_push=arguments.webpush_standin is not None)
        print(f"server up at {base}")
        browser = make_browser(workdir / "profile", insecure=arguments.pairing)
        door = Door(browser, base, Outbox(outbox), prepare_screenshots(arguments.screenshots))
        password = password_flows(door)
        if arguments.webpush_standin is not None:
            service = WebPushService(arguments.webpush_standin, workdir)
            notifications_flow(door, binary, workdir, service)
        if arguments.pairing:
            pairing_flow(door, binary, password, workdir)
            handoff_flow(door, binary, workdir, sign_in_with_password(password))
        if arguments.identity_provider is not None:
            provider = IdentityProvider(arguments.identity_provider, workdir, base)
            provider_flows(door, binary, workdir, provider)
        if arguments.mfa:
            mfa_flows(door, password)
            if provider is not None:
                provider_needs_second_factor(door)
        if arguments.passkeys:
            passkey_process, passkey_base, _, _ = start_server(
                binary, workdir, name="localhost", database=workdir / "passkeys.sqlite")
            try:
                passkey_door = Door(browser, passkey_base, None, door.screenshots)
                passkey_door.number = door.number
                passkey_flows(passkey_door, binary, workdir)
                door.number = passkey_door.number
            finally:
                stop_server(passkey_process)
        extras = [name for name, on in (("pairing and the handoff", arguments.pairing),
                                        ("the identity provider", arguments.identity_provider is not None),
                                        ("notifications", arguments.webpush_standin is not None),
                                        ("two factors", arguments.mfa), ("passkeys", arguments.passkeys)) if on]
        print(f"passed: {door.number} pages checked{', with ' + ' and '.join(extras) if extras else ''}")
        return 0
    except StepFailed as failure:
        print(f"FAILED: {redacted(str(failure))}", file=sys.stderr)
        print(f"server log (last lines):\n{log_tail(log_path)}", file=sys.stderr)
        if provider is not None:
            print(f"identity provider log (last lines):\n{log_tail(provider.log_path)}", file=sys.stderr)
        return 1
    except WebDriverException as error:
        print(f"FAILED: the browser: {redacted(str(error.msg or error))}", file=sys.stderr)
        print(f"at: {where(error)}", file=sys.stderr)
        print(f"server log (last lines):\n{log_tail(log_path)}", file=sys.stderr)
        if provider is not None:
            print(f"identity provider log (last lines):\n{log_tail(provider.log_path)}", file=sys.stderr)
        return 1
    finally:
        if browser is not None:
            browser.quit()
        if provider is not None:
            provider.stop()
        if service is not None:
            service.stop()
        stop_server(process)


def where(error):
    """The lines of this script the error went through, innermost first."""
    frames = traceback.extract_tb(error.__traceback__)
    return " < ".join(f"{frame.name}:{frame.lineno}" for frame in reversed(frames)
                      if frame.filename == __file__)


def main():
    arguments = parse_arguments()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="homeport-webdoor."))
    try:
        return run(arguments, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

# Shared shell helpers for Homeport's scripts. Source it; do not run it.

HOMEPORT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Each line carries the minutes and seconds since the script began (bash's SECONDS), so a slow
# phase of a CI run shows where its time went.
say() { printf '==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else die "need root (or sudo) to run: $*"
    fi
}

# ensure_packages PKG… — installs the Debian packages that are not installed yet.
ensure_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || die "missing packages ${missing[*]} and no apt-get to install them"
    say "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The C libraries the package links against, and pkg-config to find them.
BUILD_PACKAGES=(pkg-config libsqlite3-dev libpq-dev libssl-dev libcrypt-dev libmicrohttpd-dev libcurl4-openssl-dev libnghttp2-dev libqrencode-dev)

ensure_swift() {
    command -v swift >/dev/null 2>&1 && return 0
    [ -x /opt/swift/usr/bin/swift ] && export PATH="/opt/swift/usr/bin:$PATH" && return 0
    die "Swift 6 is not installed: install a Swift 6 toolchain from swift.org and put it on PATH"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_postgres — starts a throwaway PostgreSQL cluster on loopback and exports
# HOMEPORT_TEST_POSTGRES_URL (an admin URL). The cluster is removed when the shell exits.
start_postgres() {
    ensure_packages postgresql
    local bin
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$bin" ] || die "PostgreSQL server binaries not found under /usr/lib/postgresql"
    PG_DIR=$(mktemp -d /tmp/homeport-pg.XXXXXX)
    PG_PORT=$(free_port)
    local run=()
    if [ "$(id -u)" = 0 ]; then
        chown postgres: "$PG_DIR"
        run=(runuser -u postgres --)
    fi
    "${run[@]}" "$bin/initdb" -D "$PG_DIR/data" -A trust -U postgres --no-sync >"$PG_DIR/initdb.log" 2>&1 \
        || { cat "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
    "${run[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -o \
        "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null \
        || { cat "$PG_DIR/server.log" >&2; die "PostgreSQL did not start"; }
    export HOMEPORT_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
    PG_BIN=$bin
    PG_RUN=("${run[@]}")
    trap stop_postgres EXIT
    say "PostgreSQL test cluster on 127.0.0.1:$PG_PORT"
}

stop_postgres() {
    [ -n "${PG_DIR:-}" ] || return 0
    "${PG_RUN[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
    PG_DIR=
}

# ensure_venv NAME REQUIREMENTS — a virtualenv in .build/NAME-venv with the pinned REQUIREMENTS
# from PyPI (installed again only when the file changes); prints its python.
ensure_venv() {
    local venv="$HOMEPORT_ROOT/.build/$1-venv"
    local requirements="$2"
    local stamp="$venv/.requirements"
    if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
        say "installing $(tr '\n' ' ' <"$requirements")into $venv"
        rm -rf "$venv"
        if ! python3 -m venv "$venv" >/dev/null 2>&1; then
            ensure_packages python3-venv
            rm -rf "$venv"
            /usr/bin/python3 -m venv "$venv"
        fi
        # Inside $(…) set -e does not stop the function: a failed install must not be stamped.
        if ! "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2; then
            rm -rf "$venv"
            die "could not install $(tr '\n' ' ' <"$requirements")into $venv"
        fi
        cp "$requirements" "$stamp"
    fi
    echo "$venv/bin/python"
}

# ensure_allauth_peer — django-allauth (headless) and gunicorn, for the interop tests and
# benchmarks. Exports HOMEPORT_TEST_ALLAUTH_DIR and _PYTHON.
ensure_allauth_peer() {
    HOMEPORT_TEST_ALLAUTH_PYTHON=$(ensure_venv allauth "$HOMEPORT_ROOT/interop/allauth/requirements.txt")
    export HOMEPORT_TEST_ALLAUTH_PYTHON
    export HOMEPORT_TEST_ALLAUTH_DIR="$HOMEPORT_ROOT/interop/allauth"
}

# ensure_apns_peer — the APNs stand-in (hypercorn + h2, PyJWT + cryptography) for the push tests
# and benchmarks, the OpenID Connect stand-in, the Web Push stand-in (http_ece, py_vapid) and the
# FCM stand-in (google-auth). Exports HOMEPORT_TEST_APNS_DIR and _PYTHON, HOMEPORT_TEST_OIDC_DIR,
# HOMEPORT_TEST_WEBPUSH_DIR and HOMEPORT_TEST_FCM_DIR.
ensure_apns_peer() {
    HOMEPORT_TEST_APNS_PYTHON=$(ensure_venv apns "$HOMEPORT_ROOT/interop/apns/requirements.txt")
    export HOMEPORT_TEST_APNS_PYTHON
    export HOMEPORT_TEST_APNS_DIR="$HOMEPORT_ROOT/interop/apns"
    # The OpenID Connect stand-in runs in the same virtualenv (PyJWT and cryptography).
    export HOMEPORT_TEST_OIDC_DIR="$HOMEPORT_ROOT/interop/oidc"
    # So does the Web Push stand-in (http_ece and py_vapid check what the server sends).
    export HOMEPORT_TEST_WEBPUSH_DIR="$HOMEPORT_ROOT/interop/webpush"
    # And the FCM stand-in (google-auth checks the service account's assertion).
    export HOMEPORT_TEST_FCM_DIR="$HOMEPORT_ROOT/interop/fcm"
}

# ensure_smtp_peer — aiosmtpd, a real SMTP server the mail tests send through; exports
# HOMEPORT_TEST_SMTP_PYTHON and HOMEPORT_TEST_SMTP_DIR.
ensure_smtp_peer() {
    HOMEPORT_TEST_SMTP_PYTHON=$(ensure_venv smtp "$HOMEPORT_ROOT/interop/smtp/requirements.txt")
    export HOMEPORT_TEST_SMTP_PYTHON
    export HOMEPORT_TEST_SMTP_DIR="$HOMEPORT_ROOT/interop/smtp"
}

# ensure_browser_peer — headless Chromium, its chromedriver and Selenium, for the web door's
# browser driver (interop/browser/webdoor.py), and zbarimg to read the QR code it sees; exports
# HOMEPORT_TEST_BROWSER_PYTHON and HOMEPORT_TEST_BROWSER_DIR.
ensure_browser_peer() {
    ensure_packages chromium chromium-driver zbar-tools
    HOMEPORT_TEST_BROWSER_PYTHON=$(ensure_venv browser "$HOMEPORT_ROOT/interop/browser/requirements.txt")
    export HOMEPORT_TEST_BROWSER_PYTHON
    export HOMEPORT_TEST_BROWSER_DIR="$HOMEPORT_ROOT/interop/browser"
}

# run_watched LOG QUIET COMMAND… — runs COMMAND with its output shown and appended to LOG. When
# LOG has not grown for QUIET seconds the run is taken to hang: every thread's stack of each test
# process (*PackageTests.xctest) goes into LOG, read with gdb, and the process is killed, so the
# command fails. A hung test ends the run with where it hung, instead of using up CI's time.
run_watched() {
    local log=$1 quiet=$2
    shift 2
    (
        set -o pipefail
        "$@" 2>&1 | tee -a "$log"
    ) &
    local job=$! size=-1 grown last now pid
    last=$(date +%s)
    while kill -0 "$job" 2>/dev/null; do
        sleep 5
        now=$(date +%s)
        grown=$(stat -c %s "$log")
        if [ "$grown" != "$size" ]; then
            size=$grown
            last=$now
        elif [ $((now - last)) -ge "$quiet" ]; then
            say "no output for $((now - last)) s: the stacks of every thread of the test processes, then they are stopped"
            for pid in $(pgrep -f 'PackageTests\.xctest'); do
                gdb -p "$pid" -batch -nx -iex 'set complaints 0' -ex 'info threads' -ex 'thread apply all bt 40' \
                    2>&1 | grep -v '^During symbol reading' | tee -a "$log" >&2 || true
                kill -KILL "$pid" 2>/dev/null || true
            done
            last=$now
        fi
    done
    wait "$job"
}

# Shared helpers of the benchmark scripts. Source it after scripts/lib.sh.

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
THREADS=${THREADS:-2}

bench_pids=()
bench_cleanup() {
    # TERM, not INT: a background job of a script ignores SIGINT.
    for pid in "${bench_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null
    rm -rf "$work"
}

# bench_setup PACKAGES… — installs packages, builds homeport-server (release), makes $work.
bench_setup() {
    ensure_packages "${BUILD_PACKAGES[@]}" wrk nginx curl sqlite3 "$@"
    ensure_swift
    say "building homeport-server (release)"
    swift build -c release --product homeport-server >/dev/null
    work=$(mktemp -d /tmp/homeport-bench.XXXXXX)
    chmod 755 "$work"
    trap bench_cleanup EXIT
}

# wait_for URL — polls until the URL answers (any status).
wait_for() {
    for _ in $(seq 200); do curl -sk -o /dev/null "$1" && return 0; sleep 0.1; done
    die "nothing answered at $1"
}

# start_homeport ARGS… — starts the release server on a free port; sets hp_port. With hp_binary
# set, that binary is started instead of this checkout's (a baseline built elsewhere); with
# hp_database set, that database instead of a fresh SQLite file; hp_log names its log file;
# hp_scheme=https when it serves HTTPS.
start_homeport() {
    hp_port=$(free_port)
    "${hp_binary:-$HOMEPORT_ROOT/.build/release/homeport-server}" serve --listen "127.0.0.1:$hp_port" \
        --database "${hp_database:-sqlite:$work/homeport.sqlite}" --outbox "$work/outbox" "$@" \
        >"$work/${hp_log:-homeport}.out" 2>"$work/${hp_log:-homeport}.log" &
    bench_pids+=($!)
    wait_for "${hp_scheme:-http}://127.0.0.1:$hp_port/healthz"
}

# start_nginx FILE URLPATH — nginx serving FILE's bytes at URLPATH as JSON, no-store, access log on;
# sets ng_port.
start_nginx() {
    mkdir -p "$work/www$(dirname "$2")" "$work/nginx"
    cp "$1" "$work/www$2"
    chmod -R a+rX "$work/www"
    ng_port=$(free_port)
    cat >"$work/nginx/nginx.conf" <<CONF
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log $work/nginx/access.log;
    client_body_temp_path $work/nginx;
    proxy_temp_path $work/nginx;
    fastcgi_temp_path $work/nginx;
    uwsgi_temp_path $work/nginx;
    scgi_temp_path $work/nginx;
    server {
        listen 127.0.0.1:$ng_port;
        root $work/www;
        location = $2 {
            default_type application/json;
            add_header Cache-Control no-store;
        }
    }
}
CONF
    nginx -c "$work/nginx/nginx.conf" -g 'daemon off;' &
    bench_pids+=($!)
    wait_for "http://127.0.0.1:$ng_port$2"
    cmp -s <(curl -fsS "http://127.0.0.1:$ng_port$2") "$1" || die "nginx does not serve the same bytes"
}

# target NAME MEASURED GOAL — records one target: GOAL is a comparison and a number (">=0.9",
# "<=1.5", "<10"). print_targets, the script's last words, prints the run (its commit and date)
# and each target as one machine-readable line: TARGET NAME MEASURED GOAL met|not-met.
targets=()
target() {
    local verdict
    verdict=$(awk -v m="$2" -v g="$3" 'BEGIN {
        op = g; sub(/[-0-9.]+$/, "", op); v = substr(g, length(op) + 1) + 0
        if (op == ">=") ok = (m >= v); else if (op == "<=") ok = (m <= v)
        else if (op == ">") ok = (m > v); else if (op == "<") ok = (m < v); else ok = 0
        print ok ? "met" : "not-met" }')
    targets+=("TARGET $1 $2 $3 $verdict")
}
print_targets() {
    echo
    echo "RUN commit=$(git -C "$HOMEPORT_ROOT" rev-parse --short HEAD)$(git -C "$HOMEPORT_ROOT" diff --quiet HEAD || echo +changes)" \
        "date=$(date -u +%Y-%m-%dT%H:%MZ) cores=$(nproc)"
    printf '%s\n' "${targets[@]}"
}

# wrk_round NAME URL [HEADER] — one wrk run; appends "rps p99ms" to $work/NAME.results.
wrk_round() {
    local args=(-t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency)
    [ -n "${3:-}" ] && args+=(-H "$3")
    local out
    out=$(wrk "${args[@]}" "$2")
    local errors
    errors=$(grep -E 'Non-2xx|Socket errors' <<<"$out" || true)
    [ -z "$errors" ] || say "$1: $errors"
    echo "$(awk '/^Requests\/sec:/ {print $2}' <<<"$out") $(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")" \
        >>"$work/$1.results"
}

to_ms() {
    case "$1" in
        *us) awk -v v="${1%us}" 'BEGIN {printf "%.3f", v / 1000}' ;;
        *ms) awk -v v="${1%ms}" 'BEGIN {printf "%.3f", v}' ;;
        *s) awk -v v="${1%s}" 'BEGIN {printf "%.3f", v * 1000}' ;;
    esac
}

# rps NAME / p99 NAME — medians of the rounds.
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
rps() { cut -d' ' -f1 "$work/$1.results" | median; }
p99() { cut -d' ' -f2 "$work/$1.results" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
nginx_version() { nginx -v 2>&1 | grep -o '[0-9.]*$'; }
caddy_version() { caddy version | awk '{print $1}'; }

# start_apns_sink COUNT — an APNs stand-in on loopback: Debian's nghttpd over TLS answering 200 to
# POST /3/device/<token> for the device tokens 1..COUNT in hexadecimal (64 digits), with its own
# certificate and a provider key; sets sink (its URL), sink_pid and apns_key (serve's flags to send
# to it).
start_apns_sink() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/sink.key" \
        -out "$work/sink.pem" -days 2 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/auth.p8" 2>/dev/null
    python3 - "$work/www/3/device" "$1" <<'PY'
import os, sys
os.makedirs(sys.argv[1], exist_ok=True)
for n in range(1, int(sys.argv[2]) + 1):
    open(os.path.join(sys.argv[1], "%064x" % n), "w").close()
PY
    local port
    port=$(free_port)
    nghttpd --htdocs="$work/www" --max-concurrent-streams=1000 "$port" "$work/sink.key" "$work/sink.pem" >/dev/null 2>&1 &
    bench_pids+=($!)
    sink_pid=$!
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.1; done
    sink="https://127.0.0.1:$port"
    apns_key=(--apns-key-file "$work/auth.p8" --apns-key-id KEY1234567 --apns-team-id TEAM123456
        --apns-topic net.example.books --apns-base-url "$sink" --apns-ca-file "$work/sink.pem")
}

# query DATABASE_URL SQL — the first column of each row (SQLite or PostgreSQL). With sqlite3's own
# shell (a few milliseconds), not Python's (over 100 ms of CPU a call, taken from the server being
# measured while the drains poll).
query() {
    case "$1" in
        sqlite:*) sqlite3 -cmd ".timeout 30000" -list "${1#sqlite:}" "$2" | cut -d'|' -f1 ;;
        *) "${PG_RUN[@]}" "$PG_BIN/psql" -tA "$1" -c "$2" ;;
    esac
}

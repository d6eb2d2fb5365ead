#!/usr/bin/env bash
# Bring up the real servers the services and their tests talk to, idempotently:
# PostgreSQL (+ pgvector), RabbitMQ and Redis on 127.0.0.1, and the databases
# `memory` and `mail`. Installs what is missing from Debian's packages; fast
# (a few seconds) when everything is already there and running.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/infra.sh [-h]
  Install (if missing) and start (if down) PostgreSQL with pgvector on 127.0.0.1:5432
  (trust auth), RabbitMQ on 127.0.0.1:5672 (guest/guest) and Redis on 127.0.0.1:6379;
  create the databases `memory` and `mail`. Prints one line per component; exits
  non-zero with a message when a server does not answer.
EOF
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
only_help_args "$@"

PGHOST_ADDR=127.0.0.1
PGPORT_NUM=5432
AMQP_PORT=5672
REDIS_PORT=6379

# Two runs at once (make test and make bench, say) would race on apt and on
# starting servers: serialise them.
exec 9>"${TMPDIR:-/tmp}/memmail-infra.lock"
flock -w 1800 9 || die "another scripts/infra.sh has held its lock for 30 minutes"

# --------------------------------------------------------------------- PostgreSQL
ensure_debs postgresql postgresql-contrib

pg_version() {
    # shellcheck disable=SC2012 # plain version-number directory names
    ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1
}
PGVER="$(pg_version)"
if [[ -z $PGVER ]]; then
    # The package normally creates the cluster `main`; make it if it did not.
    # shellcheck disable=SC2012 # plain version-number directory names
    ver="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
    [[ -n $ver ]] || die "postgresql is installed but no server version is under /usr/lib/postgresql"
    as_root pg_createcluster "$ver" main >/dev/null
    PGVER="$(pg_version)"
fi
PG_CONFIG="/usr/lib/postgresql/$PGVER/bin/pg_config"
[[ -x $PG_CONFIG ]] || die "no $PG_CONFIG (is postgresql-$PGVER installed?)"

pg_ready() { pg_isready -q -h "$PGHOST_ADDR" -p "$PGPORT_NUM" -t 2; }

# pg_stat_statements in shared_preload_libraries, tracking nothing (pg_stat_statements.track
# none) until scripts/bench.sh turns it on for its send scenarios' costs. Written once, only
# when the library is installed and no other file of the cluster sets shared_preload_libraries;
# a running server loads it at its next start (it is never restarted here).
PGSS_CONF="/etc/postgresql/$PGVER/main/conf.d/60-memmail-pg-stat-statements.conf"
pgss_state=""
if [[ ! -f $PGSS_CONF ]]; then
    confdir="/etc/postgresql/$PGVER/main"
    if [[ ! -f "$("$PG_CONFIG" --pkglibdir)/pg_stat_statements.so" ]]; then
        pgss_state="pg_stat_statements: not installed (bench costs leave out the statements)"
    elif ! grep -qs "^[[:space:]]*include_dir[[:space:]]*=[[:space:]]*'conf.d'" "$confdir/postgresql.conf"; then
        pgss_state="pg_stat_statements: not configured ($confdir/postgresql.conf includes no conf.d)"
    elif grep -qs '^[[:space:]]*shared_preload_libraries' "$confdir/postgresql.conf" "$confdir"/conf.d/*.conf; then
        pgss_state="pg_stat_statements: not configured (shared_preload_libraries is set already in $confdir)"
    else
        as_root mkdir -p "$confdir/conf.d"
        printf '%s\n' "# memmail scripts/infra.sh: pg_stat_statements loaded, tracking nothing unless a" \
            "# bench turns it on (ALTER SYSTEM SET pg_stat_statements.track, reset at its end)." \
            "shared_preload_libraries = 'pg_stat_statements'" \
            "pg_stat_statements.track = 'none'" | as_root tee "$PGSS_CONF" >/dev/null
    fi
fi

# psql as postgres over TCP, never asking for or reading a password: this is
# also the check that 127.0.0.1 is on trust auth (PGPASSFILE names a path that
# cannot exist, so no ~/.pgpass is read).
pg() {
    env -u PGPASSWORD PGPASSFILE=/dev/null/none PGCONNECT_TIMEOUT=5 PGOPTIONS='-c client_min_messages=warning' \
        psql -X -w -q -At -v ON_ERROR_STOP=1 -h "$PGHOST_ADDR" -p "$PGPORT_NUM" -U postgres "$@"
}

pg_state=up
if ! pg_ready; then
    as_root pg_ctlcluster --skip-systemctl-redirect "$PGVER" main start ||
        die "postgresql: 'pg_ctlcluster --skip-systemctl-redirect $PGVER main start' failed (see /var/log/postgresql/)"
    for _ in $(seq 1 60); do
        pg_ready && break
        sleep 0.5
    done
    pg_state=started
fi
pg_ready || die "postgresql: not answering on $PGHOST_ADDR:$PGPORT_NUM (cluster $PGVER/main; is its port $PGPORT_NUM? see pg_lsclusters)"

if ! err="$(pg -d postgres -c 'SELECT 1' 2>&1 >/dev/null)"; then
    case "$err" in
    *authentication* | *password*)
        # A fresh install uses scram-sha-256 on loopback. Local development
        # only: put trust for loopback TCP first (the first matching line wins).
        hba="/etc/postgresql/$PGVER/main/pg_hba.conf"
        [[ -f $hba ]] || die "postgresql: no $hba to set trust auth in"
        if ! grep -q 'memmail scripts/infra.sh' "$hba"; then
            as_root sed -i '1i # memmail scripts/infra.sh: trust on loopback TCP, for local development only\
host    all             all             127.0.0.1/32            trust\
host    all             all             ::1/128                 trust' "$hba"
        fi
        as_root pg_ctlcluster --skip-systemctl-redirect "$PGVER" main reload
        sleep 1
        err="$(pg -d postgres -c 'SELECT 1' 2>&1 >/dev/null)" ||
            die "postgresql: still cannot log in as postgres on $PGHOST_ADDR without a password: $err"
        pg_state="$pg_state, pg_hba.conf set to trust on loopback"
        ;;
    *) die "postgresql: cannot run a query as postgres on $PGHOST_ADDR:$PGPORT_NUM: $err" ;;
    esac
fi
log "postgresql: $pg_state ($(pg -d postgres -c "SELECT split_part(current_setting('server_version'), ' ', 1)"), $PGHOST_ADDR:$PGPORT_NUM, trust)"
if [[ ",$(pg -d postgres -c 'SHOW shared_preload_libraries' | tr -d ' ')," == *,pg_stat_statements,* ]]; then
    pgss_state="pg_stat_statements: loaded (tracking: $(pg -d postgres -c 'SHOW pg_stat_statements.track'))"
elif [[ -f $PGSS_CONF ]]; then
    pgss_state="pg_stat_statements: configured, loaded at the server's next start (pg_ctlcluster $PGVER main restart)"
fi
[[ -z $pgss_state ]] || log "$pgss_state"

# ------------------------------------------------------------------------ pgvector
EXT_DIR="$("$PG_CONFIG" --sharedir)/extension"

pgvector_version() {
    sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$EXT_DIR/vector.control"
}

# The Debian mirror (and keyring) of the machine's own apt sources for its
# release: first URI of the deb822 stanza or one-line entry whose suite is the
# codename itself (not -security/-updates). Prints "URI KEYRING" (KEYRING may be empty).
debian_mirror() {
    local codename f out
    codename="$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")"
    [[ -n $codename ]] || return 1
    for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        out="$(awk -v cn="$codename" '
            BEGIN { RS = ""; FS = "\n" }
            {
                uris = ""; suites = ""; types = ""; key = ""; enabled = "yes"
                for (i = 1; i <= NF; i++) {
                    line = $i
                    if (line ~ /^#/) continue
                    if (match(line, /^URIs:[ \t]*/)) uris = substr(line, RLENGTH + 1)
                    else if (match(line, /^Suites:[ \t]*/)) suites = substr(line, RLENGTH + 1)
                    else if (match(line, /^Types:[ \t]*/)) types = substr(line, RLENGTH + 1)
                    else if (match(line, /^Signed-By:[ \t]*/)) key = substr(line, RLENGTH + 1)
                    else if (match(line, /^Enabled:[ \t]*/)) enabled = tolower(substr(line, RLENGTH + 1))
                }
                if (enabled == "no" || types !~ /deb/) next
                n = split(suites, s, /[ \t]+/)
                for (j = 1; j <= n; j++) if (s[j] == cn) {
                    split(uris, u, /[ \t]+/)
                    if (key !~ /^\//) key = ""
                    print u[1], key
                    exit
                }
            }' "$f")"
        [[ -n $out ]] && { printf '%s\n' "$out"; return 0; }
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $f ]] || continue
        out="$(awk -v cn="$codename" '
            $1 == "deb" || $1 == "deb-src" {
                i = 2; key = ""
                if ($2 ~ /^\[/) {
                    for (; i <= NF; i++) {
                        if ($i ~ /^\[?signed-by=/) { key = $i; sub(/^\[?signed-by=/, "", key); sub(/\]$/, "", key) }
                        if ($i ~ /\]$/) break
                    }
                    i++
                }
                if ($(i + 1) == cn) { print $i, key; exit }
            }' "$f")"
        [[ -n $out ]] && { printf '%s\n' "$out"; return 0; }
    done
    return 1
}

# Build pgvector from Debian's source package (in the trixie source index;
# Debian 12 has no binary package) without changing the machine's apt
# configuration: a private sources list, lists dir and cache for this one fetch.
build_pgvector() {
    ensure_debs build-essential dpkg-dev "postgresql-server-dev-$PGVER"
    local mirror key tmp srcdir
    read -r mirror key < <(debian_mirror) ||
        die "pgvector: could not find this machine's Debian mirror in its apt sources"
    [[ -n $mirror ]] || die "pgvector: could not find this machine's Debian mirror in its apt sources"
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/pgvector-build.XXXXXX")"
    # shellcheck disable=SC2064 # expand $tmp now
    trap "rm -rf '$tmp'" EXIT
    mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/parts" "$tmp/src"
    printf 'deb-src %s%s trixie main\n' "${key:+[signed-by=$key] }" "$mirror" >"$tmp/sources.list"
    local apt_tmp=(-qq -o DPkg::Lock::Timeout=300
        -o "Dir::Etc::sourcelist=$tmp/sources.list" -o "Dir::Etc::sourceparts=$tmp/parts"
        -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache"
        -o APT::Sandbox::User=root)
    log "pgvector: fetching Debian source package pgvector (trixie) from $mirror"
    as_root apt-get "${apt_tmp[@]}" update >/dev/null ||
        die "pgvector: apt-get update of the temporary trixie deb-src index failed"
    (cd "$tmp/src" && as_root apt-get "${apt_tmp[@]}" source pgvector >/dev/null) ||
        die "pgvector: apt-get source pgvector failed"
    srcdir="$(find "$tmp/src" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)"
    [[ -n $srcdir ]] || die "pgvector: apt-get source left no pgvector-* directory"
    log "pgvector: building ${srcdir##*/} against PostgreSQL $PGVER"
    # OPTFLAGS= : no -march=native, so the build runs on any CPU of this kind.
    make -s -C "$srcdir" -j "$(nproc)" PG_CONFIG="$PG_CONFIG" OPTFLAGS= >"$tmp/build.log" 2>&1 ||
        { tail -n 40 "$tmp/build.log" >&2; die "pgvector: build failed"; }
    as_root make -s -C "$srcdir" PG_CONFIG="$PG_CONFIG" OPTFLAGS= install >>"$tmp/build.log" 2>&1 ||
        { tail -n 40 "$tmp/build.log" >&2; die "pgvector: make install failed"; }
    rm -rf "$tmp"
    trap - EXIT
}

vec_state=installed
if [[ ! -f $EXT_DIR/vector.control ]]; then
    build_pgvector
    [[ -f $EXT_DIR/vector.control ]] || die "pgvector: make install put no vector.control in $EXT_DIR"
    vec_state="built and installed"
fi
# Check that the extension really is creatable, in a scratch database.
scratch="memmail_vector_check_$$"
pg -d postgres -c "DROP DATABASE IF EXISTS $scratch" -c "CREATE DATABASE $scratch" ||
    die "pgvector: could not create the scratch database $scratch"
if ! err="$(pg -d "$scratch" -c 'CREATE EXTENSION IF NOT EXISTS vector' -c "SELECT '[1,2]'::vector <=> '[2,1]'::vector" 2>&1 >/dev/null)"; then
    pg -d postgres -c "DROP DATABASE IF EXISTS $scratch" || true
    die "pgvector: CREATE EXTENSION vector failed: $err"
fi
pg -d postgres -c "DROP DATABASE IF EXISTS $scratch"
log "pgvector: $vec_state $(pgvector_version)"

# ------------------------------------------------------------------------ RabbitMQ
ensure_debs rabbitmq-server
mq_state=up
if ! tcp_open 127.0.0.1 "$AMQP_PORT"; then
    as_root rabbitmq-server -detached >/dev/null 2>&1 || true
    mq_state=started
    deadline=$((SECONDS + 120))
    until as_root rabbitmqctl -q -t 30 await_startup >/dev/null 2>&1 && tcp_open 127.0.0.1 "$AMQP_PORT"; do
        ((SECONDS < deadline)) ||
            die "rabbitmq: did not start within 120 s (see /var/log/rabbitmq/)"
        sleep 1
    done
fi
tcp_open 127.0.0.1 "$AMQP_PORT" || die "rabbitmq: nothing listening on 127.0.0.1:$AMQP_PORT"
as_root rabbitmqctl -q -t 20 authenticate_user guest guest >/dev/null 2>&1 ||
    die "rabbitmq: user guest/guest cannot log in (rabbitmqctl authenticate_user guest guest)"
# The test suites and scripts give their queues a prefix of their own (a test's uuid, the
# script's name and pid); a test that stops early leaves them behind, and a broker holding tens
# of thousands of queues takes minutes to start again in the broker-restart test. The broker
# deletes such a queue once nothing has used it for 30 minutes (longer than any test runs).
# Unprefixed queues (make dev) and a deployment's own prefixes are not matched.
TEST_QUEUES='^(t[0-9a-f]{32}[.]|test[.]|e2e-?[0-9a-f]{32}[.]|chaos-[0-9a-f]{32}[.]|[a-z]+-[0-9]+-)'
as_root rabbitmqctl -q -t 20 set_policy --apply-to queues test-queues-expire "$TEST_QUEUES" \
    '{"expires": 1800000}' >/dev/null 2>&1 ||
    log "rabbitmq: could not set the policy that expires the tests' queues (rabbitmqctl set_policy)"
log "rabbitmq: $mq_state (127.0.0.1:$AMQP_PORT, guest/guest)"

# --------------------------------------------------------------------------- Redis
ensure_debs redis-server redis-tools
redis_ping() { [[ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]; }
redis_state=up
if ! redis_ping; then
    as_root mkdir -p /var/lib/redis /var/log/redis
    as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" \
        --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log >/dev/null ||
        die "redis: redis-server failed to start (see /var/log/redis/ci.log)"
    for _ in $(seq 1 20); do
        redis_ping && break
        sleep 0.5
    done
    redis_state=started
fi
redis_ping || die "redis: no PONG from 127.0.0.1:$REDIS_PORT"
log "redis: $redis_state (127.0.0.1:$REDIS_PORT)"

# ----------------------------------------------------------------------- databases
for db in memory mail; do
    if [[ -z "$(pg -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]]; then
        # Tolerate a concurrent creator.
        pg -d postgres -c "CREATE DATABASE $db OWNER postgres" 2>/dev/null ||
            [[ -n "$(pg -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]] ||
            die "postgresql: could not create database $db"
    fi
done
pg -d memory -c 'CREATE EXTENSION IF NOT EXISTS vector' ||
    die "postgresql: CREATE EXTENSION vector failed in database memory"
log "databases: memory (vector $(pg -d memory -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'")), mail"

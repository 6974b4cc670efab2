# shellcheck shell=bash
# A real streaming replica of the CI's PostgreSQL server (127.0.0.1:5432) for the read side's tests
# (DATABASE_READ_URL, ADR 0013): pg_basebackup into a data directory of its own, started with the
# server's own binaries on another port as a hot standby. Sourced by .ci/run:
#   replica_start   → sets replica_url (postgresql://postgres@127.0.0.1:<port>/postgres); 1 on failure
#   replica_stop    → stops it and removes its data directory (safe to call twice)
#
# What it may change on the primary, each only when missing and said in the log:
#   - pg_hba.conf: `host replication postgres 127.0.0.1/32 trust` (the `all` line of a stock
#     Debian cluster does not match replication connections), then a reload;
#   - wal_level (≥ replica) and max_wal_senders (≥ 1), with ALTER SYSTEM and a restart: only when
#     the server runs with wal_level=minimal or no WAL senders (Debian's defaults allow replication);
#   - a physical replication slot `ic_ci_replica_<id>` for the standby (without one, a busy primary
#     may recycle the WAL the standby needs between the base backup and its start), dropped by
#     replica_stop; a slot left by a run that died (its data directory gone) is dropped at the next.

replica_dir=""
replica_url=""
replica_bin=""
replica_slot=""

# PostgreSQL refuses to run as root: the standby runs as the postgres OS user then.
replica_as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

replica_primary() { psql -h 127.0.0.1 -p 5432 -U postgres -XAtqc "$1" postgres; }

replica_start() {
  local major port setting
  major=$(( $(replica_primary "SHOW server_version_num") / 10000 ))
  replica_bin="/usr/lib/postgresql/$major/bin"
  [ -x "$replica_bin/pg_ctl" ] || { echo "replica: no PostgreSQL $major binaries in $replica_bin"; return 1; }

  # The primary must stream WAL to a standby.
  local restart=0
  if [ "$(replica_primary "SHOW wal_level")" = "minimal" ]; then
    echo "replica: setting wal_level = replica on the primary (ALTER SYSTEM; restart)"
    replica_primary "ALTER SYSTEM SET wal_level = replica" && restart=1
  fi
  if [ "$(replica_primary "SHOW max_wal_senders")" = "0" ]; then
    echo "replica: setting max_wal_senders = 10 on the primary (ALTER SYSTEM; restart)"
    replica_primary "ALTER SYSTEM SET max_wal_senders = 10" && restart=1
  fi
  if [ "$restart" = 1 ]; then
    pg_ctlcluster --skip-systemctl-redirect "$major" main restart || return 1
    for _ in $(seq 1 60); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
  fi
  if ! psql "host=127.0.0.1 port=5432 user=postgres dbname=replication replication=true" -XAtqc "IDENTIFY_SYSTEM" >/dev/null 2>&1; then
    local hba
    hba=$(replica_primary "SHOW hba_file")
    echo "replica: allowing replication connections from 127.0.0.1 for postgres in $hba (then pg_reload_conf)"
    grep -qE '^host[[:space:]]+replication[[:space:]]+postgres[[:space:]]+127\.0\.0\.1/32[[:space:]]+trust' "$hba" \
      || printf '\n# idempotency console CI: the read replica (.ci/replica.sh)\nhost replication postgres 127.0.0.1/32 trust\n' >> "$hba"
    replica_primary "SELECT pg_reload_conf()" >/dev/null
    sleep 1
    psql "host=127.0.0.1 port=5432 user=postgres dbname=replication replication=true" -XAtqc "IDENTIFY_SYSTEM" >/dev/null \
      || { echo "replica: the primary still refuses replication connections"; return 1; }
  fi

  # A free port from 5433 on (another checkout's CI may run one too).
  port=5433
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done

  # Slots of runs that died: inactive, and their data directory is gone.
  local stale id
  for stale in $(replica_primary "SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'ic\_ci\_replica\_%' AND NOT active"); do
    [ -d "/tmp/ic-ci-replica-${stale#ic_ci_replica_}" ] && continue
    echo "replica: dropping the slot $stale left by an earlier run"
    replica_primary "SELECT pg_drop_replication_slot('$stale')" >/dev/null || true
  done
  id=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
  replica_dir="/tmp/ic-ci-replica-$id"
  replica_slot="ic_ci_replica_$id"
  mkdir -m 700 "$replica_dir" || return 1
  [ "$(id -u)" = 0 ] && chown postgres: "$replica_dir"
  # -C -S: the slot is created with the backup and holds the WAL from its start; -R points the standby at it.
  replica_as_pg pg_basebackup -h 127.0.0.1 -p 5432 -U postgres -D "$replica_dir/data" -X stream -c fast -R -C -S "$replica_slot" \
    || { echo "replica: pg_basebackup failed"; return 1; }
  # Debian keeps the configuration outside the data directory: the standby gets its own. A hot
  # standby needs these at least as high as on its primary.
  {
    echo "port = $port"
    echo "listen_addresses = '127.0.0.1'"
    echo "unix_socket_directories = '$replica_dir'"
    echo "hot_standby = on"
    echo "hot_standby_feedback = on"
    echo "fsync = off"
    for setting in max_connections max_worker_processes max_wal_senders max_prepared_transactions max_locks_per_transaction; do
      echo "$setting = $(replica_primary "SHOW $setting")"
    done
  } > "$replica_dir/data/postgresql.conf"
  printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' > "$replica_dir/data/pg_hba.conf"
  : > "$replica_dir/data/pg_ident.conf"
  [ "$(id -u)" = 0 ] && chown postgres: "$replica_dir/data/postgresql.conf" "$replica_dir/data/pg_hba.conf" "$replica_dir/data/pg_ident.conf"
  replica_as_pg "$replica_bin/pg_ctl" -D "$replica_dir/data" -l "$replica_dir/server.log" -w -t 60 start >/dev/null \
    || { echo "replica: the standby did not start"; cat "$replica_dir/server.log"; return 1; }

  replica_url="postgresql://postgres@127.0.0.1:$port/postgres"
  local state=""
  for _ in $(seq 1 60); do
    state=$(psql "$replica_url" -XAtqc "SELECT pg_is_in_recovery()::text || ' ' || coalesce((SELECT status FROM pg_stat_wal_receiver), 'none')" 2>/dev/null)
    [ "$state" = "true streaming" ] && break
    sleep 1
  done
  [ "$state" = "true streaming" ] || { echo "replica: not streaming ($state)"; cat "$replica_dir/server.log"; return 1; }
  echo "replica: hot standby of 127.0.0.1:5432 streaming on 127.0.0.1:$port ($replica_dir)"
}

replica_stop() {
  [ -n "$replica_dir" ] || return 0
  if [ -f "$replica_dir/data/postmaster.pid" ]; then
    replica_as_pg "$replica_bin/pg_ctl" -D "$replica_dir/data" -m fast -w -t 60 stop >/dev/null || true
  fi
  # The slot would keep the primary's WAL for ever: it goes with the standby.
  if [ -n "$replica_slot" ]; then
    replica_primary "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$replica_slot'" >/dev/null || true
  fi
  rm -rf "$replica_dir"
  echo "replica: stopped, $replica_dir and the slot $replica_slot removed"
  replica_dir=""
  replica_slot=""
}

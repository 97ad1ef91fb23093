#!/bin/sh
# The stateful tutorial's database: Debian's PostgreSQL 15, as the primary or as a streaming standby.
#   PG_PRIMARY_POD   the pod (host) name of the primary, e.g. db-0; every other pod is a standby
#   PG_PRIMARY_HOST  how a standby reaches the primary, e.g. the Service db-primary
#   POSTGRES_PASSWORD, REPLICATION_PASSWORD   the superuser's and the replicator role's passwords
#   PGDATA           the data directory (default /var/lib/postgresql/data/pgdata, in the volume)
# An empty data directory is initialised (primary: initdb; standby: pg_basebackup from the primary);
# a directory that holds a database is used as it is, so a pod that comes back finds its data.
set -eu

bin=/usr/lib/postgresql/15/bin
data="${PGDATA:-/var/lib/postgresql/data/pgdata}"
me="$(hostname)"
primary="${PG_PRIMARY_POD:-$me}"

as_postgres() {
  HOME=/var/lib/postgresql setpriv --reuid=postgres --regid=postgres --init-groups "$@"
}

mkdir -p "$data" /run/postgresql
chown postgres:postgres "$data" /run/postgresql
chmod 700 "$data"

if [ ! -s "$data/PG_VERSION" ]; then
  if [ "$me" = "$primary" ]; then
    echo "[$me] primary: initdb in $data"
    pwfile="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    chown postgres "$pwfile"
    as_postgres "$bin/initdb" -D "$data" --username=postgres --pwfile="$pwfile" \
      --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    {
      echo "host replication replicator all scram-sha-256"
      echo "host all all all scram-sha-256"
    } >>"$data/pg_hba.conf"
    as_postgres "$bin/pg_ctl" -D "$data" -o "-c listen_addresses=''" -w start >/dev/null
    as_postgres "$bin/psql" -v ON_ERROR_STOP=1 -q -U postgres \
      -c "CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD '$REPLICATION_PASSWORD'"
    as_postgres "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  else
    host="${PG_PRIMARY_HOST:?a standby needs PG_PRIMARY_HOST}"
    until as_postgres "$bin/pg_isready" -q -h "$host" -p 5432; do
      echo "[$me] standby: waiting for the primary at $host:5432"
      sleep 2
    done
    echo "[$me] standby: pg_basebackup from $host"
    # -R writes standby.signal and primary_conninfo (with the password), so the server streams from the primary.
    PGPASSWORD="$REPLICATION_PASSWORD" as_postgres "$bin/pg_basebackup" -h "$host" -U replicator \
      -D "$data" -R -X stream --checkpoint=fast
  fi
fi

echo "[$me] starting postgres ($([ -f "$data/standby.signal" ] && echo standby || echo primary))"
# wal_keep_size: a standby away for a while (its pod rescheduled) still finds the WAL it missed.
exec setpriv --reuid=postgres --regid=postgres --init-groups env HOME=/var/lib/postgresql \
  "$bin/postgres" -D "$data" -c listen_addresses='*' -c wal_keep_size=256MB

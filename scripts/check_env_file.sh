#!/usr/bin/env bash
# Fails (exit 1) when the service's environment file and `zerolayer serve`
# disagree: a ZEROLAYER_* variable serve reads (its --help's "Env:" names)
# that the file does not list, or one the file lists that is no flag's
# (ZEROLAYER_LOG_LEVEL excepted: the logger reads it).
#   scripts/check_env_file.sh [ZEROLAYER_BIN] [ENV_FILE]
# Defaults: build/zerolayer and packaging/zerolayer.default; the package test
# runs it on the installed /usr/bin/zerolayer and /etc/default/zerolayer.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/zerolayer}"
file="${2:-packaging/zerolayer.default}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin" serve --help | grep -o 'Env:ZEROLAYER_[A-Z0-9_]*' | sed 's/^Env://' | sort -u >"$work/help_vars"
sed -n 's/^#\(ZEROLAYER_[A-Z0-9_]*\)=.*/\1/p' "$file" | sort -u >"$work/file_vars"
missing="$(comm -23 "$work/help_vars" "$work/file_vars")"
unknown="$(comm -13 "$work/help_vars" "$work/file_vars" | grep -vx ZEROLAYER_LOG_LEVEL || true)"
[ -z "$missing" ] || { echo "not in $file: $missing" >&2; exit 1; }
[ -z "$unknown" ] || { echo "in $file but no serve flag: $unknown" >&2; exit 1; }
echo "$file lists the $(wc -l <"$work/help_vars") variables serve reads"

#!/usr/bin/env bash
# Fails (exit 1, one file:line per hit) when a file of the repository names a
# fixed folder of some machine: /work/, /home/, /root/, /tmp/<name>, devenv or
# /opt/. Scripts take such paths from arguments or the environment, with
# defaults relative to the repository (build/..., ../shared, ${TMPDIR:-/tmp}
# through mktemp -d); documentation writes them as variables ($LCP_DIR,
# $TMPDIR, $ZL_SHARED_DIR, ...).
#
#   scripts/check_paths.sh           # exit 0: clean; 1: hits listed; 2: usage
#   scripts/check_paths.sh --list    # also print the hits the exceptions allow
#
# Checked: every file git tracks plus untracked files it does not ignore (so a
# new file is checked before it is added), text only (binary files are
# skipped), except the raw data under bench/results (*.jsonl, *.csv, *.json,
# *.log), which records what ran where. Further exceptions, each with its
# reason, are in EXCEPTIONS below; one that no longer matches anything is
# reported as a warning (exit status unchanged), so that the list stays short.
# Outside a git checkout (a source archive) it checks nothing and exits 0.
set -euo pipefail
list_allowed=0
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  --list) list_allowed=1 ;;
  "") ;;
  *) echo "usage: $0 [--list|--help]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check_paths: not a git checkout (no file list): nothing checked"
  exit 0
fi

PATTERN='/work/|/home/|/root/|/tmp/[A-Za-z]|devenv|/opt/'

# path glob (bash [[ == ]], * crosses /) | ERE the hit's line must match | reason
# shellcheck disable=SC2016  # the reasons name variables, unexpanded on purpose
EXCEPTIONS=(
  'scripts/check_paths.sh|.|this script spells out the patterns it looks for'
  'bench/gpu/run_on_device.sh|/opt/nvidia/nsight-compute|default of NSIGHT_COMPUTE_ROOT: where NVIDIA CUDA images install Nsight Compute, searched only after $NCU and PATH'
  'tests/model/hf_hub_test.cpp|/home/someone|a sample $HOME value the test sets and expects back'
  'scripts/golden/make_tokenizer_goldens.py|~/home/\.config|sample text of the tokenizer corpus (a path-like string to tokenize)'
  'tests/golden/tokenizer/*|~/home/\.config|the same corpus line in the tokenizer goldens made from it'
)

declare -A used=()
bad=0
allowed=0
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest#*:}
  ok=""
  for i in "${!EXCEPTIONS[@]}"; do
    IFS='|' read -r glob regex _ <<<"${EXCEPTIONS[$i]}"
    # shellcheck disable=SC2053  # $glob is a pattern on purpose
    if [[ $file == $glob ]] && grep -qE -- "$regex" <<<"$line"; then
      ok=$i
      used[$i]=1
      break
    fi
  done
  if [ -z "$ok" ]; then
    echo "$hit"
    bad=$((bad + 1))
  else
    allowed=$((allowed + 1))
    [ "$list_allowed" = 1 ] && echo "allowed ($(cut -d'|' -f3 <<<"${EXCEPTIONS[$ok]}")): $hit"
  fi
done < <(git ls-files -z --cached --others --exclude-standard |
           grep -zvE '^bench/results/.*\.(jsonl|csv|json|log)$' |
           xargs -0 -r grep -sIHnE -- "$PATTERN" || true)

for i in "${!EXCEPTIONS[@]}"; do
  [ -n "${used[$i]:-}" ] || echo "check_paths: warning: exception matches nothing: ${EXCEPTIONS[$i]%%|*}" >&2
done
if [ "$bad" -gt 0 ]; then
  echo "check_paths: $bad line(s) name a fixed machine folder (/work/, /home/, /root/, /tmp/<name>, devenv, /opt/):" \
       "take the path from an argument or the environment, or add an exception with its reason to $0" >&2
  exit 1
fi
echo "check_paths: ok ($allowed allowed by exceptions)"

#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ (ASan + UBSan + LeakSanitizer) for a
# set time on its corpus and reports, per target, executions and findings:
# one JSON line each ("fuzz: {...}"), then a table. Exits 1 on any finding.
#   bench/fuzz.sh                        # 600 s per target
#   bench/fuzz.sh --seconds 20           # what CI runs
#   bench/fuzz.sh --only chat_template_fuzz --seconds 3600
# Builds build-asan/ first (scripts/sanitize.sh's build; needs scripts/setup.sh
# to have run). The corpus of each target grows in $ZL_FUZZ_DIR/<target>/corpus
# (default build-asan/fuzz-work), seeded from fuzz/seeds/<name>/ (the target
# without _fuzz), from fuzz/make_seeds.py and from the chat templates in
# ../shared; findings
# (crash-*, leak-*, timeout-*, oom-*) land in $ZL_FUZZ_DIR/<target>/findings,
# and `build-asan/fuzz/<target> FILE` replays one.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=600
only=""
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    *) echo "usage: bench/fuzz.sh [--seconds N] [--only TARGET]" >&2; exit 2 ;;
  esac
done
scripts/sanitize.sh asan --configure-only
targets=(gguf_fuzz safetensors_fuzz tokenizer_json_fuzz chat_template_fuzz openai_request_fuzz shm_record_fuzz)
[ -n "$only" ] && targets=("$only")
cmake --build build-asan -j "$(nproc)" --target "${targets[@]}"

work="${ZL_FUZZ_DIR:-build-asan/fuzz-work}"
shared="${ZL_SHARED_DIR:-../shared}"
python3 fuzz/make_seeds.py "$work/generated"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LLVM_SYMBOLIZER_PATH="${LLVM_SYMBOLIZER_PATH:-/usr/lib/llvm-14/bin/llvm-symbolizer}"

declare -A max_len=([gguf_fuzz]=16384 [safetensors_fuzz]=4096 [tokenizer_json_fuzz]=32768
                    [chat_template_fuzz]=16384 [openai_request_fuzz]=8192 [shm_record_fuzz]=17000)
declare -A dict=([gguf_fuzz]=gguf [tokenizer_json_fuzz]=json [chat_template_fuzz]=jinja [openai_request_fuzz]=json)
failed=0
rows=()
for t in "${targets[@]}"; do
  dir="$work/$t"
  mkdir -p "$dir/corpus" "$dir/findings"
  seeds=()
  for s in "fuzz/seeds/${t%_fuzz}" "$work/generated/$t"; do [ -d "$s" ] && seeds+=("$s"); done
  if [ "$t" = chat_template_fuzz ] && [ -d "$shared/tokenizers/chat-templates" ]; then
    seeds+=("$shared/tokenizers/chat-templates")
  fi
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$t]}"
        -print_final_stats=1 -close_fd_mask=3 -artifact_prefix="$dir/findings/")
  [ -n "${dict[$t]:-}" ] && args+=(-dict="fuzz/dicts/${dict[$t]}.dict")
  set +e
  "build-asan/fuzz/$t" "${args[@]}" "$dir/corpus" "${seeds[@]}" >"$dir/last.log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/last.log" | tail -1)
  corpus=$(find "$dir/corpus" -type f | wc -l)
  findings=$(find "$dir/findings" -type f | wc -l)
  echo "fuzz: {\"target\": \"$t\", \"seconds\": $seconds, \"executions\": ${execs:-0}, \"corpus\": $corpus, \"findings\": $findings, \"exit\": $rc}"
  rows+=("$(printf '| %-20s | %12s | %8s | %8s | %4s |' "$t" "${execs:-0}" "$corpus" "$findings" "$rc")")
  if ((rc != 0 || findings > 0)); then
    failed=1
    echo "fuzz: $t found something; its log: $dir/last.log" >&2
    grep -E "ERROR|SUMMARY|runtime error|==[0-9]+==" "$dir/last.log" | head -20 >&2 || true
  fi
done
printf '| %-20s | %12s | %8s | %8s | %4s |\n' target executions corpus findings exit
echo "|----------------------|--------------|----------|----------|------|"
printf '%s\n' "${rows[@]}"
exit $failed

# Starting and stopping one engine at a time for the side-by-side benchmarks
# (bench/compare_llama_server.sh, bench/flat_latency.sh), which source this.
# They set ZL, GGUF, PORT, THREADS, LLAMA_SERVER, SLOTS, INPUT_LEN and
# OUTPUT_LEN first (and ZL_SERVE_ARGS, more `zerolayer serve` options, if
# any); start_engine leaves the server's PID in server_pid, and the EXIT
# trap stops it.

server_pid=
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}
trap stop_server EXIT

wait_healthy() {  # engine log
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then return 0; fi
    kill -0 "$server_pid" 2>/dev/null || { echo "$1 exited; see $2" >&2; return 1; }
    sleep 0.2
  done
  echo "$1 never became healthy" >&2
  return 1
}

start_engine() {  # engine log: starts it, writes its command line beside the log
  local cmd
  case "$1" in
    zerolayer)
      # shellcheck disable=SC2206  # ZL_SERVE_ARGS holds several options
      cmd=("$ZL" serve --model "$GGUF" --port "$PORT" --threads "$THREADS" --shm-name "" --served-model-name model
           ${ZL_SERVE_ARGS:-}) ;;
    zerolayer-prefill-first)  # the same, prompts first (README: --prefill-first-ms)
      # shellcheck disable=SC2206
      cmd=("$ZL" serve --model "$GGUF" --port "$PORT" --threads "$THREADS" --shm-name "" --served-model-name model
           --prefill-first-ms "${PREFILL_FIRST_MS:-500}" ${ZL_SERVE_ARGS:-}) ;;
    llama-server)
      # Context = slots x (prompt + output + slack): every slot can hold a request.
      cmd=("$LLAMA_SERVER" -m "$GGUF" --port "$PORT" -t "$THREADS" -tb "$THREADS" -np "$SLOTS"
           -c $((SLOTS * (INPUT_LEN * 2 + OUTPUT_LEN * 2 + 16))) --alias model) ;;
    *) echo "unknown engine $1" >&2; return 1 ;;
  esac
  printf "%q " "${cmd[@]}" > "${2%.log}.server-cmd"
  "${cmd[@]}" > "$2" 2>&1 &
  server_pid=$!
  wait_healthy "$1" "$2"
}

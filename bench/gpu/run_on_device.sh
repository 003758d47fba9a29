#!/usr/bin/env bash
# One call on the GPU machine (an H100/H200 with the CUDA 13 image): the gpu
# tests, the engine end to end (generate, and serve with NVML's counters in
# /metrics), the decode benchmark, and Hugging Face
# transformers' generate on a same-shape model as the anchor. Writes its
# results under $OUT (8 files) and prints a short summary last.
#
# Prepare here (no GPU needed):
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release    # nvcc must be found
#   ninja -C build zerolayer gpu_bench elementwise_gpu_test matmul_gpu_test \
#         attention_gpu_test sampling_gpu_test llama_cuda_gpu_test engine_batch_gpu_test
#   bench/gpu/pack_for_device.sh          # -> gpu-carry/ (binaries, libs, stories260K)
# Then one device call:
#   run(command="bash bench/gpu/run_on_device.sh", carry=["gpu-carry"], timeout_s=540)
#
# Carry list: gpu-carry/ only (~30-40 MiB; pack_for_device.sh refuses > 60 MiB).
# cudart is linked statically. cuBLASLt is not carried (~520 MB): the binaries
# need libcublasLt.so.13, found below in the image's CUDA install or in the
# nvidia-cublas wheel that torch ships. If the carried binaries cannot start
# (a library or glibc mismatch), gpu_tests.txt says so and the rest is skipped.
#
# Environment:
#   OUT            where the results go (default build/gpu-out under the
#                  repository root; the device machine sets its own $OUT)
#   NCU            Nsight Compute's ncu (default: ncu on PATH, else the first
#                  <version>/ncu under $NSIGHT_COMPUTE_ROOT, default
#                  /opt/nvidia/nsight-compute, where NVIDIA's CUDA images
#                  install it); none found: no profile
#   BATCHES CONTEXT STEPS BENCH_INVARIANT NCU_BATCHES   see their uses below
set -uo pipefail
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/../.."
OUT="${OUT:-build/gpu-out}"
mkdir -p "$OUT"
carry=gpu-carry
[ -d "$carry/bin" ] || { echo "no $carry/: run bench/gpu/pack_for_device.sh here and carry it" >&2; exit 2; }
BATCHES="${BATCHES:-1,8,64,256}"
CONTEXT="${CONTEXT:-128}"
STEPS="${STEPS:-64}"

# --- cuBLASLt: the image's CUDA, else the pip wheel torch uses.
cublas_dir=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
  [ -e "$d/libcublasLt.so.13" ] && { cublas_dir="$d"; break; }
done
if [ -z "$cublas_dir" ]; then
  found=$(find / -xdev -name 'libcublasLt.so.13*' -not -path '/proc/*' 2>/dev/null | head -1)
  [ -n "$found" ] && cublas_dir=$(dirname "$found")
fi
export LD_LIBRARY_PATH="$PWD/$carry/lib:${cublas_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ZEROLAYER_SHARED_DIR="$PWD/$carry/shared"
bin="$PWD/$carry/bin"

{
  date -u; uname -a; nvidia-smi; echo "cublasLt from: ${cublas_dir:-NOT FOUND}"
  ldd "$bin/zerolayer" | grep -E 'not found|cublas' || true
  ldconfig -p | grep -E 'nvidia-ml|libcuda\.' || true
  command -v compute-sanitizer nvcc python3 curl || true
} > "$OUT/nvidia_smi.txt" 2>&1

# --- 1. gpu tests (each CUDA kernel vs its CPU op; model logits vs CPU; stories260K greedy;
#        the engine's batch invariance and KV release on the device). A binary that fails is
#        run again under compute-sanitizer's memcheck, its report in gpu_tests.txt too.
: > "$OUT/gpu_tests.txt"
tests_failed=0
for t in elementwise matmul attention sampling llama_cuda engine_batch; do
  echo "=== ${t}_gpu_test" >> "$OUT/gpu_tests.txt"
  if ! timeout 120 "$bin/${t}_gpu_test" >> "$OUT/gpu_tests.txt" 2>&1; then
    tests_failed=$((tests_failed + 1))
    if command -v compute-sanitizer > /dev/null && [ "$t" != engine_batch ]; then
      echo "=== ${t}_gpu_test under compute-sanitizer" >> "$OUT/gpu_tests.txt"
      timeout 120 compute-sanitizer --tool memcheck --print-limit 20 "$bin/${t}_gpu_test" --gtest_brief=1 \
        >> "$OUT/gpu_tests.txt" 2>&1
    fi
  fi
done

# --- 2. the engine end to end: stories260K greedy text, CPU vs CUDA, and llama-1b tokens/s.
{
  for dev in cpu cuda:0; do
    echo "=== stories260K greedy on $dev"
    timeout 60 "$bin/zerolayer" generate --model "$ZEROLAYER_SHARED_DIR/models/stories260K.gguf" --device "$dev" \
      --prompt "Once upon a time" --max-new-tokens 64 --temperature 0 2>&1
    echo
  done
  echo "=== dummy:llama-1b on cuda:0, 256 new tokens"
  timeout 120 "$bin/zerolayer" generate --model dummy:llama-1b --device cuda:0 --max-seq-len 4096 \
    --prompt "hello" --max-new-tokens 256 --ignore-eos --temperature 0 2>&1 >/dev/null
} > "$OUT/generate.txt" 2>&1

# --- 3. serve on the device: /health, two bursts of 16 completions (cold, warm) and 64 longer
#        ones with /metrics read under load (NVML's zerolayer:gpu_* counters), then
#        `zerolayer monitor --once --json`.
{
  "$bin/zerolayer" serve --model dummy:llama-1b --device cuda:0 --port 8011 --max-seq-len 2048 &
  server=$!
  SERVER=$server timeout 120 python3 - <<'PY'
import json, os, sys, time, urllib.request, concurrent.futures as cf
base = "http://127.0.0.1:8011"
for _ in range(600):
    try:
        if urllib.request.urlopen(base + "/health", timeout=1).status == 200: break
    except Exception:
        if not os.path.exists(f"/proc/{os.environ['SERVER']}/status"): sys.exit("the server exited")
        time.sleep(0.1)
def one(i, max_tokens):
    body = json.dumps({"model": "dummy:llama-1b", "prompt": f"request {i}", "max_tokens": max_tokens,
                       "temperature": 0, "ignore_eos": True}).encode()
    req = urllib.request.Request(base + "/v1/completions", body, {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=60))
# Two bursts of 16 (the first pays one-time costs: cuBLASLt plans, graph capture), then 64
# longer requests with /metrics read 1 s in, under load (NVML samples over 1/6-1 s).
for name, n, max_tokens in (("cold", 16, 128), ("warm", 16, 128), ("load", 64, 512)):
    start = time.time()
    with cf.ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(one, i, max_tokens) for i in range(n)]
        if name == "load":
            time.sleep(1.0)
            metrics = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
        results = [f.result() for f in futures]
    took = time.time() - start
    tokens = sum(r["usage"]["completion_tokens"] for r in results)
    ttft = sorted(r["timings"]["ttft_ms"] for r in results)
    print(f"{name}: {n} requests: {tokens} tokens in {took:.2f} s ({tokens / took:.0f} tokens/s), "
          f"ttft ms min/median/max {ttft[0]:.1f}/{ttft[len(ttft) // 2]:.1f}/{ttft[-1]:.1f}")
print("timings of the last:", json.dumps(results[-1].get("timings")))
print("\n".join(l for l in metrics.splitlines() if "gpu" in l or "num_requests_running" in l))
PY
  echo "=== zerolayer monitor --once --json (gpu part)"
  timeout 10 "$bin/zerolayer" monitor --once --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: v for k, v in d.items() if "gpu" in k or k == "config"})[:3000])'
  kill -TERM $server; wait $server; echo "serve exit: $?"
} >> "$OUT/generate.txt" 2>&1

# --- 4. decode benchmark (+ HBM copy bandwidth in the same run), each GEMM shape alone,
#        then the same with --batch-invariant (its cost).
modes=("" --batch-invariant)
[ "${BENCH_INVARIANT-1}" = 0 ] && modes=("")  # BENCH_INVARIANT=0: the default mode only
for mode in "${modes[@]}"; do
  timeout 150 "$bin/gpu_bench" --model dummy:llama-1b --batches "$BATCHES" --context "$CONTEXT" --steps "$STEPS" \
    --gemm-shapes $mode >> "$OUT/gpu_bench.jsonl" 2>> "$OUT/gpu_tests.txt" ||
    echo "gpu_bench $mode failed (rc $?)" >> "$OUT/gpu_tests.txt"
done

# --- memcheck of the model and attention tests (bad accesses hide behind passing results).
if command -v compute-sanitizer > /dev/null; then
  for t in matmul attention llama_cuda; do
    echo "=== ${t}_gpu_test under compute-sanitizer memcheck" >> "$OUT/gpu_tests.txt"
    timeout 90 compute-sanitizer --tool memcheck --print-limit 20 "$bin/${t}_gpu_test" --gtest_brief=1 \
      --gtest_filter='-*Stories*' >> "$OUT/gpu_tests.txt" 2>&1
  done
fi

# --- per-kernel device time of decode steps at batch 1 and 256 (Nsight Compute, clocks as
#     found), for bench/gpu/kernel_times.py to split a step by kernel: 400 kernels of graph
#     replay, after the prefill and the first steps (--launch-skip).
ncu_bin="${NCU:-$(command -v ncu || ls "${NSIGHT_COMPUTE_ROOT:-/opt/nvidia/nsight-compute}"/*/ncu 2>/dev/null | head -1)}"
if [ -n "$ncu_bin" ]; then
  for b in ${NCU_BATCHES-1 256}; do  # NCU_BATCHES="" skips the profile
    skip=$(( b == 1 ? 400 : 2800 ))  # prefill: 1 pass of ~150 kernels at batch 1, 16 at 256
    echo "# batch $b" >> "$OUT/ncu.csv"
    timeout 120 "$ncu_bin" --clock-control none --graph-profiling node --metrics gpu__time_duration.sum --csv \
      --launch-skip $skip --launch-count 400 \
      "$bin/gpu_bench" --model dummy:llama-1b --batches $b --context "$CONTEXT" --steps 4 --copy-mib 64 \
      >> "$OUT/ncu.csv" 2>&1 || echo "ncu batch $b failed (rc $?)" >> "$OUT/ncu.csv"
  done
fi

# --- 5. the anchor: transformers generate on a same-shape random model.
timeout 180 python3 "$carry/hf_anchor.py" --batches "$BATCHES" --context "$CONTEXT" --steps "$STEPS" \
  > "$OUT/hf_anchor.jsonl" 2>> "$OUT/gpu_tests.txt" || echo "hf_anchor failed (rc $?)" >> "$OUT/gpu_tests.txt"

# --- summary (also the last lines of the reply).
{
  echo "tests: $(grep -hE '^\[  (PASSED|FAILED|SKIPPED) \]' "$OUT/gpu_tests.txt" | sort | uniq -c | tr '\n' ' ')  binaries failing: $tests_failed"
  grep -h "FAILED  \]" "$OUT/gpu_tests.txt" | head -10
  grep -h gpu_copy_bandwidth "$OUT/gpu_bench.jsonl"
  python3 - "$OUT/gpu_bench.jsonl" "$OUT/hf_anchor.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
hf = {r["batch"]: r for r in map(json.loads, open(sys.argv[2]))} if len(sys.argv) > 2 else {}
print("inv batch  ms/step: logits greedy queued  idle_ms: logits greedy  hbm(q)  tok/s greedy  hf_tok/s  ratio")
for r in (r for r in rows if r.get("bench") == "gpu_decode"):
    h = hf.get(r["batch"], {}).get("tokens_per_s", float("nan"))
    print(f'{"y" if r["batch_invariant"] else "n":3} {r["batch"]:5d}  {r["engine_ms_per_step"]:13.4f} {r["greedy_ms_per_step"]:6.4f}'
          f' {r["queued_ms_per_step"]:6.4f}  {r["gpu_idle_between_steps_ms"]:14.4f} {r["greedy_gpu_idle_between_steps_ms"]:6.4f}'
          f'  {r["hbm_fraction_queued"]:6.3f}  {r["tokens_per_s_greedy"]:12.1f}  {h:8.1f}  {r["tokens_per_s_greedy"] / h:5.2f}')
print("inv shape    tokens: ms (hbm fraction)")
gemm = {}
for r in (r for r in rows if r.get("bench") == "gpu_gemm"):
    gemm.setdefault((r["batch_invariant"], r["shape"]), []).append(f'{r["tokens"]}: {r["ms"]:.4f} ({r["hbm_fraction"]:.2f})')
for (inv, shape), cells in gemm.items():
    print(f'{"y" if inv else "n":3} {shape:8} ' + "  ".join(cells))
PY
  grep -h "time to first token" "$OUT/generate.txt"  # zerolayer generate: CPU, cuda:0, llama-1b
  grep -E "^(cold|warm|load):" "$OUT/generate.txt"; grep "^zerolayer:gpu" "$OUT/generate.txt"
} 2>&1 | tee "$OUT/summary.txt"

#!/usr/bin/env bash
# Gathers what bench/gpu/run_on_device.sh needs into gpu-carry/ (git-ignored),
# to be named in the device tool's `carry` list (one path, well under its
# 64 MiB limit). Run here after building (build/ with nvcc found):
#   ninja -C build zerolayer gpu_bench elementwise_gpu_test matmul_gpu_test \
#         attention_gpu_test sampling_gpu_test llama_cuda_gpu_test engine_batch_gpu_test
#   bench/gpu/pack_for_device.sh
# Contents:
#   gpu-carry/bin/    zerolayer, gpu_bench, the *_gpu_test binaries (cudart static inside)
#   gpu-carry/lib/    their shared libraries that a stock CUDA image may lack
#                     (sentencepiece, utf8proc, xxhash, pcre2, protobuf-lite, libstdc++ ...),
#                     everything ldd names except glibc, the driver and cuBLASLt
#   gpu-carry/shared/ stories260K.gguf and its README (tests read ZEROLAYER_SHARED_DIR)
# Not carried: libcublasLt.so.13 (~520 MB); run_on_device.sh finds the device's own.
# ZL_SHARED_DIR: the shared data folder stories260K comes from (default: shared/
# beside the repository, ../shared from its root).
set -euo pipefail
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/../.."
shared="${ZL_SHARED_DIR:-../shared}"
out=gpu-carry
bins=(build/zerolayer build/bench/gpu_bench)
for t in elementwise matmul attention sampling llama_cuda engine_batch; do bins+=("build/tests/${t}_gpu_test"); done
for b in "${bins[@]}"; do [ -x "$b" ] || { echo "missing $b: build it first" >&2; exit 1; }; done
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/shared/models"
cp "${bins[@]}" "$out/bin/"
strip --strip-unneeded "$out"/bin/*
# Shared libraries, minus glibc, the dynamic loader, the NVIDIA driver and cuBLASLt.
ldd "${bins[@]}" | awk '/=> \// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libcublasLt|libcublas)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
cp "$shared/models/stories260K.gguf" "$shared/models/README.md" "$out/shared/models/" 2>/dev/null || true
cp bench/gpu/hf_anchor.py "$out/"
du -sh "$out"; ls "$out/lib"
total=$(du -sb "$out" | cut -f1)
[ "$total" -lt $((60 << 20)) ] || { echo "gpu-carry is $total bytes: over the carry budget" >&2; exit 1; }

#!/usr/bin/env bash
# Dev-only: builds llama.cpp's llama-bench from the llama-cpp-python source
# distribution on PyPI (never committed here) and runs it beside our
# decode_bench on the same GGUF files, same thread count.
#
#   bench/run_llama_cpp_compare.sh build              # download + build into $LCP_DIR
#                                                     # (LLAMA_TARGETS="llama-server" for the server)
#   bench/run_llama_cpp_compare.sh run FILE.gguf ...  # llama-bench -p 512 -n 128 -t 2 -r 3 -o jsonl
#
# On a CPU that reports AMX, ggml's AMX matmul (which -march=native turns on)
# segfaulted at llama-server's warm-up on a 2-vCPU Xeon VM (2026-12-04), so
# there the build names the native instruction sets but AMX instead;
# LCP_AMX=1 keeps -march=native.
#
# Write the GGUF files first, e.g.
#   zerolayer convert --model dummy:llama-1b --quantization q4_0 --out build/l1b.q4_0.gguf
set -euo pipefail
LCP_DIR=${LCP_DIR:-build/lcp}
THREADS=${THREADS:-2}
LLAMA_TARGETS=${LLAMA_TARGETS:-llama-bench}
case "${1:-}" in
  build)
    mkdir -p "$LCP_DIR"
    if ! ls "$LCP_DIR"/llama_cpp_python-0.3.36.tar.gz >/dev/null 2>&1; then
      pip download --no-binary :all: --no-deps llama-cpp-python==0.3.36 -d "$LCP_DIR"
    fi
    if [ ! -d "$LCP_DIR/src" ]; then
      mkdir -p "$LCP_DIR/src" && tar -xzf "$LCP_DIR"/llama_cpp_python-0.3.36.tar.gz -C "$LCP_DIR/src" --strip-components=1
    fi
    isa=(-DGGML_NATIVE=ON)
    if [ "${LCP_AMX:-0}" != 1 ] && grep -qw amx_tile /proc/cpuinfo; then
      isa=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON
           -DGGML_AVX_VNNI=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON)
    fi
    cmake -S "$LCP_DIR/src/vendor/llama.cpp" -B "$LCP_DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      "${isa[@]}" -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_SERVER=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF
    cmake --build "$LCP_DIR/build" -j"${JOBS:-2}" --target $LLAMA_TARGETS
    ;;
  run)
    shift
    for f in "$@"; do
      "$LCP_DIR/build/bin/llama-bench" -m "$f" -p 512 -n 128 -t "$THREADS" -r "${REPS:-3}" -o jsonl
    done
    ;;
  *)
    echo "usage: $0 build | run FILE.gguf..." >&2
    exit 2
    ;;
esac

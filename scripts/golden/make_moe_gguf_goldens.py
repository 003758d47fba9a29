#!/usr/bin/env python3
"""Make mixture-of-experts GGUF files with llama.cpp's own converter, and
record what llama.cpp itself computes on them.

Oracle: llama.cpp's llama-server. The GGUF files are written by
`convert_hf_to_gguf.py` from the tiny random-weight checkpoints
tests/golden/logits/qwen3-moe and tests/golden/logits/mixtral (made by
make_logit_goldens.py), which gives llama.cpp's merged-experts tensors
(blk.N.ffn_{gate,up,down}_exps.weight, [experts, rows, cols]) and its
router (ffn_gate_inp). Each file is then served by llama-server (CPU, one
thread, f32 K/V cache) and asked, with /completion, for 16 greedy tokens
after an 8-token prompt (token ids, so no BOS is added; of 16 seeded
candidates, the one whose smallest top-1/top-2 margin over all four files
is largest) with the top-5
log-probabilities of each step (n_probs 5: log-softmax of the full logits
row, before sampling). ignore_eos keeps the 16 steps going: the token fed
back (greedy_ids) is the argmax over all ids but the end-of-text ones (1
and 2, given -inf bias), so a step's top1 may be 1 or 2 while its greedy
id is the best other one.

The JSON files have the fields tests/model/llamacpp_gguf_model_test.cpp
reads (the same as make_llamacpp_gguf_goldens.py's, which made the dense
families' files): gguf_file, vocab_size, prompt_ids, greedy_ids, and per
step top1, top5_ids, top5_logprobs, margin (top-1 minus top-2 log-prob).

NOTE on qwen3-moe: its checkpoint has norm_topk_prob false; the converter
writes no key for it and llama.cpp's qwen3moe always renormalises the top-k
weights. The GGUF therefore means the renormalised model (zerolayer reads
"qwen3moe" files the same way); transformers' golden of the checkpoint does
not apply to it.

NOTE on the vocab: the checkpoints ship no tokenizer; this script trains the
same 256-piece SentencePiece model as make_llamacpp_gguf_goldens.py and has
the converter write it (the Qwen3-MoE converter class only knows GPT-2 BPE
vocabs, so its set_vocab is pointed at the SentencePiece reader for this
run). Token ids are fed as ids; the vocab matters only to the loader.

Regenerate (from the repository root, CPU only, about a minute once
llama.cpp is built):

    # llama.cpp: the tree vendored in the llama-cpp-python 0.3.36 sdist,
    # built with its server (cmake -DLLAMA_BUILD_SERVER=ON; any build type
    # that gives bin/llama-server).
    # Python: the venv of make_logit_goldens.py plus
    #   pip install numpy sentencepiece
    LLAMA_CPP_SRC=<sdist>/vendor/llama.cpp LLAMA_SERVER=<build>/bin/llama-server \\
        .venv-golden/bin/python scripts/golden/make_moe_gguf_goldens.py

Written with llama.cpp ggml-org/llama.cpp@0c1e57098 (llama-cpp-python
0.3.36's vendored tree, its gguf-py), llama-server built Release (GGML_NATIVE),
torch 2.15.0, transformers 5.24.0, sentencepiece 0.2.3, Python 3.11.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_llamacpp_gguf_goldens as dense  # noqa: E402  (train_tokenizer)

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = ["qwen3-moe", "mixtral"]
OUTTYPES = ["f16", "q8_0"]
CANDIDATES = 16
STEPS = 16

# Runs the converter with Qwen3-MoE's vocab read as SentencePiece (see NOTE).
CONVERT = """
import sys
sys.path.insert(0, sys.argv[1])
sys.argv = [sys.argv[1] + "/convert_hf_to_gguf.py"] + sys.argv[2:]
import convert_hf_to_gguf
from conversion.qwen import Qwen3MoeModel
Qwen3MoeModel.set_vocab = lambda self: self._set_vocab_sentencepiece()
convert_hf_to_gguf.main()
"""


def convert(llama_src, ckpt_dir, tok_model, tmp_root, name, outtype, out_path):
    work = os.path.join(tmp_root, name)
    if not os.path.isdir(work):
        os.makedirs(work)
        for fn in os.listdir(ckpt_dir):
            if fn not in ("logits.f32", "golden.json"):
                os.symlink(os.path.abspath(os.path.join(ckpt_dir, fn)), os.path.join(work, fn))
        with open(os.path.join(work, "tokenizer.model"), "wb") as f:
            f.write(tok_model)
    cmd = [sys.executable, "-c", CONVERT, llama_src, work, "--outtype", outtype, "--outfile", out_path]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        raise RuntimeError(f"convert_hf_to_gguf.py failed for {name} {outtype}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def run_server(server, gguf, fn):
    port = free_port()
    proc = subprocess.Popen([server, "-m", gguf, "--port", str(port), "--host", "127.0.0.1", "-t", "1",
                             "-c", "128", "-np", "1", "-ctk", "f32", "-ctv", "f32", "-fa", "off",
                             "--no-warmup"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("llama-server did not come up")
        return fn(port)
    finally:
        proc.terminate()
        proc.wait()


def greedy_with_logprobs(port, prompt):
    out = post(port, "/completion", {"prompt": prompt, "n_predict": STEPS, "temperature": 0.0, "top_k": 1,
                                      "n_probs": 5, "post_sampling_probs": False, "cache_prompt": False,
                                      "ignore_eos": True})
    steps, greedy = [], []
    for p in out["completion_probabilities"]:
        top = p["top_logprobs"]
        ids = [int(t["id"]) for t in top]
        logprobs = [float(t["logprob"]) for t in top]
        greedy.append(int(p["id"]))
        steps.append({"top1": ids[0], "top5_ids": ids, "top5_logprobs": logprobs,
                      "margin": logprobs[0] - logprobs[1]})
    assert len(steps) == STEPS, len(steps)
    return greedy, steps


def prompt_candidate(seed):
    """8 ids in [3, 256), numpy's legacy generator (as make_llamacpp_gguf_goldens.py)."""
    return [int(x) for x in np.random.RandomState(seed).randint(3, 256, 8)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp-src", default=os.environ.get("LLAMA_CPP_SRC"))
    ap.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER"))
    ap.add_argument("--checkpoints", default=os.path.join(REPO_ROOT, "tests", "golden", "logits"))
    ap.add_argument("--out", default=os.path.join(REPO_ROOT, "tests", "golden", "llamacpp"))
    args = ap.parse_args()
    if not args.llama_cpp_src or not args.llama_server:
        ap.error("--llama-cpp-src and --llama-server (or LLAMA_CPP_SRC, LLAMA_SERVER) are required")
    tok = dense.train_tokenizer(os.path.join(REPO_ROOT, "tests", "golden", "tokenizer", "corpus.json"))
    files = [(name, t) for name in MODELS for t in OUTTYPES]
    with tempfile.TemporaryDirectory() as tmp:
        for name, t in files:
            convert(args.llama_cpp_src, os.path.join(args.checkpoints, name), tok, tmp, name, t,
                    os.path.join(args.out, f"{name}.{t}.gguf"))
    # runs[file][seed] = (greedy, steps) for every candidate prompt.
    runs = {}
    for name, t in files:
        gguf = os.path.join(args.out, f"{name}.{t}.gguf")
        runs[(name, t)] = run_server(args.llama_server, gguf, lambda port: [
            greedy_with_logprobs(port, prompt_candidate(seed)) for seed in range(CANDIDATES)])
    # The prompt whose smallest top-1/top-2 margin over all files and steps
    # is largest, so that no greedy id hinges on last-bit rounding.
    def min_margin(seed):
        return min(st["margin"] for f in files for st in runs[f][seed][1])
    best = max(range(CANDIDATES), key=min_margin)
    for name, t in files:
        greedy, steps = runs[(name, t)][best]
        doc = {
            "model": name, "outtype": t, "gguf_file": f"{name}.{t}.gguf", "vocab_size": 256,
            "prompt_ids": prompt_candidate(best), "greedy_ids": greedy, "steps": steps,
            "min_margin": min(s["margin"] for s in steps),
            "prompt_selection": {"candidates": CANDIDATES, "seed": best, "min_margin_all_files": min_margin(best)},
            "llama_cpp": {"commit": "0c1e57098", "tool": "llama-server /completion", "threads": 1,
                          "n_ctx": 128, "cache_type": "f32", "flash_attn": False, "ignore_eos": True,
                          "logprobs": "n_probs 5, post_sampling_probs false"},
            "tolerance": "see tests/model/llamacpp_gguf_model_test.cpp",
        }
        with open(os.path.join(args.out, f"{name}.{t}.json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(f"{name}.{t}: prompt {doc['prompt_ids']} greedy {greedy} min margin {doc['min_margin']:.4f}")


if __name__ == "__main__":
    main()

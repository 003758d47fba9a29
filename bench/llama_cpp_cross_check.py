#!/usr/bin/env python3
"""Cross-check zerolayer against llama.cpp on one GGUF file: for a few token-id
prompts, each engine's greedy continuation and its top-5 log-probabilities
after the prompt. One JSON line per prompt, then a summary line.

llama.cpp runs in-process through llama-cpp-python (logits_all, f32 logits);
zerolayer is `zerolayer serve` started on the file and asked over HTTP
(temperature 0, logprobs 5, ignore_eos). Random-weight models have flat
logits (top-5 within ~0.5 nats), so greedy paths part after a few tokens
wherever the engines round activations differently; the first step's top-5
set and log-probabilities are the sharper check of a weight format.

    $PYTHON bench/llama_cpp_cross_check.py FILE.gguf [--zerolayer BIN]

PYTHON: a Python with llama-cpp-python and numpy (e.g. .venv-golden/bin/python
as scripts/golden/make_generate_goldens.py builds it). FILE.gguf: any GGUF,
e.g. one `zerolayer convert --model dummy:llama-110m --quantization q4_k`
wrote. --zerolayer defaults to $ZEROLAYER_BIN, else build/zerolayer under the
repository root.
"""

import argparse
import json
import os
import subprocess
import time
import urllib.request

import numpy as np
from llama_cpp import Llama

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PROMPTS = [[1, 450, 4996, 17354, 1701, 432], [1, 319, 2217, 338, 263, 11203, 29889, 450],
           [1, 17366, 11203, 278, 17204, 975], [1, 9038, 2501, 263, 931, 29892, 727, 471]]


def llama_cpp_runs(path, threads, n_new):
    llm = Llama(model_path=path, n_ctx=256, n_threads=threads, logits_all=True, verbose=False)
    runs = []
    for prompt in PROMPTS:
        llm.reset()
        llm.eval(prompt)
        first = np.array(llm.scores[len(prompt) - 1], dtype=np.float64)
        greedy = []
        for _ in range(n_new):
            greedy.append(int(np.argmax(llm.scores[llm.n_tokens - 1])))
            llm.eval([greedy[-1]])
        logprobs = first - first.max() - np.log(np.exp(first - first.max()).sum())
        top = np.argsort(-first)[:5]
        runs.append({"greedy": greedy, "top5": {int(i): float(logprobs[i]) for i in top}})
    return runs


def zerolayer_runs(binary, path, threads, port, n_new, ref):
    """Our greedy ids and first-step top-5, keyed by id where llama.cpp's top-5
    names the piece (top_logprobs are keyed by text; others keep the piece)."""
    server = subprocess.Popen([binary, "serve", "--model", path, "--port", str(port), "--threads", str(threads),
                               "--shm-name", "", "--served-model-name", "m"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"

    def post(route, body):
        request = urllib.request.Request(base + route, json.dumps(body).encode(), {"Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(request).read())

    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/health")
                break
            except OSError:
                time.sleep(0.2)
        runs = []
        for prompt, r in zip(PROMPTS, ref):
            choice = post("/v1/completions", {"model": "m", "prompt": prompt, "max_tokens": n_new, "temperature": 0,
                                              "ignore_eos": True, "logprobs": 5, "return_token_ids": True})["choices"][0]
            id_of = {post("/detokenize", {"tokens": [i]})["prompt"]: i for i in r["top5"]}
            top = choice["logprobs"]["top_logprobs"][0]
            runs.append({"greedy": choice["token_ids"], "top5": {id_of.get(p, p): v for p, v in top.items()}})
        return runs
    finally:
        server.terminate()
        server.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf", help="the GGUF file both engines load")
    ap.add_argument("--zerolayer", default=os.environ.get("ZEROLAYER_BIN", os.path.join(REPO_ROOT, "build", "zerolayer")),
                    help="the zerolayer binary (default: $ZEROLAYER_BIN, else build/zerolayer under the repository root)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=18611)
    ap.add_argument("--new-tokens", type=int, default=16)
    a = ap.parse_args()
    ref = llama_cpp_runs(a.gguf, a.threads, a.new_tokens)
    ours = zerolayer_runs(a.zerolayer, a.gguf, a.threads, a.port, a.new_tokens, ref)
    same_top1 = overlap = 0
    worst = 0.0
    for prompt, r, o in zip(PROMPTS, ref, ours):
        common = set(r["top5"]) & set(o["top5"])
        diff = max((abs(r["top5"][t] - o["top5"][t]) for t in common), default=float("nan"))
        prefix = next((i for i, (x, y) in enumerate(zip(r["greedy"], o["greedy"])) if x != y), len(r["greedy"]))
        same_top1 += r["greedy"][0] == o["greedy"][0]
        overlap += len(common)
        worst = max(worst, diff)
        print(json.dumps({"prompt": prompt, "llama_cpp": r, "zerolayer": o, "top5_common": len(common),
                          "max_logprob_diff": round(diff, 4), "greedy_common_prefix": prefix}))
    print(json.dumps({"file": a.gguf, "prompts": len(PROMPTS), "same_first_token": same_top1,
                      "top5_common_of": [overlap, 5 * len(PROMPTS)], "max_logprob_diff": round(worst, 4)}))


if __name__ == "__main__":
    main()

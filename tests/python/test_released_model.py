"""The released Gemma 3 270M (Q4_K_M, scripts/fetch_models.sh) end to end,
greedy, against llama.cpp's continuations of the same file
(tests/golden/released, scripts/golden/make_released_goldens.py): through
`zerolayer generate`, and through `serve` with 16 requests at once (the 12
prompts, four of them twice).

Each continuation is llama.cpp's token for token up to its first other token,
and that one must be a near-tie of the file's own function (the golden's
float64 exact_* values put it within NEAR_TIE of llama.cpp's choice), as
tests/model/released_model_test.cpp explains; after it the two runs continue
different texts. The served ids of a prompt are the same in every request
that asked, and equal `generate`'s text, whatever ran beside them. Skipped,
naming the path, when the file is missing.
"""

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from test_http_server import BIN, Server

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "released" / "gemma-3-270m-q4_k_m.json"
NEAR_TIE = 0.3  # as released_model_test.cpp's kNearTie
MODEL = "gemma-3-270m"


def gemma_gguf():
    """The released file in the model cache fetch_models.sh fills; skips, naming the path, without it."""
    cache = os.environ.get("ZEROLAYER_MODEL_CACHE") or \
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zerolayer"
    path = Path(cache) / "gemma-3-270m-q4_k_m.gguf"
    if not path.is_file():
        pytest.skip(f"{path} is missing (scripts/fetch_models.sh fetches it)")
    return path


@pytest.fixture(scope="module")
def golden():
    return json.loads(GOLDEN.read_text())


def check_against_llama(ids, run):
    """Asserts the rule above; returns how many leading tokens are llama.cpp's."""
    llama = run["greedy_ids"]
    assert len(ids) == len(llama)
    for step, (ours, theirs) in enumerate(zip(ids, llama)):
        if ours == theirs:
            continue
        exact = {i: logit for i, logit in run["exact_top5"][step]}
        assert ours in exact, f"{run['text']!r} step {step}: {ours} is not among the exact function's 5 best"
        gap = abs(exact[ours] - run["exact_greedy_logit"][step])
        assert gap <= NEAR_TIE, f"{run['text']!r} step {step}: ours {ours}, llama.cpp's {theirs}, exact gap {gap}"
        return step
    return len(ids)


def test_serve_16_concurrent_requests_continue_as_llama_cpp(golden):
    gguf = gemma_gguf()
    runs = golden["runs"]
    requests = [runs[i % len(runs)] for i in range(16)]
    s = Server("--model", str(gguf), "--served-model-name", MODEL, "--kv-cache-dtype", "f32",
               "--kv-cache-memory", "256M", "--max-seq-len", "1024", "--max-num-seqs", "16")
    try:
        def complete(run):
            body = {"model": MODEL, "prompt": run["prompt_ids"], "max_tokens": golden["n_steps"], "temperature": 0,
                    "ignore_eos": True, "return_token_ids": True}
            status, _, data = s.request("POST", "/v1/completions", body, timeout=300)
            assert status == 200, data
            choice = json.loads(data)["choices"][0]
            return choice["token_ids"], choice["text"]

        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(complete, requests))
    finally:
        assert s.stop() == 0
    served = {}
    for run, answer in zip(requests, answers):
        assert served.setdefault(run["text"], answer) == answer, run["text"]
    identical = sum(check_against_llama(served[r["text"]][0], r) == len(r["greedy_ids"]) for r in runs)
    print(f"{identical} of {len(runs)} served continuations are llama.cpp's for all {golden['n_steps']} tokens")
    # `generate` gives the served text, every token (one prompt per process).
    for run in runs[:4]:
        out = subprocess.run([BIN, "generate", "--model", str(gguf), "--prompt", run["text"], "--max-new-tokens",
                              str(golden["n_steps"]), "--temperature", "0", "--ignore-eos", "--kv-cache-dtype", "f32",
                              "--threads", "2"], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout == run["text"] + served[run["text"]][1] + "\n"

#!/usr/bin/env python3
"""Greedy-generation goldens for stories260K.gguf from llama.cpp.

Oracle: llama.cpp through llama-cpp-python (0.3.36, which vendors and builds
llama.cpp from source). For each prompt: tokenize with add_bos=True (llama.cpp
does that for this SentencePiece model), evaluate the prompt, then 60 times
take the argmax of the last logits row and feed it back (pure greedy, no
sampler, no repeat penalty); stop early at EOS (the EOS id is then the last
entry of generated_ids). As a cross-check the same prompt is also run through
create_completion(temperature=0, top_k=1, repeat_penalty=1), which must give
the same tokens (asserted).

Output: tests/golden/generate/stories260K.json, a list of
    {"prompt", "prompt_ids" (BOS included), "generated_ids", "text"
     (detokenized generated_ids only, without the prompt), "stopped_at_eos",
     "first_step_top1_id", "first_step_top1_logit", "first_step_top5_ids",
     "min_top1_top2_margin" (smallest top-1 minus top-2 logit gap over the
     steps: how close greedy came to a tie), "min_margin_step"}

Regenerate (from the repository root; the llama-cpp-python build compiles
llama.cpp and takes 10-20 minutes on 2 cores):

    python3 -m venv .venv-golden
    CMAKE_BUILD_PARALLEL_LEVEL=2 \\
    CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_OPENMP=OFF" \\
        .venv-golden/bin/pip install llama-cpp-python==0.3.36 numpy
    .venv-golden/bin/python scripts/golden/make_generate_goldens.py [path/to/stories260K.gguf]

The model path defaults to $ZL_SHARED_DIR/models/stories260K.gguf, where
ZL_SHARED_DIR defaults to the folder shared/ beside the repository (../shared
from its root; the folder the tests read too).
"""

import json
import os
import sys

import llama_cpp
import numpy as np

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT_PATH = os.path.join(REPO_ROOT, "tests", "golden", "generate", "stories260K.json")
SHARED_DIR = os.environ.get("ZL_SHARED_DIR") or os.path.join(REPO_ROOT, "..", "shared")
DEFAULT_MODEL = os.path.join(SHARED_DIR, "models", "stories260K.gguf")
MAX_NEW_TOKENS = 60

PROMPTS = [
    "Once upon a time",
    "The little dog",
    "Lily and Tom went to the park.",
    "One day, a big",
    "Sue liked to",
    "There was a cat named",
]
EXPECTED_PREFIX = ("Once upon a time, there was a little girl named Lily. "
                   "She loved to play outside in the park.")


def last_logits(llm):
    ptr = llm._ctx.get_logits_ith(-1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


def greedy(llm, prompt_ids):
    llm.reset()
    llm.eval(prompt_ids)
    generated, first, margins = [], None, []
    for _ in range(MAX_NEW_TOKENS):
        logits = last_logits(llm)
        if first is None:
            first = logits
        top2 = np.sort(logits)[-2:]
        margins.append(float(top2[1] - top2[0]))
        token = int(np.argmax(logits))
        generated.append(token)
        if token == llm.token_eos():
            break
        llm.eval([token])
    return generated, first, margins


def completion_ids(llm, prompt):
    out = llm.create_completion(prompt, max_tokens=MAX_NEW_TOKENS, temperature=0.0, top_k=1,
                                top_p=1.0, min_p=0.0, repeat_penalty=1.0, seed=0)
    return out["choices"][0]["text"]


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    model_path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL
    llm = llama_cpp.Llama(model_path=model_path, n_ctx=128, seed=0, logits_all=False,
                          verbose=False, n_threads=1, n_threads_batch=1)
    results = []
    for prompt in PROMPTS:
        prompt_ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
        assert prompt_ids[0] == llm.token_bos()
        assert len(prompt_ids) + MAX_NEW_TOKENS <= 128, "must fit the model's 128-token context"
        generated, first, margins = greedy(llm, prompt_ids)
        text = llm.detokenize(generated).decode("utf-8", errors="replace")
        top5 = [int(i) for i in np.argsort(-first, kind="stable")[:5]]

        # Cross-check against llama.cpp's own sampler chain at temperature 0.
        completion = completion_ids(llm, prompt)
        eos_free = [t for t in generated if t != llm.token_eos()]
        assert completion == llm.detokenize(eos_free).decode("utf-8", errors="replace"), (
            prompt, completion, text)

        results.append({
            "prompt": prompt,
            "prompt_ids": [int(i) for i in prompt_ids],
            "generated_ids": generated,
            "text": text,
            "stopped_at_eos": generated[-1] == llm.token_eos(),
            "first_step_top1_id": top5[0],
            "first_step_top1_logit": float(first[top5[0]]),
            "first_step_top5_ids": top5,
            "min_top1_top2_margin": min(margins),
            "min_margin_step": int(np.argmin(margins)),
        })
        print(f"{prompt!r} -> {prompt_ids}\n    {text!r}")

    full = PROMPTS[0] + results[0]["text"]
    assert full.startswith(EXPECTED_PREFIX), full

    os.makedirs(os.path.dirname(OUT_PATH), exist_ok=True)
    with open(OUT_PATH, "w") as f:
        f.write("[\n")
        for i, r in enumerate(results):
            # One field per line, lists on one line: small diffs on regeneration.
            fields = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in r.items())
            f.write(" {\n" + fields + "\n }" + ("," if i + 1 < len(results) else "") + "\n")
        f.write("]\n")
    json.load(open(OUT_PATH))  # well-formed
    print(f"wrote {OUT_PATH} (llama-cpp-python {llama_cpp.__version__})")


if __name__ == "__main__":
    main()

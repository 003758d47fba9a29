#!/usr/bin/env python3
"""Token ids of strings full of special-token text (<s>, </s>, [INST],
[/INST], [TOOL_CALLS]) and spaces around them, as each model's own
tokenizer.json gives them with add_special_tokens=True: the goldens for
loading the same model's tokenizer.model (SentencePiece) with special-token
parsing (tests/tokenizer/spm_special_model_test.cpp).

Oracle: Hugging Face tokenizers (the fast tokenizer built from tokenizer.json,
through transformers' AutoTokenizer). Strings: 200 per model, drawn with a
fixed seed from a list of pieces (special tokens, spaces, newlines, words).

Regenerate (from the repository root; ../shared/tokenizers holds the files):

    .venv-golden/bin/python scripts/golden/make_spm_special_goldens.py [--shared DIR]

Written with transformers 5.24.0 and tokenizers 0.23.
Output: tests/golden/tokenizer/<model>.special.jsonl, one {"text", "ids"} per line.
"""

import argparse
import json
import os
import random

from transformers import AutoTokenizer

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Llama 2's tokenizer.json (merges as strings) does not load in tokenizers
# 0.23, so only Mistral v0.3 is here; Llama 2's tokenizer.model is covered
# by the sentencepiece goldens.
MODELS = ["mistral-7b-instruct-v0.3"]
PIECES = ["[INST]", "[/INST]", "<s>", "</s>", "[TOOL_CALLS]", " ", "  ", "hello", "Hi there", "\n", "x",
          "  y ", " [INST]", "ü", "12", "<s> ", " </s>", "\t", "Ⅻ"]
NUM_STRINGS = 200


def strings(seed):
    rng = random.Random(seed)
    out = []
    seen = set()
    while len(out) < NUM_STRINGS:
        s = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.path.join(REPO_ROOT, "..", "shared"))
    args = ap.parse_args()
    for i, name in enumerate(MODELS):
        tok = AutoTokenizer.from_pretrained(os.path.join(args.shared, "tokenizers", name))
        path = os.path.join(REPO_ROOT, "tests", "golden", "tokenizer", name + ".special.jsonl")
        with open(path, "w") as f:
            for s in strings(1000 + i):
                ids = tok(s, add_special_tokens=True)["input_ids"]
                f.write(json.dumps({"text": s, "ids": ids}, ensure_ascii=False) + "\n")
        print("wrote", path)


if __name__ == "__main__":
    main()

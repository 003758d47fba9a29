#!/usr/bin/env python3
"""A Qwen3-MoE GGUF of dummy:moe-small's shape, made by llama.cpp's own tools,
for speed comparisons of mixture-of-experts decoding beside llama-bench
(bench/moe_speed.sh runs it).

A random-weight Qwen3MoeForCausalLM (transformers; seeded, std 0.02 as its
initialiser draws: the weights only need the shape) of
    vocab 32000, hidden 1024, 8 layers, 16 heads / 4 KV heads of 64,
    64 experts of width 384, 8 per token, renormalised
(Qwen3-30B-A3B's routing, 128 experts of 768, 8 per token, at half the
width and a sixth of the layers: 0.66B parameters, 0.1B active) is saved
as bf16 safetensors with the SentencePiece tokenizer.model given
(--tokenizer; default ../shared/tokenizers/llama-2/tokenizer.model, 32000
pieces), converted by convert_hf_to_gguf.py to F16 (the converter's
Qwen3-MoE class reads GPT-2 vocabs only; it is pointed at its SentencePiece
reader for this run), then llama-quantize writes each --types preset.

    LLAMA_CPP_SRC=<sdist>/vendor/llama.cpp LLAMA_QUANTIZE=<build>/bin/llama-quantize \\
        python bench/make_moe_gguf.py [--out build/moe_gguf] [--types Q8_0,Q4_K_M]

Python needs torch, transformers, safetensors, sentencepiece, numpy (the
golden scripts' venv). Files already there are reused.
"""

import argparse
import os
import subprocess
import sys

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "scripts", "golden"))
from make_moe_gguf_goldens import CONVERT  # noqa: E402  (the converter run with SentencePiece for Qwen3-MoE)

SHAPE = dict(vocab_size=32000, hidden_size=1024, num_hidden_layers=8, num_attention_heads=16,
             num_key_value_heads=4, head_dim=64, intermediate_size=3072, max_position_embeddings=4096,
             num_experts=64, num_experts_per_tok=8, moe_intermediate_size=384, norm_topk_prob=True,
             rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, rms_norm_eps=1e-6,
             tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)


def make_checkpoint(folder, tokenizer):
    import shutil
    import torch
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    torch.manual_seed(2026)
    model = Qwen3MoeForCausalLM(Qwen3MoeConfig(**SHAPE)).to(torch.bfloat16)
    model.save_pretrained(folder)
    shutil.copy(tokenizer, os.path.join(folder, "tokenizer.model"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO_ROOT, "build", "moe_gguf"))
    ap.add_argument("--types", default="Q8_0,Q4_K_M")
    ap.add_argument("--tokenizer", default=os.path.join(
        os.environ.get("ZL_SHARED_DIR", os.path.join(REPO_ROOT, "..", "shared")), "tokenizers", "llama-2",
        "tokenizer.model"))
    ap.add_argument("--llama-cpp-src", default=os.environ.get("LLAMA_CPP_SRC"))
    ap.add_argument("--llama-quantize", default=os.environ.get("LLAMA_QUANTIZE"))
    args = ap.parse_args()
    if not args.llama_cpp_src or not args.llama_quantize:
        ap.error("--llama-cpp-src and --llama-quantize (or LLAMA_CPP_SRC, LLAMA_QUANTIZE) are required")
    os.makedirs(args.out, exist_ok=True)
    ckpt = os.path.join(args.out, "moe-small-hf")
    if not os.path.isdir(ckpt):
        make_checkpoint(ckpt, args.tokenizer)
    f16 = os.path.join(args.out, "moe-small.F16.gguf")
    if not os.path.exists(f16):
        subprocess.run([sys.executable, "-c", CONVERT, args.llama_cpp_src, ckpt, "--outtype", "f16",
                        "--outfile", f16], check=True, stdout=subprocess.DEVNULL)
    for t in args.types.split(","):
        out = os.path.join(args.out, f"moe-small.{t}.gguf")
        if not os.path.exists(out):
            with open(out + ".quantize.log", "w") as log:
                subprocess.run([args.llama_quantize, f16, out, t], check=True, stdout=log, stderr=log)
        print(out)


if __name__ == "__main__":
    main()

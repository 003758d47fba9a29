"""Hugging Face transformers' generate on a randomly initialised Llama of the
same shape as zerolayer's dummy:llama-1b (Llama-3.2-1B: vocab 128256, hidden
2048, 16 layers, 32 heads, 8 kv heads, intermediate 8192, tied embeddings,
rope theta 500000 with llama3 scaling), bf16 on the GPU, greedy, as the
anchor for bench/gpu_bench. Prints one JSON line per batch size:
decode ms per step and tokens/s, with prefill timed separately and
subtracted (generate of 1 new token vs of 1 + steps).

Usage: python3 hf_anchor.py [--batches 1,8,64,256] [--context 128] [--steps 64]
"""
import argparse
import json
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def timed_generate(model, ids, new_tokens):
    torch.cuda.synchronize()
    start = time.perf_counter()
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                   min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="1,8,64,256")
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--steps", type=int, default=64)
    args = parser.parse_args()
    config = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                         rope_theta=500000.0, tie_word_embeddings=True, rms_norm_eps=1e-5,
                         rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    for batch in [int(b) for b in args.batches.split(",")]:
        ids = torch.randint(3, config.vocab_size, (batch, args.context), device="cuda")
        with torch.inference_mode():
            timed_generate(model, ids, 2)  # warm-up
            prefill = min(timed_generate(model, ids, 1) for _ in range(2))
            total = min(timed_generate(model, ids, 1 + args.steps) for _ in range(2))
        ms_per_step = (total - prefill) * 1e3 / args.steps
        print(json.dumps({"bench": "hf_generate", "batch": batch, "context": args.context, "steps": args.steps,
                          "transformers": __import__("transformers").__version__, "torch": torch.__version__,
                          "ms_per_step": round(ms_per_step, 4),
                          "tokens_per_s": round(batch * 1e3 / ms_per_step, 1)}), flush=True)


if __name__ == "__main__":
    main()

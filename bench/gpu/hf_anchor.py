"""Hugging Face transformers' generate on a randomly initialised Llama of the
same shape as zerolayer's dummy:llama-1b (Llama-3.2-1B: vocab 128256, hidden
2048, 16 layers, 32 heads, 8 kv heads, intermediate 8192, tied embeddings;
rope settings are left at their defaults, as they cost the same and their
config keys differ across transformers versions), bf16 on the GPU, greedy, as the
anchor for bench/gpu_bench. Prints one JSON line per batch size:
decode ms per step and tokens/s, with prefill timed separately and
subtracted (generate of 1 new token vs of 1 + steps).

Usage: python3 hf_anchor.py [--batches 1,8,64,256] [--context 128] [--steps 64] [--device cuda]
"""
import argparse
import json
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed_generate(model, ids, new_tokens):
    sync(ids.device.type)
    start = time.perf_counter()
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                         min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
    sync(ids.device.type)
    assert out.shape[1] == ids.shape[1] + new_tokens, out.shape
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="1,8,64,256")
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--device", default="cuda", help="cpu: a smoke test of this script only")
    args = parser.parse_args()
    config = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                         tie_word_embeddings=True, rms_norm_eps=1e-5)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(args.device):  # initialise on the GPU: seconds, not a minute of CPU init
        model = LlamaForCausalLM(config).eval()
    for batch in [int(b) for b in args.batches.split(",")]:
        ids = torch.randint(3, config.vocab_size, (batch, args.context), device=args.device)
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

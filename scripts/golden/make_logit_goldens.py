#!/usr/bin/env python3
"""Make tiny random-weight Hugging Face checkpoints and their golden logits.

Oracle: Hugging Face transformers (eager attention, float32 compute). The C++
model tests load each checkpoint folder, prefill the first `num_prefill`
tokens of `token_ids` in one batch, decode the rest one token at a time, and
compare every logits row against `logits.f32`.

Regenerate (from the repository root; CPU only, ~1 minute):

    python3 -m venv .venv-golden
    .venv-golden/bin/pip install torch transformers safetensors
    .venv-golden/bin/python scripts/golden/make_logit_goldens.py

Written with torch 2.15.0 and transformers 5.24.0. Outputs are seeded and
deterministic for a given torch version; other versions may change the
random weights (and so every byte), which is fine: the goldens are
self-consistent, regenerate them all together.

Output, one folder per model under tests/golden/logits/<name>/:
    config.json, generation_config.json      as save_pretrained writes them
                                             (see CONFIG FORMAT below)
    model.safetensors                        or model-0000k-of-0000n.safetensors
                                             + model.safetensors.index.json
    logits.f32    raw little-endian float32, shape [48, vocab]; row t holds
                  the logits after consuming token_ids[0..t]
    golden.json   token ids, shapes, tolerance, versions

CONFIG FORMAT. transformers 5 serializes RoPE settings as one
"rope_parameters" dict ({"rope_type", "rope_theta", ...}), whereas
checkpoints written by transformers 4 (most of the Hub: Llama 3, Qwen 2.5,
Mistral) carry top-level "rope_theta" plus "rope_scaling". The C++ loader
must read both, so the models marked config_format="legacy" below have their
config.json rewritten to the transformers-4 layout after saving; the golden
logits are always computed from the model re-loaded from the folder on disk,
so transformers itself vouches that the rewritten config means the same model.

Weights: normal(0, 0.2) for matrices (std 0.02 gives nearly flat logits),
1 + normal(0, 0.1) for RMSNorm weights, normal(0, 0.2) for biases.
"""

import json
import math
import os
import re
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local; never wait on the network

import torch
import transformers
from transformers import (
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    Phi3Config,
    Phi3ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
)

torch.set_num_threads(1)

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT_ROOT = os.path.join(REPO_ROOT, "tests", "golden", "logits")

VOCAB = 256
SEQ_LEN = 48
NUM_PREFILL = 32
REL_TOL = 1e-4          # tolerance stated in golden.json for the C++ test
SELF_CHECK_REL = 1e-5   # incremental (KV cache) vs one-shot forward, here

COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=256,
    bos_token_id=0,
    eos_token_id=[1, 2],
    hidden_act="silu",
)

# LLAMA3_* are picked so the 8 rotary frequencies of a 16-wide head land in
# all three llama3 regions; main() prints the classification.
LLAMA3_THETA = 500.0
LLAMA3_ORIG_CTX = 200

MODELS = [
    dict(
        name="llama-gqa-tied", seed=1001, cls=LlamaForCausalLM, cfg_cls=LlamaConfig,
        cfg=dict(num_key_value_heads=2, tie_word_embeddings=True, rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        save_dtype=torch.float32, config_format="legacy", max_shard_size=None),
    dict(
        name="llama3-rope", seed=1002, cls=LlamaForCausalLM, cfg_cls=LlamaConfig,
        cfg=dict(num_key_value_heads=4, tie_word_embeddings=False, attention_bias=False,
                 rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "llama3", "rope_theta": LLAMA3_THETA,
                                  "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": LLAMA3_ORIG_CTX}),
        save_dtype=torch.float32, config_format="legacy", max_shard_size=None),
    dict(
        name="qwen2-bias", seed=1003, cls=Qwen2ForCausalLM, cfg_cls=Qwen2Config,
        cfg=dict(num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-6,
                 use_sliding_window=False, sliding_window=None, max_window_layers=2,
                 rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
        save_dtype=torch.float32, config_format="legacy", max_shard_size=None),
    dict(
        name="mistral", seed=1004, cls=MistralForCausalLM, cfg_cls=MistralConfig,
        cfg=dict(num_key_value_heads=1, tie_word_embeddings=False, rms_norm_eps=1e-5,
                 sliding_window=None,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        save_dtype=torch.float32, config_format="legacy", max_shard_size=None),
    dict(
        name="llama-linear-rope-bf16-sharded", seed=1005, cls=LlamaForCausalLM,
        cfg_cls=LlamaConfig,
        cfg=dict(num_key_value_heads=2, head_dim=32, tie_word_embeddings=False,
                 rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "linear", "factor": 2.0,
                                  "rope_theta": 10000.0}),
        save_dtype=torch.bfloat16, config_format="v5", max_shard_size="100KB"),
    dict(
        name="llama-f16", seed=1006, cls=LlamaForCausalLM, cfg_cls=LlamaConfig,
        cfg=dict(num_key_value_heads=2, tie_word_embeddings=True, rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        save_dtype=torch.float16, config_format="v5", max_shard_size=None),
    # attention_bias puts biases on q, k, v and o (o_proj's was once dropped).
    dict(
        name="llama-attn-bias", seed=1007, cls=LlamaForCausalLM, cfg_cls=LlamaConfig,
        cfg=dict(num_key_value_heads=2, tie_word_embeddings=False, attention_bias=True,
                 rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        save_dtype=torch.float32, config_format="legacy", max_shard_size=None),
    # Sliding windows shorter than the 32-token prefill and the 48 tokens, and
    # not a multiple of the C++ test's 16-token blocks.
    dict(
        name="mistral-swa", seed=1008, cls=MistralForCausalLM, cfg_cls=MistralConfig,
        cfg=dict(num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5,
                 sliding_window=12,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        save_dtype=torch.float32, config_format="legacy", max_shard_size=None),
    # A transformers-4 file: no layer_types, so layers from max_window_layers on slide.
    dict(
        name="qwen2-swa", seed=1009, cls=Qwen2ForCausalLM, cfg_cls=Qwen2Config,
        cfg=dict(num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-6,
                 use_sliding_window=True, sliding_window=10, max_window_layers=1,
                 rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
        save_dtype=torch.float32, config_format="legacy", drop_layer_types=True,
        max_shard_size=None),
    dict(
        name="qwen3", seed=1010, cls=Qwen3ForCausalLM, cfg_cls=Qwen3Config,
        cfg=dict(num_key_value_heads=2, head_dim=32, tie_word_embeddings=True,
                 rms_norm_eps=1e-6, use_sliding_window=False,
                 rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
        save_dtype=torch.float32, config_format="v5", max_shard_size=None),
    # transformers 5 lists the layer kinds: the first layer slides, the second not.
    dict(
        name="qwen3-bias-swa", seed=1011, cls=Qwen3ForCausalLM, cfg_cls=Qwen3Config,
        cfg=dict(num_key_value_heads=1, tie_word_embeddings=False, attention_bias=True,
                 rms_norm_eps=1e-6, use_sliding_window=True, sliding_window=20,
                 layer_types=["sliding_attention", "full_attention"],
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        save_dtype=torch.float32, config_format="v5", max_shard_size=None),
    # Gemma 3: 3 layers, two windowed (window 8, local rope base 50) and one
    # global (base 1000, linear scaling 2), query_pre_attn_scalar != head_dim,
    # q/k norms, final soft-capping.
    dict(
        name="gemma3", seed=1012, cls=Gemma3ForCausalLM, cfg_cls=Gemma3TextConfig,
        cfg=dict(num_hidden_layers=3, num_key_value_heads=1, head_dim=32, tie_word_embeddings=True,
                 rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
                 query_pre_attn_scalar=24, sliding_window=8, final_logit_softcapping=15.0,
                 layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                 rope_parameters={
                     "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000.0},
                     "sliding_attention": {"rope_type": "default", "rope_theta": 50.0}}),
        save_dtype=torch.float32, config_format="v5", max_shard_size=None),
    # The same recipe as transformers 4 wrote it (rope_theta, rope_scaling,
    # rope_local_base_freq, sliding_window_pattern, no layer_types), untied.
    dict(
        name="gemma3-legacy", seed=1013, cls=Gemma3ForCausalLM, cfg_cls=Gemma3TextConfig,
        cfg=dict(num_hidden_layers=3, num_key_value_heads=2, head_dim=16, tie_word_embeddings=False,
                 rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
                 query_pre_attn_scalar=16, sliding_window=6, sliding_window_pattern=3,
                 layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                 rope_parameters={
                     "full_attention": {"rope_type": "default", "rope_theta": 10000.0},
                     "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}}),
        save_dtype=torch.float32, config_format="gemma3-legacy", max_shard_size=None),
    # Gemma 2: every other layer windowed, soft-capped attention scores and logits.
    dict(
        name="gemma2", seed=1014, cls=Gemma2ForCausalLM, cfg_cls=Gemma2Config,
        cfg=dict(num_hidden_layers=3, num_key_value_heads=2, head_dim=16, tie_word_embeddings=True,
                 rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
                 query_pre_attn_scalar=16, sliding_window=8, attn_logit_softcapping=5.0,
                 final_logit_softcapping=4.0,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        save_dtype=torch.float32, config_format="v5", max_shard_size=None),
    # Phi-3: fused qkv and gate_up, partial rotary (0.75 of 16 = 12 values),
    # LongRoPE with original context 64 of 256 (attention factor
    # sqrt(1 + ln 4 / ln 64)). 48 tokens stay within 64: transformers uses the
    # short factors; the C++ test runs with max_seq_len 64 (golden.json), so
    # that it does too. Written as transformers 4 did (rope_scaling type "su").
    dict(
        name="phi3-longrope-short", seed=1015, cls=Phi3ForCausalLM, cfg_cls=Phi3Config,
        cfg=dict(num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5,
                 original_max_position_embeddings=64, pad_token_id=None,
                 rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                  "partial_rotary_factor": 0.75,
                                  "original_max_position_embeddings": 64,
                                  "short_factor": [1.0, 1.3, 1.7, 2.2, 3.0, 4.1],
                                  "long_factor": [1.1, 2.0, 3.5, 5.0, 8.0, 12.0]}),
        save_dtype=torch.float32, config_format="phi3-legacy", max_shard_size=None,
        test_max_seq_len=64),
    # Past the original context (32 < 48 tokens): the long factors, which the
    # C++ side uses for every position when max_seq_len (256) exceeds 32, as
    # llama.cpp does. transformers switches factors within a sequence (the
    # prefill's keys keep the short ones), so the golden is its one-shot
    # forward of all 48 tokens, and the incremental self-check does not apply.
    dict(
        name="phi3-longrope-long", seed=1016, cls=Phi3ForCausalLM, cfg_cls=Phi3Config,
        cfg=dict(num_key_value_heads=4, tie_word_embeddings=False, rms_norm_eps=1e-5,
                 original_max_position_embeddings=32, pad_token_id=None,
                 rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                  "partial_rotary_factor": 1.0,
                                  "original_max_position_embeddings": 32,
                                  "short_factor": [1.0, 1.1, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0],
                                  "long_factor": [1.0, 1.5, 2.5, 4.0, 6.0, 9.0, 13.0, 20.0]}),
        save_dtype=torch.float32, config_format="v5", max_shard_size=None,
        incremental_differs=True),
    # Mixture of experts. Qwen3-MoE: 8 experts of width 32, top 3 without
    # renormalisation (norm_topk_prob false), q/k norms. Written as the Hub's
    # files (num_experts; transformers 5 writes num_local_experts).
    dict(
        name="qwen3-moe", seed=1017, cls=Qwen3MoeForCausalLM, cfg_cls=Qwen3MoeConfig,
        cfg=dict(num_key_value_heads=2, head_dim=16, tie_word_embeddings=False, rms_norm_eps=1e-6,
                 num_experts=8, num_experts_per_tok=3, moe_intermediate_size=32, norm_topk_prob=False,
                 use_sliding_window=False,
                 rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
        save_dtype=torch.float32, config_format="hub-moe", max_shard_size=None),
    # Mixtral: 4 experts of intermediate_size, top 2, renormalised (always);
    # transformers-4 config layout.
    dict(
        name="mixtral", seed=1018, cls=MixtralForCausalLM, cfg_cls=MixtralConfig,
        cfg=dict(num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5,
                 num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
                 rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
        save_dtype=torch.float32, config_format="legacy", max_shard_size=None),
]


def randomize_(model, seed):
    """Overwrite every parameter with seeded values that give lively logits."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * noise)
            else:  # matrices, embeddings and biases
                p.copy_(0.2 * noise)


def rewrite_config(path, edit):
    """Load config.json, let edit(cfg) change it in place, write it back."""
    with open(path) as f:
        cfg = json.load(f)
    edit(cfg)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def to_legacy_config(path):
    """Rewrite config.json from transformers-5 rope_parameters to the
    transformers-4 rope_theta + rope_scaling layout."""
    def edit(cfg):
        rope = dict(cfg.pop("rope_parameters"))
        cfg["rope_theta"] = rope.pop("rope_theta")
        cfg["rope_scaling"] = None if rope.get("rope_type", "default") == "default" else rope
    rewrite_config(path, edit)


def to_gemma3_legacy_config(path, pattern):
    """Rewrite a Gemma 3 config.json from transformers 5's per-layer-kind
    rope_parameters and layer_types to transformers 4's rope_theta,
    rope_scaling, rope_local_base_freq and sliding_window_pattern."""
    def edit(cfg):
        rope = cfg.pop("rope_parameters")
        full = dict(rope["full_attention"])
        cfg["rope_theta"] = full.pop("rope_theta")
        cfg["rope_scaling"] = None if full.get("rope_type", "default") == "default" else full
        cfg["rope_local_base_freq"] = rope["sliding_attention"]["rope_theta"]
        del cfg["layer_types"]
        cfg["sliding_window_pattern"] = pattern
    rewrite_config(path, edit)


def to_phi3_legacy_config(path):
    """Rewrite a Phi-3 config.json as transformers 4 wrote Phi-3 files:
    rope_theta and partial_rotary_factor at the top level, LongRoPE as
    rope_scaling {"type": "su", "short_factor", "long_factor", ...}."""
    def edit(cfg):
        rope = dict(cfg.pop("rope_parameters"))
        cfg["rope_theta"] = rope.pop("rope_theta")
        cfg["partial_rotary_factor"] = rope.pop("partial_rotary_factor")
        # transformers 5 wants original_max_position_embeddings in the dict too.
        cfg["rope_scaling"] = {"type": "su", "short_factor": rope["short_factor"],
                               "long_factor": rope["long_factor"],
                               "original_max_position_embeddings": rope["original_max_position_embeddings"]}
    rewrite_config(path, edit)


def to_hub_moe_config(path):
    """Rename num_local_experts, as transformers 5 writes Qwen3-MoE's count,
    to num_experts, as the Hub's Qwen3-MoE files (transformers 4) have it."""
    def edit(cfg):
        cfg["num_experts"] = cfg.pop("num_local_experts")
    rewrite_config(path, edit)


def drop_config_key(path, key):
    """Remove one field of config.json (fields transformers 4 did not write)."""
    rewrite_config(path, lambda cfg: cfg.pop(key))


def write_json(path, obj):
    """Indented JSON, but lists of numbers kept on one line (diff-friendly)."""
    text = json.dumps(obj, indent=1)
    text = re.sub(r"\[\s*([-0-9.e, \n]+?)\s*\]",
                  lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


def llama3_regions(head_dim, rope):
    """Classify each rotary frequency like transformers' llama3 init does."""
    theta, n = rope["rope_theta"], rope["original_max_position_embeddings"]
    high_wl = n / rope["high_freq_factor"]
    low_wl = n / rope["low_freq_factor"]
    out = []
    for i in range(head_dim // 2):
        inv = 1.0 / theta ** (2 * i / head_dim)
        wl = 2 * math.pi / inv
        region = ("high-freq kept" if wl < high_wl else
                  "low-freq /factor" if wl > low_wl else "smoothed middle")
        out.append((i, wl, region))
    return high_wl, low_wl, out


def forward_one_shot(model, ids):
    with torch.no_grad():
        return model(input_ids=ids[None, :], use_cache=False).logits[0].float()


def forward_incremental(model, ids):
    """Prefill NUM_PREFILL tokens, then decode one token at a time."""
    with torch.no_grad():
        out = model(input_ids=ids[None, :NUM_PREFILL], use_cache=True)
        rows, past = [out.logits[0]], out.past_key_values
        for t in range(NUM_PREFILL, len(ids)):
            out = model(input_ids=ids[None, t:t + 1], past_key_values=past, use_cache=True)
            rows.append(out.logits[0])
            past = out.past_key_values
    return torch.cat(rows, dim=0).float()


def make_one(spec):
    name = spec["name"]
    folder = os.path.join(OUT_ROOT, name)
    if os.path.isdir(folder):
        shutil.rmtree(folder)

    torch.manual_seed(spec["seed"])
    cfg = spec["cfg_cls"](**{**COMMON, **spec["cfg"]})
    cfg._attn_implementation = "eager"
    model = spec["cls"](cfg).float()
    randomize_(model, spec["seed"])
    model.generation_config = GenerationConfig(bos_token_id=0, eos_token_id=[1, 2])

    model.to(spec["save_dtype"])
    kwargs = dict(safe_serialization=True)
    if spec["max_shard_size"]:
        kwargs["max_shard_size"] = spec["max_shard_size"]
    model.save_pretrained(folder, **kwargs)
    if spec["config_format"] == "legacy":
        to_legacy_config(os.path.join(folder, "config.json"))
    elif spec["config_format"] == "phi3-legacy":
        to_phi3_legacy_config(os.path.join(folder, "config.json"))
    elif spec["config_format"] == "hub-moe":
        to_hub_moe_config(os.path.join(folder, "config.json"))
    elif spec["config_format"] == "gemma3-legacy":
        to_gemma3_legacy_config(os.path.join(folder, "config.json"), spec["cfg"]["sliding_window_pattern"])
    if spec.get("drop_layer_types"):
        drop_config_key(os.path.join(folder, "config.json"), "layer_types")
    del model

    # The golden comes from the folder on disk, upcast to float32: for bf16/f16
    # checkpoints that is exactly the rounded weights the C++ side will read.
    model = spec["cls"].from_pretrained(folder, dtype=torch.float32,
                                        attn_implementation="eager")
    model.eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    # The (possibly rewritten) config.json must read back as the intended model.
    read_back = dict(model.config.rope_parameters)
    if read_back.get("rope_type") == "longrope":  # transformers adds the longrope defaults
        read_back = {k: v for k, v in read_back.items() if k in spec["cfg"]["rope_parameters"]}
    assert read_back == spec["cfg"]["rope_parameters"], (name, model.config.rope_parameters)
    assert model.config.tie_word_embeddings == spec["cfg"]["tie_word_embeddings"]
    if "layer_types" in spec["cfg"]:
        assert model.config.layer_types == spec["cfg"]["layer_types"], (name, model.config.layer_types)

    gen = torch.Generator().manual_seed(spec["seed"] + 7)
    ids = torch.randint(3, VOCAB, (SEQ_LEN,), generator=gen, dtype=torch.long)

    logits = forward_one_shot(model, ids)
    assert logits.shape == (SEQ_LEN, VOCAB)
    inc = forward_incremental(model, ids)
    max_abs = float(logits.abs().max())
    inc_err = float((inc - logits).abs().max())
    assert spec.get("incremental_differs") or inc_err <= SELF_CHECK_REL * max_abs, (name, inc_err, max_abs)

    arr = logits.numpy().astype("<f4")
    arr.tofile(os.path.join(folder, "logits.f32"))
    golden = {
        "model": name,
        "architecture": spec["cls"].__name__,
        "weights_dtype_on_disk": str(spec["save_dtype"]).replace("torch.", ""),
        "config_format": spec["config_format"],
        "token_ids": [int(x) for x in ids],
        "num_prefill": NUM_PREFILL,
        "vocab_size": VOCAB,
        "logits_file": "logits.f32",
        "logits_dtype": "float32 little-endian, row-major",
        "shape": [SEQ_LEN, VOCAB],
        "max_abs_logit": max_abs,
        "tolerance": "max |ours - golden| <= 1e-4 * max_abs_logit",
        "argmax": [int(x) for x in logits.argmax(dim=-1)],
        "incremental_vs_one_shot_max_abs_diff": inc_err,
        **({"max_seq_len": spec["test_max_seq_len"]} if "test_max_seq_len" in spec else {}),
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
    }
    write_json(os.path.join(folder, "golden.json"), golden)

    size_kb = sum(os.path.getsize(os.path.join(folder, x)) for x in os.listdir(folder)) / 1024
    print(f"{name:32s} max_abs_logit={max_abs:8.4f} incremental_diff={inc_err:.2e} "
          f"files={sorted(os.listdir(folder))} size={size_kb:.0f}KB")


def main():
    rope = MODELS[1]["cfg"]["rope_parameters"]
    high_wl, low_wl, regions = llama3_regions(16, rope)
    print(f"llama3-rope: theta={rope['rope_theta']} original_ctx={rope['original_max_position_embeddings']} "
          f"high_freq_wavelen={high_wl} low_freq_wavelen={low_wl}")
    for i, wl, region in regions:
        print(f"  freq {i}: wavelen {wl:9.2f} -> {region}")
    assert {r for _, _, r in regions} == {"high-freq kept", "low-freq /factor", "smoothed middle"}

    os.makedirs(OUT_ROOT, exist_ok=True)
    only = set(sys.argv[1:])
    for spec in MODELS:
        if not only or spec["name"] in only:
            make_one(spec)


if __name__ == "__main__":
    main()

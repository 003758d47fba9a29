#!/usr/bin/env python3
"""Convert the llama-gqa-tied golden checkpoint to GGUF (f32, f16, q8_0, q4_0)
and compute golden logits for each file.

Input:  tests/golden/logits/llama-gqa-tied/ (made by make_logit_goldens.py)
Output: tests/golden/gguf/llama-gqa-tied.<type>.gguf
        tests/golden/gguf/llama-gqa-tied.<type>/{golden.json, logits.f32}

Regenerate (from the repository root, after make_logit_goldens.py):

    python3 -m venv .venv-golden
    .venv-golden/bin/pip install torch transformers safetensors gguf numpy
    .venv-golden/bin/python scripts/golden/make_gguf_goldens.py

Written with gguf 0.19.0, torch 2.15.0, transformers 5.24.0.

The conversion follows llama.cpp's convert_hf_to_gguf.py for LlamaForCausalLM:
  - arch "llama"; HF names map to token_embd / blk.N.attn_{norm,q,k,v,output} /
    blk.N.ffn_{norm,gate,up,down} / output_norm. Tied embeddings: no
    output.weight tensor (the loader must fall back to token_embd.weight).
  - attn_q / attn_k rows are permuted from HF's rotate-half RoPE layout to
    the interleaved (GPT-J style, adjacent pairs) layout llama.cpp's
    LLAMA_ROPE_TYPE_NORM expects: permute(w, n_head) for q and
    permute(w, n_head_kv) for k (see permute() below).
  - 1-D tensors (norms) stay F32; every 2-D tensor, token_embd included, is
    stored in the file type (F32 / F16 / Q8_0 / Q4_0, quantized with
    gguf.quants.quantize, i.e. llama.cpp's reference quantizers).
  - A 256-token SentencePiece-style ("llama") vocabulary: 0 <s>, 1 </s>,
    2 <|eot|> (control tokens, matching the HF config's bos 0 / eos [1, 2]) and
    ids 3..255 the byte tokens <0x03>..<0xFF>.

Golden logits: transformers' LlamaForCausalLM after replacing every weight by
the value the GGUF file actually holds (gguf.quants.dequantize, then q/k
un-permuted), run in float32 with eager attention on the same 48 token ids as
the HF golden. For f32 this reproduces the HF golden exactly (asserted).
Quantization changes the logits (see "max_abs_diff_vs_hf_f32" in golden.json)
but the tolerance stays 1e-4 * max_abs_logit: an engine that dequantizes the
same weights exactly must match the dequantized model that closely. (An
engine that, like llama.cpp, also rounds activations inside the matmul,
to f16 for F16 weights and to q8_0 for Q8_0/Q4_0 weights, will not; give
such a path its own looser tolerance.)

Cross-check: when llama-cpp-python is installed, each file is also run through
llama.cpp itself (f32 KV cache) and the result is stored under
"llama_cpp_cross_check" in golden.json. For f32 the two must agree within the
golden tolerance (asserted; observed 1.2e-5 absolute), which independently
checks the tensor names, the q/k permutation, the metadata and the tied output.
"""

import importlib.metadata
import json
import os
import re
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gguf
import numpy as np
import torch
import transformers
from gguf import GGMLQuantizationType as QT
from gguf import LlamaFileType as FT
from transformers import LlamaForCausalLM

torch.set_num_threads(1)

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SRC_NAME = "llama-gqa-tied"
SRC_DIR = os.path.join(REPO_ROOT, "tests", "golden", "logits", SRC_NAME)
OUT_ROOT = os.path.join(REPO_ROOT, "tests", "golden", "gguf")

FILE_TYPES = [  # (suffix, tensor type for 2-D weights, general.file_type)
    ("f32", QT.F32, FT.ALL_F32),
    ("f16", QT.F16, FT.MOSTLY_F16),
    ("q8_0", QT.Q8_0, FT.MOSTLY_Q8_0),
    ("q4_0", QT.Q4_0, FT.MOSTLY_Q4_0),
]


def permute(w, n_head):
    """HF rotate-half q/k rows -> llama.cpp interleaved pairs (convert_hf_to_gguf)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def unpermute(w, n_head):
    """Inverse of permute()."""
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def gguf_tensors(state, cfg):
    """HF state dict -> [(gguf name, float32 array, hf name, permute heads or None)]."""
    out = [("token_embd.weight", "model.embed_tokens.weight", None)]
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        out += [
            (f"blk.{i}.attn_norm.weight", p + "input_layernorm.weight", None),
            (f"blk.{i}.attn_q.weight", p + "self_attn.q_proj.weight", cfg.num_attention_heads),
            (f"blk.{i}.attn_k.weight", p + "self_attn.k_proj.weight", cfg.num_key_value_heads),
            (f"blk.{i}.attn_v.weight", p + "self_attn.v_proj.weight", None),
            (f"blk.{i}.attn_output.weight", p + "self_attn.o_proj.weight", None),
            (f"blk.{i}.ffn_norm.weight", p + "post_attention_layernorm.weight", None),
            (f"blk.{i}.ffn_gate.weight", p + "mlp.gate_proj.weight", None),
            (f"blk.{i}.ffn_up.weight", p + "mlp.up_proj.weight", None),
            (f"blk.{i}.ffn_down.weight", p + "mlp.down_proj.weight", None),
        ]
    out.append(("output_norm.weight", "model.norm.weight", None))
    if not cfg.tie_word_embeddings:
        out.append(("output.weight", "lm_head.weight", None))
    result = []
    for gname, hname, heads in out:
        w = state[hname].detach().float().numpy()
        if heads is not None:
            w = permute(w, heads)
        result.append((gname, np.ascontiguousarray(w), hname, heads))
    return result


def add_vocab(writer, vocab_size):
    tokens = ["<s>", "</s>", "<|eot|>"] + [f"<0x{b:02X}>" for b in range(3, vocab_size)]
    types = [gguf.TokenType.CONTROL] * 3 + [gguf.TokenType.BYTE] * (vocab_size - 3)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * vocab_size)
    writer.add_token_types(types)
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(1)
    writer.add_eot_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)


def write_gguf(path, cfg, tensors, qtype, ftype):
    writer = gguf.GGUFWriter(path, arch="llama")
    writer.add_name(f"{SRC_NAME} (random weights, zerolayer golden)")
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    writer.add_rope_dimension_count(cfg.head_dim)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_file_type(int(ftype))
    add_vocab(writer, cfg.vocab_size)

    stored = {}  # gguf name -> float32 value actually stored
    for gname, w, _, _ in tensors:
        t = qtype if w.ndim == 2 else QT.F32
        data = gguf.quants.quantize(w, t)
        if t in (QT.F32, QT.F16):
            writer.add_tensor(gname, data)
        else:
            writer.add_tensor(gname, data, raw_dtype=t)
        stored[gname] = gguf.quants.dequantize(data, t).astype(np.float32).reshape(w.shape)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return stored


def check_roundtrip(path, stored):
    """Read the file back with gguf.GGUFReader and compare every tensor."""
    reader = gguf.GGUFReader(path)
    names = set()
    for t in reader.tensors:
        names.add(t.name)
        value = gguf.quants.dequantize(t.data, t.tensor_type).reshape(stored[t.name].shape)
        assert np.array_equal(value, stored[t.name]), t.name
    assert names == set(stored)


def llama_cpp_cross_check(gguf_path, token_ids, golden):
    """If llama-cpp-python is installed, run the GGUF file through llama.cpp
    (prefill 32, then single-token decode; f32 KV cache, since the default f16
    cache alone moves these logits by ~1e-2) and compare with the golden."""
    try:
        import llama_cpp
    except ImportError:
        return None
    llm = llama_cpp.Llama(gguf_path, n_ctx=64, n_batch=64, n_ubatch=64, logits_all=True,
                          type_k=int(QT.F32), type_v=int(QT.F32), n_threads=1,
                          n_threads_batch=1, verbose=False)
    num_prefill = 32
    llm.eval(token_ids[:num_prefill])
    for token in token_ids[num_prefill:]:
        llm.eval([token])
    ours = np.array(llm.scores[:len(token_ids)], dtype=np.float32)
    del llm
    return {
        "llama_cpp_python_version": llama_cpp.__version__,
        "kv_cache_type": "F32",
        "max_abs_diff": float(np.abs(ours - golden).max()),
        "argmax_agreement": float((ours.argmax(-1) == golden.argmax(-1)).mean()),
    }


def write_json(path, obj):
    text = json.dumps(obj, indent=1)
    text = re.sub(r"\[\s*([-0-9.e, \n]+?)\s*\]",
                  lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


def main():
    with open(os.path.join(SRC_DIR, "golden.json")) as f:
        hf_golden = json.load(f)
    hf_logits = np.fromfile(os.path.join(SRC_DIR, "logits.f32"), dtype="<f4").reshape(hf_golden["shape"])
    ids = torch.tensor(hf_golden["token_ids"], dtype=torch.long)

    model = LlamaForCausalLM.from_pretrained(SRC_DIR, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    cfg = model.config
    state = {k: v.clone() for k, v in model.state_dict().items()}
    tensors = gguf_tensors(state, cfg)

    os.makedirs(OUT_ROOT, exist_ok=True)
    for suffix, qtype, ftype in FILE_TYPES:
        name = f"{SRC_NAME}.{suffix}"
        path = os.path.join(OUT_ROOT, name + ".gguf")
        stored = write_gguf(path, cfg, tensors, qtype, ftype)
        check_roundtrip(path, stored)

        # Load the stored values back into the HF model (un-permuting q/k).
        new_state = dict(state)
        for gname, _, hname, heads in tensors:
            w = stored[gname]
            if heads is not None:
                w = unpermute(w, heads)
            new_state[hname] = torch.from_numpy(np.ascontiguousarray(w))
        if cfg.tie_word_embeddings:
            new_state["lm_head.weight"] = new_state["model.embed_tokens.weight"]
        model.load_state_dict(new_state, strict=False)
        if cfg.tie_word_embeddings:
            assert torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
        with torch.no_grad():
            logits = model(input_ids=ids[None, :], use_cache=False).logits[0].float().numpy()
        if qtype == QT.F32:
            assert np.array_equal(logits, hf_logits), "f32 GGUF must reproduce the HF golden"

        folder = os.path.join(OUT_ROOT, name)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        logits.astype("<f4").tofile(os.path.join(folder, "logits.f32"))
        max_abs = float(np.abs(logits).max())
        diff_hf = float(np.abs(logits - hf_logits).max())
        argmax = logits.argmax(-1)
        cross = llama_cpp_cross_check(path, hf_golden["token_ids"], logits)
        if cross and qtype == QT.F32:
            assert cross["max_abs_diff"] <= 1e-4 * max_abs, cross
        write_json(os.path.join(folder, "golden.json"), {
            "model": name,
            "gguf_file": f"../{name}.gguf",
            "source_checkpoint": f"tests/golden/logits/{SRC_NAME}",
            "weights_type_2d": qtype.name,
            "token_ids": hf_golden["token_ids"],
            "num_prefill": hf_golden["num_prefill"],
            "vocab_size": hf_golden["vocab_size"],
            "logits_file": "logits.f32",
            "logits_dtype": "float32 little-endian, row-major",
            "shape": hf_golden["shape"],
            "max_abs_logit": max_abs,
            "tolerance": "max |ours - golden| <= 1e-4 * max_abs_logit",
            "max_abs_diff_vs_hf_f32": diff_hf,
            "argmax_agreement_vs_hf_f32": float((argmax == hf_logits.argmax(-1)).mean()),
            "argmax": [int(x) for x in argmax],
            "llama_cpp_cross_check": cross,
            "gguf_version": importlib.metadata.version("gguf"),
            "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
        })
        print(f"{name:24s} {os.path.getsize(path) / 1024:6.1f}KB max_abs_logit={max_abs:.4f} "
              f"max_abs_diff_vs_hf_f32={diff_hf:.4f} llama.cpp: {cross}")


if __name__ == "__main__":
    main()

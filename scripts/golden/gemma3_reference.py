"""The function a Gemma 3 GGUF file defines, computed in float64: weights
dequantized by gguf-py (llama.cpp's own package), activations never rounded.
make_released_goldens.py uses it to tell, at each step of llama.cpp's greedy
run, how far apart the file's own function puts the candidate tokens: where
two tokens are that close, the 8-bit rounding of activations in an engine
(llama.cpp's q8_0 / q8_K, zerolayer's blocks of 32) decides between them.

The forward follows transformers' Gemma3ForCausalLM (text): embeddings x
sqrt(hidden) (as f32, llama.cpp's sqrtf), RMSNorm with the GGUF's weights
(the converter stored 1 + w), per-head q/k RMSNorm, NeoX rope (base
rope.freq_base on every sixth layer, 10000 on the five sliding ones between),
attention scaled by key_length^-0.5, GELU-tanh gated MLP, norms after
attention and MLP, tied output embedding. Sliding windows are not applied:
callers keep sequences shorter than the window.
"""

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

LAYER_TENSORS = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_q_norm", "attn_k_norm", "attn_output",
                 "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm"]


class Gemma3Reference:
    def __init__(self, path):
        reader = GGUFReader(path)
        self.fields = {k: f.parts[f.data[0]] for k, f in reader.fields.items() if f.data}
        self.tensors = {t.name: t for t in reader.tensors}
        arch = "gemma3"
        self.dim = int(self.field(f"{arch}.embedding_length"))
        self.num_heads = int(self.field(f"{arch}.attention.head_count"))
        self.num_kv_heads = int(self.field(f"{arch}.attention.head_count_kv"))
        self.head_dim = int(self.field(f"{arch}.attention.key_length"))
        self.eps = float(self.field(f"{arch}.attention.layer_norm_rms_epsilon"))
        self.rope_base = float(self.field(f"{arch}.rope.freq_base"))
        self.window = int(self.field(f"{arch}.attention.sliding_window"))
        num_layers = int(self.field(f"{arch}.block_count"))
        self.embed = self.weight("token_embd.weight")  # [vocab, dim]
        self.layers = [{n: self.weight(f"blk.{i}.{n}.weight") for n in LAYER_TENSORS} for i in range(num_layers)]
        self.output_norm = self.weight("output_norm.weight")

    def field(self, key):
        return self.fields[key][0]

    def weight(self, name, dtype=np.float64):
        t = self.tensors[name]
        values = dequantize(t.data, t.tensor_type)
        if len(t.shape) == 1:
            return values.reshape(-1).astype(dtype)
        return values.reshape(-1, int(t.shape[0])).astype(dtype)  # [out, in]

    def rms(self, x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * w

    def rope(self, x, base):  # x: [T, heads, head_dim]
        half = self.head_dim // 2
        inv_freq = 1.0 / base ** (np.arange(0, self.head_dim, 2) / self.head_dim)
        angle = np.arange(x.shape[0])[:, None] * inv_freq[None, :]
        cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)

    def logits(self, tokens):
        """[len(tokens), vocab] logits of every position of one sequence."""
        n = len(tokens)
        if n > self.window:
            raise ValueError(f"{n} tokens: past the sliding window ({self.window}), which is not modelled")
        group = self.num_heads // self.num_kv_heads
        x = self.embed[np.asarray(tokens)] * float(np.sqrt(np.float32(self.dim)))
        mask = np.triu(np.full((n, n), -np.inf), 1)
        for i, w in enumerate(self.layers):
            base = self.rope_base if i % 6 == 5 else 10000.0
            h = self.rms(x, w["attn_norm"])
            q = (h @ w["attn_q"].T).reshape(n, self.num_heads, self.head_dim)
            k = (h @ w["attn_k"].T).reshape(n, self.num_kv_heads, self.head_dim)
            v = (h @ w["attn_v"].T).reshape(n, self.num_kv_heads, self.head_dim)
            q = self.rope(self.rms(q, w["attn_q_norm"]), base)
            k = np.repeat(self.rope(self.rms(k, w["attn_k_norm"]), base), group, 1)
            v = np.repeat(v, group, 1)
            scores = np.einsum("thd,shd->hts", q, k) / np.sqrt(self.head_dim) + mask
            p = np.exp(scores - scores.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            att = np.einsum("hts,shd->thd", p, v).reshape(n, -1)
            x = x + self.rms(att @ w["attn_output"].T, w["post_attention_norm"])
            h = self.rms(x, w["ffn_norm"])
            gate = h @ w["ffn_gate"].T
            gelu = 0.5 * gate * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (gate + 0.044715 * gate ** 3)))
            x = x + self.rms((gelu * (h @ w["ffn_up"].T)) @ w["ffn_down"].T, w["post_ffw_norm"])
        h = self.rms(x, self.output_norm)
        return h @ self.embed.T

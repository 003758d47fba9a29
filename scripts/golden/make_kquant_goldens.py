#!/usr/bin/env python3
"""Golden dequantization of GGUF k-quant blocks (Q4_K, Q6_K), the oracle for
core/dtype.cpp's reading of those formats.

Output: tests/golden/kquant/<type>.blocks  raw super-blocks as a GGUF file stores them
        tests/golden/kquant/<type>.f32     their values, float32, as gguf-py dequantizes them

The blocks are random bytes (every code, 6-bit scale and min, high-bit pair
and int8 scale occurs), except the f16 super-block scales, which are drawn
from normal finite values (a random f16 may be inf or NaN, which no quantizer
writes). The oracle is gguf-py's `gguf.quants.dequantize`, written from
llama.cpp's reference dequantizers (dequantize_row_q4_K / _q6_K).

Regenerate (from the repository root):

    python3 -m venv .venv-golden
    .venv-golden/bin/pip install gguf numpy
    .venv-golden/bin/python scripts/golden/make_kquant_goldens.py

Written with gguf 0.19.0, numpy 2.x.
"""

from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, quants

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "kquant"
NUM_BLOCKS = 24

# (type, bytes per 256-value super-block, byte offsets of its f16 scales)
TYPES = [
    ("q4_k", GGMLQuantizationType.Q4_K, 144, [0, 2]),  # d, dmin
    ("q6_k", GGMLQuantizationType.Q6_K, 210, [208]),  # d
]


def main():
    rng = np.random.default_rng(20261201)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, qtype, size, scale_offsets in TYPES:
        blocks = rng.integers(0, 256, size=(NUM_BLOCKS, size), dtype=np.uint8)
        for off in scale_offsets:
            scales = (rng.standard_normal(NUM_BLOCKS) * 0.01).astype(np.float16)
            blocks[:, off:off + 2] = scales.view(np.uint8).reshape(NUM_BLOCKS, 2)
        values = quants.dequantize(blocks.reshape(1, -1), qtype).astype(np.float32).reshape(-1)
        assert values.size == 256 * NUM_BLOCKS and np.isfinite(values).all()
        (OUT / f"{name}.blocks").write_bytes(blocks.tobytes())
        (OUT / f"{name}.f32").write_bytes(values.tobytes())
        print(f"{name}: {NUM_BLOCKS} blocks, max |value| {np.abs(values).max():.4g}")


if __name__ == "__main__":
    main()

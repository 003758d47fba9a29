#!/usr/bin/env python3
"""Files written by llama.cpp's own llama-quantize, read by zerolayer and by
llama-server: does zerolayer load each one, and does its first generated
token (top-1) and top-5 log-probabilities after a prompt agree with llama.cpp's
on the same file? bench/quant_presets.sh runs the three steps (stdlib only):

  prompts  F16.gguf -o P.json      seeded token-id prompts for one model
  query    --engine E --port N     one server's answer to every prompt
  report   --out-dir D ...         JSON lines per (file, prompt) and per file,
                                   and D/summary.md

Both engines are sent the same raw ids, a leading BOS included: neither adds
one to a list of ids (llama-server only to a text prompt), and each answer's
prompt-token count is checked against the list. llama-server's /completion
answers with ids and log-softmax values over the whole vocabulary (n_probs,
post_sampling_probs false). zerolayer's /v1/completions keys top_logprobs by
the token's text, so its keys are turned back into ids through zerolayer's
own /detokenize of every id; where several ids share a text (SentencePiece
pieces with and without their leading space decode alike one at a time) the
id among llama.cpp's top-5 is taken and counted in `text_guesses`: a wrong
guess shows up as a disagreement, never hides one. A server that keys them
as "token_id:N" (vLLM's return_tokens_as_token_ids, sent too) needs no guess.
"""

import argparse
import collections
import http.client
import json
import math
import os
import random
import struct
import sys

GGML_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
              11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
              19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 29: "IQ1_M", 30: "BF16",
              34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4", 41: "Q1_0", 42: "Q2_0"}
# GGUF metadata value types -> struct format of the scalars; 8 string, 9 array.
GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_gguf(path):
    """(metadata, tensors) of a GGUF file: scalar values and array lengths by
    key, and (name, ggml type name, dims with dims[0] the row width) per tensor."""
    with open(path, "rb") as f:
        def unpack(fmt):
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        def string():
            return f.read(unpack("<Q")).decode("utf-8", "replace")

        def value(kind):
            if kind == 8:
                return string()
            if kind == 9:
                elem, count = unpack("<I"), unpack("<Q")
                for _ in range(count):
                    value(elem)
                return count  # an array: only its length is kept
            return unpack(GGUF_SCALARS[kind])

        if f.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        unpack("<I")  # version
        num_tensors, num_kv = unpack("<Q"), unpack("<Q")
        meta = {}
        for _ in range(num_kv):
            key = string()
            meta[key] = value(unpack("<I"))
        tensors = []
        for _ in range(num_tensors):
            name = string()
            dims = [unpack("<Q") for _ in range(unpack("<I"))]
            kind = unpack("<I")
            unpack("<Q")  # offset
            tensors.append((name, GGML_TYPES.get(kind, f"type{kind}"), dims))
    return meta, tensors


def cmd_prompts(a):
    """Prompts = BOS + 4..16 ids drawn from [min_id, vocab): min_id skips the
    specials and byte tokens, whose one-token texts are not unique."""
    meta, _ = read_gguf(a.gguf)
    vocab = meta["tokenizer.ggml.tokens"]
    bos = meta.get("tokenizer.ggml.bos_token_id")
    rng = random.Random(a.seed)
    prompts = [([bos] if bos is not None else []) + [rng.randrange(a.min_id, vocab) for _ in range(rng.randint(4, 16))]
               for _ in range(a.count)]
    with open(a.out, "w") as f:
        json.dump({"seed": a.seed, "min_id": a.min_id, "vocab": vocab, "bos": bos, "prompts": prompts}, f)


def post(conn, route, body):
    conn.request("POST", route, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    text = response.read()
    if response.status != 200:
        raise RuntimeError(f"{route}: HTTP {response.status}: {text[:300]!r}")
    return json.loads(text)


def ask_llama_server(conn, prompt):
    # cache_prompt off: every prompt is computed from scratch, as zerolayer's is.
    r = post(conn, "/completion", {"prompt": prompt, "n_predict": 1, "n_probs": 5, "temperature": 0,
                                   "cache_prompt": False})
    step = r["completion_probabilities"][0]
    return {"n_prompt": r["tokens_evaluated"], "top1": step["id"],
            "top5": [[t["id"], t["logprob"]] for t in step["top_logprobs"]]}


def ask_zerolayer(conn, prompt):
    r = post(conn, "/v1/completions", {"model": "model", "prompt": prompt, "max_tokens": 1, "temperature": 0,
                                       "logprobs": 5, "return_token_ids": True, "return_tokens_as_token_ids": True})
    choice = r["choices"][0]
    top = choice["logprobs"]["top_logprobs"][0]
    keys = {k: int(k[len("token_id:"):]) if k.startswith("token_id:") else k for k in top}
    return {"n_prompt": r["usage"]["prompt_tokens"], "top1": choice["token_ids"][0],
            "top1_logprob": choice["logprobs"]["token_logprobs"][0],
            "top5": sorted(([keys[k], v] for k, v in top.items()), key=lambda t: -t[1])}


def save_vocab_texts(conn, size, cache):
    """zerolayer's text of each id alone, as top_logprobs keys it (kept per
    model in `cache`: every file of a model has the same vocabulary)."""
    if not os.path.exists(cache):
        texts = [post(conn, "/detokenize", {"tokens": [i]})["prompt"] for i in range(size)]
        with open(cache, "w") as f:
            json.dump(texts, f)


def cmd_query(a):
    with open(a.prompts) as f:
        spec = json.load(f)
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    ask = ask_llama_server if a.engine == "llama-server" else ask_zerolayer
    answers = []
    for prompt in spec["prompts"]:
        try:
            answer = ask(conn, prompt)
            if answer["n_prompt"] != len(prompt):
                answer["error"] = f"engine counted {answer['n_prompt']} prompt tokens, sent {len(prompt)}"
        except (OSError, RuntimeError, KeyError, IndexError, ValueError) as e:
            conn.close()  # a fresh connection for the next prompt
            answer = {"error": f"{type(e).__name__}: {e}"}
        answers.append(answer)
    out = {"engine": a.engine, "answers": answers}
    if a.engine == "zerolayer":
        out["vocab_texts"] = a.vocab_cache
        save_vocab_texts(conn, spec["vocab"], a.vocab_cache)
    with open(a.out, "w") as f:
        json.dump(out, f)


def zerolayer_ids(answer, llama_ids, ids_of_text):
    """zerolayer's top-5 as {id: logprob}, and how many keys were guessed."""
    top, guesses = {}, 0
    for key, logprob in answer["top5"]:
        if isinstance(key, int):
            top[key] = logprob
            continue
        ids = ids_of_text.get(key, [])
        known = [i for i in ids if i in llama_ids]
        if answer["top1"] in ids and logprob == answer["top1_logprob"]:
            top[answer["top1"]] = logprob  # the chosen token comes with its id
        elif len(ids) == 1:
            top[ids[0]] = logprob
        elif len(ids) > 1 and len(known) == 1:
            top[known[0]] = logprob
            guesses += 1
        else:
            top[f"text:{key}"] = logprob  # unknown or unresolvable: never counted as common
    return top, guesses


def compare_prompt(prompt, ref, ours, ids_of_text):
    row = {"prompt": prompt}
    if "error" in ref or "error" in ours:
        return dict(row, error=ref.get("error") or ours.get("error"), same_top1=False, top5_common=0)
    llama_top = {i: lp for i, lp in ref["top5"]}
    our_top, guesses = zerolayer_ids(ours, llama_top, ids_of_text)
    common = set(llama_top) & set(our_top)
    diff = max((abs(llama_top[t] - our_top[t]) for t in common), default=None)
    # llama.cpp's top-1 minus top-2 log-prob: a flip where it is below the
    # log-prob differences is a near-tie, not a misread weight.
    margin = ref["top5"][0][1] - ref["top5"][1][1] if len(ref["top5"]) > 1 else None
    return dict(row, llama_cpp={"top1": ref["top1"], "top5": ref["top5"]},
                zerolayer={"top1": ours["top1"], "top5": [[k, v] for k, v in our_top.items()]},
                same_top1=ref["top1"] == ours["top1"], llama_margin=None if margin is None else round(margin, 4),
                top5_common=len(common), max_logprob_diff=None if diff is None else round(diff, 4),
                text_guesses=guesses)


def load_side(out_dir, stem, engine):
    """An engine's answers, or the reason it refused the file."""
    refused = os.path.join(out_dir, f"{stem}.{engine}.refused")
    if os.path.exists(refused):
        with open(refused) as f:
            return None, f"{engine} refused: {f.readline().strip()}"
    path = os.path.join(out_dir, f"{stem}.{engine}.json")
    if not os.path.exists(path):
        return None, f"{engine}: no answers ({path} missing)"
    with open(path) as f:
        return json.load(f), None


def type_histogram(gguf):
    """'Q4_K x72, Q6_K x13, ...' over the weight matrices (2-D tensors)."""
    _, tensors = read_gguf(gguf)
    counts = collections.Counter(kind for _, kind, dims in tensors if len(dims) >= 2)
    return ", ".join(f"{k} x{n}" for k, n in counts.most_common())


def report_file(a, model, preset, spec):
    """Prints the per-prompt lines of one file; returns its summary."""
    stem = f"{model}.{preset}"
    gguf = os.path.join(a.out_dir, stem + ".gguf")
    summary = {"model": model, "preset": preset, "file": gguf, "prompts": len(spec["prompts"]),
               "prompt_seed": spec["seed"]}
    if not os.path.exists(gguf):
        log = os.path.join(a.out_dir, stem + ".quantize.log")
        lines = open(log, errors="replace").read().splitlines() if os.path.exists(log) else []
        why = next((line.strip() for line in lines if "failed to quantize:" in line), f"no file; see {log}")
        return dict(summary, status=f"llama-quantize failed: {why}")
    summary["tensor_types"] = type_histogram(gguf)
    ref, why = load_side(a.out_dir, stem, "llama-server")
    ours, why_ours = load_side(a.out_dir, stem, "zerolayer")
    if why or why_ours:
        return dict(summary, status=why or why_ours)
    with open(ours["vocab_texts"]) as f:
        ids_of_text = collections.defaultdict(list)
        for i, text in enumerate(json.load(f)):
            ids_of_text[text].append(i)
    rows = [compare_prompt(p, r, o, ids_of_text) for p, r, o in zip(spec["prompts"], ref["answers"], ours["answers"])]
    for k, row in enumerate(rows):
        print(json.dumps(dict({"model": model, "preset": preset, "prompt_index": k}, **row)))
    diffs = sorted(r["max_logprob_diff"] for r in rows if r.get("max_logprob_diff") is not None)
    same = sum(r["same_top1"] for r in rows)
    min_same = math.ceil(a.min_top1_fraction * len(rows))
    worst = diffs[-1] if diffs else None
    errors = [r["error"] for r in rows if "error" in r]
    return dict(summary, status="ok" if not errors else f"errors: {errors[0]}", same_top1=same,
                flip_margins=[r["llama_margin"] for r in rows if not r["same_top1"] and "error" not in r],
                top5_common_of=[sum(r["top5_common"] for r in rows), 5 * len(rows)], max_logprob_diff=worst,
                median_logprob_diff=diffs[len(diffs) // 2] if diffs else None,
                text_guesses=sum(r.get("text_guesses", 0) for r in rows),
                within_tolerance=not errors and same >= min_same and worst is not None and worst <= a.tolerance)


def cmd_report(a):
    summaries = []
    for model in a.models:
        with open(os.path.join(a.out_dir, f"{model}.prompts.json")) as f:
            spec = json.load(f)
        for preset in a.presets:
            summaries.append(report_file(a, model, preset, spec))
            print(json.dumps(summaries[-1]))
    lines = [f"Pass: top-1 equal on at least {a.min_top1_fraction:.0%} of a file's prompts and every log-prob "
             f"difference on the top-5 tokens both engines list at most {a.tolerance} nats.", "",
             "Flip margins: llama.cpp's top-1 minus top-2 log-prob where the top-1 differ. Log-prob diff: per "
             "prompt the largest over the common top-5, then the median and largest over the prompts.", "",
             "| model | preset | weight types in the file | zerolayer | top-1 equal | flip margins | top-5 common "
             "| log-prob diff median / max | pass |", "|---|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        if s["status"] != "ok":
            status = s["status"].replace("|", "\\|")
            lines.append(f"| {s['model']} | {s['preset']} | {s.get('tensor_types', '')} | {status} | | | | | no |")
            continue
        common, of = s["top5_common_of"]
        margins = " ".join(f"{m:.3f}" for m in s["flip_margins"])
        lines.append(f"| {s['model']} | {s['preset']} | {s['tensor_types']} | loads "
                     f"| {s['same_top1']} / {s['prompts']} | {margins} | {common} / {of} "
                     f"| {s['median_logprob_diff']} / {s['max_logprob_diff']} "
                     f"| {'yes' if s['within_tolerance'] else 'no'} |")
    with open(os.path.join(a.out_dir, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prompts")
    p.add_argument("gguf")
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--seed", type=int, default=30)
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--min-id", type=int, required=True)
    q = sub.add_parser("query")
    q.add_argument("--engine", choices=["llama-server", "zerolayer"], required=True)
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--prompts", required=True)
    q.add_argument("--vocab-cache", help="zerolayer (required): where its per-id texts are kept")
    q.add_argument("-o", "--out", required=True)
    r = sub.add_parser("report")
    r.add_argument("--out-dir", required=True)
    r.add_argument("--models", nargs="+", required=True)
    r.add_argument("--presets", nargs="+", required=True)
    # Issue 30: top-1 at least as often as Q4_K did before it (18 of 20).
    r.add_argument("--min-top1-fraction", type=float, default=0.9)
    # Nats. On 2026-12-04 the F16 files agreed within 0.011 and the controls
    # (Q4_0, Q8_0: formats zerolayer read before issue 30) within 0.127.
    r.add_argument("--tolerance", type=float, default=0.15)
    a = ap.parse_args()
    if a.cmd == "query" and a.engine == "zerolayer" and not a.vocab_cache:
        ap.error("query --engine zerolayer needs --vocab-cache")
    {"prompts": cmd_prompts, "query": cmd_query, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()

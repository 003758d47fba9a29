#!/usr/bin/env python3
"""Writes the tokenizer corpus and the goldens the C++ tokenizer tests compare with.

Regenerate (needs the shared folder ../shared/tokenizers beside the repo):

    python3 -m venv .venv-golden
    .venv-golden/bin/pip install tokenizers sentencepiece
    .venv-golden/bin/python scripts/golden/make_tokenizer_goldens.py [--shared DIR] [--out DIR]

Outputs, under tests/golden/tokenizer/ (see README.md there):

  corpus.json
      A JSON list of strings (the same order everywhere). Written here,
      deterministically, from the lists below; nothing is copied from ../shared.

  <folder>.tokenizer_json.jsonl   (one per ../shared/tokenizers/<folder>/tokenizer.json)
      Line k (0-based) belongs to corpus[k] and is a JSON object:
        "a":  tokenizers.Tokenizer.encode(text, add_special_tokens=True).ids
        "n":  ... add_special_tokens=False
        "d1": Tokenizer.decode(a, skip_special_tokens=True)
        "d0": Tokenizer.decode(a, skip_special_tokens=False)
      This is the `tokenizers` library alone: no transformers, so no
      clean_up_tokenization_spaces (transformers would apply it on top when a
      tokenizer_config.json sets it, e.g. phi-2).

  <folder>.sentencepiece.jsonl    (one per ../shared/tokenizers/<folder>/tokenizer.model)
      Line k belongs to corpus[k]:
        "a":  sp.encode(text, add_bos=True)
        "n":  sp.encode(text)               (sentencepiece's defaults: no bos, no eos)
        "d1": sp.decode(a)                   (control tokens such as <s> decode to "")
        "d0": sp.decode(n)

The first line of every .jsonl is a header object {"source": ..., "library": ...,
"version": ..., "count": N} so a stale golden is easy to spot.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

ENGLISH = [
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "I can't believe it's not butter; they'll say we'd've known.",
    "SHE'S HERE AND HE'LL STAY, WE'VE SEEN IT, I'M SURE, THEY'D AGREE.",
    "It's 5 o'clock somewhere, isn't it?",
    "Mr. Smith went to Washington on Jan. 3rd, 1999.",
    "e.g. i.e. etc. vs. a.m. p.m.",
    "This is a test of the emergency broadcast system.",
    "Once upon a time, in a land far, far away, there lived a tokenizer.",
    "Why? Because! Well... maybe; perhaps: certainly.",
    "\"Quoted text\" and 'single quotes' and `backticks`.",
    "hyphen-ated words and em\u2014dashes and en\u2013dashes",
    "email: someone@example.com, url: https://example.org/path?q=1&r=two#frag",
    "C'est la vie, n'est-ce pas?",
    "rock'n'roll isn't dead",
    "ALL CAPS SENTENCE WITH NUMBERS 123 AND SYMBOLS #@!",
    "lowercase words only here",
    "MiXeD CaSe WoRdS",
    "a",
    "I",
    "ab",
    "Tokenization is the first step.",
    "The year 2024 had 366 days.",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "The cat sat on the mat. The dog sat on the log.",
    "Question: what is 2+2?\nAnswer: 4",
    "user: hi\nassistant: hello! how can I help?",
    "Dear Sir or Madam,\n\nI am writing to complain.\n\nYours faithfully,\nA. Person",
]

CODE = [
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += x[i];\n}",
    "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }",
    "const f = (x) => x * 2; // double it",
    "if x == 1 and y != 2 or not z:\n        pass",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "<html><body><p class=\"x\">Hi</p></body></html>",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
    "x = y ** 2 // 3 % 4 ^ 5 | 6 & ~7 << 8 >> 9",
    "std::vector<std::pair<int, float>> v{{1, 2.5f}};",
    "    indented four\n        indented eight\n\t\ttabbed twice",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
    "$ ls -la | grep '^d' > dirs.txt && echo done",
    "a=1;b=2;c=a+b;print(c)",
    "// comment\n/* block\n   comment */\n# hash comment",
    "lambda x: x if x else None",
    "@decorator\nclass Foo(Bar):\n    '''Docstring.'''\n",
    "0x1F 0b1010 0o17 1e-10 3.14159 -42 +7",
    "path/to/file.txt C:\\Windows\\System32 ~/home/.config",
    "key1=value1&key2=value2",
    "   leading spaces in code();",
    "}}}}]]]))))",
    "!!!???...,,,;;;:::",
    "~!@#$%^&*()_+-=[]{}|;':\",./<>?`",
    "    \n    \n",
]

CJK = [
    "你好，世界！",
    "我爱自然语言处理。",
    "今天天气很好，我们去公园散步吧。",
    "日本語のテキストです。",
    "こんにちは、元気ですか？",
    "カタカナとひらがなと漢字",
    "안녕하세요 세계",
    "한국어 문장입니다.",
    "中文English混合text测试",
    "東京タワー 333m",
    "「引用」と『二重引用』",
    "全角ＡＢＣ１２３",
    "一二三四五六七八九十",
    "龍龘𠀀𪚥",
    "中 文 空 格",
]

EMOJI = [
    "I love it \U0001F60D\U0001F60D\U0001F60D",
    "\U0001F600",
    "\U0001F44D\U0001F3FD thumbs up",
    "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 family",
    "\U0001F1FA\U0001F1F8\U0001F1EF\U0001F1F5 flags",
    "\u2764\uFE0F heart",
    "rocket \U0001F680 to the moon \U0001F315",
    "\U0001F914\U0001F914 hmm",
    "emoji at end \U0001F389",
    "\U0001F4A9",
    "text\U0001F600text",
    "\u2600\u2601\u2602\u2603",
    "\U0001F9D1\u200D\U0001F4BB coder",
    "\u263A smile",
    "\U0001F408\u200D\u2B1B",
]

WHITESPACE = [
    "",
    " ",
    "  ",
    "   ",
    "    ",
    "     ",
    "        ",
    " " * 16,
    " " * 33,
    "\t",
    "\t\t",
    "\t\t\t\t",
    "\n",
    "\n\n",
    "\n\n\n\n",
    "\r\n",
    "\r\n\r\n",
    " \n",
    "\n ",
    " \t \n \t",
    "a  b",
    "a   b",
    "a    b    c",
    "a\tb",
    "a\nb",
    "a\n\nb",
    "a \n b",
    "word   ",
    "   word",
    " word",
    "\tword",
    "\nword",
    "trailing newline\n",
    "multiple\n\n\nnewlines\n\n",
    "mixed \t\n\r whitespace",
    "a\u00A0b non-breaking",
    "\u3000ideographic space",
    "line\u2028separator",
    "\u2003em space\u2009thin",
    "end with tab\t",
]

SPECIAL = [
    "<s>",
    "</s>",
    "<unk>",
    "<s>hello</s>",
    "<s> hello </s>",
    "hello <s> world",
    "hello</s>",
    "<s><s></s></s>",
    "<|endoftext|>",
    "text<|endoftext|>more text",
    " <|endoftext|> ",
    "<|endoftext|><|endoftext|>",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are helpful.<|im_end|>",
    "<|im_end|>",
    "[INST] Tell me a joke. [/INST]",
    "[INST]hi[/INST]",
    "<|user|>\nHello there<|end|>\n<|assistant|>\n",
    "<|assistant|>   spaces after",
    "<|user|>  \n\n  text",
    "<|placeholder1|>x",
    ">>TITLE<<Some title>>ABSTRACT<<",
    ">>INTRODUCTION<< text",
    "<|padding|>",
    "<|im_start",
    "<|endoftext",
    "< s >",
    "<<s>>",
    "<unk> token",
    "[TOOL_CALLS] [AVAILABLE_TOOLS]",
    "<|user|>",
    "</s></s>",
]

NUMBERS = [
    "0",
    "1",
    "12",
    "123",
    "1234",
    "12345",
    "123456",
    "1234567",
    "12345678901234567890",
    "3.14159265358979",
    "1,000,000",
    "1 000 000",
    "-273.15",
    "+1 (555) 123-4567",
    "2024-01-31T12:34:56Z",
    "v1.2.3",
    "100%",
    "$99.99",
    "\u20AC50",
    "\u00BD \u00BC \u00B2 \u00B3",
    "\u0661\u0662\u0663 Arabic-Indic digits",
    "\u0967\u0968\u0969 Devanagari digits",
    "\u2460\u2461\u2462 circled",
    "Ⅻ Roman numeral",
    "a1b2c3",
    "abc123def",
    "007",
    "9" * 40,
]

ACCENTS = [
    "caf\u00E9 na\u00EFve r\u00E9sum\u00E9",
    "cafe\u0301 decomposed",
    "A\u030A \u212B \u00C5 angstrom forms",
    "\u2126 ohm vs \u03A9 omega",
    "Stra\u00DFe \u00DCbergr\u00F6\u00DFe",
    "Ti\u1EBFng Vi\u1EC7t c\u00F3 d\u1EA5u",
    "Ti\u00EA\u0301ng Vi\u00EA\u0323t decomposed",
    "\u00C0\u00C1\u00C2\u00C3\u00C4\u00C5\u00C6\u00C7",
    "\u0107\u010D\u0111\u0161\u017E",
    "\u00F1and\u00FA espa\u00F1ol \u00BFqu\u00E9? \u00A1s\u00ED!",
    "o\u0308 u\u0308 a\u0308",
    "\uFB01 ligature \uFB02",
    "\u1100\u1161\u11A8 jamo",
    "z\u0327\u0301\u0300 stacked marks",
    "\u00E5ngstr\u00F6m",
]

SCRIPTS = [
    "\u0645\u0631\u062D\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0627\u0644\u0644\u063A\u0629 \u0627\u0644\u0639\u0631\u0628\u064A\u0629 \u062C\u0645\u064A\u0644\u0629.",
    "\u05E9\u05DC\u05D5\u05DD \u05E2\u05D5\u05DC\u05DD",
    "\u0928\u092E\u0938\u094D\u0924\u0947 \u0926\u0941\u0928\u093F\u092F\u093E",
    "\u0E2A\u0E27\u0E31\u0E2A\u0E14\u0E35\u0E04\u0E23\u0E31\u0E1A",
    "\u041F\u0440\u0438\u0432\u0435\u0442, \u043C\u0438\u0440!",
    "\u041C\u043E\u0441\u043A\u0432\u0430 \u2014 \u0441\u0442\u043E\u043B\u0438\u0446\u0430 \u0420\u043E\u0441\u0441\u0438\u0438.",
    "\u0393\u03B5\u03B9\u03AC \u03C3\u03BF\u03C5 \u039A\u03CC\u03C3\u03BC\u03B5",
    "\u10D2\u10D0\u10DB\u10D0\u10E0\u10EF\u10DD\u10D1\u10D0",
    "\u0532\u0561\u0580\u0565\u0582",
    "\u12A0\u121B\u122D\u129B",
    "\u0BA4\u0BAE\u0BBF\u0BB4\u0BCD",
    "\u0421\u0440\u0431\u0438\u0458\u0430 Serbia",
    "T\u00FCrk\u00E7e \u0131\u015F\u0131k \u0130stanbul",
    "Polski: \u017C\u00F3\u0142w, \u0142\u00F3d\u017A",
]

MIXED = [
    "English \u4E2D\u6587 \u0627\u0644\u0639\u0631\u0628\u064A\u0629 \u0420\u0443\u0441\u0441\u043A\u0438\u0439 \U0001F600 123",
    "The word \u201Cna\u00EFve\u201D comes from French.",
    "\u6771\u4EAC is Tokyo, \u5317\u4EAC is Beijing.",
    "Price: \u00A5500 / \u20AC4 / \u00A33",
    "math: \u2200x\u2208\u211D, x\u00B2 \u2265 0 \u21D2 \u221Ax \u2208 \u211D\u208A",
    "arrows \u2190\u2191\u2192\u2193 and boxes \u2500\u2502\u250C\u2510",
    "\u00AB guillemets \u00BB \u2039 single \u203A",
    "zero\u200Bwidth\u200Cjoiner\u200Dtest",
    "\uFEFFBOM at start",
    "soft\u00ADhyphen",
    "control\u0001chars\u0007here\u007F",
    "null\u0000byte",
    "private use \uE000\uF8FF",
    "\u0300 leading combining mark",
    "replacement \uFFFD char",
]

EDGE = [
    "'",
    "''",
    "'s",
    "'S",
    "'ll've'd",
    "don't won't shan't",
    "O'Neil's",
    "you're YOU'RE You'Re",
    ".",
    "...",
    "?!",
    "-",
    "--",
    "_",
    "__init__",
    "@@",
    "##",
    "\u2581",
    "\u2581hello",
    "\u0120",
    "\u0120hello",
    "<0x41>",
    "<0xFF>",
    "\\n",
    "\\u0041",
    "a" * 64,
    "ab" * 30,
    "the " * 20,
    "x" + " " * 7 + "y",
    "Hello World" + "!" * 10,
]


def build_corpus():
    """Base strings plus a few deterministic variants of some of them."""
    base = ENGLISH + CODE + CJK + EMOJI + WHITESPACE + SPECIAL + NUMBERS + ACCENTS + SCRIPTS + MIXED + EDGE
    variants = []
    picks = ENGLISH[:12] + CODE[:4] + CJK[:3] + EMOJI[:2] + NUMBERS[8:12] + SPECIAL[:6] + SCRIPTS[:3] + ACCENTS[:2]
    for s in picks:
        variants.append(" " + s)
        variants.append("  " + s + " ")
    for s in ENGLISH[:10]:
        variants.append(s.upper())
        variants.append(s + "\n")
    for i, s in enumerate(ENGLISH[:8]):
        variants.append(s + " " + CJK[i % len(CJK)] + " " + EMOJI[i % len(EMOJI)])
    seen = set()
    corpus = []
    for s in base + variants:
        if s not in seen:
            seen.add(s)
            corpus.append(s)
    return corpus


def write_jsonl(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(header, ensure_ascii=True, separators=(",", ":")) + "\n")
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=True, separators=(",", ":")) + "\n")


def split_ambiguous_merges(model):
    """Rewrites "a b c" string merges (a token holds a space) as [left, right] pairs.

    llama-2/tokenizer.json has 3 such merges (e.g. "▁  "), which `tokenizers`
    refuses to load ("Merges text file invalid"). The split chosen is the one
    whose both halves and whose concatenation are in the vocab; the C++ loader
    resolves them the same way. Returns how many merges were rewritten.
    """
    vocab = model["vocab"]
    merges = model["merges"]
    fixed = 0
    for rank, merge in enumerate(merges):
        if not isinstance(merge, str) or merge.count(" ") == 1:
            continue
        splits = [(merge[:i], merge[i + 1:]) for i, c in enumerate(merge) if c == " "]
        splits = [(a, b) for a, b in splits if a in vocab and b in vocab and a + b in vocab]
        if len(splits) != 1:
            raise ValueError(f"merge {rank} {merge!r} is ambiguous: {splits}")
        merges[rank] = list(splits[0])
        fixed += 1
    if fixed:
        model["merges"] = [m.split(" ") if isinstance(m, str) else m for m in merges]
    return fixed


def golden_tokenizer_json(path, corpus):
    import tokenizers
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    repaired = split_ambiguous_merges(data["model"])
    tok = tokenizers.Tokenizer.from_str(json.dumps(data))
    rows = []
    for text in corpus:
        a = tok.encode(text, add_special_tokens=True).ids
        n = tok.encode(text, add_special_tokens=False).ids
        rows.append({"a": a, "n": n,
                     "d1": tok.decode(a, skip_special_tokens=True),
                     "d0": tok.decode(a, skip_special_tokens=False)})
    header = {"library": "tokenizers", "version": tokenizers.__version__}
    if repaired:
        header["repaired_merges"] = repaired
    return header, rows


def golden_sentencepiece(path, corpus):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=path)
    rows = []
    for text in corpus:
        a = sp.encode(text, add_bos=True)
        n = sp.encode(text)
        rows.append({"a": a, "n": n, "d1": sp.decode(a), "d0": sp.decode(n)})
    return {"library": "sentencepiece", "version": spm.__version__}, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", default=os.path.join(REPO, "..", "shared", "tokenizers"))
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "golden", "tokenizer"))
    args = parser.parse_args()

    corpus = build_corpus()
    assert len(corpus) >= 300, len(corpus)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "corpus.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(corpus, f, ensure_ascii=False, indent=0)
        f.write("\n")

    for folder in sorted(os.listdir(args.shared)):
        for file_name, kind, make in (("tokenizer.json", "tokenizer_json", golden_tokenizer_json),
                                      ("tokenizer.model", "sentencepiece", golden_sentencepiece)):
            path = os.path.join(args.shared, folder, file_name)
            if not os.path.isfile(path):
                continue
            header, rows = make(path, corpus)
            header.update({"source": f"{folder}/{file_name}", "count": len(rows)})
            out_path = os.path.join(args.out, f"{folder}.{kind}.jsonl")
            write_jsonl(out_path, header, rows)
            print(f"wrote {out_path} ({len(rows)} rows)", file=sys.stderr)


if __name__ == "__main__":
    main()

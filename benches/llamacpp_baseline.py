#!/usr/bin/env python3
"""llama.cpp baseline for `cargo bench --bench model`: the same GGUF, prompt and protocol.

    python3 benches/llamacpp_baseline.py --gguf MODEL.gguf --prompt-file P --rows 16 \
        --max-tokens 40 --threads 2 [--temperature 0.8 --seed 0]

Prefill: the prompt in one `llama_decode` (batch = whole prompt). Batched generation, as
`SmolLm::sample_lines` does it: the prompt's KV cache is copied to every row (one unified
cache, `llama_memory_seq_cp`, no recomputation), then each step decodes one token for every
unfinished row in one batch; a row ends at a newline or end-of-text. Sampling is temperature
sampling with numpy from the logits llama.cpp returns. Prints one JSON object: prompt tokens,
prefill seconds, generated tokens, generation seconds (decode calls only, and the whole loop
with sampling). Needs `pip install llama-cpp-python` (built with CMAKE_ARGS="-DGGML_NATIVE=OFF"
on machines whose native flags crash it).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time

import numpy as np

try:
    import llama_cpp as L
except ImportError:
    print(json.dumps({"error": "llama-cpp-python is not installed"}))
    sys.exit(0)


def tokenize(vocab, text: str) -> list[int]:
    data = text.encode()
    buf = (L.llama_token * (len(data) + 8))()
    n = L.llama_tokenize(vocab, data, len(data), buf, len(buf), False, False)
    return list(buf[:n])


def piece(vocab, tok: int) -> str:
    buf = ctypes.create_string_buffer(64)
    n = L.llama_token_to_piece(vocab, tok, buf, 64, 0, False)
    return buf.raw[:max(n, 0)].decode("utf-8", "replace")


def fill(batch, items: list[tuple[int, int, int, bool]]) -> None:
    """items: (token, position, sequence, wants logits)."""
    batch.n_tokens = len(items)
    for i, (tok, pos, seq, logits) in enumerate(items):
        batch.token[i] = tok
        batch.pos[i] = pos
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq
        batch.logits[i] = logits


def sample(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    z = logits / max(temperature, 1e-3)
    z = np.exp(z - z.max())
    return int(rng.choice(len(z), p=z / z.sum()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--prompt-file", required=True)
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--until", choices=["newline", "eos"], default="newline",
                    help="where a row ends besides --max-tokens (eos: fixed-length rows in practice)")
    args = ap.parse_args()

    L.llama_backend_init()
    L.llama_log_set(ctypes.cast(None, L.llama_log_callback), ctypes.c_void_p(0)) if hasattr(L, "llama_log_set") else None
    model = L.llama_load_model_from_file(args.gguf.encode(), L.llama_model_default_params())
    vocab = L.llama_model_get_vocab(model)
    eos = L.llama_vocab_eos(vocab)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    prompt = tokenize(vocab, open(args.prompt_file, encoding="utf-8").read())
    cp = L.llama_context_default_params()
    cp.n_ctx = len(prompt) + args.max_tokens * args.rows + 64
    cp.n_batch = max(len(prompt), args.rows)
    cp.n_ubatch = cp.n_batch
    cp.n_seq_max = args.rows
    cp.n_threads = cp.n_threads_batch = args.threads
    cp.kv_unified = True
    ctx = L.llama_new_context_with_model(model, cp)
    batch = L.llama_batch_init(cp.n_batch, 0, args.rows)

    fill(batch, [(t, i, 0, i == len(prompt) - 1) for i, t in enumerate(prompt)])
    start = time.perf_counter()
    assert L.llama_decode(ctx, batch) == 0
    prefill_s = time.perf_counter() - start

    mem = L.llama_get_memory(ctx)
    for r in range(1, args.rows):
        L.llama_memory_seq_cp(mem, 0, r, -1, -1)
    first = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, len(prompt) - 1), shape=(n_vocab,)).copy()
    rng = np.random.default_rng(args.seed)
    live = {r: first for r in range(args.rows)}
    texts = {r: "" for r in range(args.rows)}
    generated, decode_s = 0, 0.0
    loop_start = time.perf_counter()
    for step in range(args.max_tokens):
        items = []
        for r, logits in list(live.items()):
            tok = sample(logits, args.temperature, rng)
            if tok == eos:
                del live[r]
                continue
            generated += 1
            text = piece(vocab, tok)
            texts[r] += text
            if (args.until == "newline" and "\n" in text) or step + 1 == args.max_tokens:
                del live[r]
                continue
            items.append((tok, len(prompt) + step, r, True))
        if not items:
            break
        fill(batch, items)
        t = time.perf_counter()
        assert L.llama_decode(ctx, batch) == 0
        decode_s += time.perf_counter() - t
        live = {seq: np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, i), shape=(n_vocab,)).copy() for i, (_, _, seq, _) in enumerate(items)}
    loop_s = time.perf_counter() - loop_start
    print(json.dumps({
        "version": L.__version__,
        "prompt_tokens": len(prompt),
        "prefill_s": prefill_s,
        "rows": args.rows,
        "generated_tokens": generated,
        "decode_s": decode_s,
        "generation_s": loop_s,
        "sample": texts[0],
    }))
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_free_model(model)


if __name__ == "__main__":
    main()

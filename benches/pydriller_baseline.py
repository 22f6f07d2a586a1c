#!/usr/bin/env python3
"""PyDriller baseline for benches/mine.rs: the same fix-commit mining pipeline in Python.

Walks every non-merge commit, keeps messages containing "fix" (any case), and for each
modified or renamed .py file takes PyDriller's changed methods (lizard) that exist before
and after, normalizes both (tokenize: no comments, STR_LIT/NUM_LIT, single spaces), drops
edits that vanish after normalization and deduplicates. Prints one JSON line of counts.

    python3 benches/pydriller_baseline.py --repo target/bench-mine/requests-history
"""

import argparse
import hashlib
import io
import json
import time
import tokenize

from pydriller import ModificationType, Repository

SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


def normalize(code):
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in SKIP:
                continue
            if tok.type == tokenize.STRING:
                out.append("STR_LIT")
            elif tok.type == tokenize.NUMBER:
                out.append("NUM_LIT")
            elif tok.type == tokenize.NEWLINE:
                out.append("\n")
            elif tok.type in (tokenize.INDENT, tokenize.DEDENT):
                out.append(tok.type == tokenize.INDENT and "<in>" or "<de>")
            else:
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return " ".join(code.split())
    return " ".join(out)


def body(source, method):
    lines = source.splitlines()
    return "\n".join(lines[method.start_line - 1 : method.end_line])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    args = ap.parse_args()
    start = time.perf_counter()
    commits = fix_commits = edited = trivial = dup = 0
    seen = set()
    pairs = 0
    for commit in Repository(args.repo, only_no_merge=True).traverse_commits():
        commits += 1
        if "fix" not in commit.msg.lower():
            continue
        fix_commits += 1
        if not commit.parents:
            continue
        for mf in commit.modified_files:
            if mf.change_type not in (ModificationType.MODIFY, ModificationType.RENAME):
                continue
            if not (mf.new_path or "").endswith(".py"):
                continue
            before_src, after_src = mf.source_code_before, mf.source_code
            if before_src is None or after_src is None:
                continue
            before_by_name = {m.long_name: m for m in mf.methods_before}
            after_by_name = {m.long_name: m for m in mf.methods}
            for m in mf.changed_methods:
                b, a = before_by_name.get(m.long_name), after_by_name.get(m.long_name)
                if b is None or a is None:
                    continue
                before, after = body(before_src, b), body(after_src, a)
                if before == after:
                    continue
                edited += 1
                nb, na = normalize(before), normalize(after)
                if nb == na:
                    trivial += 1
                    continue
                key = hashlib.blake2b((nb + "\0" + na).encode(), digest_size=8).digest()
                if key in seen:
                    dup += 1
                    continue
                seen.add(key)
                pairs += 1
    elapsed = time.perf_counter() - start
    print(json.dumps({
        "commits": commits, "fix_commits": fix_commits, "functions_edited": edited,
        "trivial": trivial, "duplicates": dup, "pairs": pairs, "seconds": elapsed,
    }))


if __name__ == "__main__":
    main()

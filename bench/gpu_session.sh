#!/usr/bin/env bash
# The GPU checks in one prepared run, for a session that is lent a GPU machine (it has torch,
# transformers, sentence-transformers, sacrebleu; textstat, pyphen, nltk, rouge_score and a
# matching transformers travel as wheels in .whl/ — see docs/benchmarks.md). Writes each step's
# output to $OUT/<step>.log. Each step has its own time limit so one slow step cannot eat the
# lease. Locally: DEVICE=cpu LLAMA=tiny T5=tiny PY=.venv/bin/python bash bench/gpu_session.sh
set -u
OUT=${OUT:-/tmp/radlay-gpu}
DEVICE=${DEVICE:-cuda}
LLAMA=${LLAMA:-tinyllama-1.1b}
T5=${T5:-t5-small}
PY=${PY:-python3}
LIMIT=${LIMIT:-170}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site
fi
status=0
step() {
    local name=$1
    shift
    echo "=== $name: $*"
    timeout "$LIMIT" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    grep -v -e "Writing model shards" -e "Warning" -e "warn(" -e "pkg_resources" "$OUT/$name.log" | tail -n 25
    echo "=== $name: exit $rc"
    [ "$rc" -eq 0 ] || status=1
}
step environment bash -c "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null; \
    $PY -c 'import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, transformers.__version__, \
    torch.cuda.is_available() and torch.cuda.get_device_name(0))'"
step inference "$PY" bench/inference.py --device "$DEVICE" --random-shape "$LLAMA" \
    --prompts 32 --batch-size 16 --max-new-tokens 48
step gpu_generation "$PY" bench/gpu_generation.py --device "$DEVICE" --random-shape "$LLAMA" \
    --sentences 16 --batch-size 16 --max-rounds 1 --max-new-tokens 32
step finetune "$PY" bench/finetune.py --device "$DEVICE" --shape "$T5" --pairs 2000 \
    --steps 150 --reference-steps 8 --batch-size 32
exit $status

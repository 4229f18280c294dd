#!/usr/bin/env bash
# run_validation.sh -- every measurement behind docs/validation-report.md.
#
#   bash scripts/run_validation.sh [STEP...]     (default: all steps, in order)
#
# Steps (each writes its JSON under figures/; a step's command is printed
# before it runs, and the same command is written beside its numbers in the
# report):
#   ppl-smollm2 ppl-gemma3        quality: PPL/dPPL/KL/top-1 per method
#   ppl-qbits8keys-MODEL          the q8_0 / q4_0-key configs of ppl-MODEL again with their
#                                 session-53 default (qbits=8 keys): MODEL-ppl-qbits8keys.json
#   ppl-qbits8vals-MODEL          the q4_0-value configs of ppl-MODEL again with their
#                                 session-54 default (qbits=8 values): MODEL-ppl-qbits8vals.json
#   ppl-qbits8kivi-MODEL          the kivi configs of ppl-MODEL again with their session-55
#                                 default (qbits=8 keys and values): MODEL-ppl-qbits8kivi.json
#   ppl-qbits8kivi-lowbit-MODEL   the same for the kivi configs of ppl-lowbit-MODEL:
#                                 MODEL-ppl-qbits8kivi-lowbit.json
#   ppl-qbits8kivix-lowbit-MODEL  the kivix configs of ppl-lowbit-MODEL again with their
#                                 session-56 default (qbits=8 keys and values where accepted):
#                                 MODEL-ppl-qbits8kivix-lowbit.json
#   ppl-qbits4rvq-MODEL           the 1-bit turboquant_rvq-key configs of ppl-MODEL again with
#                                 their session-56 default (qbits=4 query planes):
#                                 MODEL-ppl-qbits4rvq.json
#   ppl-qbits8tqv-MODEL           the configs of the quality tables whose turboquant_mse values
#                                 changed default in session 57 (qbits=8 at 1, 2 and 4 bits;
#                                 scripts/tq_values_rows.py picks them): MODEL-ppl-qbits8tqv.json
#   ppl-vecinfer-MODEL            VecInfer alone (when ppl-MODEL ran before its
#                                 calibration file existed; same chunks)
#   ppl-lowbit-smollm2 ppl-lowbit-gemma3
#                                 the low-bit configs (kivi/kivix per-channel keys,
#                                 sparse outliers, bit plans), 3 chunks each:
#                                 figures/quality/MODEL-ppl-lowbit.json
#   ppl-lowbit2-smollm2 ppl-lowbit2-gemma3
#                                 the same with attention sinks and pre-RoPE keys:
#                                 figures/quality/MODEL-ppl-lowbit2.json
#   plan-gemma3 plan-smollm2-3     third round: per-layer bit plans (tune --plan 2,3
#                                 --groups) under 3.0 and 2.25 b/e: figures/quality/sweeps/
#   ppl-lowbit3-smollm2 ppl-lowbit3-gemma3
#                                 the third round's configs (bit plans, rabitq mse=1,
#                                 the 1-bit-key family): figures/quality/MODEL-ppl-lowbit3.json
#   plan4-smollm2 plan4-gemma3    fourth round: bit plans with turboquant_mse values
#                                 (norm=8, 1/2 bits) and kivix keys (2/3 bits under 2.25
#                                 b/e, 3/4 under 3.0): figures/quality/sweeps/
#   ppl-lowbit4-smollm2 ppl-lowbit4-gemma3
#                                 the fourth round's configs (plans and uniform points with
#                                 turboquant_mse norm=8 values; the 1-bit-key family with
#                                 pre-RoPE keys): figures/quality/MODEL-ppl-lowbit4.json
#   sweep-values-smollm2 sweep-1bit-gemma3 sweep-center-gemma3
#                                 fourth round: value codecs at 2 bits (kivix, turboquant_mse
#                                 with norm=8 / lsq=1); the 1-bit-key family on gemma3 with
#                                 pre-RoPE keys, then centred (prerope=2) (ctx 1024
#                                 screens): figures/quality/sweeps/
#   sweep-kivi-smollm2 sweep-kivix-smollm2 plan-smollm2
#   sweep-sinks-smollm2 sweep-sinks-gemma3 sweep-nu-smollm2 (ctx 1024, 2 chunks)
#                                 the exploration behind them (docs/quality.md):
#                                 figures/quality/sweeps/
#   needle-smollm2 needle-gemma3  passkey retrieval per method
#   needle-lowbit2-smollm2        passkey at 4k tokens, 3 seeds per depth, low-bit configs
#   needle-4k-r3-smollm2 needle-4k-r3-gemma3
#                                 the same after the prompt fix (a filler line after the key)
#   needle-4k-r4-smollm2 needle-4k-r4-gemma3
#                                 passkey at 4k, 3 keys per depth, the first two configs of
#                                 ppl-lowbit4-MODEL (the 2.25 and 3.0 b/e plans)
#   needle-4k-diag5-gemma3 needle-4k-diag5-smollm2
#                                 fifth round: the keys a plan lost, with one thing changed per config
#   plan5-gemma3                  fifth round: per-layer key plans for the 1-bit-key family (turboquant_rvq
#                                 1/2 bits, rabitq 2/3 bits) with centred pre-RoPE keys, keys <= 2.5 b/e
#   ppl-lowbit5-gemma3 ppl-lowbit5b-gemma3
#                                 the fifth round's configs: figures/quality/gemma3-270m-ppl-lowbit5{,b}.json
#   needle-4k-r5-smollm2 needle-4k-r5-gemma3
#                                 passkey at 4k, 3 keys per depth, the fifth round's configs
#   ppl-lowbit7-smollm2 ppl-lowbit7-gemma3 needle-4k-r7-smollm2 needle-4k-r7-gemma3
#                                 seventh round: the kivix plans for speed (keys after RoPE against int8
#                                 queries, kivix values with int8 weights): ppl at ctx 2048, passkey at 4k
#   ppl-lowbit8-smollm2 ppl-lowbit8-gemma3 needle-4k-r8-smollm2 needle-4k-r8-gemma3
#                                 eighth round: the seventh round's TurboQuant-value plans with their
#                                 values summed from int8 weights and levels (qbits=8)
#   plan6-smollm2 ppl-lowbit6-smollm2 needle-4k-r6-smollm2 needle-4k-diag6-smollm2 needle-4k-diag6b-smollm2
#                                 sixth round: the 1-bit-key family on smollm2 (rabitq 1/2-bit key
#                                 plan, keys <= 2.5 b/e; ctx 2048 ppl, passkey at 4k) and why
#                                 turboquant_rvq:bits=1 keys lose the key (depth 0.5, one change per config)
#   ppl-outlier-base ppl-outlier-fix ppl-outlier-orig ppl-outlier-spectral tune-outlier
#   sweep-outlier-bias ppl-outlier-b100
#                                 key outliers: every family at >= 4 b/e on SmolLM2 with a
#                                 Qwen2.5-like key bias (models/smollm2-135m-kbias.gguf, made by
#                                 scripts/make_outlier_model.py), as picked by bits, then with
#                                 residual=128 sinks=4 prerope=2; the original's fp16 PPL:
#                                 figures/quality/smollm2-135m-{kbias-base,kbias-fix,orig-fp16}.json;
#                                 spectral:bits=4 calibrated on that model (models/*.vqc, not committed);
#                                 tune --budget 4.5 and check=strict there: figures/quality/smollm2-135m-kbias-tune.txt;
#                                 the bias magnitude screen (0, 40, 100, 250; ctx 512): figures/quality/sweeps/
#   ppl-outlier-orig3 ppl-rvqfit-smollm2 ppl-rvqfit1-smollm2 needle-4k-rvqfit1-smollm2
#                                 the unmodified model's fp16 PPL on ppl-outlier-fix's 3 chunks;
#                                 turboquant_rvq fit=1 vs its specified stage 2 on smollm2-135m
#                                 (1 and 2 bits; the 1-bit-key row of the quality table)
#   short-smollm2 short-gemma3    validate, default prompt (short context)
#   long-smollm2 long-gemma3      validate, prompt grown with --prompt-repeat
#   report                        tables (scripts/report.py) and figures (scripts/plots.py)
# VQ_BIN overrides the binary (default ./build/veloxquant). The committed
# numbers come from a 2-core machine, hence few chunks per model (3 for
# smollm2, 2 for gemma3 with its 262k-token vocabulary), passkey at one key
# per depth, and the long gemma3 run without the teacher-forced pass.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VQ_BIN:-./build/veloxquant}
WIKI=${VQ_SHARED_DATA:-../shared/data}/wikitext-2-test.txt
mkdir -p figures/quality

# The methods of the quality table (name|cache config). VecInfer needs the
# calibration file that `validate` makes (figures/validation/MODEL/calib-vecinfer.vqc).
methods() {
  local m=$1
  cat <<LIST
q8_0|keys=q8_0 values=q8_0
q4_0-rot|keys=q4_0:rot=1 values=q4_0:rot=1
KIVI-2|keys=kivi:bits=2,group=32 values=kivi:bits=2,group=32 residual=32
RVQ-1bit|keys=turboquant_rvq:bits=1 values=fp16
RaBitQ-1bit|keys=rabitq:bits=1 values=q4_0:rot=1
VecInfer-1bit|keys=vecinfer:sub_dim=8,bits=8,calib=figures/validation/$m/calib-vecinfer.vqc values=fp16
StreamingLLM-512|keys=q4_0:rot=1 values=q4_0:rot=1 evict=streaming_llm:sinks=4,window=512
LIST
}

cache_args() {
  local m=$1 args=()
  while IFS='|' read -r name cfg; do
    case "$cfg" in *calib=*) f=${cfg#*calib=}; f=${f%% *}; [ -f "$f" ] || continue ;; esac
    args+=(--cache "$cfg")
  done < <(methods "$m")
  printf '%s\0' "${args[@]}"
}

run() { echo "+ $*" >&2; "$@"; }

# ppl_json OUT model ctx chunks CACHE-ARGS...: one ppl run into
# figures/quality/OUT (through a temporary, so a failed run leaves no file)
ppl_json() {
  local out=figures/quality/$1 m=$2 ctx=$3 chunks=$4; shift 4
  run "$BIN" ppl --model "$m" --file "$WIKI" --skip 0.25 --ctx "$ctx" --chunks "$chunks" "$@" --json > "$out.tmp"
  mv "$out.tmp" "$out"
}

ppl() {  # model ctx chunks
  local -a a=()
  while IFS= read -r -d '' x; do a+=("$x"); done < <(cache_args "$1")
  ppl_json "$1-ppl.json" "$@" "${a[@]}"
}

ppl_vecinfer() {  # model ctx chunks: VecInfer alone, once validate made its calibration file
  ppl_json "$1-ppl-vecinfer.json" "$@" \
    --cache "keys=vecinfer:sub_dim=8,bits=8,calib=figures/validation/$1/calib-vecinfer.vqc values=fp16"
}

# The quality table's configs whose default arithmetic changed, measured
# again: q8_0 / q4_0 keys (qbits=8, int8 queries, session 53), q4_0 values
# (qbits=8, int8 weights, session 54), kivi keys and values (qbits=8,
# session 55). report.py's load_ppl lets these rows
# replace the main run's (same text, context and chunks).
ppl_matching() {  # model ctx chunks out regex: the configs of `methods` matching regex
  local m=$1 ctx=$2 chunks=$3 out=$4 re=$5
  local -a a=()
  while IFS='|' read -r name cfg; do
    [[ $cfg =~ $re ]] && a+=(--cache "$cfg")
  done < <(methods "$m")
  ppl_json "$out" "$m" "$ctx" "$chunks" "${a[@]}"
}

# The low-bit configs of the quality table (docs/quality.md says how they
# were chosen). One ppl run per model, 3 chunks (ctx 2048).
lowbit_methods() {
  case $1 in
    smollm2-135m) cat <<LIST
keys=kivi:bits=4,group=128 values=kivi:bits=4,group=64 residual=128
keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=4,group=64 residual=128
keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=3,group=64 residual=128
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=64 residual=32 kbits=2,2,2,4,2,2,2,2,4,2,2,2,4,2,4,4,4,4,4,4,4,2,4,4,4,2,2,2,2,2 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,4,4,2,2,2,2,2,2,2,2,2,2,2
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128
LIST
    ;;
    gemma3-270m) cat <<LIST
keys=kivi:bits=4,group=128 values=kivi:bits=4,group=128 residual=128
keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=3,group=128 residual=128
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=3,group=128 residual=128
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=128 residual=128
LIST
    ;;
  esac
}

# The second round (docs/quality.md "Sinks, pre-RoPE keys"): attention
# sinks kept fp16 (sinks=4), keys packed before RoPE (prerope=1), the
# 1-bit-key family with 4-bit values. One ppl run per model, 3 chunks.
lowbit2_methods() {
  case $1 in
    smollm2-135m) cat <<LIST
keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=4,group=64 residual=128 sinks=4 prerope=1
keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=3,group=64 residual=128 sinks=4 prerope=1
keys=kivix:bits=3,group=128,outliers=56 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1
keys=kivix:bits=3,group=128,outliers=56 values=kivix:bits=2,group=64 residual=128 sinks=4
keys=kivix:bits=2,group=128,outliers=64,nu=50 values=kivix:bits=2,group=64,nu=50 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,nu=35 values=kivix:bits=2,group=64,nu=35 residual=128 sinks=4 prerope=1 vbits=1,2,1,2,2,2,2,2,2,2,1,1,2,2,2,2,2,2,2,2,2,2,2,2,2,1,1,2,1,1
keys=rabitq:bits=1 values=kivix:bits=4,group=64 residual=128 sinks=4
keys=turboquant_rvq:bits=1 values=kivix:bits=4,group=64 residual=128 sinks=4
LIST
    ;;
    gemma3-270m) cat <<LIST
keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=4,group=128 residual=128 sinks=4 prerope=1
keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=3,group=128 residual=128 sinks=4 prerope=1
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=3,group=128 residual=128 sinks=4 prerope=1
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=128 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=256,outliers=64 values=kivix:bits=2,group=128 residual=128 sinks=4 prerope=1
keys=rabitq:bits=1 values=kivix:bits=4,group=128 residual=128 sinks=4
LIST
    ;;
  esac
}

# The third round (docs/quality.md "Third round"): bit plans from
# `tune --plan 2,3 --groups 256,G` (plan-gemma3, plan-smollm2-3; the plan's
# residual=32 of its 512-token measurement raised to the table's 128),
# rabitq with the least-squares reconstruction (mse=1), the 1-bit-key
# family with 4-bit values on gemma3. One ppl run per model, 3 chunks.
lowbit3_methods() {
  case $1 in
    smollm2-135m) cat <<LIST
keys=kivix:bits=2,group=256,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1 kbits=2,3,3,3,3,3,2,3,3,2,3,2,2,2,3,3,2,3,3,2,3,3,3,3,3,2,3,2,2,3 vbits=2,3,3,2,3,3,3,3,3,3,2,3,2,2,3,3,2,3,3,2,3,3,2,3,3,2,3,2,2,2
keys=kivix:bits=3,group=128,outliers=56 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1
keys=rabitq:bits=1,mse=1 values=kivix:bits=4,group=64 residual=128 sinks=4
keys=rabitq:bits=2,mse=1 values=kivix:bits=4,group=64 residual=128 sinks=4
keys=rabitq:bits=2 values=kivix:bits=4,group=64 residual=128 sinks=4
LIST
    ;;
    gemma3-270m) cat <<LIST
keys=kivix:bits=2,group=256,outliers=64 values=kivix:bits=3,group=256 residual=128 sinks=4 prerope=1 kbits=2,3,3,2,2,3,3,3,3,3,2,3,3,3,3,3,3,3 vbits=3,3,2,3,2,3,3,3,3,3,3,3,3,3,3,3,3,3
keys=kivix:bits=2,group=256,outliers=64 values=kivix:bits=3,group=256 residual=128 sinks=4 prerope=1 kbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2 vbits=3,3,2,2,2,2,2,2,2,2,2,2,2,3,2,2,2,2
keys=kivix:bits=2,group=256,outliers=64 values=kivix:bits=2,group=256 residual=128 sinks=4 prerope=1
keys=turboquant_rvq:bits=1 values=kivix:bits=4,group=256 residual=128 sinks=4
keys=rabitq:bits=2,mse=1 values=kivix:bits=4,group=256 residual=128 sinks=4
keys=rabitq:bits=1,mse=1 values=kivix:bits=4,group=256 residual=128 sinks=4
LIST
    ;;
  esac
}

# The fourth round (docs/quality.md "Fourth round"): values
# turboquant_mse with the one-byte norm (norm=8, lsq=1) at 1-2 bits, keys
# kivix 2-4 bits; the plans from plan4-MODEL (their residual=32 of the
# 512-token measurement raised to the table's 128). 3 chunks.
lowbit4_methods() {
  case $1 in
    smollm2-135m) cat <<LIST
keys=kivix:bits=3,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 prerope=1 kbits=3,3,2,2,2,2,2,3,3,2,2,3,2,2,3,3,2,3,3,2,3,3,2,3,3,2,3,2,2,2 vbits=2,2,2,2,2,2,2,2,2,2,1,1,2,1,2,2,1,2,2,1,2,1,1,2,2,1,1,1,2,1
keys=kivix:bits=4,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 prerope=1 kbits=4,4,4,4,3,4,3,3,3,4,4,4,4,4,4,3,4,4,4,4,4,4,3,4,4,4,3,4,3,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,1,2,2,1,2,2,2,2,2,1,2,1,2,2
keys=kivix:bits=3,group=256,outliers=64 values=turboquant_mse:bits=1,norm=8,lsq=1 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 prerope=1
LIST
    ;;
    gemma3-270m) cat <<LIST
keys=kivix:bits=2,group=256,outliers=64 values=turboquant_mse:bits=1,norm=8,lsq=1 residual=128 sinks=4 prerope=1 kbits=2,3,2,2,2,3,3,3,2,3,2,3,3,3,2,3,2,3 vbits=1,2,2,2,1,2,1,2,1,2,2,2,2,2,2,2,1,2
keys=kivix:bits=4,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 prerope=1 kbits=4,4,3,3,3,4,4,4,4,3,4,4,4,4,4,4,4,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2
keys=turboquant_rvq:bits=1 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4 prerope=2
keys=rabitq:bits=2,mse=1 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4 prerope=2
LIST
    ;;
  esac
}

# The fifth round (docs/quality.md "Fifth round"): the 1-bit-key family with
# a per-layer key plan from plan5-gemma3 (their measurement already at residual=128). 3 chunks.
lowbit5_methods() {
  case $1 in
    # (the rabitq plan only: tune's KL 0.063 against the rvq plan's 0.109; a
    # gemma3 ctx 2048 run went at about 10 tokens/s per config while the shared
    # 2-core machine was busy, so the rest moved to lowbit5b)
    gemma3-270m) cat <<LIST
keys=rabitq:mse=1,bits=2 values=turboquant_mse:norm=8,bits=4 residual=128 sinks=4 prerope=2 kbits=2,3,2,2,3,3,2,2,3,2,3,3,2,2,2,2,2,2 vbits=4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4
LIST
    ;;
  esac
}

# Key outliers (docs/quality.md "Every method family on a model with strong
# key outliers"): SmolLM2 with a key-projection bias of +250/-125 on the
# lowest-frequency RoPE pair of every KV head (scripts/make_outlier_model.py;
# Qwen2.5-like outlier channels). Every family at >= 4 b/e as a user picks it
# by bits (outlier-base), then with the cache's own remedy: a 128-token fp16
# window, 4 sink tokens, keys centred before RoPE (prerope=2) (outlier-fix).
OUTLIER_MODEL=models/smollm2-135m-kbias.gguf
outlier_model() {
  [ -f "$OUTLIER_MODEL" ] || run python3 scripts/make_outlier_model.py --in models/smollm2-135m.gguf \
    --out "$OUTLIER_MODEL" --bias 250 --pairs 1
}
outlier_methods() {
  case $1 in
    base) cat <<LIST
keys=q8_0 values=q8_0
keys=q4_0 values=q4_0
keys=q4_0:rot=1 values=q4_0:rot=1
keys=kivi:bits=4,group=128 values=kivi:bits=4,group=64 residual=128
keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=4,group=64 residual=128 sinks=4 prerope=1
keys=turboquant_mse:bits=4 values=turboquant_mse:bits=4
keys=turboquant_rvq:bits=2 values=turboquant_mse:bits=4
keys=rabitq:bits=4 values=turboquant_mse:bits=4
LIST
    ;;
    fix) cat <<LIST
keys=q8_0 values=q8_0 residual=128 sinks=4 prerope=2
keys=q4_0 values=q4_0 residual=128 sinks=4 prerope=2
keys=q4_0:rot=1 values=q4_0:rot=1 residual=128 sinks=4 prerope=2
keys=q4_0:rot=1 values=q4_0:rot=1 prerope=2
keys=turboquant_mse:bits=4 values=turboquant_mse:bits=4 residual=128 sinks=4 prerope=2
keys=turboquant_rvq:bits=2 values=turboquant_mse:bits=4 residual=128 sinks=4 prerope=2
keys=turboquant_rvq:bits=2,fit=1 values=turboquant_mse:bits=4 residual=128 sinks=4 prerope=2
keys=rabitq:bits=4 values=turboquant_mse:bits=4 residual=128 sinks=4 prerope=2
keys=kivi:bits=4,group=128 values=kivi:bits=4,group=64 residual=128 sinks=4 prerope=2
LIST
    ;;
  esac
}

# run after lowbit5 (when the machine was free again): the rvq key plan of
# plan5-gemma3 and gemma3's 3.0 plan with 16 sinks (needle-4k-diag5-gemma3)
lowbit5b_methods() {
  cat <<LIST
keys=turboquant_rvq:bits=1 values=turboquant_mse:norm=8,bits=4 residual=128 sinks=4 prerope=2 kbits=1,1,1,1,1,2,1,1,1,1,1,2,1,2,1,1,1,1 vbits=4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4
keys=kivix:bits=4,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=16 prerope=1 kbits=4,4,3,3,3,4,4,4,4,3,4,4,4,4,4,4,4,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2
LIST
}

# passkey configs of the fifth round: gemma3's rabitq key plan; smollm2's 1-bit-key row (turboquant_rvq:bits=1 keys, 2.25 b/e)
needle5_methods() {
  case $1 in
    gemma3-270m) lowbit5_methods gemma3-270m ;;
    smollm2-135m) echo 'keys=turboquant_rvq:bits=1 values=kivix:bits=4,group=64 residual=128 sinks=4' ;;
  esac
}

# The sixth round (docs/quality.md "Sixth round"): the 1-bit-key family on
# smollm2-135m within keys <= 2.5 b/e. rabitq:bits=2,mse=1 keys cost 2.504
# b/e there (2.5 + the page tables), so plan6-smollm2 lets tune put the
# least sensitive layer(s) at 1 bit (budget (2.49 + 4.504) / 2 with kivix
# 4-bit values); its plan is the first line. 3 chunks.
lowbit6_methods() {
  cat <<LIST
keys=rabitq:mse=1,bits=2 values=kivix:group=64,bits=4 residual=128 sinks=4 kbits=2,2,2,2,2,2,2,2,2,2,1,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2 vbits=4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4
LIST
}

# The seventh round (docs/quality.md "Seventh round"): the kivix plans for
# speed -- keys packed after RoPE (no prerope) and scored against int8
# queries (qbits=8), kivix values of 2-4 bits summed with int8 weights;
# otherwise the plans of the fourth round (2.25 and 3.0 b/e) and the 4-bit
# rows. 3 chunks.
lowbit7_methods() {
  case $1 in
    smollm2-135m) cat <<LIST
keys=kivix:bits=3,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 kbits=3,3,2,2,2,2,2,3,3,2,2,3,2,2,3,3,2,3,3,2,3,3,2,3,3,2,3,2,2,2 vbits=2,2,2,2,2,2,2,2,2,2,1,1,2,1,2,2,1,2,2,1,2,1,1,2,2,1,1,1,2,1
keys=kivix:bits=4,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 kbits=4,4,4,4,3,4,3,3,3,4,4,4,4,4,4,3,4,4,4,4,4,4,3,4,4,4,3,4,3,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,1,2,2,1,2,2,2,2,2,1,2,1,2,2
keys=kivix:bits=4,group=128,outliers=64,qbits=8 values=kivix:bits=3,group=64,qbits=8 residual=128 sinks=4
LIST
    ;;
    gemma3-270m) cat <<LIST
keys=kivix:bits=2,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=1,norm=8,lsq=1 residual=128 sinks=4 kbits=2,3,2,2,2,3,3,3,2,3,2,3,3,3,2,3,2,3 vbits=1,2,2,2,1,2,1,2,1,2,2,2,2,2,2,2,1,2
keys=kivix:bits=4,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=16 kbits=4,4,3,3,3,4,4,4,4,3,4,4,4,4,4,4,4,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2
keys=kivix:bits=4,group=128,outliers=64,qbits=8 values=kivix:bits=3,group=128,qbits=8 residual=128 sinks=4
LIST
    ;;
  esac
}

# The eighth round (docs/quality.md "Eighth round"): the seventh round's
# plans with turboquant_mse values, those values summed from int8 weights
# and int8 levels (turboquant_mse qbits=8 on values, kernels/lut_qaxpy.h;
# the same bytes). 3 chunks.
lowbit8_methods() {
  lowbit7_methods "$1" | grep 'values=turboquant_mse' | sed 's/\(values=turboquant_mse:[^ ]*\)/\1,qbits=8/'
}

# passkey diagnosis of the 1-bit-key family on smollm2-135m (depth 0.5, where
# turboquant_rvq:bits=1 lost all three keys in needle-4k-r5-smollm2; with one
# depth, needle's keys are r5's depth-0 keys): one thing changed per config.
# diag6: RVQ at 2 bits, 2-bit RVQ keys in the first / second half of the
# layers, turboquant_mse 2 bits (RVQ-1bit's 18 bytes); diag6b (run after it,
# once a 2-bit rabitq plan had passed): TurboQuant with the QJL residual
# sketch (turboquant_prod, 20 bytes) and rabitq 2 bits without mse=1
diag6_methods() {
  local r='values=kivix:bits=4,group=64 residual=128 sinks=4'
  local lo=1,1,1,1,1,1,1,1,1,1,1,1,1,1,1 hi=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2
  cat <<LIST
keys=turboquant_rvq:bits=2 $r
keys=turboquant_rvq:bits=1 $r kbits=$hi,$lo
keys=turboquant_rvq:bits=1 $r kbits=$lo,$hi
keys=turboquant_mse:bits=2 $r
keys=turboquant_prod:bits=2 $r
keys=rabitq:bits=2 $r
LIST
}

needle_4k() {  # model round: passkey at 4k, 3 keys at each of depths 0 / 0.5 / 1, the configs on stdin
  local m=$1 o=figures/quality/sweeps/$1-needle-4k-$2.json; local -a a=()
  while IFS= read -r cfg; do [ -n "$cfg" ] && a+=(--cache "$cfg"); done
  run "$BIN" needle --model "$m" --ctx 4096 --depths 0,0.5,1 --seeds 3 --show "${a[@]}" --json > "$o.tmp"
  mv "$o.tmp" "$o"
}

ppl_list() {  # model chunks out-file: the configs on stdin, one per line
  local m=$1 chunks=$2 out=$3; local -a a=()
  while IFS= read -r cfg; do [ -n "$cfg" ] && a+=(--cache "$cfg"); done
  run "$BIN" ppl --model "$m" --file "$WIKI" --skip 0.25 --ctx 2048 --chunks "$chunks" "${a[@]}" --json > "$out.tmp"
  mv "$out.tmp" "$out"
}

sweep_list() {  # name: the exploration runs of docs/quality.md (smollm2-135m)
  case $1 in
    kivi) cat <<LIST
keys=kivi:bits=4,group=128 values=kivi:bits=4,group=64 residual=128
keys=kivi:bits=4,group=32 values=kivi:bits=2,group=32 residual=128
keys=kivi:bits=2,group=32 values=kivi:bits=4,group=32 residual=128
keys=kivi:bits=4,group=128 values=kivi:bits=2,group=64 residual=128
keys=kivi:bits=2,group=128 values=kivi:bits=2,group=64 residual=128
keys=kivi:bits=4,group=64 values=kivi:bits=4,group=64 residual=128
keys=kivi:bits=4,group=128 values=q4_0:rot=1 residual=128
keys=kivi:bits=2,group=32 values=kivi:bits=2,group=32 residual=128
LIST
    ;;
    kivix) cat <<LIST
keys=kivix:bits=3,group=128 values=kivix:bits=3,group=64 residual=128
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=3,group=64 residual=128
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128
keys=kivix:bits=2,group=128,outliers=128 values=kivix:bits=2,group=32 residual=128
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128
keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=3,group=64 residual=128
keys=kivix:bits=1,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=3,group=64 residual=32
LIST
    ;;
  esac
}

screen_list() {  # name: the ctx-1024 screens of the second round (docs/quality.md)
  case $1 in
    sinks-prerope-smollm2) cat <<'LIST'
keys=fp16 values=fp16 residual=0 prerope=1
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=4
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128 prerope=1
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=4
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128 prerope=1
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1
LIST
    ;;
    sinks-lowbit-smollm2) cat <<'LIST'
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=1
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=16
keys=kivix:bits=2,group=128 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=1,group=64 residual=128 sinks=4 prerope=1
keys=kivix:bits=1,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=64 residual=32 sinks=4 prerope=1
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64 residual=32 sinks=4 prerope=1
keys=kivix:bits=1,group=128,outliers=64 values=kivix:bits=1,group=64 residual=128 sinks=4 prerope=1
LIST
    ;;
    sinks-prerope-gemma3) cat <<'LIST'
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=128 residual=128
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=128 residual=128 sinks=4
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=128 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=128 residual=128
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=128 residual=128 sinks=4
keys=kivix:bits=2,group=128,outliers=64 values=kivix:bits=2,group=128 residual=128 sinks=4 prerope=1
LIST
    ;;
    nu-smollm2) cat <<'LIST'
keys=kivix:bits=3,group=128,outliers=64,nu=35 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1
keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64,nu=35 residual=128 sinks=4 prerope=1
keys=kivix:bits=3,group=128,outliers=64,nu=35 values=kivix:bits=2,group=64,nu=35 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,outliers=64,nu=35 values=kivix:bits=2,group=64,nu=35 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,outliers=64,nu=25 values=kivix:bits=2,group=64,nu=25 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,outliers=64,nu=50 values=kivix:bits=2,group=64,nu=50 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,nu=35 values=kivix:bits=2,group=64,nu=35 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=128,nu=35 values=kivix:bits=2,group=64,nu=35 residual=128 sinks=4 prerope=1 vbits=1,2,1,2,2,2,2,2,2,2,1,1,2,2,2,2,2,2,2,2,2,2,2,2,2,1,1,2,1,1
LIST
    ;;
    onebit-gemma3) cat <<'LIST'
keys=turboquant_rvq:bits=1 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4
keys=turboquant_rvq:bits=1 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4 prerope=1
keys=rabitq:bits=2,mse=1 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4 prerope=1
keys=rabitq:bits=1,mse=1 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4 prerope=1
LIST
    ;;
    values-smollm2) cat <<'LIST'
keys=kivix:bits=2,group=256,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=256,outliers=64 values=turboquant_mse:bits=2 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 prerope=1
keys=kivix:bits=2,group=256,outliers=64 values=turboquant_mse:bits=1,norm=8,lsq=1 residual=128 sinks=4 prerope=1
keys=kivix:bits=3,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 prerope=1
LIST
    ;;
    center-gemma3) cat <<'LIST'
keys=turboquant_rvq:bits=1 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4 prerope=2
keys=rabitq:bits=2,mse=1 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4 prerope=2
keys=rabitq:bits=1,mse=1 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4 prerope=2
keys=turboquant_mse:bits=2 values=turboquant_mse:bits=4,norm=8 residual=128 sinks=4 prerope=2
LIST
    ;;
  esac
}

screen_run() {  # model out-file: 2 chunks at ctx 1024, configs on stdin
  local m=$1 out=$2; local -a a=()
  while IFS= read -r cfg; do [ -n "$cfg" ] && a+=(--cache "$cfg"); done
  run "$BIN" ppl --model "$m" --file "$WIKI" --skip 0.25 --ctx 1024 --chunks 2 "${a[@]}" --json > "$out.tmp"
  mv "$out.tmp" "$out"
}

needle() {  # model ctx
  local m=$1 ctx=$2; local -a a=()
  while IFS= read -r -d '' x; do a+=("$x"); done < <(cache_args "$m")
  run "$BIN" needle --model "$m" --ctx "$ctx" --depths 0,0.5,1 --seeds 1 "${a[@]}" --json \
    > "figures/quality/$m-needle.json.tmp"
  mv "figures/quality/$m-needle.json.tmp" "figures/quality/$m-needle.json"
}

step() {
  case $1 in
    short-smollm2) run "$BIN" validate --model smollm2-135m ;;
    short-gemma3)  run "$BIN" validate --model gemma3-270m --max-tokens 64 ;;
    long-smollm2)  run "$BIN" validate --model smollm2-135m --prompt-repeat 150 --max-tokens 32 --out figures/validation-long \
                     --calib figures/validation/smollm2-135m/calib-vecinfer.vqc ;;
    long-gemma3)   run "$BIN" validate --model gemma3-270m --prompt-repeat 125 --max-tokens 16 --no-quality --out figures/validation-long \
                     --calib figures/validation/gemma3-270m/calib-vecinfer.vqc ;;
    ppl-smollm2)   ppl smollm2-135m 2048 3 ;;
    ppl-gemma3)    ppl gemma3-270m 2048 2 ;;
    ppl-qbits8keys-smollm2) ppl_matching smollm2-135m 2048 3 smollm2-135m-ppl-qbits8keys.json '^keys=(q8_0 |q4_0)' ;;
    ppl-qbits8keys-gemma3)  ppl_matching gemma3-270m 2048 2 gemma3-270m-ppl-qbits8keys.json '^keys=(q8_0 |q4_0)' ;;
    ppl-qbits8vals-smollm2) ppl_matching smollm2-135m 2048 3 smollm2-135m-ppl-qbits8vals.json '(^| )values=q4_0' ;;
    ppl-qbits8vals-gemma3)  ppl_matching gemma3-270m 2048 2 gemma3-270m-ppl-qbits8vals.json '(^| )values=q4_0' ;;
    ppl-qbits8kivi-smollm2) ppl_matching smollm2-135m 2048 3 smollm2-135m-ppl-qbits8kivi.json '(keys|values)=kivi:' ;;
    ppl-qbits8kivi-gemma3)  ppl_matching gemma3-270m 2048 2 gemma3-270m-ppl-qbits8kivi.json '(keys|values)=kivi:' ;;
    ppl-qbits8kivi-lowbit-smollm2) lowbit_methods smollm2-135m | grep -E '(keys|values)=kivi:' |
                                     ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-qbits8kivi-lowbit.json ;;
    ppl-qbits8kivi-lowbit-gemma3)  lowbit_methods gemma3-270m | grep -E '(keys|values)=kivi:' |
                                     ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-qbits8kivi-lowbit.json ;;
    ppl-qbits8kivix-lowbit-smollm2) lowbit_methods smollm2-135m | grep -E '(keys|values)=kivix:' |
                                      ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-qbits8kivix-lowbit.json ;;
    ppl-qbits8kivix-lowbit-gemma3)  lowbit_methods gemma3-270m | grep -E '(keys|values)=kivix:' |
                                      ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-qbits8kivix-lowbit.json ;;
    ppl-qbits4rvq-smollm2) ppl_matching smollm2-135m 2048 3 smollm2-135m-ppl-qbits4rvq.json '^keys=turboquant_rvq:bits=1 ' ;;
    ppl-qbits4rvq-gemma3)  ppl_matching gemma3-270m 2048 2 gemma3-270m-ppl-qbits4rvq.json '^keys=turboquant_rvq:bits=1 ' ;;
    ppl-qbits8tqv-smollm2) python3 scripts/tq_values_rows.py smollm2-135m |
                             ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-qbits8tqv.json ;;
    ppl-qbits8tqv-gemma3)  python3 scripts/tq_values_rows.py gemma3-270m |
                             ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-qbits8tqv.json ;;
    ppl-vecinfer-smollm2) ppl_vecinfer smollm2-135m 2048 3 ;;
    ppl-vecinfer-gemma3)  ppl_vecinfer gemma3-270m 2048 2 ;;
    ppl-lowbit-smollm2) lowbit_methods smollm2-135m | ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-lowbit.json ;;
    ppl-lowbit-gemma3)  lowbit_methods gemma3-270m | ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-lowbit.json ;;
    ppl-lowbit2-smollm2) lowbit2_methods smollm2-135m | ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-lowbit2.json ;;
    ppl-lowbit2-gemma3)  lowbit2_methods gemma3-270m | ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-lowbit2.json ;;
    ppl-lowbit3-smollm2) lowbit3_methods smollm2-135m | ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-lowbit3.json ;;
    ppl-lowbit3-gemma3)  lowbit3_methods gemma3-270m | ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-lowbit3.json ;;
    ppl-lowbit4-smollm2) lowbit4_methods smollm2-135m | ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-lowbit4.json ;;
    ppl-lowbit4-gemma3)  lowbit4_methods gemma3-270m | ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-lowbit4.json ;;
    plan-gemma3)   mkdir -p figures/quality/sweeps
                   for b in 3 2.25; do
                     run "$BIN" tune --model gemma3-270m --plan 2,3 --groups 256,256 --budget $b --file "$WIKI" \
                       --tokens 512 --json > figures/quality/sweeps/gemma3-270m-plan-2-3-budget$b.json
                   done ;;
    plan-smollm2-3) mkdir -p figures/quality/sweeps
                   run "$BIN" tune --model smollm2-135m --plan 2,3 --groups 256,64 --budget 3 --file "$WIKI" \
                     --tokens 512 --json > figures/quality/sweeps/smollm2-135m-plan-2-3-budget3.json ;;
    # fourth round: keys kivix 2/3 or 3/4 bits per layer, values
    # turboquant_mse (rotation + Lloyd-Max, one-byte norm) 1/2 bits per layer
    plan4-smollm2|plan4-gemma3)
                   mkdir -p figures/quality/sweeps
                   m=smollm2-135m; [ "$1" = plan4-gemma3 ] && m=gemma3-270m
                   for pb in 2,3:2.25 3,4:3; do
                     p=${pb%%:*}; b=${pb##*:}
                     run "$BIN" tune --model $m --plan $p --vplan 1,2 --plan-keys kivix:group=256,outliers=64 \
                       --plan-values turboquant_mse:norm=8,lsq=1 --budget $b --file "$WIKI" --tokens 512 --json \
                       > figures/quality/sweeps/$m-plan4-k${p/,/-}-v1-2-budget$b.json.tmp
                     mv figures/quality/sweeps/$m-plan4-k${p/,/-}-v1-2-budget$b.json.tmp \
                       figures/quality/sweeps/$m-plan4-k${p/,/-}-v1-2-budget$b.json
                   done ;;
    # fifth round: the 1-bit-key family on gemma3 with a per-layer key plan
    # (keys <= 2.5 b/e: budget (2.5 + 4.031) / 2 with 4-bit values), centred
    # pre-RoPE keys (prerope=2); values turboquant_mse 4 bits in every layer
    plan5-gemma3)  mkdir -p figures/quality/sweeps
                   for kb in turboquant_rvq:1,2 rabitq:mse=1:2,3; do
                     k=${kb%:*}; p=${kb##*:}; n=${k%%:*}
                     run "$BIN" tune --model gemma3-270m --plan $p --vplan 4,4 --plan-keys $k \
                       --plan-values turboquant_mse:norm=8 --plan-cache "sinks=4 prerope=2" --budget 3.265 \
                       --file "$WIKI" --tokens 1024 --json \
                       > figures/quality/sweeps/gemma3-270m-plan5-$n-k${p/,/-}-v4-budget3.265.json.tmp
                     mv figures/quality/sweeps/gemma3-270m-plan5-$n-k${p/,/-}-v4-budget3.265.json.tmp \
                       figures/quality/sweeps/gemma3-270m-plan5-$n-k${p/,/-}-v4-budget3.265.json
                   done ;;
    sweep-kivi-smollm2)  mkdir -p figures/quality/sweeps
                         sweep_list kivi | ppl_list smollm2-135m 3 figures/quality/sweeps/smollm2-135m-kivi.json ;;
    sweep-kivix-smollm2) mkdir -p figures/quality/sweeps
                         sweep_list kivix | ppl_list smollm2-135m 3 figures/quality/sweeps/smollm2-135m-kivix.json ;;
    # (the plan printed here is the kbits/vbits config of ppl-lowbit-smollm2)
    plan-smollm2)  mkdir -p figures/quality/sweeps
                   run "$BIN" tune --model smollm2-135m --budget 3.0 --plan 2,4 --file "$WIKI" --tokens 512 \
                     > figures/quality/sweeps/smollm2-135m-plan-2-4.txt ;;
    sweep-sinks-smollm2) mkdir -p figures/quality/sweeps
                         screen_list sinks-prerope-smollm2 | screen_run smollm2-135m figures/quality/sweeps/smollm2-135m-sinks-prerope.json
                         screen_list sinks-lowbit-smollm2 | screen_run smollm2-135m figures/quality/sweeps/smollm2-135m-sinks-lowbit.json ;;
    sweep-sinks-gemma3)  mkdir -p figures/quality/sweeps
                         screen_list sinks-prerope-gemma3 | screen_run gemma3-270m figures/quality/sweeps/gemma3-270m-sinks-prerope.json ;;
    sweep-1bit-gemma3)   mkdir -p figures/quality/sweeps  # fourth round: the 1-bit-key family, pre-RoPE
                         screen_list onebit-gemma3 | screen_run gemma3-270m figures/quality/sweeps/gemma3-270m-1bit-prerope.json ;;
    sweep-values-smollm2) mkdir -p figures/quality/sweeps  # fourth round: value codecs at 2 bits, and which role matters
                         screen_list values-smollm2 | screen_run smollm2-135m figures/quality/sweeps/smollm2-135m-values.json ;;
    sweep-center-gemma3) mkdir -p figures/quality/sweeps  # fourth round: the same with centred keys (prerope=2)
                         screen_list center-gemma3 | screen_run gemma3-270m figures/quality/sweeps/gemma3-270m-1bit-center.json ;;
    sweep-nu-smollm2)    mkdir -p figures/quality/sweeps
                         screen_list nu-smollm2 | screen_run smollm2-135m figures/quality/sweeps/smollm2-135m-nu.json ;;
    needle-smollm2) needle smollm2-135m 2048 ;;
    needle-lowbit-smollm2)
      run "$BIN" needle --model smollm2-135m --ctx 2048 --depths 0,0.5,1 --seeds 1 \
        --cache 'keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=4,group=64 residual=128' \
        --cache 'keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=3,group=64 residual=128' \
        --cache 'keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=2,group=64 residual=128' \
        --json > figures/quality/smollm2-135m-needle-lowbit.json ;;
    needle-lowbit-gemma3)
      run "$BIN" needle --model gemma3-270m --ctx 2048 --depths 0,0.5,1 --seeds 1 \
        --cache 'keys=kivi:bits=4,group=128 values=kivi:bits=4,group=128 residual=128' \
        --cache 'keys=kivix:bits=3,group=128,outliers=64 values=kivix:bits=3,group=128 residual=128' \
        --json > figures/quality/gemma3-270m-needle-lowbit.json ;;
    needle-lowbit2-smollm2)  # passkey at 4k tokens, 3 keys per depth (docs/quality.md)
      run "$BIN" needle --model smollm2-135m --ctx 4096 --depths 0,0.5,1 --seeds 3 \
        --cache 'keys=kivix:bits=3,group=128,outliers=56 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1' \
        --cache 'keys=turboquant_rvq:bits=1 values=kivix:bits=4,group=64 residual=128 sinks=4' \
        --json > figures/quality/sweeps/smollm2-135m-needle-4k.json.tmp
      mv figures/quality/sweeps/smollm2-135m-needle-4k.json.tmp figures/quality/sweeps/smollm2-135m-needle-4k.json ;;
    needle-4k-r3-smollm2)  # third round: the needle always followed by a filler line (cmd_needle.c)
      run "$BIN" needle --model smollm2-135m --ctx 4096 --depths 0,0.5,1 --seeds 3 \
        --cache 'keys=kivix:bits=2,group=256,outliers=64 values=kivix:bits=2,group=64 residual=128 sinks=4 prerope=1 kbits=2,3,3,3,3,3,2,3,3,2,3,2,2,2,3,3,2,3,3,2,3,3,3,3,3,2,3,2,2,3 vbits=2,3,3,2,3,3,3,3,3,3,2,3,2,2,3,3,2,3,3,2,3,3,2,3,3,2,3,2,2,2' \
        --json > figures/quality/sweeps/smollm2-135m-needle-4k-r3.json.tmp
      mv figures/quality/sweeps/smollm2-135m-needle-4k-r3.json.tmp figures/quality/sweeps/smollm2-135m-needle-4k-r3.json ;;
    needle-4k-r3-gemma3)  # as smollm2, 3 keys per depth
      run "$BIN" needle --model gemma3-270m --ctx 4096 --depths 0,0.5,1 --seeds 3 \
        --cache 'keys=kivix:bits=2,group=256,outliers=64 values=kivix:bits=3,group=256 residual=128 sinks=4 prerope=1 kbits=2,3,3,2,2,3,3,3,3,3,2,3,3,3,3,3,3,3 vbits=3,3,2,3,2,3,3,3,3,3,3,3,3,3,3,3,3,3' \
        --json > figures/quality/sweeps/gemma3-270m-needle-4k-r3.json.tmp
      mv figures/quality/sweeps/gemma3-270m-needle-4k-r3.json.tmp figures/quality/sweeps/gemma3-270m-needle-4k-r3.json ;;
    needle-4k-r4-smollm2|needle-4k-r4-gemma3)  # fourth round: the plans under 3.0 (and 2.25) b/e
      m=smollm2-135m; [ "$1" = needle-4k-r4-gemma3 ] && m=gemma3-270m
      a=()
      while IFS= read -r cfg; do a+=(--cache "$cfg"); done < <(lowbit4_methods $m | head -2)
      # --show: every trial's key and continuation on stderr (the failures' answers)
      run "$BIN" needle --model $m --ctx 4096 --depths 0,0.5,1 --seeds 3 --show "${a[@]}" \
        --json > figures/quality/sweeps/$m-needle-4k-r4.json.tmp
      mv figures/quality/sweeps/$m-needle-4k-r4.json.tmp figures/quality/sweeps/$m-needle-4k-r4.json ;;
    needle-4k-diag5-gemma3)  # fifth round: gemma3's 3.0 plan lost key 79036 at depth 0 (needle-4k-r4);
      # the same depth-0 keys with one thing changed each: values at 3 bits, keys at 4 bits, 16 sinks
      p='keys=kivix:bits=4,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 prerope=1 kbits=4,4,3,3,3,4,4,4,4,3,4,4,4,4,4,4,4,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2'
      v3=${p/values=turboquant_mse:bits=2/values=turboquant_mse:bits=3}; v3=${v3/ vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2/}
      k4=${p/kbits=4,4,3,3,3,4,4,4,4,3,4,4,4,4,4,4,4,4 /}
      run "$BIN" needle --model gemma3-270m --ctx 4096 --depths 0 --seeds 3 --show --cache "$p" --cache "$v3" \
        --cache "$k4" --cache "${p/sinks=4/sinks=16}" --json > figures/quality/sweeps/gemma3-270m-needle-4k-diag5.json.tmp
      mv figures/quality/sweeps/gemma3-270m-needle-4k-diag5.json.tmp figures/quality/sweeps/gemma3-270m-needle-4k-diag5.json ;;
    needle-4k-diag5-smollm2)  # fifth round: smollm2's 2.25 plan lost two keys at depth 0.5 (needle-4k-r4);
      # the same keys (depths 0 and 0.5) with one thing changed each: values at 2 bits, keys at 3 bits, 16 sinks
      p='keys=kivix:bits=3,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 prerope=1 kbits=3,3,2,2,2,2,2,3,3,2,2,3,2,2,3,3,2,3,3,2,3,3,2,3,3,2,3,2,2,2 vbits=2,2,2,2,2,2,2,2,2,2,1,1,2,1,2,2,1,2,2,1,2,1,1,2,2,1,1,1,2,1'
      v2=${p/ vbits=2,2,2,2,2,2,2,2,2,2,1,1,2,1,2,2,1,2,2,1,2,1,1,2,2,1,1,1,2,1/}
      k3=${p/kbits=3,3,2,2,2,2,2,3,3,2,2,3,2,2,3,3,2,3,3,2,3,3,2,3,3,2,3,2,2,2 /}
      run "$BIN" needle --model smollm2-135m --ctx 4096 --depths 0,0.5 --seeds 3 --show --cache "$p" --cache "$v2" \
        --cache "$k3" --cache "${p/sinks=4/sinks=16}" --json > figures/quality/sweeps/smollm2-135m-needle-4k-diag5.json.tmp
      mv figures/quality/sweeps/smollm2-135m-needle-4k-diag5.json.tmp figures/quality/sweeps/smollm2-135m-needle-4k-diag5.json ;;
    ppl-lowbit5b-gemma3) lowbit5b_methods | ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-lowbit5b.json ;;
    ppl-outlier-base)  # 1 chunk: the failures are factors, not percents (and the 2-core machine was shared)
      outlier_model
      outlier_methods base | ppl_list "$OUTLIER_MODEL" 1 figures/quality/smollm2-135m-kbias-base.json ;;
    ppl-outlier-fix)  # 3 chunks; turboquant_rvq:bits=2 with its specified stage 2 and with fit=1
      outlier_model
      outlier_methods fix | ppl_list "$OUTLIER_MODEL" 3 figures/quality/smollm2-135m-kbias-fix.json ;;
    ppl-outlier-spectral)  # spectral:bits=4 (4.5 b/e) calibrated on the biased model's own keys/values
      outlier_model
      [ -f models/smollm2-135m-kbias-spectral4.vqc ] || run "$BIN" calibrate --model "$OUTLIER_MODEL" \
        --method spectral --spec spectral:bits=4 --out models/smollm2-135m-kbias-spectral4.vqc
      ppl_list "$OUTLIER_MODEL" 2 figures/quality/smollm2-135m-kbias-spectral.json <<LIST
keys=spectral:bits=4,calib=models/smollm2-135m-kbias-spectral4.vqc values=spectral:bits=4,calib=models/smollm2-135m-kbias-spectral4.vqc
keys=spectral:bits=4,calib=models/smollm2-135m-kbias-spectral4.vqc values=spectral:bits=4,calib=models/smollm2-135m-kbias-spectral4.vqc residual=128 sinks=4
LIST
      ;;
    sweep-outlier-bias)  # the bias magnitude: 40, 100, 250 (ctx 512, 1 chunk screens)
      mkdir -p figures/quality/sweeps
      for b in 40 100 250; do
        [ -f models/smollm2-135m-kbias$b.gguf ] || run python3 scripts/make_outlier_model.py \
          --in models/smollm2-135m.gguf --out models/smollm2-135m-kbias$b.gguf --bias $b --pairs 1
        run "$BIN" ppl --model models/smollm2-135m-kbias$b.gguf --file "$WIKI" --skip 0.25 --ctx 512 --chunks 1 \
          --cache "keys=q8_0 values=q8_0" --cache "keys=q4_0:rot=1 values=q4_0:rot=1" \
          --cache "keys=turboquant_mse:bits=4 values=turboquant_mse:bits=4" --json \
          > figures/quality/sweeps/smollm2-135m-kbias$b.json.tmp
        mv figures/quality/sweeps/smollm2-135m-kbias$b.json.tmp figures/quality/sweeps/smollm2-135m-kbias$b.json
      done
      run "$BIN" ppl --model smollm2-135m --file "$WIKI" --skip 0.25 --ctx 512 --chunks 1 \
        --cache "keys=q8_0 values=q8_0" --cache "keys=q4_0:rot=1 values=q4_0:rot=1" \
        --cache "keys=turboquant_mse:bits=4 values=turboquant_mse:bits=4" --json \
        > figures/quality/sweeps/smollm2-135m-kbias0.json.tmp
      mv figures/quality/sweeps/smollm2-135m-kbias0.json.tmp figures/quality/sweeps/smollm2-135m-kbias0.json ;;
    ppl-outlier-b100)  # a gentler bias (100): the per-token codecs as picked by bits and with the remedy, 1 chunk
      [ -f models/smollm2-135m-kbias100.gguf ] || run python3 scripts/make_outlier_model.py \
        --in models/smollm2-135m.gguf --out models/smollm2-135m-kbias100.gguf --bias 100 --pairs 1
      ppl_list models/smollm2-135m-kbias100.gguf 1 figures/quality/smollm2-135m-kbias100.json <<LIST
keys=q8_0 values=q8_0
keys=q4_0:rot=1 values=q4_0:rot=1
keys=turboquant_mse:bits=4 values=turboquant_mse:bits=4
keys=q8_0 values=q8_0 residual=128 sinks=4 prerope=2
keys=q4_0:rot=1 values=q4_0:rot=1 residual=128 sinks=4 prerope=2
keys=turboquant_mse:bits=4 values=turboquant_mse:bits=4 residual=128 sinks=4 prerope=2
LIST
      ;;
    tune-outlier)  # tune at 4.5 b/e on the biased model, and check=strict on a per-token codec (text as printed)
      outlier_model
      { echo "\$ ./build/veloxquant tune --model $OUTLIER_MODEL --budget 4.5"
        "$BIN" tune --model "$OUTLIER_MODEL" --budget 4.5 --file "$WIKI" 2>&1 | grep -v '^tune: [0-9]' || true
        for cfg in "keys=q4_0:rot=1 values=q4_0:rot=1" "keys=q4_0:rot=1 values=q4_0:rot=1 residual=128 sinks=4 prerope=2"; do
          echo
          echo "\$ ./build/veloxquant ppl --model $OUTLIER_MODEL --ctx 512 --chunks 1 --cache '$cfg check=strict'"
          "$BIN" ppl --model "$OUTLIER_MODEL" --file "$WIKI" --skip 0.25 --ctx 512 --chunks 1 \
            --cache "$cfg check=strict" 2>&1 | grep -v '^ppl: ' || true
        done
      } > figures/quality/smollm2-135m-kbias-tune.txt.tmp
      mv figures/quality/smollm2-135m-kbias-tune.txt.tmp figures/quality/smollm2-135m-kbias-tune.txt ;;
    ppl-outlier-orig)  # fp16 PPL of the unmodified model on the same chunks (and binary)
      run "$BIN" ppl --model smollm2-135m --file "$WIKI" --skip 0.25 --ctx 2048 --chunks 2 --json \
        > figures/quality/smollm2-135m-orig-fp16.json.tmp
      mv figures/quality/smollm2-135m-orig-fp16.json.tmp figures/quality/smollm2-135m-orig-fp16.json ;;
    ppl-outlier-orig3)  # the same on 3 chunks (ppl-outlier-fix's since the seventh round)
      run "$BIN" ppl --model smollm2-135m --file "$WIKI" --skip 0.25 --ctx 2048 --chunks 3 --json \
        > figures/quality/smollm2-135m-orig-fp16-c3.json.tmp
      mv figures/quality/smollm2-135m-orig-fp16-c3.json.tmp figures/quality/smollm2-135m-orig-fp16-c3.json ;;
    ppl-rvqfit-smollm2)  # turboquant_rvq fit=1 against the specified stage 2 on the default model, 3 chunks
      # (under sweeps/: an exploration, not rows of the quality table that recommend reads)
      mkdir -p figures/quality/sweeps
      ppl_list smollm2-135m 3 figures/quality/sweeps/smollm2-135m-rvqfit.json <<LIST
keys=turboquant_rvq:bits=1 values=fp16
keys=turboquant_rvq:bits=1,fit=1 values=fp16
keys=turboquant_rvq:bits=2 values=turboquant_mse:bits=4 residual=128 sinks=4 prerope=2
keys=turboquant_rvq:bits=2,fit=1 values=turboquant_mse:bits=4 residual=128 sinks=4 prerope=2
LIST
      ;;
    needle-4k-rvqfit1-smollm2)  # passkey at 4k of the fit=1 1-bit-key row (fit=0: needle-4k-r5-smollm2), 3 keys x 3 depths
      run "$BIN" needle --model smollm2-135m --ctx 4096 --depths 0,0.5,1 --seeds 3 --show \
        --cache "keys=turboquant_rvq:bits=1,fit=1 values=kivix:bits=4,group=64 residual=128 sinks=4" --json \
        > figures/quality/sweeps/smollm2-135m-needle-4k-rvqfit1.json.tmp
      mv figures/quality/sweeps/smollm2-135m-needle-4k-rvqfit1.json.tmp figures/quality/sweeps/smollm2-135m-needle-4k-rvqfit1.json ;;
    ppl-rvqfit1-smollm2)  # fit=1 on the quality table's 1-bit-key row (rvq keys, kivix 4-bit values), 3 chunks
      mkdir -p figures/quality/sweeps
      ppl_list smollm2-135m 3 figures/quality/sweeps/smollm2-135m-rvqfit-1bit.json <<LIST
keys=turboquant_rvq:bits=1 values=kivix:bits=4,group=64 residual=128 sinks=4
keys=turboquant_rvq:bits=1,fit=1 values=kivix:bits=4,group=64 residual=128 sinks=4
keys=turboquant_rvq:bits=1,fit=1 values=kivix:bits=4,group=64 residual=128 sinks=4 prerope=2
LIST
      ;;
    ppl-lowbit5-gemma3) lowbit5_methods gemma3-270m | ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-lowbit5.json ;;
    needle-4k-r5-smollm2|needle-4k-r5-gemma3)
      m=smollm2-135m; [ "$1" = needle-4k-r5-gemma3 ] && m=gemma3-270m
      needle5_methods $m | needle_4k $m r5 ;;
    needle-4k-r5b-gemma3)  # gemma3's 3.0 plan with 16 sinks (lowbit5b's second config)
      lowbit5b_methods | sed -n 2p | needle_4k gemma3-270m r5b ;;
    # sixth round: the 1-bit-key family on smollm2 (keys <= 2.5 b/e): a rabitq 1/2-bit key plan
    plan6-smollm2) mkdir -p figures/quality/sweeps
                   o=figures/quality/sweeps/smollm2-135m-plan6-rabitq-k1-2-v4-budget3.49.json
                   run "$BIN" tune --model smollm2-135m --plan 1,2 --vplan 4,4 --plan-keys rabitq:mse=1 \
                     --plan-values kivix:group=64 --plan-cache "sinks=4" --budget 3.49 --file "$WIKI" --tokens 1024 \
                     --json > $o.tmp
                   mv $o.tmp $o ;;
    ppl-lowbit6-smollm2) lowbit6_methods | ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-lowbit6.json ;;
    ppl-lowbit7-smollm2) lowbit7_methods smollm2-135m | ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-lowbit7.json ;;
    ppl-lowbit7-gemma3)  lowbit7_methods gemma3-270m | ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-lowbit7.json ;;
    ppl-lowbit8-smollm2) lowbit8_methods smollm2-135m | ppl_list smollm2-135m 3 figures/quality/smollm2-135m-ppl-lowbit8.json ;;
    ppl-lowbit8-gemma3)  lowbit8_methods gemma3-270m | ppl_list gemma3-270m 3 figures/quality/gemma3-270m-ppl-lowbit8.json ;;
    needle-4k-r8-smollm2|needle-4k-r8-gemma3)  # the eighth round's plans
      m=smollm2-135m; [ "$1" = needle-4k-r8-gemma3 ] && m=gemma3-270m
      lowbit8_methods $m | needle_4k $m r8 ;;
    needle-4k-r7-smollm2|needle-4k-r7-gemma3)  # the seventh round's plans
      m=smollm2-135m; [ "$1" = needle-4k-r7-gemma3 ] && m=gemma3-270m
      lowbit7_methods $m | needle_4k $m r7 ;;
    needle-4k-r6-smollm2)  # the plan of plan6-smollm2
      lowbit6_methods | sed -n 1p | needle_4k smollm2-135m r6 ;;
    needle-4k-diag6-smollm2|needle-4k-diag6b-smollm2)  # why turboquant_rvq:bits=1 keys lose the key:
      # depth 0.5, one change per config; diag6 the first four configs of diag6_methods, diag6b the rest
      a=(); o=figures/quality/sweeps/smollm2-135m-needle-4k-diag6.json; r=1,4
      [ "$1" = needle-4k-diag6b-smollm2 ] && { o=figures/quality/sweeps/smollm2-135m-needle-4k-diag6b.json; r='5,$'; }
      while IFS= read -r cfg; do a+=(--cache "$cfg"); done < <(diag6_methods | sed -n "${r}p")
      run "$BIN" needle --model smollm2-135m --ctx 4096 --depths 0.5 --seeds 3 --show "${a[@]}" --json > $o.tmp
      mv $o.tmp $o ;;
    needle-gemma3)  needle gemma3-270m 2048 ;;
    report)        run python3 scripts/report.py && run python3 scripts/plots.py ;;
    *) echo "unknown step $1" >&2; exit 2 ;;
  esac
}

# (one compound command, read whole before it runs: editing this file while
# a step runs cannot make bash execute the edited text)
{
  if [ $# -eq 0 ]; then
    set -- short-smollm2 short-gemma3 ppl-smollm2 ppl-gemma3 needle-smollm2 needle-gemma3 long-smollm2 long-gemma3 report
  fi
  for s in "$@"; do step "$s"; done
  exit 0
}

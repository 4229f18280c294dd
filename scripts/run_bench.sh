#!/usr/bin/env bash
# run_bench.sh -- the CPU benchmarks of figures/bench/, each written as
# {"command", "load", "result"} JSON, then figures/bench/README.md from them
# (scripts/bench_tables.py). Run on an otherwise idle machine: before each
# step it waits (up to VQ_BENCH_WAIT seconds, default 900) for the 1-minute
# load average to fall under 0.5, and records the load it started at
# (docs/PERF.md). Steps: codecs (per-token kernel cost, CPU time, into
# codecs-cpu.txt), attention128, attention64 (one layer: its cache may sit
# in the L3 cache), attention128mem, attention64mem (32 layers per step, as a
# model: read from memory), attentionbig, e2e (default: all of these),
# e2e16k (prefills 16,384 tokens per config: about 15 minutes), e2e-gemma3
# (gemma3-270m at 4,096 tokens: its quality plans, pre-RoPE and at speed),
# e2e-tqw8, e2e16k-tqw8, e2e-gemma3-tqw8 (the eighth round: the plans with
# TurboQuant values beside their forms with those values summed from int8
# weights and levels), e2e-avx2 (the e2e table's main rows on a host without AVX-512, into
# e2e-smollm2-avx2.json: the kernel tables' AVX2 twins at work),
# e2e-prerope-avx2 (the same host at 4,096 tokens: the pre-RoPE quality
# plans beside their at-speed forms), e2e16k-avx2
# (the same host at 16,384 tokens: five configs, about 20 minutes).
#   bash scripts/run_bench.sh [STEP...]
# VQ_BENCH_OUT=DIR writes the files and the tables into DIR instead (a
# re-take kept apart from the tables, as figures/bench/host-slow-*).
# Where a spec's default arithmetic changed (the int8 forms: q8_0 / q4_0 keys
# since session 53, q4_0 values 54, kivi 55, rvq-1 / qjl keys and kivix 56,
# turboquant_mse values 57), the lists name qbits, so that a row means the
# same in every take (files taken before session 58 ran the lists as they
# were then: their commands say what ran).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${VQ_BENCH_OUT:-figures/bench}
mkdir -p "$out"
bin=./build/veloxquant
[ -x "$bin" ] && [ -x build/bench/bench_codecs ] || make -j2 all build/bench/bench_codecs >/dev/null

configs=(
  --config "keys=q8_0:qbits=0 values=q8_0"
  --config "keys=q8_0:qbits=8 values=q8_0"
  --config "keys=q4_0:rot=1,qbits=0 values=q4_0:rot=1,qbits=0"
  --config "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=0"
  --config "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=8"
  --config "keys=kivi:bits=4 values=kivi:bits=4"
  --config "keys=kivi:bits=2,qbits=0 values=kivi:bits=2,qbits=0"
  --config "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=0"
  --config "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=8"
  --config "keys=turboquant_rvq:bits=1,qbits=0 values=kivi:bits=2,qbits=0"
  --config "keys=turboquant_rvq:bits=1,qbits=4 values=kivi:bits=2,qbits=0"
  --config "keys=turboquant_rvq:bits=1,qbits=4 values=kivi:bits=2,qbits=8"
  --config "keys=rabitq:bits=1 values=q4_0:rot=1"
  --config "keys=rabitq:bits=1 values=kivi:bits=2"
  --config "keys=turboquant_mse:bits=2 values=turboquant_mse:bits=2"
  --config "keys=kivi:bits=2,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1,qbits=8"
  --config "keys=qjl:qbits=4 values=kivi:bits=2,qbits=8"
  --config "keys=spectral:bits=4 values=spectral:bits=4"
  --config "keys=turboquant_rvq values=turboquant_rvq"
  --config "keys=qjl:qbits=0 values=kivi:bits=2,qbits=0"
  --config "keys=kivix values=kivix"
  --config "keys=vecinfer values=vecinfer"
)

# smollm2's <= 3.0 b/e quality plan (docs/quality.md, fourth round): how fast
# the configuration chosen for quality decodes
plan30="keys=kivix:bits=4,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 prerope=1 kbits=4,4,4,4,3,4,3,3,3,4,4,4,4,4,4,3,4,4,4,4,4,4,3,4,4,4,3,4,3,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,1,2,2,1,2,2,2,2,2,1,2,1,2,2"

# its 4.0 b/e plan (docs/quality.md, the 4-bit row)
plan40="keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=3,group=64 residual=128 sinks=4 prerope=1"

# the same plans for speed (docs/quality.md, seventh round): keys packed after
# RoPE and scored against int8 queries, plan40's values summed with int8 weights
plan30f="keys=kivix:bits=4,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 kbits=4,4,4,4,3,4,3,3,3,4,4,4,4,4,4,3,4,4,4,4,4,4,3,4,4,4,3,4,3,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,1,2,2,1,2,2,2,2,2,1,2,1,2,2"
plan40f="keys=kivix:bits=4,group=128,outliers=64,qbits=8 values=kivix:bits=3,group=64,qbits=8 residual=128 sinks=4"
# the 2.25 b/e plan at speed (seventh round's first row)
plan22f="keys=kivix:bits=3,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 kbits=3,3,2,2,2,2,2,3,3,2,2,3,2,2,3,3,2,3,3,2,3,3,2,3,3,2,3,2,2,2 vbits=2,2,2,2,2,2,2,2,2,2,1,1,2,1,2,2,1,2,2,1,2,1,1,2,2,1,1,1,2,1"
# the eighth round: those TurboQuant values summed from int8 weights and
# levels (turboquant_mse qbits=8 on values; the same bytes)
tqw8() { printf '%s' "$1" | sed 's/\(values=turboquant_mse:[^ ]*\)/\1,qbits=8/'; }
plan30q=$(tqw8 "$plan30f")
plan22q=$(tqw8 "$plan22f")

# gemma3's quality plans (docs/quality.md: the fourth round's 3.0 b/e plan with 16 sinks,
# the 3.78 b/e kivix row) and the same at speed (seventh round)
g30="keys=kivix:bits=4,group=256,outliers=64 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=16 prerope=1 kbits=4,4,3,3,3,4,4,4,4,3,4,4,4,4,4,4,4,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2"
g30f="keys=kivix:bits=4,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=16 kbits=4,4,3,3,3,4,4,4,4,3,4,4,4,4,4,4,4,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2"
g30q=$(tqw8 "$g30f")
g22f="keys=kivix:bits=2,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=1,norm=8,lsq=1 residual=128 sinks=4 kbits=2,3,2,2,2,3,3,3,2,3,2,3,3,3,2,3,2,3 vbits=1,2,2,2,1,2,1,2,1,2,2,2,2,2,2,2,1,2"
g22q=$(tqw8 "$g22f")
g40="keys=kivix:bits=4,group=128,outliers=64 values=kivix:bits=3,group=128 residual=128 sinks=4 prerope=1"
g40f="keys=kivix:bits=4,group=128,outliers=64,qbits=8 values=kivix:bits=3,group=128,qbits=8 residual=128 sinks=4"

quiet() { # wait for a 1-minute load average under 0.5
    local waited=0
    while awk '{ exit !($1 >= 0.5) }' /proc/loadavg && [ "$waited" -lt "${VQ_BENCH_WAIT:-900}" ]; do
        sleep 10; waited=$((waited + 10))
    done
}

run() { # NAME ARGS... : run the CLI with ARGS --json into $out/NAME.json
    local name=$1; shift
    local load cmd
    quiet
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    cmd="$bin $(printf '%q ' "$@")--json"
    echo "== $name (load $load): $cmd" >&2
    local res
    res=$("$bin" "$@" --json)
    python3 - "$out/$name.json" "$cmd" "$load" "$res" <<'EOF'
import json, sys
path, cmd, load, res = sys.argv[1:5]
with open(path + ".tmp", "w") as f:
    json.dump({"command": cmd, "load": load, "result": json.loads(res)}, f, indent=1)
import os
os.replace(path + ".tmp", path)
r = json.loads(res)
s, n = r.get("thread_scaling"), r.get("threads", 1)
if s is not None and n > 1 and s < 0.75 * n:
    print(f"run_bench.sh: {path}: thread scaling {s:.2f}x of {n}: the threads shared cores during this run; "
          "its figures are not this code's best (docs/runtime.md, thread pool)", file=sys.stderr)
EOF
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(codecs attention128 attention64 attention128mem attention64mem attentionbig e2e)
for s in "${steps[@]}"; do
    case $s in
    attention128) run attention-d128 bench attention --ctx 4096,16384 --head-dim 128 --kv-heads 4 --q-heads 16 \
                      --threads 2 "${configs[@]}" ;;
    attention64)  run attention-d64 bench attention --ctx 4096,16384 --head-dim 64 --kv-heads 4 --q-heads 16 \
                      --threads 2 "${configs[@]}" ;;
    attention128mem) run attention-d128-32l bench attention --ctx 16384 --head-dim 128 --kv-heads 4 --q-heads 16 \
                      --layers 32 --threads 2 "${configs[@]}" ;;
    attention64mem) run attention-d64-32l bench attention --ctx 16384 --head-dim 64 --kv-heads 4 --q-heads 16 \
                      --layers 32 --threads 2 "${configs[@]}" ;;
    attentionbig) run attention-d128-131k bench attention --ctx 131072 --head-dim 128 --kv-heads 8 --q-heads 32 \
                      --threads 2 --repeats 5 --config "keys=q8_0:qbits=0 values=q8_0" --config "keys=q4_0:rot=1,qbits=0 values=q4_0:rot=1,qbits=0" \
                      --config "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=0" \
                      --config "keys=kivi:bits=4 values=kivi:bits=4" --config "keys=kivi:bits=2,qbits=0 values=kivi:bits=2,qbits=0" \
                      --config "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=0" \
                      --config "keys=turboquant_rvq:bits=1,qbits=4 values=kivi:bits=2,qbits=0" \
                      --config "keys=rabitq:bits=1 values=q4_0:rot=1" ;;
    codecs)       quiet; {
                      echo "# bash scripts/run_bench.sh codecs (load $(cut -d' ' -f1-3 /proc/loadavg)); one pinned core, CPU time"
                      echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
                      for spec in "128 4" "64 3"; do
                          # shellcheck disable=SC2086
                          taskset -c 1 ./build/bench/bench_codecs $spec fp16 q8_0:qbits=0 q8_0:qbits=8 q4_0:rot=1,qbits=0 q4_0:rot=1,qbits=8 \
                              kivi:bits=2,qbits=0 kivi:bits=2,qbits=8 kivi:bits=2,group=128,qbits=8 rabitq:bits=1 \
                              turboquant_rvq:bits=1,qbits=4 turboquant_mse:bits=2 qjl:qbits=0 qjl:qbits=4 \
                              kivix:bits=4,group=128,outliers=64 kivix:bits=4,group=128,outliers=64,qbits=8 V:fp16 V:q8_0 V:q4_0:rot=1,qbits=0 V:q4_0:rot=1,qbits=8 \
                              V:kivi:bits=2,qbits=0 V:kivi:bits=2,qbits=8 V:kivi:bits=4 V:turboquant_mse:bits=2,qbits=0 V:turboquant_mse:bits=2,qbits=8 \
                              V:turboquant_mse:bits=2,norm=8,lsq=1 V:turboquant_rvq:bits=1
                      done; } > "$out/codecs-cpu.txt" ;;
    e2e)          run e2e-smollm2 bench e2e --model smollm2-135m --ctx 256,4096 --threads 2 --decode 64 \
                      --cache "keys=q8_0:qbits=0 values=q8_0" --cache "keys=q4_0:rot=1,qbits=0 values=q4_0:rot=1,qbits=0" \
                      --cache "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=0" \
                      --cache "keys=q8_0:qbits=8 values=q8_0" --cache "keys=q8_0:qbits=8 values=q8_0:qbits=8" \
                      --cache "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=8" \
                      --cache "keys=kivi:bits=2,qbits=0 values=kivi:bits=2,qbits=0" --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=0" \
                      --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=8" \
                      --cache "keys=turboquant_rvq:bits=1,qbits=4 values=kivi:bits=2,qbits=0" \
                      --cache "keys=turboquant_rvq:bits=1,qbits=4 values=kivi:bits=2,qbits=8" \
                      --cache "keys=kivix:bits=4 values=kivix:bits=4 sinks=4 prerope=1" \
                      --cache "$plan30" --cache "$plan40" --cache "$plan30f" --cache "$plan40f" --cache "$plan22f" ;;
    e2e-avx2)     run e2e-smollm2-avx2 bench e2e --model smollm2-135m --ctx 256,4096 --threads 2 --decode 64 \
                      --cache "keys=q8_0:qbits=0 values=q8_0" --cache "keys=q4_0:rot=1,qbits=0 values=q4_0:rot=1,qbits=0" \
                      --cache "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=8" \
                      --cache "keys=kivi:bits=2,qbits=0 values=kivi:bits=2,qbits=0" --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=0" \
                      --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=8" \
                      --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=8 vdrop=0.01" \
                      --cache "keys=fp16 values=fp16 vdrop=0.01" \
                      --cache "keys=turboquant_rvq:bits=1,qbits=4 values=kivi:bits=2,qbits=8" \
                      --cache "$plan30f" --cache "$plan40f" ;;
    e2e-prerope-avx2) run e2e-smollm2-prerope-avx2 bench e2e --model smollm2-135m --ctx 4096 --threads 2 --decode 64 \
                      --cache "keys=kivix:bits=4 values=kivix:bits=4 sinks=4 prerope=1" --cache "$plan30" --cache "$plan40" \
                      --cache "$plan30f" --cache "$plan40f" ;;
    e2e-gemma3)   run e2e-gemma3 bench e2e --model gemma3-270m --ctx 4096 --threads 2 --decode 64 \
                      --cache "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=8" \
                      --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=8" \
                      --cache "$g30" --cache "$g30f" --cache "$g40" --cache "$g40f" ;;
    e2e16k-avx2)  run e2e-smollm2-16k-avx2 bench e2e --model smollm2-135m --ctx 16384 --threads 2 --decode 64 \
                      --cache "keys=q4_0:rot=1,qbits=0 values=q4_0:rot=1,qbits=0" \
                      --cache "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=8" \
                      --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=8" \
                      --cache "keys=turboquant_rvq:bits=1,qbits=4 values=kivi:bits=2,qbits=8" \
                      --cache "$plan30f" ;;
    e2e16k)       run e2e-smollm2-16k bench e2e --model smollm2-135m --ctx 16384 --threads 2 --decode 64 \
                      --cache "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=0" \
                      --cache "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=8" \
                      --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=0" \
                      --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=8" \
                      --cache "keys=turboquant_rvq:bits=1,qbits=4 values=kivi:bits=2,qbits=8" \
                      --cache "$plan30f" --cache "$plan40f" ;;
    e2e-tqw8)     run e2e-smollm2-tqw8 bench e2e --model smollm2-135m --ctx 256,4096 --threads 2 --decode 64 \
                      --cache "$plan30f" --cache "$plan30q" --cache "$plan22f" --cache "$plan22q" ;;
    e2e16k-tqw8)  run e2e-smollm2-16k-tqw8 bench e2e --model smollm2-135m --ctx 16384 --threads 2 --decode 64 \
                      --cache "$plan30f" --cache "$plan30q" ;;
    e2e-gemma3-tqw8) run e2e-gemma3-tqw8 bench e2e --model gemma3-270m --ctx 4096 --threads 2 --decode 64 \
                      --cache "$g30f" --cache "$g30q" --cache "$g22f" --cache "$g22q" ;;
    *) echo "unknown step $s" >&2; exit 2 ;;
    esac
done
{
    echo "# CPU benchmarks"
    echo
    echo "Generated by \`bash scripts/run_bench.sh\` (each file: the command, the load average before it, the"
    echo "JSON result) and \`scripts/bench_tables.py\`. Read ratios within one table (docs/PERF.md)."
    echo
    files=()
    for f in attention-d128 attention-d64 attention-d128-32l attention-d64-32l attention-d128-131k e2e-smollm2 e2e-smollm2-16k e2e-smollm2-avx2 e2e-smollm2-prerope-avx2 e2e-smollm2-16k-avx2 e2e-gemma3 e2e-smollm2-tqw8 e2e-smollm2-16k-tqw8 e2e-gemma3-tqw8 llamacpp-smollm2 llamacpp-smollm2-avx2; do
        [ -f "$out/$f.json" ] && files+=("$out/$f.json")
    done
    [ ${#files[@]} -eq 0 ] || python3 scripts/bench_tables.py "${files[@]}"
} > "$out/README.md.tmp" && mv "$out/README.md.tmp" "$out/README.md"

#!/bin/bash
# session 57: the quality plans' turboquant_mse values, float (qbits=0) against the new default, in one ppl run per model (same binary, same chunks)
cd /work/main
P="./build/veloxquant ppl --file ../shared/data/wikitext-2-test.txt --skip 0.25 --ctx 2048 --chunks 3 --threads 2"
S30="keys=kivix:bits=4,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 kbits=4,4,4,4,3,4,3,3,3,4,4,4,4,4,4,3,4,4,4,4,4,4,3,4,4,4,3,4,3,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,1,2,2,1,2,2,2,2,2,1,2,1,2,2"
S22="keys=kivix:bits=3,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=4 kbits=3,3,2,2,2,2,2,3,3,2,2,3,2,2,3,3,2,3,3,2,3,3,2,3,3,2,3,2,2,2 vbits=2,2,2,2,2,2,2,2,2,2,1,1,2,1,2,2,1,2,2,1,2,1,1,2,2,1,1,1,2,1"
G30="keys=kivix:bits=4,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=2,norm=8,lsq=1 residual=128 sinks=16 kbits=4,4,3,3,3,4,4,4,4,3,4,4,4,4,4,4,4,4 vbits=2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2"
G22="keys=kivix:bits=2,group=256,outliers=64,qbits=8 values=turboquant_mse:bits=1,norm=8,lsq=1 residual=128 sinks=4 kbits=2,3,2,2,2,3,3,3,2,3,2,3,3,3,2,3,2,3 vbits=1,2,2,2,1,2,1,2,1,2,2,2,2,2,2,2,1,2"
q0() { printf '%s' "$1" | sed 's/\(values=turboquant_mse:[^ ]*\)/\1,qbits=0/'; }
$P --model smollm2-135m --cache "$(q0 "$S30")" --cache "$S30" --cache "$(q0 "$S22")" --cache "$S22" --json > figures/quality/sweeps/s57-tqv-plans-smollm2-135m.json
$P --model gemma3-270m --cache "$(q0 "$G30")" --cache "$G30" --cache "$(q0 "$G22")" --cache "$G22" --json > figures/quality/sweeps/s57-tqv-plans-gemma3-270m.json

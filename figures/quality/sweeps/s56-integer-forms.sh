#!/bin/bash
# session 56: float against integer arithmetic, per seed method, keys or values alone (the other fp16)
M=$1
cd /work/main
P="./build/veloxquant ppl --model $M --file ../shared/data/wikitext-2-test.txt --skip 0.25 --ctx 2048 --chunks 3 --threads 2"
$P --cache "keys=qjl values=fp16" --cache "keys=qjl:qbits=4 values=fp16" --cache "keys=qjl:qbits=8 values=fp16" \
 --cache "keys=turboquant_mse:bits=2 values=fp16" --cache "keys=turboquant_mse:bits=2,qbits=8 values=fp16" \
 --cache "keys=fp16 values=turboquant_mse:bits=2" --cache "keys=fp16 values=turboquant_mse:bits=2,qbits=8" \
 --cache "keys=fp16 values=turboquant_prod" --cache "keys=fp16 values=turboquant_prod:qbits=8" --json > /tmp/q56/$M-a.json

$P --cache "keys=kivix values=fp16" --cache "keys=kivix:qbits=8 values=fp16" \
 --cache "keys=fp16 values=kivix" --cache "keys=fp16 values=kivix:qbits=8" --json > /tmp/q56/$M-b.json

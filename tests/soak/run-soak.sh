#!/usr/bin/env bash
# run-soak.sh [TOKENS] -- the long run of docs/SECURITY.md: TOKENS (default
# 50000) generated tokens on smollm2-135m with a streaming_llm cache (q4_0
# with rotation, 4 sinks + 1020-token window), one thread, niced; memory
# sampled every 500 tokens into figures/soak/smollm2-streaming.csv (written
# as it goes), then summarized into figures/soak/smollm2-streaming.json by
# tests/soak/summary.py and plotted (figures/soak/smollm2-streaming.svg,
# tests/soak/plot.py). Needs `make build/soak/soak`.
set -eu
cd "$(dirname "$0")/../.."
tokens=${1:-50000}
mkdir -p figures/soak
nice -n 10 build/soak/soak --model smollm2-135m --tokens "$tokens" --every 500 --threads 1 \
    --csv figures/soak/smollm2-streaming.csv || echo "soak: stopped early (see the CSV for how far it got)"
python3 tests/soak/summary.py figures/soak/smollm2-streaming.csv > figures/soak/smollm2-streaming.json
python3 tests/soak/plot.py figures/soak/smollm2-streaming.csv figures/soak/smollm2-streaming.svg
cat figures/soak/smollm2-streaming.json

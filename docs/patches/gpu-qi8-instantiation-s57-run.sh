#!/bin/bash
# session 57 device call: test_gpu of the QI8 instantiation (new), then bench_gpu alternated base (main 1a0d7b6's GPU code) / new:
# pairs 1 (q8_0) and 2 (q4_0:rot=1), both keys with the int8 query (their default), D 128 and 64, 16k and 64k x 1 and 8
X=$(dirname "$0"); O=${OUT:-/tmp/out}; mkdir -p $O; T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $O/smi.txt
sha256sum $X/test_gpu $X/bench_new $X/bench_base | tee $O/sha.txt
(time timeout ${TT:-300} $X/test_gpu) > $O/test_new.txt 2>&1
echo "tests done at $(( $(date +%s) - T0 )) s"; grep -E '^gpu:|^real' $O/test_new.txt; echo "FAIL lines: $(grep -c '^FAIL' $O/test_new.txt)"; grep '^FAIL' $O/test_new.txt | head -5 | cut -c1-240
for r in $(seq 1 ${ROUNDS:-3}); do for v in base new; do
  [ $(( $(date +%s) - T0 )) -gt ${DEADLINE:-520} ] && { echo "deadline: stop at round $r $v"; break 2; }
  for sh in 16384,1 16384,8 65536,1 65536,8; do timeout 60 $X/bench_$v --quick --shape $sh --dims 128,64 --pair 1,2 | sed "s/^/$v r$r /" >> $O/bench.txt; done
done; done
echo "bench done at $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee -a $O/smi.txt
grep -v copy_bandwidth $O/bench.txt | sed 's/"keys": //; s/"values": //; s/"head_dim": //; s/"ctx": //; s/"batch": //; s/"ms": //; s/, "gbs".*//'

#!/usr/bin/env bash
# run.sh BUILD_DIR -- run every test program in BUILD_DIR/tests, print each
# program's summary and a final line "N passed, M failed" (counting checks),
# plus the list of failing programs. Exit status 0 only if all passed.
# Each program runs from the repo root with a time limit (VQ_TEST_TIMEOUT s).
# VQ_TEST_SET=unit runs only the programs that need no downloaded model,
# VQ_TEST_SET=models only those that do (`make test-unit`, `make
# test-models`); unset or "all": every program. A program needs the models
# when its source calls vq_test_model().
set -u
set_=${VQ_TEST_SET:-all}
case "$set_" in all|unit|models) ;; *) echo "run.sh: VQ_TEST_SET=$set_: not all, unit or models" >&2; exit 2 ;; esac
needs_models() {
    local src="tests/$1.c"
    [ -f "$src" ] || src="tests/fuzz/${1#test_}.c"
    [ -f "$src" ] && grep -q 'vq_test_model(' "$src"
}
build=${1:-build}
limit=${VQ_TEST_TIMEOUT:-1800}
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$build/logs"
pass=0; fail=0; bad=()
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    if [ "$set_" != all ]; then
        if needs_models "$name"; then [ "$set_" = models ] || continue; else [ "$set_" = unit ] || continue; fi
    fi
    log="$build/logs/$name.log"
    start=$(date +%s)
    timeout "$limit" "$t" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    line=$(grep -E '^[a-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    p=0; f=0
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
        f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
    fi
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crash / timeout / no summary
    pass=$((pass + p)); fail=$((fail + f))
    if [ $rc -ne 0 ]; then
        bad+=("$name")
        echo "FAILED $name (exit $rc, ${secs}s): ${line:-no summary}"
        grep -E '^(FAIL|ERROR|==[0-9]+==|.*runtime error)' "$log" | head -n 20 | sed 's/^/    /'
    else
        echo "ok     $name (${secs}s): $line"
    fi
done
echo "$pass passed, $fail failed"
[ ${#bad[@]} -eq 0 ] || { echo "failing programs: ${bad[*]} (logs in $build/logs/)"; exit 1; }

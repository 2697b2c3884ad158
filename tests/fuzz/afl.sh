#!/bin/sh
# tests/fuzz/afl.sh BUILD_DIR NAME...: AFL++ on the harnesses `make afl-build`
# built (BUILD_DIR/replay/NAME: fuzz_driver.c's persistent loop, ASan+UBSan),
# each for FUZZ_TIME seconds (default 600) at nice 19, from the same seeds as
# libFuzzer (tests/fuzz/corpus/NAME and the directories tests/fuzz/seeds.txt
# names; AFL++ takes files under 1 MB), with the same dictionary. Findings go
# to BUILD_DIR/out/NAME/default/crashes; the executions to BUILD_DIR/execs.tsv.
set -u
B=$1
shift
T=tests/fuzz
command -v afl-fuzz >/dev/null || { echo "afl-fuzz not found: make deps installs afl++"; exit 1; }
status=0
for n in "$@"; do
    seeds=$B/seeds/$n out=$B/out/$n
    rm -rf "$seeds" && mkdir -p "$seeds" "$out"
    for d in $T/corpus/$n $(sed -n "s/^$n //p" $T/seeds.txt); do
        [ -d "$d" ] && find "$d" -maxdepth 1 -type f -size -1000k -exec cp {} "$seeds"/ \;
    done
    [ -n "$(ls "$seeds")" ] || printf 'x' >"$seeds/empty"
    dict=""
    [ -f $T/dict/$n.dict ] && dict="-x $T/dict/$n.dict"
    # no UI, no CPU-governor or core-pattern checks (a shared machine); ASan needs no memory limit
    AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1 \
        nice -n 19 afl-fuzz -V "${FUZZ_TIME:-600}" -m none -t 10000 $dict \
        -i "$seeds" -o "$out" -- $B/replay/$n >$B/$n.log 2>&1
    rc=$?
    stats=$out/default/fuzzer_stats
    execs=$(sed -n 's/^execs_done *: *//p' "$stats" 2>/dev/null)
    crashes=$(sed -n 's/^saved_crashes *: *//p' "$stats" 2>/dev/null)
    [ -n "$crashes" ] || crashes=$(sed -n 's/^unique_crashes *: *//p' "$stats" 2>/dev/null)
    printf '%s\t%s\t%s\t%s\t%s\tafl\n' "$(date -u +%Y-%m-%dT%H:%MZ)" $n "${execs:-0}" "${FUZZ_TIME:-600}" $rc >>$B/execs.tsv
    if [ $rc -ne 0 ] || [ -z "$execs" ]; then
        echo "FAIL $n: afl-fuzz exit $rc, see $B/$n.log"; status=1
    elif [ "${crashes:-0}" != 0 ]; then
        echo "FAIL $n: $crashes crashes in $out/default/crashes"; status=1
    else
        echo "ok   $n: $execs executions (AFL++), no crashes"
    fi
done
exit $status

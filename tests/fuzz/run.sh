#!/bin/sh
# Fuzzes the data parsers (RLE, CSV, image headers, mask PNGs) for SECONDS
# (default 60) and fails on a crash, a sanitizer report or a broken
# property.  Uses libFuzzer when clang has it (apt-get install clang
# libclang-rt-14-dev), else fuzz_main.c, a deterministic mutation loop built
# with cc (and AddressSanitizer when the compiler has it).
#   usage: tests/fuzz/run.sh [SECONDS]
#   env:   FUZZ_WORK    build and corpus folder (default: a fresh temp folder)
#          FUZZ_DRIVER  libfuzzer or loop, to force one
set -eu
seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ -n "${FUZZ_WORK:-}" ]; then
    work=$FUZZ_WORK
else # a temp folder of our own: removed after a clean run, kept with its findings
    work=$(mktemp -d "${TMPDIR:-/tmp}/tt-fuzz-XXXXXX")
    cleanup() { if [ "$?" = 0 ]; then rm -rf "$work"; fi; }
    trap cleanup EXIT
fi
mkdir -p "$work/corpus"
rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* # findings of an earlier run

sources="$here/fuzz_parsers.c $root/src/data/rle.c $root/src/io/csv.c $root/src/data/dataset_probe.c $root/src/data/image_probe.c
         $root/src/core/status.c $root/src/core/alloc.c $root/src/core/fault.c $root/src/core/knobs.c $root/src/core/fs.c"
flags="-std=c11 -g -O1 -D_POSIX_C_SOURCE=200809L -DCL_TARGET_OPENCL_VERSION=120 -I$root/include -I$root/src
       $(pkg-config --cflags stb)"
libs="$(pkg-config --libs stb) -ltiff -lm"

# does this compiler build and link with these sanitizer flags?
works() {
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; return (int)n * 0; }\n%s\n' \
        "$3" > "$work/probe.c"
    "$1" $2 "$work/probe.c" -o "$work/probe" >/dev/null 2>&1
}

driver=${FUZZ_DRIVER:-}
if [ -z "$driver" ]; then
    if command -v clang >/dev/null 2>&1 && works clang "-fsanitize=fuzzer,address" ""; then
        driver=libfuzzer
    else
        driver=loop
    fi
fi

if [ "$driver" = libfuzzer ]; then
    echo "fuzz: libFuzzer (clang), ${seconds} s"
    # shellcheck disable=SC2086
    clang $flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        $sources -o "$work/fuzz_parsers" $libs
    "$work/fuzz_parsers" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$here/seeds" >"$work/fuzz.log" 2>&1 || true
    tail -6 "$work/fuzz.log"
    # the findings are files; the full report is in fuzz.log
    for finding in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        if [ -e "$finding" ]; then
            grep -m3 -e "ERROR" -e "SUMMARY" -e "property broken" "$work/fuzz.log" || true
            echo "fuzz: FAILED (report: $work/fuzz.log); reproduce with: $work/fuzz_parsers $finding"
            exit 1
        fi
    done
    exit 0
fi

cc=${CC:-cc}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
if ! works "$cc" "$san" "int main(void) { return 0; }"; then
    san=""
fi
echo "fuzz: mutation loop ($cc ${san:-without sanitizers}), ${seconds} s"
# shellcheck disable=SC2086
$cc $flags $san $sources "$here/fuzz_main.c" -o "$work/fuzz_loop" $libs
"$work/fuzz_loop" "$seconds" "$here"/seeds/*

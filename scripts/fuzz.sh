#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for SECONDS each (default 60) and fails if
# any of them crashes, hangs or breaks an invariant.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Needs only stable Rust and a C++ compiler (libfuzzer-sys builds libFuzzer
# from source): it builds the targets with cargo directly, with the flags
# `cargo fuzz build --sanitizer none` uses, into fuzz/target. Each target
# runs on a temporary copy of its committed corpus, so the repository is
# never written to; what the fuzzer finds is thrown away unless it crashes,
# and then the input is kept and printed (see fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
    echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
    exit 2
fi
if [ $# -gt 0 ]; then
    targets=("$@")
else
    targets=()
    for f in fuzz/fuzz_targets/*.rs; do
        targets+=("$(basename "$f" .rs)")
    done
fi

host=$(rustc -vV | sed -n 's/^host: //p')
# Coverage counters, comparison tracing and the stack-depth feature are what
# libFuzzer's guidance reads; --cfg fuzzing is what cargo-fuzz sets.
# --target keeps these flags off build scripts and proc macros.
flags=(
    --cfg fuzzing
    -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    -Cdebug-assertions
    -Coverflow-checks
)
if [[ $host == *-linux-* ]]; then
    flags+=(-Cllvm-args=-sanitizer-coverage-stack-depth)
fi
echo "fuzz: building ${targets[*]}" >&2
if ! (
    cd fuzz
    RUSTFLAGS="${flags[*]}" cargo build --release --locked --quiet \
        --target "$host" --target-dir target "${targets[@]/#/--bin=}"
); then
    echo "fuzz: build failed; if cargo says fuzz/Cargo.lock needs updating (a crate" >&2
    echo "fuzz: gained a dependency), run: (cd fuzz && cargo update --workspace)" >&2
    exit 1
fi
bin=fuzz/target/$host/release

work=$(mktemp -d "${TMPDIR:-/tmp}/ringside-fuzz.XXXXXX")
failed=()
for t in "${targets[@]}"; do
    mkdir -p "$work/$t/corpus" "$work/$t/crash"
    if [ -d "fuzz/corpus/$t" ]; then
        cp -R "fuzz/corpus/$t/." "$work/$t/corpus/"
    fi
    echo "fuzz: $t for ${seconds}s" >&2
    # -timeout: an input that takes 10 s is a hang, and a failure.
    if "$bin/$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$work/$t/crash/" "$work/$t/corpus" >"$work/$t/log" 2>&1; then
        { grep -E '^#[0-9]+[[:space:]]+DONE' "$work/$t/log" || true; } | tail -n 1 | sed "s/^/fuzz: $t: /" >&2
    else
        failed+=("$t")
        tail -n 40 "$work/$t/log" >&2
        for input in "$work/$t/crash/"*; do
            [ -f "$input" ] || continue
            echo "fuzz: $t FAILED on $input" >&2
            echo "fuzz: that input, base64: $(base64 -w0 "$input")" >&2
        done
        echo "fuzz: replay with: $bin/$t <input>" >&2
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (inputs and logs kept in $work)" >&2
    exit 1
fi
rm -rf "$work"
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s each without a failure"

#!/usr/bin/env bash
# Build every fuzz target once, then run each (or the ones named) for a
# fixed number of executions, one after another, and print one line per
# target:   TARGET  RUNS  SECONDS  COVERAGE  RESULT
#
# Usage: fuzz/run.sh [-runs N] [-max_total_time S] [TARGET...]
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`) and, for
# AddressSanitizer, a nightly toolchain (`rustup toolchain install
# nightly`); without one it builds on stable with RUSTC_BOOTSTRAP=1 and no
# sanitizer (overflow checks and debug assertions stay on). The binaries
# are run directly after one build, so a tree that changes while this runs
# is not rebuilt half-way through.
set -euo pipefail
cd "$(dirname "$0")"

runs=1000000
max_time=1200
while [[ ${1:-} == -* ]]; do
  case $1 in
    -runs) runs=$2; shift 2 ;;
    -max_total_time) max_time=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if rustup run nightly rustc -V >/dev/null 2>&1; then
  fuzz=(cargo +nightly fuzz)
  sanitizer=()
else
  echo "no nightly toolchain: building on stable (RUSTC_BOOTSTRAP=1, no sanitizer)" >&2
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
  sanitizer=(-s none)
fi
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <("${fuzz[@]}" list)
fi

"${fuzz[@]}" build "${sanitizer[@]}" >/dev/null
bin=target/x86_64-unknown-linux-gnu/release
status=0
mkdir -p logs  # ignored by fuzz/.gitignore
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log="logs/$t.log"
  # The generated corpus (corpus/, ignored by git) comes first: libFuzzer
  # writes new inputs only there; the committed seeds are only read.
  if "$bin/$t" "corpus/$t" "seeds/$t" \
      -artifact_prefix="artifacts/$t/" -runs="$runs" \
      -max_total_time="$max_time" -rss_limit_mb=2048 -print_final_stats=1 \
      >"$log" 2>&1; then
    result="no crash"
  else
    result="FAILED (see fuzz/$log and fuzz/artifacts/$t)"
    status=1
  fi
  done_line=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 || true)
  n=$(sed -E 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1/' <<<"$done_line")
  s=$(sed -E 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\2/' <<<"$done_line")
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  printf '%-16s %10s runs %6s s  cov %-6s %s\n' "$t" "${n:-?}" "${s:-?}" "${cov:-?}" "$result"
done
exit $status

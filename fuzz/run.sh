#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60), starting from the
# committed seeds in fuzz/seeds/<target>/ plus whatever fuzz/corpus/<target>/
# gathered in earlier runs (gitignored). Exits non-zero on the first crash;
# the reproducer is left in fuzz/artifacts/<target>/.
#
#   fuzz/run.sh [SECONDS] [TARGET...]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). On a stable toolchain
# RUSTC_BOOTSTRAP=1 lets rustc accept the -Z flags cargo-fuzz passes.
set -euo pipefail
cd "$(dirname "$0")"

secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(request_head path_normalize range config backend_answer upstream_answer proxy_protocol h2_conn hpack)
fi

export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  echo "== $t: ${secs}s"
  rc=0
  cargo fuzz run "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 >"corpus/$t.log" 2>&1 || rc=$?
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::new_units_added|SUMMARY|artifact_prefix|Test unit written)' "corpus/$t.log" || true
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "corpus/$t.log" >&2
    echo "fuzz target $t failed; see fuzz/corpus/$t.log and fuzz/artifacts/$t/" >&2
    exit 1
  fi
done

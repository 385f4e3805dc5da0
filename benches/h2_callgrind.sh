#!/bin/bash
# Instructions per HTTP/2 request, counted by callgrind: deterministic, so
# a change's effect shows on a shared, noisy machine where CPU time does not.
#
#   bash benches/h2_callgrind.sh GLINT_BINARY M N [PATH]
#
# Starts GLINT_BINARY under `valgrind --tool=callgrind` on a free loopback
# port serving www/, warms it with 200 requests, zeroes the counters, runs
# `h2load -n N -c 1 -m M` (h2c, prior knowledge) on PATH (default
# /test.jpg), dumps the counters and prints the instructions per request.
# The profile stays in the printed directory; read it with
# `callgrind_annotate --threshold=100 --auto=no DIR/cg.out.2`
# (`--tree=caller` for who calls what). Needs valgrind and nghttp2-client.
set -euo pipefail
BIN=$(readlink -f "$1"); M=$2; N=$3; P=${4:-/test.jpg}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$D/g.conf" <<C
server.document-root = "$ROOT/www"
server.port = $PORT
server.bind = "127.0.0.1"
server.errorlog = "$D/err.log"
C
valgrind --tool=callgrind --callgrind-out-file="$D/cg.out" "$BIN" -D -f "$D/g.conf" > "$D/vg.log" 2>&1 &
VP=$!
trap 'kill -INT $VP 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.3; done
h2load -n 200 -c 1 -m "$M" "http://127.0.0.1:$PORT$P" > /dev/null 2>&1
callgrind_control -d "$VP" > /dev/null 2>&1; sleep 1
h2load -n "$N" -c 1 -m "$M" "http://127.0.0.1:$PORT$P" > "$D/h2load.log" 2>&1
callgrind_control -d "$VP" > /dev/null 2>&1; sleep 1
kill -INT "$VP"; wait "$VP" 2>/dev/null || true
trap - EXIT
grep -E "requests:" "$D/h2load.log"
last=$(ls "$D"/cg.out.* | sort -t. -k3 -n | tail -1)
ir=$(grep -E "^summary:|^totals:" "$last" | head -1 | awk '{print $2}')
echo "h2load -c1 -m$M -n$N $P: $((ir / N)) instructions per request (profile: $last)"

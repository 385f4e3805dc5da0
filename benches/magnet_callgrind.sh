#!/bin/bash
# Instructions per keep-alive HTTP/1.1 request with and without a trivial
# mod_magnet script (benches/magnet.py's), glint against lighttpd, counted
# by callgrind: deterministic, so a change's effect shows on a shared,
# noisy machine where CPU time does not. Kernel time is not counted.
#
#   bash benches/magnet_callgrind.sh GLINT_BINARY [N]
#
# For each server and variant (plain, script): starts it under
# `valgrind --tool=callgrind` on a free loopback port serving www/, warms
# it with 500 requests, zeroes the counters, runs `ab -k -c 10 -n N`
# (default 10000) on /index.html and prints the instructions per request.
# Needs valgrind, ab (apache2-utils) and lighttpd with lighttpd-modules-lua.
set -euo pipefail
BIN=$(readlink -f "$1"); N=${2:-10000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$(mktemp -d)
cat > "$D/trivial.lua" <<'LUA'
local path = lighty.r.req_attr["uri.path"]
if path == "/blocked" then
  return 403
end
LUA
count() { # name variant cmd...
  local name=$1 variant=$2; shift 2
  local port conf out
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  conf="$D/$name-$variant.conf"
  cat > "$conf" <<C
server.document-root = "$ROOT/www"
server.port = $port
server.bind = "127.0.0.1"
server.errorlog = "$D/$name-$variant-error.log"
server.modules = ( "mod_magnet" )
server.max-keep-alive-requests = 1000000
mimetype.assign = ( ".html" => "text/html" )
C
  [ "$name" = lighttpd ] && echo 'server.max-worker = 0' >> "$conf"
  [ "$variant" = script ] && echo "magnet.attract-raw-url-to = ( \"$D/trivial.lua\" )" >> "$conf"
  out="$D/$name-$variant.cg"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$@" -D -f "$conf" > "$D/vg.log" 2>&1 &
  local vp=$!
  for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$port/index.html" && break; sleep 0.3; done
  ab -k -n 500 -c 10 "http://127.0.0.1:$port/index.html" > /dev/null 2>&1
  callgrind_control -d "$vp" > /dev/null 2>&1; sleep 1
  ab -k -n "$N" -c 10 "http://127.0.0.1:$port/index.html" > "$D/ab.log" 2>&1
  callgrind_control -d "$vp" > /dev/null 2>&1; sleep 1
  kill -INT "$vp"; wait "$vp" 2>/dev/null || true
  grep -q "Failed requests:        0" "$D/ab.log" || { echo "$name/$variant: ab failed"; cat "$D/ab.log"; exit 1; }
  local last ir
  last=$(ls "$out".* | sort -t. -k3 -n | tail -1)
  ir=$(grep -E "^summary:|^totals:" "$last" | head -1 | awk '{print $2}')
  echo "$name $variant: $((ir / N)) instructions per request (profile: $last)"
}
count glint plain "$BIN"
count glint script "$BIN"
count lighttpd plain "$(command -v lighttpd || echo /usr/sbin/lighttpd)"
count lighttpd script "$(command -v lighttpd || echo /usr/sbin/lighttpd)"

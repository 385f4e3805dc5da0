#!/usr/bin/env bash
# Keep-alive storm after load (issue 19), not a test. For each run a fresh
# server with the default limits (server.max-connections 1365), then
#   1. ab -n 20000 -c 1000 /test.jpg (25 KB, one request per connection)
#   2. 15 s of byte-verified stress, 64 threads, ranges, files 0 B - 7 MB
#      (benches/storm_stress.py)
#   3. wrk -t1 -c5000 -d8 --timeout 2s /index.html
# and one row per run: wrk's errors, what the kernel and the server held
# before and 0.5 s into the storm, and the TCP counters the storm moved,
# read 15 s after it began (a client whose deferred handshake the kernel
# dropped is reset on its next retransmission, ~12.6 s in: after wrk ends).
#
#   benches/storm.sh                 # glint and lighttpd, 10 runs each
#   RUNS=3 SERVERS=glint benches/storm.sh
#   GLINT=/path/to/other/glint STORM_SECS=16 benches/storm.sh
#   REUSE=1 benches/storm.sh         # one server for all runs of a series
#   STORM=fair benches/storm.sh      # step 3 by benches/storm_fair.py: how
#                                    # many of the 5,000 clients are served
#
# Needs ab, wrk, ss, python3 (and lighttpd for its rows). Everything runs on
# 127.0.0.1; every step is bounded by a count or a time-out.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10}
SERVERS=${SERVERS:-"glint lighttpd"}
STRESS_SECS=${STRESS_SECS:-15}
STRESS_THREADS=${STRESS_THREADS:-64}
STORM_SECS=${STORM_SECS:-8}
STORM=${STORM:-wrk}
GLINT=${GLINT:-${CARGO_TARGET_DIR:-target}/release/glint}
LOGDIR=benches/results
mkdir -p "$LOGDIR"

for t in ab wrk ss python3; do
  command -v $t >/dev/null || { echo "storm.sh: $t is not installed" >&2; exit 1; }
done
[ -x "$GLINT" ] || cargo build --release --bin glint
# 5,000 client sockets plus the server's: the default 1024 is not enough.
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d)
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

www=$work/www
mkdir -p "$www"
cp www/index.html www/test.jpg "$www"/
# The stress files: 0 B to 7 MB, random bytes (same on every run).
python3 - "$www" <<'PY'
import random, sys
rng = random.Random(19)
for size in (0, 1, 469, 4096, 25190, 100_000, 1 << 20, 7 << 20):
    with open(f"{sys.argv[1]}/s-{size}", "wb") as f:
        f.write(rng.randbytes(size))
PY

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_server() {
  PORT=$(free_port)
  case $1 in
    glint)
      "$GLINT" -D --document-root "$www" --bind 127.0.0.1 --port "$PORT" \
        2>"$work/glint-stderr.log" &
      ;;
    lighttpd)
      cat >"$work/lighttpd.conf" <<CONF
server.document-root = "$www"
server.bind = "127.0.0.1"
server.port = $PORT
server.max-fds = 4096
server.max-connections = 1365
server.errorlog = "$work/lighttpd-error.log"
mimetype.assign = (".html" => "text/html", ".jpg" => "image/jpeg")
CONF
      lighttpd -D -f "$work/lighttpd.conf" &
      ;;
  esac
  SPID=$!
  for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && return 0
    sleep 0.1
  done
  echo "storm.sh: $1 did not start" >&2
  exit 1
}

stop_server() {
  kill "$SPID" 2>/dev/null || true
  wait "$SPID" 2>/dev/null || true
  SPID=
}

# Kernel counters (TcpExt, and Tcp's OutRsts) that tell where a connection was lost.
counters() {
  awk '/^(TcpExt|Tcp):/ { k = $1; if (!(k in h)) { for (i = 2; i <= NF; i++) n[k, i] = $i; h[k] = 1 }
                          else for (i = 2; i <= NF; i++) print n[k, i], $i }' /proc/net/netstat /proc/net/snmp
}
counter() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
delta() { echo $(( $(counter "$work/after" "$1") - $(counter "$work/before" "$1") )); }

orphans() { ss -s | sed -n 's/.*orphaned \([0-9]*\).*/\1/p'; }
# Server-side sockets on PORT by state (the listener left out).
server_states() {
  ss -Htan "sport = :$PORT" | awk '$1 != "LISTEN" { n[$1]++ } END { for (s in n) printf "%s=%d ", s, n[s] }'
}

printf "| server | run | ab failed | stress errors | before storm: orphans; server sockets; server fds | 0.5 s in: orphans; server sockets; server fds | $STORM answers | $STORM errors | ListenOverflows | SyncookiesFailed | OutRsts |\n"
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for server in $SERVERS; do
  if [ "$server" = lighttpd ] && ! command -v lighttpd >/dev/null; then
    echo "storm.sh: lighttpd is not installed; skipping it" >&2
    continue
  fi
  for run in $(seq "$RUNS"); do
    [ -n "$SPID" ] || start_server "$server"
    ab_log=$LOGDIR/storm-ab-$server.log
    timeout 120 ab -q -r -s 10 -n 20000 -c 1000 "http://127.0.0.1:$PORT/test.jpg" >"$ab_log" 2>&1 || true
    ab_failed=$(awk '/^Failed requests/ {print $3}' "$ab_log")
    stress=$(timeout $((STRESS_SECS + 60)) python3 benches/storm_stress.py "$PORT" "$www" \
      "$STRESS_THREADS" "$STRESS_SECS" 2>"$LOGDIR/storm-stress-$server.log" || true)
    stress_err=$(sed -n 's/.* \([0-9]*\) errors$/\1/p' <<<"$stress")
    pre_orph=$(orphans)
    pre_states=$(server_states)
    pre_fds=$(ls /proc/"$SPID"/fd | wc -l)
    counters >"$work/before"
    t0=$(date +%s)
    wrk_log=$LOGDIR/storm-$STORM-$server.log
    if [ "$STORM" = fair ]; then
      timeout $((STORM_SECS + 60)) python3 benches/storm_fair.py "$PORT" 5000 "$STORM_SECS" \
        >"$wrk_log" 2>&1 &
    else
      timeout $((STORM_SECS + 20)) wrk -t1 -c5000 -d"$STORM_SECS" --timeout 2s \
        "http://127.0.0.1:$PORT/index.html" >"$wrk_log" 2>&1 &
    fi
    wpid=$!
    sleep 0.5
    orph=$(orphans)
    states=$(server_states)
    fds=$(ls /proc/"$SPID"/fd | wc -l)
    wait $wpid || true
    # Resets of clients whose handshakes the kernel dropped come ~12.6 s in.
    while [ $(( $(date +%s) - t0 )) -lt 15 ]; do sleep 0.5; done
    counters >"$work/after"
    if [ "$STORM" = fair ]; then
      reqs=$(sed -n 's/^fair: \([0-9]* of [0-9]*\) clients served, \([0-9]*\) answers.*/\2 (\1 clients)/p' "$wrk_log")
      errs=$(sed -n 's/.* answers, \(.*\)$/\1/p' "$wrk_log")
    else
      reqs=$(awk '/requests in/ {print $1}' "$wrk_log")
      errs=$(awk '/Socket errors/ { gsub(",", ""); print "connect " $4 " read " $6 " write " $8 " timeout " $10 }' "$wrk_log")
    fi
    [ -n "${REUSE:-}" ] || stop_server
    printf '| %s | %d | %s | %s | %s; %s; %s | %s; %s; %s | %s | %s | %s | %s | %s |\n' \
      "$server" "$run" "${ab_failed:-?}" "${stress_err:-?}" "$pre_orph" "$pre_states" "$pre_fds" \
      "$orph" "$states" "$fds" "${reqs:-?}" "${errs:-0}" \
      "$(delta ListenOverflows)" "$(delta SyncookiesFailed)" "$(delta OutRsts)"
    # Let the previous run's TIME_WAIT and orphans drain a little.
    sleep 2
  done
  [ -z "$SPID" ] || stop_server
done

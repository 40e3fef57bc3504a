#!/usr/bin/env bash
# Load comparison of shepherd against the mock provider direct and against
# nginx (proxy_pass, buffering off), non-streaming and streaming, Anthropic
# and OpenAI Chat, in one run: saturation (wrk), open loop at a fixed rate,
# per-event forwarding delay, history size (agent sessions resending a
# growing history), idle streams. See bench/README.md for what is measured
# and how to read the tables.
#
# Usage: bash bench/load.sh            (or: make -C bench load; `make bench` at the
#                                       repository root runs the Go benchmarks, then this)
#
# It installs wrk and nginx-light with apt-get when they are missing (as
# root), prints "[k/N] phase workload target ..." before every run, and
# writes the report to bench/results/<UTC date>.md (and latest.md), the
# charts next to it, and the README's performance table.
#
# Settings (environment):
#   DURATION=10s      wrk duration of each measured run (DURATION=3s: smoke run)
#   WARMUP=2s         unmeasured wrk run before the first round of each workload × target
#   ROUNDS=2          measured runs per workload × target; the table shows medians
#   CONNECTIONS=32    wrk connections (closed loop: each waits for its reply)
#   THREADS=1         wrk threads
#   WORKLOADS="small agent50k chat50k stream agent50k-stream"   subset / order of workloads
#   TARGETS="direct nginx shepherd shepherd-hooks shepherd-redis"  subset / order of targets
#   NGINX_WORKERS=1   nginx worker_processes
#   NOISE_MAX=10      a run during which other processes used more than this
#   NOISE_RETRIES=1   % of the machine is measured again, up to this many
#                     times; the quietest attempt is kept (and flagged in the
#                     table if still noisy)
#   PIN=auto          auto: pin with taskset when it exists and 2+ CPUs are
#                     allowed (proxy under test on the first, wrk and mock on
#                     the second); 0: no pinning
#   OPENLOOP=1        after the saturation runs, an open-loop phase: benchtool openloop
#                     at a fixed rate per workload × target, latency from each request's
#                     scheduled time (0: skip)
#   OPENLOOP_RATE=500         requests/s of the open-loop runs (JSON workloads)
#   OPENLOOP_STREAM_RATE=100  requests/s of the open-loop runs of the stream workloads
#   OPENLOOP_DURATION=5s      measured time of each open-loop run
#   OPENLOOP_WARMUP=1s        unmeasured time before it, at the same rate
#   EVENTDELAY=1      then a per-event delay phase: streams from a mock that stamps every
#                     text delta with its send time and sends the events 2 ms apart;
#                     benchtool openloop -stamped records, for every delta, the time it
#                     was read minus the time stamped in it (0: skip)
#   EVENTDELAY_RATE=20        streams/s of the per-event delay runs (50 events each)
#   EVENTDELAY_DURATION=5s    measured time of each per-event delay run
#   EVENTDELAY_WARMUP=1s      unmeasured time before it
#   HISTORY=1         then a history-size phase: benchtool history per size × target, agent
#                     sessions whose every request is the previous one plus a tool round trip
#                     (the non-streaming agent request grown to each size), first at a fixed
#                     rate (open loop: added latency), then closed loop (throughput) (0: skip)
#   HISTORY_SIZES="50k 250k 500k 1m"  the first request's size in each session (binary units)
#   HISTORY_TARGETS   default: those of direct nginx shepherd shepherd-hooks in TARGETS
#   HISTORY_RATE=50           requests/s of the open loop
#   HISTORY_SESSIONS=4        open loop: sessions the requests go to in turn (each waits for its
#                     previous reply, as an agent does)
#   HISTORY_GROWTH=16         requests per session after its first (then a new session)
#   HISTORY_DURATION=5s       measured time of each open loop
#   HISTORY_WARMUP=1s         unmeasured time before each loop
#   HISTORY_CONNECTIONS=4     closed loop: sessions sending back to back (0: no closed loop)
#   HISTORY_CLOSED_DURATION=3s  measured time of each closed loop
#   REDIS_PINNED=0    1: shepherd-redis runs with state.redis.pinned_sessions (a session's
#                     next request rewritten from this process's copy: one round trip per
#                     turn instead of two; sound when sessions are pinned to one replica)
#   IDLE=1            last, a memory phase: benchtool idle holds N streams open through a
#                     fresh shepherd (hooks off, then on) in front of a fresh mock that holds
#                     every stream after its first event (pinging), and reads the proxy's
#                     RSS before and with all N open (0: skip)
#   IDLE_STREAMS="1000 10000"  N of the idle runs (lowered to fit when a proxy, at 2 files
#                     per stream, would exceed `ulimit -Hn`)
#   IDLE_TARGETS="shepherd shepherd-hooks"
#   IDLE_SETTLE=3s    how long all N stay open while the RSS is sampled (peak kept)
#   IDLE_TIMEOUT=60s  for all N to receive their first event
#   IDLE_MOCK_HOLD=180s IDLE_MOCK_PING=2s  the idle mock's -hold and -ping
#   OUT=bench/out     raw wrk outputs, logs, results.tsv, openloop.tsv, eventdelay.tsv,
#                     history.tsv, idle.tsv, the report and charts (gitignored)
#   RESULTS=bench/results/latest.md   the committed copy of the report ("" to skip); a
#                     second copy goes next to it as <UTC date>.md, with the charts
#                     <date>.svg (history and throughput) and <date>-latency.svg (open-loop
#                     percentiles), copied to latest.svg and latency.svg
#   README=auto       rewrite the table between <!-- bench:begin --> and <!-- bench:end --> in
#                     the repository's README.md from this run: auto = when RESULTS is saved,
#                     1 = always, 0 = never
#   STAMP=<UTC date>  the name of the dated copies (a second run on one day: STAMP=2026-11-26b)
#   SMOKE=0           1: label the report and the README table as a smoke run (make -C bench smoke)
#
# The mock serves one reply shape per process, so each shape (the default
# one, the ~300-event agent stream, the stamped stream) gets a "fleet": its
# own mock process and, in front of it, its own nginx server block (same
# nginx process) and shepherd processes. A workload runs against the fleet of
# its shape; all targets of a workload are in one fleet, so they stay
# interleaved. Fleets not measured sit idle.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-2}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-1}
WORKLOADS=${WORKLOADS:-small agent50k chat50k stream agent50k-stream}
TARGETS=${TARGETS:-direct nginx shepherd shepherd-hooks shepherd-redis}
NGINX_WORKERS=${NGINX_WORKERS:-1}
NOISE_MAX=${NOISE_MAX:-10}
NOISE_RETRIES=${NOISE_RETRIES:-1}
PIN=${PIN:-auto}
OPENLOOP=${OPENLOOP:-1}
OPENLOOP_RATE=${OPENLOOP_RATE:-500}
OPENLOOP_STREAM_RATE=${OPENLOOP_STREAM_RATE:-100}
OPENLOOP_DURATION=${OPENLOOP_DURATION:-5s}
OPENLOOP_WARMUP=${OPENLOOP_WARMUP:-1s}
EVENTDELAY=${EVENTDELAY:-1}
EVENTDELAY_RATE=${EVENTDELAY_RATE:-20}
EVENTDELAY_DURATION=${EVENTDELAY_DURATION:-5s}
EVENTDELAY_WARMUP=${EVENTDELAY_WARMUP:-1s}
HISTORY=${HISTORY:-1}
REDIS_PINNED=${REDIS_PINNED:-0}
HISTORY_SIZES=${HISTORY_SIZES:-50k 250k 500k 1m}
HISTORY_RATE=${HISTORY_RATE:-50}
HISTORY_SESSIONS=${HISTORY_SESSIONS:-4}
HISTORY_GROWTH=${HISTORY_GROWTH:-16}
HISTORY_DURATION=${HISTORY_DURATION:-5s}
HISTORY_WARMUP=${HISTORY_WARMUP:-1s}
HISTORY_CONNECTIONS=${HISTORY_CONNECTIONS:-4}
HISTORY_CLOSED_DURATION=${HISTORY_CLOSED_DURATION:-3s}
IDLE=${IDLE:-1}
IDLE_STREAMS=${IDLE_STREAMS:-1000 10000}
IDLE_TARGETS=${IDLE_TARGETS:-shepherd shepherd-hooks}
IDLE_SETTLE=${IDLE_SETTLE:-3s}
IDLE_TIMEOUT=${IDLE_TIMEOUT:-60s}
IDLE_MOCK_HOLD=${IDLE_MOCK_HOLD:-180s}
IDLE_MOCK_PING=${IDLE_MOCK_PING:-2s}
OUT=${OUT:-$here/out}
RESULTS=${RESULTS-$here/results/latest.md}
README=${README:-auto}
SMOKE=${SMOKE:-0}
GO=${GO:-go}
STAMP=${STAMP:-$(date -u +%Y-%m-%d)}

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'load.sh: %s\n' "$*" >&2; exit 1; }

# --- tools ------------------------------------------------------------------

find_nginx() { command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true; }
missing=()
command -v wrk >/dev/null || missing+=(wrk)
[ -n "$(find_nginx)" ] || missing+=(nginx-light)
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "${missing[*]} needed: apt-get install -y ${missing[*]} (as root)"
  log "installing ${missing[*]} (apt-get)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  command -v wrk >/dev/null || die "wrk not found after install"
fi
NGINX=$(find_nginx)
[ -n "$NGINX" ] || die "nginx not found after install"
command -v "$GO" >/dev/null || die "go not found"

# --- CPU pinning --------------------------------------------------------------

# expand_cpus "0-2,5" -> "0 1 2 5"
expand_cpus() {
  local part out=()
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then
      out+=($(seq "${part%-*}" "${part#*-}"))
    else
      out+=("$part")
    fi
  done
  echo "${out[@]}"
}

PROXY_CPU="" LOAD_CPU=""
if [ "$PIN" != 0 ] && command -v taskset >/dev/null; then
  read -ra allowed <<<"$(expand_cpus "$(taskset -cp $$ | sed 's/.*: *//')")"
  if [ "${#allowed[@]}" -ge 2 ]; then
    PROXY_CPU=${allowed[0]}
    LOAD_CPU=${allowed[1]}
  fi
fi
# Command prefixes that pin to a core. They are arrays, not functions: a
# backgrounded function runs in a subshell, so $! would not be the server's
# pid; "${on_proxy_cpu[@]}" cmd & forks once and taskset execs cmd.
on_proxy_cpu=() on_load_cpu=()
if [ -n "$PROXY_CPU" ]; then
  on_proxy_cpu=(taskset -c "$PROXY_CPU")
  on_load_cpu=(taskset -c "$LOAD_CPU")
fi

# --- processes ------------------------------------------------------------------

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shepherd-load.XXXXXX")
pids=()
cleanup() {
  local rc=$? pid i
  trap - EXIT INT TERM
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

rm -rf "$OUT/raw"
mkdir -p "$OUT/raw" "$tmp/nginx/logs"

log "building shepherd, mockprovider and benchtool into $tmp"
(cd "$root" && "$GO" build -o "$tmp/shepherd" ./cmd/shepherd &&
  "$GO" build -o "$tmp/mockprovider" ./bench/cmd/mockprovider &&
  "$GO" build -o "$tmp/benchtool" ./bench/cmd/benchtool)
bt=$tmp/benchtool
"$bt" bodies "$tmp/bodies"

# The workloads: request path, stream or not, and the mock shape serving
# them (benchtool bodies writes workloads.tsv; "stamped" is the per-event
# delay phase's).
declare -A wl_path wl_stream wl_mock
while IFS=$'\t' read -r name api path stream mock events; do
  [ "$name" = name ] && continue
  wl_path[$name]=$path wl_stream[$name]=$stream wl_mock[$name]=$mock
done <"$tmp/bodies/workloads.tsv"

read -ra targets <<<"$TARGETS"
read -ra workloads <<<"$WORKLOADS"
for t in "${targets[@]}"; do
  case $t in direct | nginx | shepherd | shepherd-hooks | shepherd-redis) ;; *) die "unknown target $t" ;; esac
done
for wl in "${workloads[@]}"; do
  [ -n "${wl_mock[$wl]+x}" ] && [ "$wl" != stamped ] || die "unknown workload $wl"
done
has_target() { [[ " ${targets[*]} " == *" $1 "* ]]; }

# The fleets: one per mock shape in use (the workloads', then the stamped
# one for the per-event delay phase).
fleets=()
add_fleet() { [[ " ${fleets[*]} " == *" $1 "* ]] || fleets+=("$1"); }
for wl in "${workloads[@]}"; do add_fleet "${wl_mock[$wl]}"; done
if [ "$EVENTDELAY" != 0 ]; then add_fleet "${wl_mock[stamped]}"; fi
# The history phase sends the non-streaming agent request, grown: agent50k's fleet.
if [ "$HISTORY" != 0 ]; then add_fleet "${wl_mock[agent50k]}"; fi

# The history phase's targets: those of TARGETS it measures, unless given.
if [ -z "${HISTORY_TARGETS+x}" ]; then
  HISTORY_TARGETS=""
  for t in direct nginx shepherd shepherd-hooks; do
    if has_target "$t"; then HISTORY_TARGETS+="${HISTORY_TARGETS:+ }$t"; fi
  done
fi
read -ra history_targets <<<"$HISTORY_TARGETS"
read -ra history_sizes <<<"$HISTORY_SIZES"
for t in "${history_targets[@]}"; do has_target "$t" || die "HISTORY_TARGETS: $t is not in TARGETS"; done
if [ "$HISTORY" != 0 ] && { [ "${#history_targets[@]}" = 0 ] || [ "${#history_sizes[@]}" = 0 ]; }; then
  log "history phase skipped: no HISTORY_TARGETS or HISTORY_SIZES"
  HISTORY=0
fi

# Every port at once (8 per fleet and Redis's), so none is handed out twice.
read -ra ports <<<"$("$bt" ports $((8 * ${#fleets[@]} + 1)) | tr '\n' ' ')"
REDIS_PORT=${ports[-1]}

# start_shepherd NAME PORT ADMIN_PORT UPSTREAM [VAR=value ...] starts the
# built proxy pinned to the proxy CPU, every upstream at UPSTREAM, logging to
# $OUT/NAME.log, with the extra settings given; it sets started_pid.
start_shepherd() {
  local name=$1 port=$2 admin=$3 up=$4
  shift 4
  env SHEPHERD_LISTEN="127.0.0.1:$port" SHEPHERD_ADMIN_LISTEN="127.0.0.1:$admin" \
    SHEPHERD_UPSTREAMS_ANTHROPIC="$up" SHEPHERD_UPSTREAMS_OPENAI="$up" SHEPHERD_UPSTREAMS_GEMINI="$up" \
    SHEPHERD_LOG_LEVEL=warn SHEPHERD_LIMITS_SHUTDOWN_GRACE=2s "$@" \
    "${on_proxy_cpu[@]}" "$tmp/shepherd" >"$OUT/$name.log" 2>&1 &
  started_pid=$!
  pids+=("$started_pid")
}
# The features: all off (the pass-through path), or topics, intents (a
# policy whose starting intent is selected) and recovery on.
mkdir -p "$tmp/ws/.orchestration"
printf '%s\n' 'version: 1' 'current_intent_id: INT-001' 'intents:' '  - id: INT-001' \
  '    summary: "Benchmark intent"' '    scope:' '      allow_glob: ["src/**"]' \
  '    constraints:' '      disallow_patterns: ["rm\\s+-rf"]' >"$tmp/ws/.orchestration/active_intents.yaml"
hooks_off=(SHEPHERD_TOPICS_ENABLED=false SHEPHERD_INTENTS_ENABLED=false SHEPHERD_RECOVERY_ENABLED=false SHEPHERD_EDITS_ENABLED=false)
hooks_on=(SHEPHERD_INTENTS_ENABLED=true SHEPHERD_INTENTS_WORKSPACE_ROOT="$tmp/ws")

# shepherd-redis: hooks on, a private redis-server (on the load CPU, like
# the mock), one database per fleet.
if has_target shepherd-redis; then
  if ! command -v redis-server >/dev/null; then
    [ "$(id -u)" = 0 ] || die "redis-server is needed for shepherd-redis: apt-get install -y redis-server (as root)"
    log "installing redis-server"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  "${on_load_cpu[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    >"$OUT/redis.log" 2>&1 &
  pids+=("$!")
fi

# target_url[FLEET/TARGET] is a target's base URL, target_pid[FLEET/TARGET]
# the process measured for it ("" for direct); mock_pid[FLEET] and
# mock_port[FLEET] are the fleet's mock, nginx_port[FLEET] its nginx server
# block.
declare -A target_url target_pid mock_pid mock_port nginx_port

# start_fleet FLEET INDEX: the fleet's mock (no recording, no TTFT, the
# shape's flags from mock-FLEET.args) and the shepherds of TARGETS in front of
# it: shepherd (hooks off), shepherd-hooks (hooks on, memory store),
# shepherd-redis (hooks on, Redis database INDEX). Logs: $OUT/<name>.log, the
# default fleet's without a suffix, the others' with -FLEET.
start_fleet() {
  local f=$1 i=$2 sfx="" margs up
  [ "$f" = default ] || sfx="-$f"
  local mp=${ports[8 * i]} sp=${ports[8 * i + 2]} ap=${ports[8 * i + 3]} hp=${ports[8 * i + 4]}
  local ha=${ports[8 * i + 5]} rp=${ports[8 * i + 6]} ra=${ports[8 * i + 7]}
  nginx_port[$f]=${ports[8 * i + 1]}
  mock_port[$f]=$mp
  read -ra margs <"$tmp/bodies/mock-$f.args"
  "${on_load_cpu[@]}" "$tmp/mockprovider" -addr "127.0.0.1:$mp" -no-record -ttft 0 "${margs[@]}" \
    >"$OUT/mock$sfx.log" 2>&1 &
  mock_pid[$f]=$!
  pids+=("$!")
  up="http://127.0.0.1:$mp"
  target_url[$f/direct]=$up target_pid[$f/direct]=""
  if has_target shepherd; then
    start_shepherd "shepherd$sfx" "$sp" "$ap" "$up" "${hooks_off[@]}"
    target_url[$f/shepherd]="http://127.0.0.1:$sp" target_pid[$f/shepherd]=$started_pid
  fi
  if has_target shepherd-hooks; then
    start_shepherd "shepherd-hooks$sfx" "$hp" "$ha" "$up" "${hooks_on[@]}" SHEPHERD_STATE_BACKEND=memory
    target_url[$f/shepherd-hooks]="http://127.0.0.1:$hp" target_pid[$f/shepherd-hooks]=$started_pid
  fi
  if has_target shepherd-redis; then
    start_shepherd "shepherd-redis$sfx" "$rp" "$ra" "$up" "${hooks_on[@]}" \
      SHEPHERD_STATE_BACKEND=redis SHEPHERD_STATE_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/$i" \
      SHEPHERD_STATE_REDIS_PINNED_SESSIONS="$([ "$REDIS_PINNED" = 1 ] && echo true || echo false)"
    target_url[$f/shepherd-redis]="http://127.0.0.1:$rp" target_pid[$f/shepherd-redis]=$started_pid
  fi
}
for i in "${!fleets[@]}"; do start_fleet "${fleets[i]}" "$i"; done

# nginx: a plain streaming reverse proxy, as close to shepherd's job as nginx
# gets: HTTP/1.1 keep-alive pool to the mock, no response or request
# buffering, no access log, effectively unlimited keep-alive requests on both
# sides (shepherd/fasthttp has no such limit). One server block per fleet,
# each with its own upstream (the fleet's mock), in one nginx process.
if has_target nginx; then
  nginx_user=""
  [ "$(id -u)" = 0 ] && nginx_user="user $(id -un) $(id -gn);"
  {
    echo "$nginx_user"
    echo "worker_processes $NGINX_WORKERS;"
    cat <<NGINX
daemon off;
master_process on;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/logs/error.log warn;
events {
  worker_connections 4096;
}
http {
  access_log off;
  client_body_temp_path $tmp/nginx/client_body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  client_max_body_size 64m;
  client_body_buffer_size 128k;
  keepalive_requests 10000000;
  keepalive_timeout 75s;
NGINX
    for i in "${!fleets[@]}"; do
      f=${fleets[i]}
      cat <<NGINX
  upstream mock$i {
    server 127.0.0.1:${mock_port[$f]};
    keepalive 64;
    keepalive_requests 10000000;
  }
  server {
    listen 127.0.0.1:${nginx_port[$f]};
    location / {
      proxy_pass http://mock$i;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
NGINX
    done
    echo "}"
  } >"$tmp/nginx/nginx.conf"
  "${on_proxy_cpu[@]}" "$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/logs/error.log" \
    >"$OUT/nginx.log" 2>&1 &
  NGINX_PID=$!
  pids+=("$NGINX_PID")
  for f in "${fleets[@]}"; do
    target_url[$f/nginx]="http://127.0.0.1:${nginx_port[$f]}" target_pid[$f/nginx]=$NGINX_PID
  done
fi

for f in "${fleets[@]}"; do
  urls=()
  for t in "${targets[@]}"; do urls+=("${target_url[$f/$t]}"); done
  log "waiting for the $f fleet: ${targets[*]} at ${urls[*]}"
  if ! "$bt" wait -timeout 30s -mock "$f" "${urls[@]}"; then
    cp "$tmp/nginx/logs/error.log" "$OUT/nginx-error.log" 2>/dev/null || true
    tail -n 20 "$OUT"/*.log >&2 || true
    die "targets did not come up (logs in $OUT)"
  fi
done

# --- measurement helpers ------------------------------------------------------------

CLK_TCK=$(getconf CLK_TCK)

# proc_ticks PID... -> utime+stime (clock ticks) of the processes and their
# children (nginx workers), summed.
proc_ticks() {
  local all=() pid stat f sum=0
  for pid in "$@"; do all+=("$pid" $(children_of "$pid")); done
  for pid in "${all[@]}"; do
    stat=$(cat /proc/"$pid"/stat 2>/dev/null) || continue
    # Fields after the ")" that closes comm: state first, utime 12th, stime 13th.
    read -ra f <<<"${stat##*) }"
    sum=$((sum + f[11] + f[12]))
  done
  echo "$sum"
}

# children_of PID -> pids of its direct children.
children_of() {
  if command -v pgrep >/dev/null; then
    pgrep -P "$1" || true
    return
  fi
  local d stat f
  for d in /proc/[0-9]*; do
    stat=$(cat "$d/stat" 2>/dev/null) || continue
    read -ra f <<<"${stat##*) }"
    [ "${f[1]}" = "$1" ] && echo "${d#/proc/}"
  done
  return 0
}

# waited_ticks PID -> CPU ticks of the waited-for descendants of shell PID
# (wrk runs in a command substitution: its time lands in the calling shell
# once it has been reaped).
waited_ticks() {
  local stat f
  stat=$(<"/proc/$1/stat")
  read -ra f <<<"${stat##*) }"
  echo $((f[13] + f[14]))
}

# core_ticks CPU -> "busy total" jiffies of one core ("" = all cores) from
# /proc/stat.
core_ticks() {
  awk -v c="cpu$1" '$1 == c { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat
}

busy_pct() { # busy0 total0 busy1 total1 -> busy % in between
  awk -v b0="$1" -v t0="$2" -v b1="$3" -v t1="$4" 'BEGIN { d = t1 - t0; if (d <= 0) print "nan"; else printf "%.1f", 100 * (b1 - b0) / d }'
}

us_per_req() { # TICKS REQUESTS -> CPU µs per request
  awk -v t="$1" -v hz="$CLK_TCK" -v n="$2" 'BEGIN { if (n > 0) printf "%.2f", t * 1e6 / hz / n; else print "nan" }'
}

# field NAME <<< "RESULT a=1 b=2" -> value of NAME
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

results=$OUT/results.tsv
printf 'workload\ttarget\tround\trps\tp50_us\tp90_us\tp99_us\trequests\terrors\tproxy_cpu_us\tmock_cpu_us\twrk_cpu_us\tproxy_core_busy\tload_core_busy\tother_pct\n' >"$results"

# run_wrk WORKLOAD TARGET DURATION RAWFILE: one wrk run (the workload's body,
# headers and path, against the target of the workload's fleet), RESULT line
# on stdout.
run_wrk() {
  BODY_FILE="$tmp/bodies/$1.json" HEADERS_FILE="$tmp/bodies/$1.headers" \
    "${on_load_cpu[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$3" --latency --timeout 10s \
    -s "$tmp/bodies/post.lua" "${target_url[${wl_mock[$1]}/$2]}${wl_path[$1]}" >"$4" 2>&1 ||
    { cat "$4" >&2; die "wrk failed on $1 → $2"; }
  grep '^RESULT ' "$4" || die "no RESULT line in $4"
}

# measure WORKLOAD TARGET ROUND [RETRY]: one measured run; its results.tsv line on
# stdout, a summary on stderr.
measure() {
  local wl=$1 t=$2 r=$3 raw="$OUT/raw/$1-$2-r$3${4:+-retry$4}.txt" me=$BASHPID
  local ppid=${target_pid[${wl_mock[$1]}/$2]} mpid=${mock_pid[${wl_mock[$1]}]} p0=0 p1=0 m0 m1 w0 w1 a0 a1 c0 c1 l0 l1 res
  [ -n "$ppid" ] && p0=$(proc_ticks "$ppid")
  m0=$(proc_ticks "$mpid")
  a0=$(core_ticks "")
  if [ -n "$PROXY_CPU" ]; then c0=$(core_ticks "$PROXY_CPU") && l0=$(core_ticks "$LOAD_CPU"); fi
  w0=$(waited_ticks "$me")
  res=$(run_wrk "$wl" "$t" "$DURATION" "$raw")
  w1=$(waited_ticks "$me")
  if [ -n "$PROXY_CPU" ]; then c1=$(core_ticks "$PROXY_CPU") && l1=$(core_ticks "$LOAD_CPU"); fi
  a1=$(core_ticks "")
  m1=$(proc_ticks "$mpid")
  [ -n "$ppid" ] && p1=$(proc_ticks "$ppid")

  local req dur errs e rps pcpu=nan mcpu wcpu pbusy=nan lbusy=nan other
  req=$(field requests <<<"$res")
  dur=$(field duration_us <<<"$res")
  errs=0
  for e in connect read write status timeout; do errs=$((errs + $(field "$e" <<<"$res"))); done
  rps=$(awk -v n="$req" -v d="$dur" 'BEGIN { printf "%.1f", n / (d / 1e6) }')
  [ -n "$ppid" ] && pcpu=$(us_per_req $((p1 - p0)) "$req")
  mcpu=$(us_per_req $((m1 - m0)) "$req")
  wcpu=$(us_per_req $((w1 - w0)) "$req")
  if [ -n "$PROXY_CPU" ]; then
    pbusy=$(busy_pct $c0 $c1)
    lbusy=$(busy_pct $l0 $l1)
  fi
  # Share of the whole machine used by processes other than the proxy, the
  # mock and wrk: other sessions, builds... a noise indicator.
  read -r ab0 at0 <<<"$a0"
  read -r ab1 at1 <<<"$a1"
  other=$(awk -v b=$((ab1 - ab0 - (p1 - p0) - (m1 - m0) - (w1 - w0))) -v t=$((at1 - at0)) \
    'BEGIN { if (t <= 0) print "nan"; else { v = 100 * b / t; if (v < 0) v = 0; printf "%.1f", v } }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$wl" "$t" "$r" "$rps" \
    "$(field p50_us <<<"$res")" "$(field p90_us <<<"$res")" "$(field p99_us <<<"$res")" \
    "$req" "$errs" "$pcpu" "$mcpu" "$wcpu" "$pbusy" "$lbusy" "$other"
  log "$(printf '%-15s %-14s round %s: %8s req/s  p50 %6s µs  p99 %7s µs  errors %s  other load %s%%' "$wl" "$t" "$r" "$rps" \
    "$(field p50_us <<<"$res")" "$(field p99_us <<<"$res")" "$errs" "$other")"
}

# noisy LINE: whether a results line's other_pct exceeds NOISE_MAX.
noisy() { awk -v o="$(cut -f15 <<<"$1")" -v m="$NOISE_MAX" 'BEGIN { exit !(o != "nan" && o + 0 > m + 0) }'; }

# --- progress -------------------------------------------------------------------

# Every run (wrk warm-up or round, open-loop, per-event delay, history and
# idle run) is one step; progress prints "[k/N] what (elapsed)" before each.
read -ra idle_targets <<<"$IDLE_TARGETS"
read -ra idle_streams <<<"$IDLE_STREAMS"
steps_total=$((${#workloads[@]} * ${#targets[@]} * (1 + ROUNDS)))
if [ "$OPENLOOP" != 0 ]; then steps_total=$((steps_total + ${#workloads[@]} * ${#targets[@]})); fi
if [ "$EVENTDELAY" != 0 ]; then steps_total=$((steps_total + ${#targets[@]})); fi
if [ "$HISTORY" != 0 ]; then steps_total=$((steps_total + ${#history_sizes[@]} * ${#history_targets[@]})); fi
if [ "$IDLE" != 0 ]; then steps_total=$((steps_total + ${#idle_streams[@]} * ${#idle_targets[@]})); fi
step_no=0
progress() {
  step_no=$((step_no + 1))
  printf '[%d/%d] %s  (%dm%02ds elapsed)\n' "$step_no" "$steps_total" "$*" $((SECONDS / 60)) $((SECONDS % 60)) >&2
}

# --- the run ------------------------------------------------------------------

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -n "$PROXY_CPU" ]; then
  log "pinning: proxy on CPU $PROXY_CPU, wrk and mock on CPU $LOAD_CPU"
else
  log "pinning: none"
fi
case $(cut -d' ' -f1 /proc/loadavg) in
  0.* | 1.*) ;;
  *) log "warning: load average $(cut -d' ' -f1-3 /proc/loadavg): other processes will skew the numbers (see the 'other processes' column)" ;;
esac
log "${#workloads[@]} workloads × ${#targets[@]} targets × $ROUNDS rounds × $DURATION (+ $WARMUP warm-up each)"

for wl in "${workloads[@]}"; do
  for t in "${targets[@]}"; do
    progress "saturation $wl $t: warm-up $WARMUP"
    run_wrk "$wl" "$t" "$WARMUP" "$OUT/raw/$wl-$t-warmup.txt" >/dev/null
  done
  # Interleave the targets within a workload and rotate their order every
  # round, so slow drift (thermal, noisy neighbours) hits all of them alike.
  for ((r = 1; r <= ROUNDS; r++)); do
    n=${#targets[@]}
    for ((i = 0; i < n; i++)); do
      t=${targets[(i + r - 1) % n]}
      progress "saturation $wl $t: round $r/$ROUNDS, $DURATION at $CONNECTIONS connections"
      line=$(measure "$wl" "$t" "$r")
      # Other processes took more than NOISE_MAX % of the machine: run it
      # again (up to NOISE_RETRIES times) and keep the quietest attempt.
      for ((k = 0; k < NOISE_RETRIES; k++)); do
        noisy "$line" || break
        log "  noisy (other processes $(cut -f15 <<<"$line")% > $NOISE_MAX%), measuring again"
        sleep 2
        again=$(measure "$wl" "$t" "$r" $((k + 1)))
        if awk -v a="$(cut -f15 <<<"$again")" -v b="$(cut -f15 <<<"$line")" 'BEGIN { exit !(a < b) }'; then
          line=$again
        fi
      done
      printf '%s\n' "$line" >>"$results"
    done
  done
done

# --- open loop ----------------------------------------------------------------

# A fixed request rate well below saturation, latency measured from each
# request's scheduled time (coordinated omission counted): what a request
# pays at a given load rather than how much load fits. benchtool bounds each
# request to 10 s after its scheduled time, so each run is bounded too.
openloop=$OUT/openloop.tsv
if [ "$OPENLOOP" != 0 ]; then
  printf 'workload\ttarget\trate\tsent\terrors\tp50_us\tp90_us\tp99_us\tp999_us\tmax_us\tttfb_p50_us\tttfb_p99_us\tgap_p50_us\tgap_p99_us\n' >"$openloop"
  log "open loop: ${#workloads[@]} workloads × ${#targets[@]} targets × $OPENLOOP_DURATION (+ $OPENLOOP_WARMUP warm-up) at $OPENLOOP_RATE/s ($OPENLOOP_STREAM_RATE/s for streams)"
  for wl in "${workloads[@]}"; do
    rate=$OPENLOOP_RATE stream=()
    if [ "${wl_stream[$wl]}" = 1 ]; then rate=$OPENLOOP_STREAM_RATE stream=(-stream); fi
    # The targets interleaved, one run each (same order as the saturation runs).
    for t in "${targets[@]}"; do
      progress "open loop $wl $t: $rate/s for $OPENLOOP_DURATION"
      raw="$OUT/raw/$wl-$t-openloop.txt"
      "${on_load_cpu[@]}" "$bt" openloop -rate "$rate" -duration "$OPENLOOP_DURATION" -warmup "$OPENLOOP_WARMUP" \
        -body "$tmp/bodies/$wl.json" -headers "$tmp/bodies/$wl.headers" "${stream[@]}" \
        "${target_url[${wl_mock[$wl]}/$t]}${wl_path[$wl]}" >"$raw" 2>&1 ||
        { cat "$raw" >&2; die "benchtool openloop failed on $wl → $t"; }
      res=$(grep '^OPENLOOP ' "$raw") || die "no OPENLOOP line in $raw"
      row=("$wl" "$t")
      for f in rate sent errors p50_us p90_us p99_us p999_us max_us ttfb_p50_us ttfb_p99_us gap_p50_us gap_p99_us; do
        v=$(field "$f" <<<"$res")
        row+=("${v:--}")
      done
      (IFS=$'\t'; printf '%s\n' "${row[*]}") >>"$openloop"
      log "$(printf '%-15s %-14s open loop %s/s: p50 %6s µs  p99 %7s µs  errors %s  send lag p50 %s µs%s' "$wl" "$t" "$rate" \
        "$(field p50_us <<<"$res")" "$(field p99_us <<<"$res")" "$(field errors <<<"$res")" "$(field lag_p50_us <<<"$res")" \
        "${stream:+  ttfb p50 $(field ttfb_p50_us <<<"$res") µs  gap p99 $(field gap_p99_us <<<"$res") µs}")"
    done
  done
fi

# --- per-event forwarding delay -------------------------------------------------

# workload_events NAME: the SSE events of a workload's reply (workloads.tsv).
workload_events() { awk -F'\t' -v n="$1" '$1 == n { print $6 }' "$tmp/bodies/workloads.tsv"; }

# The stamped fleet's mock writes each text delta's send time (Unix ns) into
# its text and sends the events 2 ms apart (workload.MockStamped), so
# every event crosses a proxy on its own; benchtool openloop -stamped records,
# for each delta, when the client has read it minus the stamped time. The
# mock and the client share a clock (same machine), so that is the one-way
# delay; direct's is the floor (mock → client), target − direct what the
# proxy adds to every event.
eventdelay=$OUT/eventdelay.tsv
if [ "$EVENTDELAY" != 0 ]; then
  printf 'target\trate\tsent\terrors\tevents\tdelay_p50_us\tdelay_p90_us\tdelay_p99_us\tdelay_p999_us\tdelay_max_us\n' >"$eventdelay"
  ed_fleet=${wl_mock[stamped]}
  log "per-event delay: ${#targets[@]} targets × $EVENTDELAY_DURATION (+ $EVENTDELAY_WARMUP warm-up) at $EVENTDELAY_RATE streams/s"
  for t in "${targets[@]}"; do
    progress "per-event delay $t: $EVENTDELAY_RATE streams/s for $EVENTDELAY_DURATION"
    raw="$OUT/raw/eventdelay-$t.txt"
    "${on_load_cpu[@]}" "$bt" openloop -rate "$EVENTDELAY_RATE" -duration "$EVENTDELAY_DURATION" -warmup "$EVENTDELAY_WARMUP" \
      -body "$tmp/bodies/stamped.json" -headers "$tmp/bodies/stamped.headers" -stamped \
      "${target_url[$ed_fleet/$t]}${wl_path[stamped]}" >"$raw" 2>&1 ||
      { cat "$raw" >&2; die "benchtool openloop -stamped failed on $t"; }
    res=$(grep '^OPENLOOP ' "$raw") || die "no OPENLOOP line in $raw"
    row=("$t")
    for f in rate sent errors delay_events delay_p50_us delay_p90_us delay_p99_us delay_p999_us delay_max_us; do
      v=$(field "$f" <<<"$res")
      row+=("${v:--}")
    done
    (IFS=$'\t'; printf '%s\n' "${row[*]}") >>"$eventdelay"
    log "$(printf '%-14s per-event delay %s streams/s: %s events  p50 %s µs  p99 %s µs  max %s µs  errors %s' "$t" "$EVENTDELAY_RATE" \
      "$(field delay_events <<<"$res")" "$(field delay_p50_us <<<"$res")" "$(field delay_p99_us <<<"$res")" \
      "$(field delay_max_us <<<"$res")" "$(field errors <<<"$res")")"
  done
fi

# --- history size -----------------------------------------------------------------

# Agent sessions resend their whole history every turn: each request is the
# previous body plus one tool round trip, so a proxy that remembers what a
# session sent can work on the new tail only (wrk's one fixed body cannot
# show that). Per size, the targets interleaved; benchtool history grows the
# agent request to the size, runs the open loop (HISTORY_SESSIONS sessions
# in turn, each waiting for its previous reply; a session's first request,
# which the proxy has not seen, is kept out of the warm percentiles: cold_p50)
# and then the closed loop (HISTORY_CONNECTIONS sessions back to back).
history=$OUT/history.tsv
if [ "$HISTORY" != 0 ]; then
  printf 'size\ttarget\tbytes\tturns\trate\tsent\terrors\tp50_us\tp90_us\tp99_us\tp999_us\tmax_us\tcold_p50_us\tconnections\trps\tclosed_errors\tclosed_p50_us\tclosed_p99_us\n' >"$history"
  h_fleet=${wl_mock[agent50k]}
  log "history size: ${history_sizes[*]} × ${history_targets[*]}: open loop $HISTORY_RATE/s for $HISTORY_DURATION, closed loop $HISTORY_CONNECTIONS sessions for $HISTORY_CLOSED_DURATION (+ $HISTORY_WARMUP warm-up each)"
  for size in "${history_sizes[@]}"; do
    for t in "${history_targets[@]}"; do
      progress "history $size $t: open loop $HISTORY_RATE/s for $HISTORY_DURATION, closed loop $HISTORY_CONNECTIONS sessions for $HISTORY_CLOSED_DURATION"
      raw="$OUT/raw/history-$size-$t.txt"
      "${on_load_cpu[@]}" "$bt" history -size "$size" -growth "$HISTORY_GROWTH" -sessions "$HISTORY_SESSIONS" \
        -rate "$HISTORY_RATE" -duration "$HISTORY_DURATION" -warmup "$HISTORY_WARMUP" \
        -connections "$HISTORY_CONNECTIONS" -closed-duration "$HISTORY_CLOSED_DURATION" \
        -headers "$tmp/bodies/agent50k.headers" "${target_url[$h_fleet/$t]}${wl_path[agent50k]}" >"$raw" 2>&1 ||
        { cat "$raw" >&2; die "benchtool history failed on $size → $t"; }
      res=$(grep '^HISTORY ' "$raw") || die "no HISTORY line in $raw"
      row=("$size" "$t")
      for f in bytes turns rate sent errors p50_us p90_us p99_us p999_us max_us cold_p50_us connections rps closed_errors closed_p50_us closed_p99_us; do
        v=$(field "$f" <<<"$res")
        row+=("${v:--}")
      done
      (IFS=$'\t'; printf '%s\n' "${row[*]}") >>"$history"
      log "$(printf '%-5s %-14s %7s B: open loop p50 %6s µs  p99 %7s µs  cold p50 %6s µs  errors %s;  closed loop %s req/s  errors %s' \
        "$size" "$t" "$(field bytes <<<"$res")" "$(field p50_us <<<"$res")" "$(field p99_us <<<"$res")" \
        "$(field cold_p50_us <<<"$res")" "$(field errors <<<"$res")" "$(field rps <<<"$res")" "$(field closed_errors <<<"$res")")"
    done
  done
fi

# --- charts -------------------------------------------------------------------------

# The open-loop percentiles (and the per-event delay) as an SVG; the added
# latency by history size with the throughput ÷ nginx as another. The
# report links them by the names they get next to RESULTS.
latency_svg=$OUT/latency.svg summary_svg=$OUT/summary.svg
latency_name=$STAMP-latency.svg summary_name=$STAMP.svg
if [ "$OPENLOOP" != 0 ]; then
  chart_args=()
  if [ "$EVENTDELAY" != 0 ]; then chart_args=(-eventdelay "$eventdelay"); fi
  "$bt" chart -o "$latency_svg" -title "shepherd bench: latency percentiles per target ($started, $(nproc) CPUs)" \
    "${chart_args[@]}" "$openloop"
  log "chart written to $latency_svg"
fi
if [ "$HISTORY" != 0 ]; then
  "$bt" history-chart -o "$summary_svg" -results "$results" \
    -title "shepherd bench: added latency by history size, and throughput ($started, $(nproc) CPUs)" "$history"
  log "chart written to $summary_svg"
fi

# --- idle streams: memory per open stream ---------------------------------------

# Each run starts its own mock (holding every stream IDLE_MOCK_HOLD after its
# first event, a ping every IDLE_MOCK_PING) and its own shepherd in front of
# it, on fresh ports, so that no run inherits another's heap or sockets; the
# shepherd's RSS is read before the streams open and while all are open.
# Every step is bounded: the ports wait (10 s), benchtool idle (IDLE_TIMEOUT +
# IDLE_SETTLE), the stop (5 s, then SIGKILL).
idle=$OUT/idle.tsv

# forget_pid PID: drop PID from the cleanup list (it has been stopped).
forget_pid() {
  local p keep=()
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=("${keep[@]}")
}

# stop_pid PID: TERM, up to 5 s, then KILL.
stop_pid() {
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  forget_pid "$1"
}

# wait_port PORT: until something accepts on 127.0.0.1:PORT (10 s at most).
wait_port() {
  local i
  for i in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# idle_run TARGET N: one idle run; its idle.tsv line on stdout.
idle_run() {
  local t=$1 n=$2 mp sp ap mpid spid raw="$OUT/raw/idle-$1-$2.txt" res v row hooks_env hard
  # The proxy needs two files per stream (client and upstream) and dies when
  # accept runs out of them: above what the hard limit allows (it cannot be
  # raised without CAP_SYS_RESOURCE), measure as many streams as fit.
  hard=$(ulimit -Hn)
  if [ "$hard" != unlimited ] && ((2 * n + 100 > hard)); then
    n=$(((hard - 100) / 2))
    log "$t: $2 streams need $((2 * $2 + 100)) files in the proxy, more than the hard limit $hard: measuring $n"
  fi
  read -r mp sp ap <<<"$("$bt" ports 3 | tr '\n' ' ')"
  read -ra mock_args <"$tmp/bodies/mock-default.args"
  "${on_load_cpu[@]}" "$tmp/mockprovider" -addr "127.0.0.1:$mp" -no-record -ttft 0 "${mock_args[@]}" \
    -hold "$IDLE_MOCK_HOLD" -ping "$IDLE_MOCK_PING" >"$OUT/idle-mock-$t-$n.log" 2>&1 &
  mpid=$!
  pids+=("$mpid")
  case $t in
    shepherd) hooks_env=("${hooks_off[@]}") ;;
    shepherd-hooks) hooks_env=("${hooks_on[@]}" SHEPHERD_STATE_BACKEND=memory) ;;
    *) die "unknown idle target $t (shepherd, shepherd-hooks)" ;;
  esac
  # max_conns_per_upstream above N: the default (1024) would queue the rest.
  start_shepherd "idle-$t-$n" "$sp" "$ap" "http://127.0.0.1:$mp" "${hooks_env[@]}" \
    SHEPHERD_LIMITS_MAX_CONNS_PER_UPSTREAM=$((n + 100))
  spid=$started_pid
  row=("$t" "$n")
  if wait_port "$mp" && wait_port "$sp" &&
    "${on_load_cpu[@]}" "$bt" idle -n "$n" -hold "$IDLE_SETTLE" -timeout "$IDLE_TIMEOUT" \
      -body "$tmp/bodies/stream.json" -pid "$spid" "http://127.0.0.1:$sp" >"$raw" 2>&1 &&
    res=$(grep '^IDLE ' "$raw"); then
    for v in open failed rss_before_kb rss_open_kb per_stream_kb; do row+=("$(field "$v" <<<"$res")"); done
    log "$(printf '%-14s %6s idle streams: %s open, %s failed, RSS %s → %s kB, %s kB/stream' "$t" "$n" \
      "${row[2]}" "${row[3]}" "${row[4]}" "${row[5]}" "${row[6]}")"
    grep -v '^IDLE ' "$raw" | sed 's/^/   /' >&2 || true
  else
    log "$t $n idle streams: failed (see $raw, $OUT/idle-$t-$n.log)"
    [ -f "$raw" ] && tail -n 5 "$raw" >&2
    row+=(0 "$n" - - -)
  fi
  stop_pid "$spid"
  stop_pid "$mpid"
  (IFS=$'\t'; printf '%s\n' "${row[*]}")
}

if [ "$IDLE" != 0 ]; then
  printf 'target\tstreams\topen\tfailed\trss_before_kb\trss_open_kb\tper_stream_kb\n' >"$idle"
  log "idle streams: ${idle_targets[*]} × N in ${idle_streams[*]} (file limit $(ulimit -Hn) per process; a proxy needs 2 per stream)"
  for n in "${idle_streams[@]}"; do
    for t in "${idle_targets[@]}"; do
      progress "idle streams $t: $n streams"
      idle_run "$t" "$n" >>"$idle"
    done
  done
fi

# --- report ------------------------------------------------------------------

commit=$(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(cd "$root" && git status --porcelain -- . ':!bench' 2>/dev/null | head -1)" ]; then
  commit="$commit + uncommitted changes outside bench/"
fi
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cpu_mhz=$(sed -n 's/^cpu MHz[[:space:]]*: \([0-9]*\).*/\1/p' /proc/cpuinfo | head -1)
report=$OUT/latest.md
smoke_note=""
if [ "$SMOKE" = 1 ]; then
  smoke_note="Smoke run (\`make -C bench smoke\`: short runs, one round): it shows that every phase works, not the reference numbers."
fi
{
  echo "# Load comparison: direct vs nginx vs shepherd"
  echo
  echo "Generated by \`bench/load.sh\` on $started (commit $commit)."
  if [ -n "$smoke_note" ]; then echo; echo "**$smoke_note**"; fi
  echo
  echo "- Machine: $(nproc) CPUs ($cpu_model, $cpu_mhz MHz), $(uname -sr), $("$GO" env GOVERSION), load average at start $loadavg"
  echo "- Tools: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), $("$NGINX" -v 2>&1 | sed 's/.*: //') (worker_processes $NGINX_WORKERS)"
  if [ -n "$PROXY_CPU" ]; then
    echo "- Pinning (taskset): proxy under test (nginx or shepherd) on CPU $PROXY_CPU; wrk and the mock on CPU $LOAD_CPU"
  else
    echo "- Pinning: none (taskset missing, fewer than 2 CPUs, or PIN=0)"
  fi
  echo "- wrk: $THREADS thread(s), $CONNECTIONS connections, $DURATION per run, $ROUNDS round(s) (medians shown), $WARMUP warm-up; latency is the whole response (for streams: to the last event)"
  "$bt" describe "${workloads[@]}"
  fleet_desc=()
  for f in "${fleets[@]}"; do
    ws=()
    for wl in "${workloads[@]}"; do
      if [ "${wl_mock[$wl]}" = "$f" ]; then ws+=("$wl"); fi
    done
    if [ "$f" = "${wl_mock[stamped]}" ] && [ "$EVENTDELAY" != 0 ]; then ws+=("per-event delay"); fi
    fleet_desc+=("$f (\`$(cat "$tmp/bodies/mock-$f.args")\`: ${ws[*]})")
  done
  if has_target shepherd-redis; then
    echo "- shepherd-redis: state.redis.pinned_sessions=$([ "$REDIS_PINNED" = 1 ] && echo "true (one round trip per turn)" || echo "false (two round trips per turn)")"
  fi
  echo "- Mocks: one process per reply shape, each with its own nginx server block and shepherd processes in front (all targets of a workload in front of the same mock): $(IFS=';'; echo "${fleet_desc[*]}" | sed 's/;/; /g')"
  echo
  "$bt" report -noisy "$NOISE_MAX" "$results"
  if [ "$OPENLOOP" != 0 ]; then
    echo
    echo "## Open loop: added latency at a fixed rate"
    echo
    echo "benchtool openloop: POST requests at a fixed rate ($OPENLOOP_RATE/s; streams $OPENLOOP_STREAM_RATE/s), each on its own goroutine over a shared keep-alive pool, $OPENLOOP_DURATION per target after $OPENLOOP_WARMUP warm-up, one run per target (same pinning as wrk). Latency is measured from each request's *scheduled* time (coordinated omission counted) to the end of the reply; exact percentiles of all samples. \"added\" is target − direct in µs; TTFB is to the first body byte; event gap is the time between consecutive SSE events as the client reads them. Absolute latencies include the generator's own lateness in sending (Go timers sleep in whole milliseconds below 1 ms; \`lag_p50_us\` in \`bench/out/raw/*-openloop.txt\`), common to all targets: read the added columns."
    echo
    "$bt" openloop-report "$openloop"
    echo
    echo "![Open-loop latency percentiles per target]($latency_name)"

  fi
  if [ "$EVENTDELAY" != 0 ]; then
    echo
    echo "## Per-event forwarding delay"
    echo
    echo "benchtool openloop -stamped: $EVENTDELAY_RATE streams/s for $EVENTDELAY_DURATION per target after $EVENTDELAY_WARMUP warm-up, the small stream request to a mock that sends $(workload_events stamped) events $(sed 's/.*-delay \([^ ]*\).*/\1/' "$tmp/bodies/mock-stamped.args") apart and writes into each text delta the time it hands that event to its connection (Unix ns). For every text delta the client records the time it has read the event minus the stamped time: the one-way delay of that event, mock → (proxy →) client, on one clock. direct is the floor (the mock's write, the loopback, the client's read); \"added\" is target − direct, what the proxy adds to each event. Target (issue 6): each event forwarded within 100 µs (p99), i.e. added p99 ≤ 100."
    echo
    "$bt" eventdelay-report "$eventdelay"
  fi
  if [ "$HISTORY" != 0 ]; then
    echo
    echo "## History size: added latency and throughput as the history grows"
    echo
    echo "benchtool history: agent sessions that resend their whole history every turn. A session's first request is the non-streaming agent request grown to the size (its system prompt, tools and task, then tool round trips of ~1.1 KB); each of its next $HISTORY_GROWTH requests is the previous body plus one round trip (the messages so far byte for byte), then a new session starts, as another agent: sessions share the system prompt and tools and differ from the first message on (its task is tagged with the agent), each with a session id of its own in its metadata, as Claude Code sessions have. Open loop: $HISTORY_RATE requests/s for $HISTORY_DURATION after $HISTORY_WARMUP warm-up, to $HISTORY_SESSIONS sessions in turn, each request sent once its session's previous reply is in (as an agent does), latency from its scheduled time. A session's first request, whose history the proxy has not seen, is kept out of the percentiles (cold p50). Closed loop: $HISTORY_CONNECTIONS sessions sending back to back for $HISTORY_CLOSED_DURATION after $HISTORY_WARMUP warm-up; req/s counts every completed request, first ones included. Same pinning as wrk. \"added\" is target − direct in µs, \"vs nginx\" target − nginx. Target (issue 19): at 1 MB, shepherd's added p50 within 150 µs of nginx's."
    echo
    "$bt" history-report "$history"
    echo
    echo "![Added p50 by history size, and throughput relative to nginx]($summary_name)"
  fi
  if [ "$IDLE" != 0 ]; then
    echo
    echo "## Idle streams: memory per open stream"
    echo
    echo "benchtool idle: N concurrent stream requests (the stream workload, one X-Session-Id each) to a fresh shepherd in front of a fresh mock that holds every stream open after its first event, with a ping every $IDLE_MOCK_PING. RSS (VmRSS) of the shepherd process before the streams open and, once all have their first event, the peak over $IDLE_SETTLE; KB per stream = (RSS open − RSS before) ÷ open streams. Target: ≤ 25 KB per stream at 10k streams. Each process may open $(ulimit -Hn) files (hard limit) and a proxy needs two per stream (client and upstream), so a larger N is lowered to what fits (the streams column)."
    echo
    "$bt" idle-report "$idle"
  fi
} >"$report"

cat "$report"
if [ -n "$RESULTS" ]; then
  rdir=$(dirname "$RESULTS")
  mkdir -p "$rdir"
  cp "$report" "$RESULTS"
  cp "$report" "$rdir/$STAMP.md"
  if [ -f "$latency_svg" ]; then cp "$latency_svg" "$rdir/$latency_name" && cp "$latency_svg" "$rdir/latency.svg"; fi
  if [ -f "$summary_svg" ]; then cp "$summary_svg" "$rdir/$summary_name" && cp "$summary_svg" "$rdir/latest.svg"; fi
  log "report written to $rdir/$STAMP.md and $RESULTS, charts to $rdir/$summary_name and $rdir/$latency_name; raw outputs in $OUT/raw"
else
  log "report in $OUT/latest.md, charts $summary_svg and $latency_svg (RESULTS empty: not saved)"
fi

# The README's performance table, from the history phase (and the
# saturation runs).
if [ "$README" = auto ]; then
  if [ -n "$RESULTS" ]; then README=1; else README=0; fi
fi
if [ "$README" = 1 ] && [ "$HISTORY" != 0 ]; then
  rdir=$(cd "$(dirname "${RESULTS:-.}")" 2>/dev/null && pwd || true)
  report_ref="$rdir/$STAMP.md"
  if [[ $rdir == "$root"/* ]]; then report_ref="[${rdir#"$root"/}/$STAMP.md](${rdir#"$root"/}/$STAMP.md)"; fi
  note="From \`make bench\` on $started, commit $commit, $(nproc) CPUs ($cpu_model), load average at start $loadavg; report: $report_ref."
  if [ -z "$RESULTS" ]; then note="From \`bench/load.sh\` on $started, commit $commit, $(nproc) CPUs ($cpu_model), load average at start $loadavg; report not saved."; fi
  if [ -n "$smoke_note" ]; then note="**$smoke_note** $note"; fi
  "$bt" readme -history "$history" -results "$results" -note "$note" "$root/README.md"
  log "README.md performance table rewritten"
fi

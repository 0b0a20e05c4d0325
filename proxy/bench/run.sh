#!/usr/bin/env bash
# Proxy benchmark: requests/s and latency of a small upstream reached directly,
# through nginx (Debian's nginx-light, proxy_pass with a limit_req that never
# triggers), through HAProxy (Debian's haproxy, nbthread 2, haproxy.cfg.tmpl),
# through the real daemon (`sluice run`, every request admitted by
# the gate: a per-client token bucket and a concurrency limit that never
# trigger) on its own HTTP/1.1 server (sluice) and on net/http's
# (sluice-nethttp: server.http1 = "net/http"), through sluice's proxy package
# alone (no gate) on net/http's server (proxy) and on its own (proxy-own), and
# through a tuned httputil.ReverseProxy, all on this machine, measured with wrk.
#
#   proxy/bench/run.sh                 # 3 interleaved rounds of wrk -t2 -c64 -d10s
#   ROUNDS=5 DURATION=10s proxy/bench/run.sh
#
# Two parts:
#  1. Saturation: wrk -t$THREADS -c$CONNS -d$DURATION against each target, rounds
#     interleaved (direct, nginx, haproxy, sluice, proxy, httputil, direct, ...) so that a noisy
#     neighbour hits all alike; the median round is reported, with each proxy's
#     CPU time per request (from /proc), which noise moves far less than rates.
#  2. Half rate: each target gets about half of nginx's median rate (wrk with a
#     random per-connection delay, delay.lua, so connections do not fire in
#     step); the added p50 is the target's p50 minus the direct p50.
#
#  3. Refusing: sluice with a group whose rate refuses every request (429, the
#     gate's work on: the client's key, its token bucket, the concurrency
#     stage behind it) against nginx's limit_req refusing the same load (429,
#     its refusals not logged, as sluice logs none), rounds interleaved; the
#     median round's refusals/s and CPU time per refusal, and the share of
#     answers that were refusals.
#
# PARTS="saturation half refuse" (the default) picks the parts to run.
#
# CANDIDATES="fasthttp fhclient gnet" adds the transports weighed against sluice's
# own (proxy/bench/candidates, a module of its own): fasthttp on both sides, and
# net/http's server with fasthttp's client; in the refuse part, each of them (and
# gnet's event loop) answering every request 429 with no limiter behind.
#
# BASELINE=/path/to/another/checkout adds that tree's daemon and proxy package as
# the targets "sluice-base" and "proxy-base" (and "sluice-base-refuse" in the
# refuse part), in the same interleaved rounds: a change measured side by side
# with what it changes. BASELINE=/path/to/a/sluice/binary adds that daemon alone
# (sluice-base and sluice-base-refuse; no proxy-base), so that a build of any
# commit can stand beside this tree's without a checkout of it.
#
# TARGETS="direct nginx sluice" runs only these of the saturation and half
# parts' own targets (the baseline's and the candidates' come on top; nginx is
# needed by the half part, haproxy only for its column); REFUSE_TARGETS the
# same for the refuse part (nginx-refuse sluice-refuse sluice-nethttp-refuse).
#
# The "sluice" target is `sluice run -config $dir/sluice.toml` built from this
# tree (the config is written below). To benchmark another build or config, set
# SLUICE_CMD: it is run with SLUICE_ADDR (where to listen) and UPSTREAM_ADDR
# (host:port) exported and must serve on SLUICE_ADDR until killed. GOMAXPROCS,
# GOGC and the like pass through the environment to every Go target.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
HALF_CONNS=${HALF_CONNS:-32}
PORT_BASE=${PORT_BASE:-19000}

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=$(mktemp -d /tmp/sluice-proxy-bench.XXXXXX)
export UPSTREAM_ADDR=127.0.0.1:$PORT_BASE
export SLUICE_ADDR=127.0.0.1:$((PORT_BASE + 81))
NGINX_ADDR=127.0.0.1:$((PORT_BASE + 80))
HTTPUTIL_ADDR=127.0.0.1:$((PORT_BASE + 82))
PROXY_ADDR=127.0.0.1:$((PORT_BASE + 83))
HAPROXY_ADDR=127.0.0.1:$((PORT_BASE + 84))
NGINX_REFUSE_ADDR=127.0.0.1:$((PORT_BASE + 70))
SLUICE_REFUSE_ADDR=127.0.0.1:$((PORT_BASE + 71))
NETHTTP_ADDR=127.0.0.1:$((PORT_BASE + 72))
NETHTTP_REFUSE_ADDR=127.0.0.1:$((PORT_BASE + 73))
PROXY_OWN_ADDR=127.0.0.1:$((PORT_BASE + 74))
PARTS=${PARTS:-saturation half refuse}
want() { [[ " $PARTS " == *" $1 "* ]]; }
if want half && ! want saturation; then
  echo "run.sh: the half part needs the saturation part (half of nginx's rate)" >&2
  exit 2
fi
CANDIDATES=${CANDIDATES:-}
BASELINE=${BASELINE:-}

pids=()
cleanup() {
  [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

for tool in wrk nginx haproxy go curl; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is not installed" >&2; exit 1; }
done

(cd "$repo" && go build -o "$dir/upstream" ./proxy/bench/upstream && go build -o "$dir/front" ./proxy/bench/front &&
  go build -o "$dir/sluice" ./cmd/sluice)
if [ -n "$CANDIDATES" ]; then
  (cd "$here/candidates" && go build -o "$dir/candidates" .)
fi
if [ -d "$BASELINE" ]; then
  (cd "$BASELINE" && go build -o "$dir/sluice-base" ./cmd/sluice && go build -o "$dir/front-base" ./proxy/bench/front)
elif [ -n "$BASELINE" ]; then
  [ -x "$BASELINE" ] || { echo "run.sh: BASELINE $BASELINE is neither a checkout nor an executable" >&2; exit 2; }
  cp "$BASELINE" "$dir/sluice-base"
fi

# The daemon's config: like nginx's limit_req, a per-client-address token
# bucket that never runs dry, and a fixed concurrency limit never reached, so
# every request pays for admission (classification, the key's bucket, a slot,
# the outcome and latency recorded) and none is refused. wrk's address is a
# trusted proxy, so that the client address is looked for in X-Forwarded-For
# (key "ip") and the forwarding fields are extended, the costlier of the two
# ways; paths are normalised, as always. The control loop runs as usual; the
# CPU and memory targets are off, so that a busy machine sheds nothing.
cat >"$dir/sluice.toml" <<EOF
[server]
listen = "$SLUICE_ADDR"
trusted_proxies = ["127.0.0.1"]
[upstream]
url = "http://$UPSTREAM_ADDR"
[admin]
listen = ""
[[group]]
name = "bench"
key  = "ip"
  [group.rate]
  rate = 1e9
  [group.concurrency]
  law   = "fixed"
  limit = 100000
  [group.targets]
  cpu    = 0.0
  memory = 0.0
EOF
"$dir/sluice" check -q "$dir/sluice.toml"
# The refuse part's: the same, but a rate no client stays under (one request
# per key passes, then one every 1,000 s), so that every request is refused at
# the rate stage, as nginx's limit_req zone "refuse" does.
sed -e "0,/^listen = /s|^listen = .*|listen = \"$SLUICE_REFUSE_ADDR\"|" -e 's|^  rate = 1e9$|  rate  = 0.001\n  burst = 1|' \
  "$dir/sluice.toml" >"$dir/sluice-refuse.toml"
grep -q '^  rate  = 0.001' "$dir/sluice-refuse.toml" || { echo "run.sh: the refuse config was not written" >&2; exit 1; }
"$dir/sluice" check -q "$dir/sluice-refuse.toml"
# The same two on net/http's server (server.http1 = "net/http", the escape
# hatch and what served HTTP/1.1 before the own server).
for c in sluice sluice-refuse; do
  a=$NETHTTP_ADDR
  [ "$c" = sluice-refuse ] && a=$NETHTTP_REFUSE_ADDR
  sed -e "0,/^listen = /s|^listen = .*|listen = \"$a\"\nhttp1 = \"net/http\"|" "$dir/$c.toml" >"$dir/${c/sluice/sluice-nethttp}.toml"
  "$dir/sluice" check -q "$dir/${c/sluice/sluice-nethttp}.toml"
done

"$dir/upstream" -listen "$UPSTREAM_ADDR" & pids+=($!)
if [ -n "${SLUICE_CMD:-}" ]; then
  bash -c "$SLUICE_CMD" & pids+=($!)
else
  "$dir/sluice" run -config "$dir/sluice.toml" -log-level warn & pids+=($!)
fi
sluice_pid=${pids[-1]}
"$dir/sluice" run -config "$dir/sluice-refuse.toml" -log-level warn & pids+=($!)
sluice_refuse_pid=${pids[-1]}
"$dir/front" -listen "$PROXY_ADDR" -upstream "http://$UPSTREAM_ADDR" & pids+=($!)
proxy_pid=${pids[-1]}
"$dir/front" -mode own -listen "$PROXY_OWN_ADDR" -upstream "http://$UPSTREAM_ADDR" & pids+=($!)
proxy_own_pid=${pids[-1]}
"$dir/sluice" run -config "$dir/sluice-nethttp.toml" -log-level warn & pids+=($!)
nethttp_pid=${pids[-1]}
"$dir/sluice" run -config "$dir/sluice-nethttp-refuse.toml" -log-level warn & pids+=($!)
nethttp_refuse_pid=${pids[-1]}
"$dir/front" -mode httputil -listen "$HTTPUTIL_ADDR" -upstream "http://$UPSTREAM_ADDR" & pids+=($!)
httputil_pid=${pids[-1]}
sed -e "s|@DIR@|$dir|g" -e "s|@LISTEN@|$NGINX_ADDR|g" -e "s|@REFUSE_LISTEN@|$NGINX_REFUSE_ADDR|g" -e "s|@UPSTREAM@|$UPSTREAM_ADDR|g" \
  "$here/nginx.conf.tmpl" >"$dir/nginx.conf"
nginx -c "$dir/nginx.conf" -p "$dir" -e "$dir/nginx-error.log"
sed -e "s|@LISTEN@|$HAPROXY_ADDR|g" -e "s|@UPSTREAM@|$UPSTREAM_ADDR|g" \
  "$here/haproxy.cfg.tmpl" >"$dir/haproxy.cfg"
haproxy -q -db -f "$dir/haproxy.cfg" & pids+=($!)
haproxy_pid=${pids[-1]}

declare -A addr=([direct]=$UPSTREAM_ADDR [nginx]=$NGINX_ADDR [haproxy]=$HAPROXY_ADDR [sluice]=$SLUICE_ADDR
  [sluice-nethttp]=$NETHTTP_ADDR [proxy]=$PROXY_ADDR [proxy-own]=$PROXY_OWN_ADDR [httputil]=$HTTPUTIL_ADDR)
declare -A cand_pid
targets=(direct nginx haproxy sluice sluice-nethttp proxy proxy-own httputil)
[ -n "${TARGETS:-}" ] && read -ra targets <<<"$TARGETS"
port=$((PORT_BASE + 85))
if [ -n "$BASELINE" ]; then
  addr[sluice-base]=127.0.0.1:$port
  # The same config, but for the keys a baseline from before them refuses.
  sed -e "0,/^listen = /s|^listen = .*|listen = \"${addr[sluice-base]}\"|" "$dir/sluice.toml" |
    if "$dir/sluice-base" check -q "$dir/sluice.toml" 2>/dev/null; then cat; else grep -v '^trusted_proxies = '; fi >"$dir/sluice-base.toml"
  "$dir/sluice-base" check -q "$dir/sluice-base.toml"
  "$dir/sluice-base" run -config "$dir/sluice-base.toml" -log-level warn & pids+=($!)
  cand_pid[sluice-base]=${pids[-1]}
  targets+=(sluice-base)
  if [ -d "$BASELINE" ]; then
    addr[proxy-base]=127.0.0.1:$((port + 1))
    "$dir/front-base" -listen "${addr[proxy-base]}" -upstream "http://$UPSTREAM_ADDR" & pids+=($!)
    cand_pid[proxy-base]=${pids[-1]}
    targets+=(proxy-base)
  fi
  addr[sluice-base-refuse]=127.0.0.1:$((port + 2))
  sed -e "0,/^listen = /s|^listen = .*|listen = \"${addr[sluice-base-refuse]}\"|" "$dir/sluice-refuse.toml" |
    if "$dir/sluice-base" check -q "$dir/sluice-refuse.toml" 2>/dev/null; then cat; else grep -v '^trusted_proxies = '; fi >"$dir/sluice-base-refuse.toml"
  "$dir/sluice-base" check -q "$dir/sluice-base-refuse.toml"
  "$dir/sluice-base" run -config "$dir/sluice-base-refuse.toml" -log-level warn & pids+=($!)
  cand_pid[sluice-base-refuse]=${pids[-1]}
  port=$((port + 3))
fi
for c in $CANDIDATES; do
  [ "$c" = gnet ] && continue # it refuses only (the refuse part)
  addr[$c]=127.0.0.1:$port
  "$dir/candidates" -mode "$c" -listen "${addr[$c]}" -upstream "http://$UPSTREAM_ADDR" & pids+=($!)
  cand_pid[$c]=${pids[-1]}
  targets+=("$c")
  port=$((port + 1))
done

for t in "${targets[@]}"; do
  a=${addr[$t]}
  for _ in $(seq 100); do
    curl -fsS -o /dev/null "http://$a/" 2>/dev/null && break
    sleep 0.1
  done
  curl -fsS -o /dev/null "http://$a/" || { echo "run.sh: nothing answers on $a" >&2; exit 1; }
done

# The refuse part's targets: each answers 429 to (nearly) every request.
addr[nginx-refuse]=$NGINX_REFUSE_ADDR
addr[sluice-refuse]=$SLUICE_REFUSE_ADDR
addr[sluice-nethttp-refuse]=$NETHTTP_REFUSE_ADDR
refuse_targets=(nginx-refuse sluice-refuse sluice-nethttp-refuse)
[ -n "${REFUSE_TARGETS:-}" ] && read -ra refuse_targets <<<"$REFUSE_TARGETS"
[ -n "$BASELINE" ] && refuse_targets+=(sluice-base-refuse)
for c in $CANDIDATES; do
  "$dir/candidates" -mode "$c" -refuse -listen "127.0.0.1:$port" -upstream "http://$UPSTREAM_ADDR" 2>/dev/null & pids+=($!)
  cand_pid[$c-refuse]=${pids[-1]}
  addr[$c-refuse]=127.0.0.1:$port
  refuse_targets+=("$c-refuse")
  port=$((port + 1))
done
if want refuse; then
  for t in "${refuse_targets[@]}"; do
    a=${addr[$t]}
    for _ in $(seq 100); do
      [ "$(curl -sS -o /dev/null -w '%{http_code}' "http://$a/" 2>/dev/null)" = 429 ] && break
      sleep 0.1
    done
    [ "$(curl -sS -o /dev/null -w '%{http_code}' "http://$a/")" = 429 ] || { echo "run.sh: $t on $a does not refuse with 429" >&2; exit 1; }
  done
fi

# cpu_ticks PID... prints the user+system clock ticks of the processes and of
# their children (nginx's workers).
cpu_ticks() {
  local total=0 p c
  for p in "$@"; do
    for c in "$p" $(pgrep -P "$p" || true); do
      [ -r "/proc/$c/stat" ] && total=$((total + $(awk '{print $14 + $15}' "/proc/$c/stat")))
    done
  done
  echo "$total"
}
pids_of() {
  case $1 in
  nginx | nginx-refuse) cat "$dir/nginx.pid" ;;
  sluice-refuse) echo "$sluice_refuse_pid" ;;
  sluice-nethttp) echo "$nethttp_pid" ;;
  sluice-nethttp-refuse) echo "$nethttp_refuse_pid" ;;
  proxy-own) echo "$proxy_own_pid" ;;
  haproxy) echo "$haproxy_pid" ;;
  sluice) echo "$sluice_pid" ;;
  proxy) echo "$proxy_pid" ;;
  httputil) echo "$httputil_pid" ;;
  direct) echo "" ;;
  *) echo "${cand_pid[$1]}" ;;
  esac
}

# measure TARGET [wrk options...]: one wrk run; prints "rps p50_us p99_us
# cpu_us_per_req refused_share" (the share of answers that were not 2xx or 3xx).
measure() {
  local target=$1
  shift
  local p before after out
  p=$(pids_of "$target")
  before=$(cpu_ticks $p)
  out=$(wrk "$@" --latency "http://${addr[$target]}/")
  after=$(cpu_ticks $p)
  echo "$out" | awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" -v target="$target" '
    function us(v) {
      if (v ~ /us$/) return v + 0
      if (v ~ /ms$/) return v * 1000
      if (v ~ /s$/) return v * 1000000
      return v
    }
    /^ +50%/ { p50 = us($2) }
    /^ +99%/ { p99 = us($2) }
    /^Requests\/sec/ { rps = $2 }
    /requests in/ { n = $1 }
    /Non-2xx or 3xx responses:/ { bad = $NF }
    END {
      cpu = (target == "direct" || n == 0) ? "-" : sprintf("%.1f", ticks / hz * 1e6 / n)
      printf "%.0f %.0f %.0f %s %.4f\n", rps, p50, p99, cpu, n == 0 ? 0 : bad / n
    }'
}


if want saturation; then
echo "# warming up" >&2
for t in "${targets[@]}"; do wrk -t"$THREADS" -c"$CONNS" -d2s "http://${addr[$t]}/" >/dev/null; done

declare -A res
for r in $(seq "$ROUNDS"); do
  for t in "${targets[@]}"; do
    res[$t,$r]=$(measure "$t" -t"$THREADS" -c"$CONNS" -d"$DURATION")
    echo "# round $r $t: ${res[$t,$r]}" >&2
  done
done

# The median round of a target, by requests/s.
median_row() {
  local t=$1 r
  for r in $(seq "$ROUNDS"); do echo "${res[$t,$r]}"; done | sort -n | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)'
}

echo
echo "## Saturation: wrk -t$THREADS -c$CONNS -d$DURATION, median of $ROUNDS interleaved rounds ($(nproc) cores, $(date -u +%F))"
echo
echo "| target | requests/s | p50 | p99 | vs nginx | vs haproxy | proxy CPU per request |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
nginx_rps=$(median_row nginx | cut -d' ' -f1)
haproxy_rps=$([[ " ${targets[*]} " == *" haproxy "* ]] && median_row haproxy | cut -d' ' -f1 || echo 0)
for t in "${targets[@]}"; do
  read -r rps p50 p99 cpu _ <<<"$(median_row "$t")"
  ratio=$(awk -v a="$rps" -v b="$nginx_rps" 'BEGIN {printf "%.2f×", a / b}')
  hratio=$(awk -v a="$rps" -v b="$haproxy_rps" 'BEGIN {if (b == 0) print "-"; else printf "%.2f×", a / b}')
  cpu_col=$([ "$cpu" = "-" ] && echo "-" || echo "${cpu} µs")
  echo "| $t | $rps | ${p50} µs | ${p99} µs | $ratio | $hratio | $cpu_col |"
done
echo
echo "All rounds (requests/s): $(for t in "${targets[@]}"; do printf '%s:' "$t"; for r in $(seq "$ROUNDS"); do printf ' %s' "$(cut -d' ' -f1 <<<"${res[$t,$r]}")"; done; printf '; '; done)"

fi

if want half; then
half=$((nginx_rps / 2))
delay=$(awk -v c="$HALF_CONNS" -v r="$half" 'BEGIN {d = c * 1000 / r - 0.3; if (d < 1) d = 1; printf "%d", d + 0.5}')
declare -A half_res
for r in $(seq "$ROUNDS"); do
  for t in "${targets[@]}"; do
    half_res[$t,$r]=$(WRK_DELAY_MS=$delay measure "$t" -t"$THREADS" -c"$HALF_CONNS" -d"$DURATION" -s "$here/delay.lua")
    echo "# half-rate round $r $t: ${half_res[$t,$r]}" >&2
  done
done
# The median round of a target, by p50.
half_median() {
  local t=$1 r
  for r in $(seq "$ROUNDS"); do echo "${half_res[$t,$r]}"; done | sort -n -k2 | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)'
}

echo
echo "## Half of nginx's rate: about $half requests/s offered (wrk -t$THREADS -c$HALF_CONNS -d$DURATION -s delay.lua, mean delay ${delay} ms per connection), median of $ROUNDS interleaved rounds by p50"
echo
echo "| target | requests/s | p50 | p99 | added p50 over direct | proxy CPU per request |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
direct_p50=$(half_median direct | cut -d' ' -f2)
for t in "${targets[@]}"; do
  read -r rps p50 p99 cpu _ <<<"$(half_median "$t")"
  added=$([ "$t" = direct ] && echo "-" || echo "$((p50 - direct_p50)) µs")
  cpu_col=$([ "$cpu" = "-" ] && echo "-" || echo "${cpu} µs")
  echo "| $t | $rps | ${p50} µs | ${p99} µs | $added | $cpu_col |"
done
echo
echo "All rounds (p50 µs): $(for t in "${targets[@]}"; do printf '%s:' "$t"; for r in $(seq "$ROUNDS"); do printf ' %s' "$(cut -d' ' -f2 <<<"${half_res[$t,$r]}")"; done; printf '; '; done)"
fi

if want refuse; then
  echo "# warming up the refusers" >&2
  for t in "${refuse_targets[@]}"; do wrk -t"$THREADS" -c"$CONNS" -d2s "http://${addr[$t]}/" >/dev/null; done
  declare -A ref_res
  for r in $(seq "$ROUNDS"); do
    for t in "${refuse_targets[@]}"; do
      ref_res[$t,$r]=$(measure "$t" -t"$THREADS" -c"$CONNS" -d"$DURATION")
      echo "# refuse round $r $t: ${ref_res[$t,$r]}" >&2
    done
  done
  # The median round of a refusing target, by refusals/s.
  refuse_median() {
    local t=$1 r
    for r in $(seq "$ROUNDS"); do echo "${ref_res[$t,$r]}"; done | sort -n | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)'
  }
  echo
  echo "## Refusing every request: wrk -t$THREADS -c$CONNS -d$DURATION, median of $ROUNDS interleaved rounds"
  echo
  echo "| target | refusals/s | p50 | p99 | vs nginx limit_req | CPU per refusal | vs nginx | refused |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  read -r nginx_ref _ _ nginx_ref_cpu _ <<<"$(refuse_median nginx-refuse)"
  for t in "${refuse_targets[@]}"; do
    read -r rps p50 p99 cpu share <<<"$(refuse_median "$t")"
    ratio=$(awk -v a="$rps" -v b="$nginx_ref" 'BEGIN {printf "%.2f×", a / b}')
    cratio=$(awk -v a="$cpu" -v b="$nginx_ref_cpu" 'BEGIN {printf "%.2f×", a / b}')
    pct=$(awk -v s="$share" 'BEGIN {printf "%.2f %%", 100 * s}')
    echo "| $t | $rps | ${p50} µs | ${p99} µs | $ratio | ${cpu} µs | $cratio | $pct |"
  done
  echo
  echo "All rounds (refusals/s): $(for t in "${refuse_targets[@]}"; do printf '%s:' "$t"; for r in $(seq "$ROUNDS"); do printf ' %s' "$(cut -d' ' -f1 <<<"${ref_res[$t,$r]}")"; done; printf '; '; done)"
fi

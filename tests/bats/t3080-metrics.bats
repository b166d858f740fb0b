#!/usr/bin/env bats
# t3080 — /metrics of the brokers and of the control plane: accepted by
# promtool, every family with HELP and TYPE and its samples together, and the
# figures an operator alerts on (follower lag, under-replicated shards,
# shards by state, lease and heartbeat age, publish latency, bytes, disk
# free) following what the cluster does.

load cluster

setup_file() {
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
}

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  cluster_up 3
  run -0 "$CTL" stream create m --shards 2 --replicas 3
  wait_until 60 shard_is m/0 Active
  wait_until 60 shard_is m/1 Active
}

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 40 "$C"/*.log >&3 2>/dev/null || true; fi
}

pause() { kill -STOP "$(pid_of "$1")"; }
resume() { kill -CONT "$(pid_of "$1")"; }
leader_of_m0() { "$CTL" -o json shard describe m/0 | jget 'j["leader"] or ""'; }

# grouped TEXT — every sample's family has HELP and TYPE before it, and no
# family's samples are split by another family (promtool's own rule, checked
# here too so that a lenient promtool cannot hide it).
grouped() {
  python3 -c '
import re, sys
seen, current, helped, typed = set(), None, set(), {}
for n, line in enumerate(sys.stdin.read().splitlines(), 1):
    m = re.match(r"# (HELP|TYPE) (\S+) ?(.*)", line)
    if m:
        kind, name, rest = m.groups()
        if name != current and name in seen: sys.exit(f"line {n}: family {name} declared again")
        current = name; seen.add(name)
        (helped.add(name) if kind == "HELP" else typed.__setitem__(name, rest))
        continue
    name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
    family = re.sub(r"_(bucket|sum|count)$", "", name) if typed.get(re.sub(r"_(bucket|sum|count)$", "", name)) == "histogram" else name
    if family != current: sys.exit(f"line {n}: sample {name} outside its family (current: {current})")
    if family not in helped or family not in typed: sys.exit(f"line {n}: {family} has no HELP or TYPE")
'
}

@test "broker and control-plane /metrics pass promtool check metrics, with HELP, TYPE and grouped families; no token needed" {
  command -v promtool >/dev/null || fail "promtool is not installed (Debian package prometheus, scripts/deps.sh)"
  run -0 bash -c "seq 1 20 | '$CTL' produce m --shard 0"
  run -0 bash -c "seq 1 20 | '$CTL' produce m --shard 1"
  wait_until 20 metric_above cp 'felix_cp_shard_hwm{stream="m",shard="1"}' 19 # 20 records and the generation's start
  hwm=$(sample "$(cp_metrics)" 'felix_cp_shard_hwm{stream="m",shard="1"}')
  for n in 1 2 3; do
    wait_until 20 metric_is "$n" 'felix_log_end_offset{stream="m",shard="1"}' "$hwm"
    run -0 broker_metrics "$n"
    text=$output
    run -0 promtool check metrics <<<"$text"
    run -0 grouped <<<"$text"
  done
  run -0 curl -s -o /dev/null -w '%{http_code} %{content_type}' "$FELIX_CONTROL_PLANE/metrics" # no Authorization header
  assert_output "200 text/plain; version=0.0.4"
  run -0 cp_metrics
  text=$output
  run -0 promtool check metrics <<<"$text"
  run -0 grouped <<<"$text"
  grep -qx "felix_cp_build_info{version=\"$("$BROKER" --version | cut -d' ' -f2)\"} 1" <<<"$text" || fail "$text"
  # docs/metrics.md lists every family served, and the dashboard uses only those
  families=$( { cp_metrics; broker_metrics 1; } | sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' | sort -u)
  documented=$(grep -o '^| `felix_[a-z_]*`' "$REPO_ROOT/docs/metrics.md" | tr -d '|` ' | sort -u)
  [ "$families" = "$documented" ] || fail "served and documented differ: $(diff <(echo "$families") <(echo "$documented"))"
  used=$(python3 -c 'import json, re, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    for t in p["targets"]:
        for m in re.findall(r"felix_[a-z_]+", t["expr"]): print(re.sub(r"_(bucket|sum|count)$", "", m) if m.startswith("felix_publish_latency") else m)' \
    "$REPO_ROOT/docs/grafana/felix.json" | sort -u)
  unknown=$(comm -23 <(echo "$used") <(echo "$families"))
  [ -z "$unknown" ] || fail "the dashboard names families nothing serves: $unknown"
  # and it has a panel for each figure the issue asks operators be shown
  required=$(printf '%s\n' felix_follower_lag_records felix_cp_under_replicated_shards felix_cp_shards \
    felix_cp_broker_lease_age_seconds felix_publish_latency_seconds felix_received_bytes_total felix_sent_bytes_total \
    felix_disk_free_bytes felix_heartbeat_age_seconds felix_build_info | sort -u)
  missing=$(comm -13 <(echo "$used") <(echo "$required"))
  [ -z "$missing" ] || fail "the dashboard has no panel for: $missing"
  # the other endpoints still want the admin token
  run -0 curl -s -o /dev/null -w '%{http_code}' "$FELIX_CONTROL_PLANE/v1/cluster"
  assert_output 401
}

@test "the grouping check goes red on a family split in two and on a sample without TYPE" {
  run -1 grouped <<<$'# HELP a x\n# TYPE a gauge\na 1\n# HELP b y\n# TYPE b gauge\nb 1\na{k="v"} 2'
  run -1 grouped <<<$'c 1'
  run -0 grouped <<<$'# HELP h x\n# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_sum 0.1\nh_count 1'
}

@test "a broker's metrics: publish latency, bytes, disk free, heartbeat age, and each follower's lag on the leader" {
  L=$(leader_of_m0)
  n=${L#b}
  run -0 bash -c "for i in 1 2 3 4 5; do echo r\$i | '$CTL' produce m --shard 0 || exit 1; done"
  wait_until 20 metric_above "$n" 'felix_publish_latency_seconds_count' 4
  text=$(broker_metrics "$n")
  count=$(sample "$text" felix_publish_latency_seconds_count)
  [ "$(sample "$text" 'felix_publish_latency_seconds_bucket{le="+Inf"}')" = "$count" ] || fail "$text"
  python3 -c "import sys; sys.exit(0 if 0 < float('$(sample "$text" felix_publish_latency_seconds_sum)') < 10 * $count else 1)" ||
    fail "latency sum: $text"
  [ "$(sample "$text" felix_received_bytes_total)" -gt 0 ] && [ "$(sample "$text" felix_sent_bytes_total)" -gt 0 ] || fail "$text"
  # bytes in and out grow by what a client sends and is sent: 1,000 records
  # of 1,000 bytes in, and read back out, at least their payloads
  in0=$(sample "$text" felix_received_bytes_total) out0=$(sample "$text" felix_sent_bytes_total)
  python3 -c "import sys; [print('x' * 999) for _ in range(1000)]" | "$CTL" produce m --shard 0 >/dev/null
  "$CTL" consume m --shard 0 >/dev/null
  # /metrics is refreshed every 500 ms
  wait_until 10 metric_above "$n" felix_received_bytes_total $((in0 + 999999))
  wait_until 10 metric_above "$n" felix_sent_bytes_total $((out0 + 999999))
  text=$(broker_metrics "$n")
  din=$(($(sample "$text" felix_received_bytes_total) - in0)) dout=$(($(sample "$text" felix_sent_bytes_total) - out0))
  [ "$din" -ge 1000000 ] && [ "$din" -lt 2000000 ] || fail "bytes in grew by $din for 1,000,000 bytes of payload"
  [ "$dout" -ge 1000000 ] && [ "$dout" -lt 4000000 ] || fail "bytes out grew by $dout for 1,000,000 bytes read"
  # disk free is the data directory's file system, as df sees it (within 64 MiB: the test writes meanwhile)
  free=$(sample "$text" felix_disk_free_bytes)
  df_free=$(df -B1 --output=avail "$C/$L" | tail -1 | tr -d ' ')
  [ $((free > df_free ? free - df_free : df_free - free)) -lt $((64 << 20)) ] || fail "disk free $free, df says $df_free"
  [ "$(sample "$text" felix_disk_size_bytes)" -ge "$free" ]
  python3 -c "import sys; sys.exit(0 if float('$(sample "$text" felix_heartbeat_age_seconds)') < 5 else 1)" || fail "$text"
  # The age grows while the control plane answers nothing, and falls back
  # once it answers again.
  pause cp
  wait_until 20 metric_above "$n" felix_heartbeat_age_seconds 3 || { resume cp; fail "the age did not grow past 3 s"; }
  resume cp
  wait_until 30 metric_below "$n" felix_heartbeat_age_seconds 3
  # a paused follower falls behind by what was produced meanwhile, and catches up once resumed
  set -- $(for b in b1 b2 b3; do [ "$b" = "$L" ] || echo "$b"; done)
  F=$1 O=$2
  wait_until 20 metric_is "$n" "felix_follower_lag_records{stream=\"m\",shard=\"0\",follower=\"$F\"}" 0
  pause "$F"
  run -0 bash -c "seq 1 30 | '$CTL' produce m --shard 0"
  wait_until 20 metric_is "$n" "felix_follower_lag_records{stream=\"m\",shard=\"0\",follower=\"$F\"}" 30
  metric_is "$n" "felix_follower_lag_records{stream=\"m\",shard=\"0\",follower=\"$O\"}" 0 || fail "$(broker_metrics "$n")"
  metric_is "$n" "felix_follower_connected{stream=\"m\",shard=\"0\",follower=\"$F\"}" 1
  resume "$F"
  wait_until 30 metric_is "$n" "felix_follower_lag_records{stream=\"m\",shard=\"0\",follower=\"$F\"}" 0
  # followers name no followers
  for b in "$F" "$O"; do
    run -0 broker_metrics "${b#b}"
    refute_output --partial 'felix_follower_lag_records{stream="m",shard="0"'
  done
}

@test "the control plane's metrics: shards by state, under-replicated shards, lag, brokers and lease age follow a killed broker" {
  wait_until 20 metric_is cp 'felix_cp_shards{state="Active"}' 2
  metric_is cp 'felix_cp_under_replicated_shards' 0 || fail "$(cp_metrics)"
  metric_is cp 'felix_cp_brokers{state="alive"}' 3
  metric_is cp 'felix_cp_streams' 1
  metric_is cp 'felix_cp_shard_replicas{stream="m",shard="0"}' 3
  metric_is cp 'felix_cp_shard_caught_up_replicas{stream="m",shard="0"}' 3
  python3 -c "import sys; sys.exit(0 if float('$(sample "$(cp_metrics)" 'felix_cp_broker_lease_age_seconds{broker="b3"}')') < 5 else 1)"
  stop_process b3 KILL
  wait_until 30 metric_is cp 'felix_cp_brokers{state="lapsed"}' 1
  metric_above cp 'felix_cp_broker_lease_age_seconds{broker="b3"}' 5 || fail "$(cp_metrics)"
  wait_until 30 shard_is m/0 Active
  wait_until 30 shard_is m/1 Active
  run -0 bash -c "seq 1 10 | '$CTL' produce m --shard 0"
  run -0 bash -c "seq 1 10 | '$CTL' produce m --shard 1"
  wait_until 20 metric_is cp 'felix_cp_under_replicated_shards' 2
  metric_is cp 'felix_cp_shard_caught_up_replicas{stream="m",shard="0"}' 2
  metric_above cp 'felix_cp_shard_max_lag_records{stream="m",shard="0"}' 9 || fail "$(cp_metrics)"
  broker_start 3
  wait_until 60 metric_is cp 'felix_cp_under_replicated_shards' 0
  metric_is cp 'felix_cp_brokers{state="alive"}' 3
}

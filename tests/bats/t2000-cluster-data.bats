#!/usr/bin/env bats
# A control plane and three brokers on loopback: streams, the data path and
# the JSON shapes scripts rely on (DESIGN.md §5).

load cluster

setup_file() {
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
}

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  cluster_up 3
}

teardown() {
  [ -z "${watcher:-}" ] || kill "$watcher" 2>/dev/null || true # a failed --watch test leaves it running
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 40 "$C"/*.log >&3 2>/dev/null || true; fi
}

# The first thing a new user does: create a stream and produce to it at once.
# The shard is Fencing until its first leader starts; produce waits for it
# (--wait, default 10 s) instead of failing.
@test "produce and consume right after stream create wait for the leader instead of failing" {
  run -0 "$CTL" stream create fresh --shards 1 --replicas 3
  run -0 --separate-stderr bash -c "seq 1 50 | '$CTL' produce fresh"
  [[ $stderr == "produced 50 records to fresh/0 (offsets "* ]] || fail "$stderr"
  run -0 "$CTL" stream create fresh2 --shards 1 --replicas 3
  "$CTL" consume fresh2 --shard 0 --count 1 --follow --wait 30s >"$C/fresh2.out" 2>"$C/fresh2.err" &
  consumer=$!
  run -0 bash -c "echo first | '$CTL' produce fresh2"
  wait "$consumer" || fail "consume exited $?: $(cat "$C/fresh2.err")"
  [ "$(cat "$C/fresh2.out")" = first ]
  run -0 "$CTL" consume fresh --shard 0
  [ "${#lines[@]}" -eq 50 ]
}

# watch_start OUT ARGS... — felixctl ARGS --watch into OUT, until its first output.
watch_start() {
  local out=$1
  shift
  "$CTL" "$@" --watch >"$out" 2>"$C/watch.err" &
  watcher=$!
  wait_until 20 test -s "$out"
}
# watch_settle_and_stop — an observation window, not a wait for a condition:
# what is watched no longer changes, and the two or three refreshes in it
# must print nothing; then SIGINT ends the watch with exit 0.
watch_settle_and_stop() {
  sleep 5
  kill -INT "$watcher"
  wait "$watcher" || fail "--watch exited $?: $(cat "$C/watch.err")"
}

# --watch in a pipe: the output again only when it changed, one JSON
# document per line with -o json; SIGINT ends it with exit 0.
@test "cluster status --watch prints each changed state once and exits 0 on SIGINT" {
  watch_start "$C/watch.out" -o json cluster status
  run -0 "$CTL" stream create w --shards 1 --replicas 3
  wait_until 30 bash -c "tail -n 1 '$C/watch.out' | grep -q '\"shards_active\":1,'"
  watch_settle_and_stop
  run -0 python3 -c '
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
assert len(docs) >= 2, docs
assert all(a != b for a, b in zip(docs, docs[1:])), "an unchanged state was printed again"
assert docs[0]["streams_total"] == 0 and docs[-1]["streams_total"] == 1, docs
print(len(docs))' "$C/watch.out"
  run -0 timeout -s INT --preserve-status 3 "$CTL" broker list --watch
  assert_line --regexp '^# [0-9-]+T[0-9:]+Z$'
  assert_line --regexp '^ID +ALIVE'
}

# broker list --watch in a pipe: the lease ages differ on every refresh,
# and are not a change; a broker that stops is.
@test "broker list --watch prints again when a broker changes, not when only its lease age does" {
  watch_start "$C/brokers.json" -o json broker list
  sleep 5 # an observation window: three refreshes with nothing changed but the ages
  [ "$(wc -l <"$C/brokers.json")" -eq 1 ] || fail "printed again with only the ages changed: $(cat "$C/brokers.json")"
  stop_process b3 TERM
  wait_until 30 python3 -c '
import json, sys
last = json.loads(open(sys.argv[1]).read().splitlines()[-1])
sys.exit(0 if [b["alive"] for b in last if b["id"] == "b3"] == [False] else 1)' "$C/brokers.json"
  kill -INT "$watcher"
  wait "$watcher" || fail "--watch exited $?: $(cat "$C/watch.err")"
  run -0 python3 -c '
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
assert all(b["alive"] for b in docs[0]) and len(docs[0]) == 3, docs[0]
assert all("lease_age_ms" in b for d in docs for b in d), "the ages are still printed"
print(len(docs))' "$C/brokers.json"
}

# shard list --watch -o yaml in a pipe: a stream of YAML documents, each
# after a `---` line, printed again only when the list changed.
@test "shard list --watch -o yaml prints one document per changed list, each after ---" {
  watch_start "$C/watch.yaml" -o yaml shard list
  run -0 "$CTL" stream create y --shards 2 --replicas 3
  wait_until 30 bash -c "[ \$(grep -c 'state: Active' '$C/watch.yaml') -ge 2 ]"
  watch_settle_and_stop
  run -0 python3 -c '
import sys
text = open(sys.argv[1]).read()
assert text.startswith("---\n"), text[:200]
docs = text.split("---\n")[1:]
assert len(docs) >= 2, docs
assert all(a != b for a, b in zip(docs, docs[1:])), "an unchanged list was printed again"
assert "stream: y" not in docs[0] and docs[-1].count("state: Active") == 2, docs
print(len(docs))' "$C/watch.yaml"
}

# A shard with no leader yet: produce waits --wait for one, then gives up
# with exit 1 naming the state and the way to wait longer.
@test "produce --wait gives up on a shard that gets no leader, naming its state" {
  kill -STOP "$(pid_of b2)" "$(pid_of b3)" # no copy of a new R=3 stream can be made on them
  run -0 "$CTL" stream create nl --shards 1 --replicas 3
  run timeout 30 "$CTL" produce nl --shard 0 --wait 1500ms <<<"never-written"
  [ "$status" -eq 1 ] || fail "produce exited $status (1 expected): $output"
  [[ $output =~ "shard nl/0 has no leader (state "[A-Za-z]+") after waiting 1.5 s" ]] || fail "$output"
  [[ $output == *"--wait gives it longer"* ]] || fail "$output"
  # without --wait: the default, 10 s
  run timeout 40 "$CTL" produce nl --shard 0 <<<"never-written"
  kill -CONT "$(pid_of b2)" "$(pid_of b3)"
  [ "$status" -eq 1 ] || fail "produce exited $status (1 expected): $output"
  [[ $output =~ "shard nl/0 has no leader (state "[A-Za-z]+") after waiting 10.0 s" ]] || fail "default --wait: $output"
  wait_until 60 shard_is nl/0 Active
  run -0 "$CTL" produce nl --shard 0 --wait 30s <<<"written"
  run -0 "$CTL" consume nl --shard 0
  [ "$output" = written ] || fail "$output"
}

# --log-level and FELIX_LOG_LEVEL are honoured: warn drops info and debug
# lines; debug keeps the info ones (its own, "peer link reset" while a link
# connects, need a leader with an unreachable follower).
@test "a broker at --log-level warn writes no info line; at FELIX_LOG_LEVEL=debug it keeps them" {
  broker_start 4 --log-level warn
  FELIX_LOG_LEVEL=debug broker_start 5
  wait_until 60 brokers_alive 5
  stop_process b4 TERM
  stop_process b5 TERM
  run grep -c ' level=info \| level=debug ' "$C/b4.log"
  [ "$output" = 0 ] || fail "b4 at warn wrote $output info or debug lines: $(grep -m3 ' level=info \| level=debug ' "$C/b4.log")"
  grep -q ' level=info msg=starting ' "$C/b5.log" || fail "b5 at debug dropped its info lines"
}

# The control plane's --log-level too: at warn, a restart, the brokers'
# heartbeats and a stream's creation (info events each) write no info line.
@test "a control plane at --log-level warn writes no info line" {
  stop_process cp TERM
  from=$(($(wc -l <"$C/cp.log") + 1))
  cp_start --log-level warn
  wait_until 60 brokers_alive 3
  run -0 "$CTL" stream create quiet --shards 1 --replicas 3
  wait_until 60 shard_is quiet/0 Active
  stop_process cp TERM
  run -0 bash -c "tail -n +$from '$C/cp.log' | grep ' level=info \| level=debug ' || true"
  [ -z "$output" ] || fail "info or debug lines at warn: $output"
  grep -q ' level=info msg="control plane serving"' "$C/cp.log" || fail "the first start (at info) wrote no info line: nothing was checked"
}

# A line repeated five times a second (a leader's link to a dead follower
# retries every 200 ms, each failure a debug "peer link reset") is written
# once per FELIX_LOG_REPEAT_MS (10 s), the next time with repeated=N.
@test "a repeated log line is written once per 10 s with repeated=N, not five times a second" {
  local i
  for i in 1 2 3; do
    stop_process "b$i" TERM
    FELIX_LOG_LEVEL=debug broker_start "$i"
  done
  wait_until 60 brokers_alive 3
  run -0 "$CTL" stream create rep --shards 1 --replicas 3
  wait_until 60 shard_is rep/0 Active
  leader=$("$CTL" -o json shard describe rep/0 | jget 'j["leader"]')
  gone=$(for i in b1 b2 b3; do [ "$i" = "$leader" ] || echo "$i"; done | head -1)
  kill -9 "$(pid_of "$gone")"
  pat="msg=\"peer link reset\" shard=rep_0-[0-9a-f]* replica=$gone reason=\"connection refused\""
  wait_until 40 this_start_says "$leader" "$pat repeated=[0-9]"
  lines=$(awk '/ msg=starting /{n = 0} {l[n++] = $0} END {for (i = 0; i < n; i++) print l[i]}' "$C/$leader.log" | grep "$pat")
  [ "$(wc -l <<<"$lines")" -le 3 ] || fail "the line was written $(wc -l <<<"$lines") times: $lines"
  n=$(sed -n 's/.* repeated=\([0-9]*\)$/\1/p' <<<"$lines" | head -1)
  [ "$n" -ge 20 ] || fail "repeated=$n: fewer retries left out than 10 s at 200 ms make: $lines"
}

# A follower of the shard reads on through a failover: a fetch only reads,
# so one that fails because the leader died (or its successor is not
# serving yet) is tried again at the new leader, within --wait.
@test "consume --follow reads on through a leader failover, within --wait" {
  run -0 "$CTL" stream create f --shards 1 --replicas 3
  run -0 bash -c "seq 1 10 | '$CTL' produce f"
  "$CTL" consume f --shard 0 --follow --count 20 --wait 60s >"$C/follow.out" 2>"$C/follow.err" &
  consumer=$!
  wait_until 20 bash -c "[ \$(wc -l <'$C/follow.out') -eq 10 ]"
  leader=$("$CTL" -o json shard describe f/0 | jget 'j["leader"]')
  gen=$(shard_generation f/0)
  kill -9 "$(pid_of "$leader")"
  # a publish is not retried (its outcome may be unknown): produce once the new leader is named
  wait_until 60 generation_above f/0 "$gen"
  run -0 bash -c "seq 11 20 | '$CTL' produce f --wait 60s"
  wait "$consumer" || fail "consume exited $?: $(cat "$C/follow.err")"
  [ "$(tr '\n' ' ' <"$C/follow.out")" = "$(seq 1 20 | tr '\n' ' ')" ] || fail "$(cat "$C/follow.out")"
}

# -o yaml: the same document as -o json, in YAML a YAML 1.1 reader (PyYAML)
# reads back to equal values; a stream named "no" stays a string.
@test "-o yaml prints the JSON answer as YAML that reads back equal, strings that look like other types quoted" {
  run -0 "$CTL" stream create no --shards 2 --replicas 1
  wait_until 30 shard_is no/1 Active
  for cmd in "cluster status" "stream describe no" "shard describe no/1" "stream list"; do
    # shellcheck disable=SC2086
    json=$("$CTL" -o json $cmd)
    # shellcheck disable=SC2086
    yaml=$("$CTL" -o yaml $cmd)
    python3 -c '
import json, sys, yaml
j, y = json.loads(sys.argv[1]), yaml.safe_load(sys.argv[2])
assert j == y, (j, y)' "$json" "$yaml" || fail "$cmd: $yaml"
  done
  run -0 "$CTL" -o yaml stream describe no
  assert_line --regexp '^name: "no"$'
  run -2 --separate-stderr "$CTL" -o yaml consume no --shard 0
  [[ $stderr == *"-o yaml is not an output of 'consume'"* ]] || fail "$stderr"
}

@test "-o wide adds columns to broker list and shard list; other commands print their table" {
  run -0 "$CTL" stream create wd --shards 1 --replicas 1
  run -0 "$CTL" broker list
  refute_line --partial HTTP_ADDRESS
  run -0 "$CTL" -o wide broker list
  assert_line --regexp '^ID +ALIVE +ADDRESS +STORAGE_ID +INCARNATION +FSYNC_MODE +LEASE_AGE_MS +HTTP_ADDRESS +BOOT_ID +REGISTERED_AT +ROTATED$'
  assert_line --regexp "^b1 +yes +127\.0\.0\.1:$(broker_port 1) .* 127\.0\.0\.1:$((PORT_BASE + 21)) +[^ ]+ +[0-9-]+T[0-9:.]+Z +(yes|no)$"
  run -0 "$CTL" shard list
  refute_line --partial MAX_HWM
  run -0 "$CTL" -o wide shard list
  assert_line --regexp '^STREAM +SHARD +STATE .* REPLICAS +MAX_HWM +LEADER_COPY_ID +DETAIL$'
  run -0 "$CTL" -o wide cluster status
  assert_line --regexp '^Streams: +1$'
}

under_replicated() { [ "$("$CTL" -o json cluster status | jget 'j["shards_under_replicated"]')" = "$1" ]; }

# Under-replication at a glance: shard list's CAUGHT_UP (caught-up copies /
# replicas) and LAG (the largest lag in records), cluster status's count.
@test "shard list and cluster status show under-replicated shards and the largest lag" {
  run -0 "$CTL" stream create u --shards 1 --replicas 3
  run -0 bash -c "seq 1 20 | '$CTL' produce u"
  wait_until 30 under_replicated 0
  run -0 "$CTL" shard list
  assert_line --regexp "^u +0 +Active +[0-9]+ +b[0-9] +127\.0\.0\.1:[0-9]+ +2[0-9] +0 +3/3 +b"
  run -0 "$CTL" cluster status
  assert_line "Under-replicated:  0 shard(s) with fewer caught-up copies than replicas"
  leader=$("$CTL" -o json shard describe u/0 | jget 'j["leader"]')
  follower=$("$CTL" -o json shard describe u/0 | jget "[r['broker'] for r in j['replicas'] if r['broker'] != '$leader'][0]")
  kill -STOP "$(pid_of "$follower")"
  run -0 bash -c "seq 1 30 | '$CTL' produce u" # quorum: two of three
  wait_until 30 under_replicated 1
  run -0 "$CTL" -o json shard describe u/0
  [ "$(jget 'j["caught_up_replicas"]' <<<"$output")" = 2 ]
  [ "$(jget 'j["under_replicated"]' <<<"$output")" = true ]
  [ "$(jget 'j["max_lag_records"]' <<<"$output")" -ge 30 ]
  run -0 "$CTL" shard list
  assert_line --regexp "^u +0 +Active .* +(3[0-9]) +2/3 +b"
  run -0 "$CTL" cluster status
  assert_line "Under-replicated:  1 shard(s) with fewer caught-up copies than replicas"
  kill -CONT "$(pid_of "$follower")"
  wait_until 60 under_replicated 0
}

@test "three brokers register and broker list shows them alive with the fixed JSON fields" {
  run -0 "$CTL" -o json broker list
  assert_json
  [ "$(echo "$output" | jget 'len(j)')" = 3 ]
  run -0 bash -c "'$CTL' -o json broker list | python3 -c '
import json, sys
for b in json.load(sys.stdin):
    for k in (\"id\", \"storage_id\", \"incarnation\", \"address\", \"alive\", \"fsync_mode\"):
        assert k in b, k
    assert b[\"alive\"] is True and b[\"fsync_mode\"] == \"periodic\" and len(b[\"storage_id\"]) == 32
print(\"ok\")'"
  assert_output ok
  run -0 "$CTL" broker list
  assert_line --index 0 --regexp '^ID +ALIVE +ADDRESS'
}

@test "10,000 records produced through felixctl produce are read back identical by felixctl consume" {
  run -0 "$CTL" stream create orders --shards 2 --replicas 1
  wait_until 60 shard_is orders/0 Active
  python3 -c '
import random
random.seed(7)
for i in range(10000):
    print("record-%05d-%s" % (i, "x" * random.randint(0, 200)))' >"$BATS_TEST_TMPDIR/in.txt"
  run -0 bash -c "'$CTL' produce orders --shard 0 <'$BATS_TEST_TMPDIR/in.txt'"
  "$CTL" consume orders --shard 0 >"$BATS_TEST_TMPDIR/out.txt"
  cmp "$BATS_TEST_TMPDIR/in.txt" "$BATS_TEST_TMPDIR/out.txt"
  run -0 "$CTL" -o json consume orders --shard 0 --from 1 --count 2
  [ "${#lines[@]}" -eq 2 ]
  [ "$(echo "${lines[0]}" | jget 'j["offset"]')" = 1 ]
  [ "$(echo "${lines[0]}" | jget '__import__("base64").b64decode(j["payload_b64"]).decode()[:12]')" = record-00000 ]
  echo "${lines[1]}" | jget '__import__("re").fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", j["timestamp"]) is not None' | grep -qx true
}

@test "shard describe has the fixed JSON fields and the leader serves at generation 1" {
  run -0 "$CTL" stream create events --shards 3 --replicas 1
  wait_until 60 shard_is events/2 Active
  run -0 "$CTL" -o json shard describe events/2
  run -0 bash -c "'$CTL' -o json shard describe events/2 | python3 -c '
import json, sys
j = json.load(sys.stdin)
for k in (\"stream\", \"shard\", \"generation\", \"state\", \"leader\", \"hwm\", \"replicas\"):
    assert k in j, k
assert j[\"stream\"] == \"events\" and j[\"shard\"] == 2 and j[\"generation\"] == 1 and j[\"state\"] == \"Active\"
r = j[\"replicas\"][0]
for k in (\"broker\", \"storage_id\", \"registered_storage_id\", \"copy_id\", \"incarnation\", \"confirmed\", \"caught_up\", \"stranger\"):
    assert k in r, k
assert r[\"broker\"] == j[\"leader\"] and r[\"stranger\"] is False
print(\"ok\")'"
  assert_output ok
  run -0 "$CTL" -o json shard list --state Active
  [ "$(echo "$output" | jget 'len(j)')" = 3 ]
}

@test "stream create is refused with a reason when too few brokers are alive, and names must be valid" {
  run -4 "$CTL" stream create big --shards 1 --replicas 5
  assert_output --partial "replicas"
  run -2 "$CTL" stream create 'bad/name' --shards 1 --replicas 1
  run -0 "$CTL" stream create twice --shards 1 --replicas 1
  run -4 "$CTL" stream create twice --shards 1 --replicas 1
}

@test "requests without the right token get 401 and change nothing" {
  run -0 curl -s -o /dev/null -w '%{http_code}' "$FELIX_CONTROL_PLANE/v1/streams"
  assert_output 401
  run -0 curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer wrong" -X POST \
    -d '{"name":"sneaky","shard_count":1,"replication_factor":1}' "$FELIX_CONTROL_PLANE/v1/streams"
  assert_output 401
  run -0 curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$C/cp.db.broker-token")" \
    -X POST -d '{"name":"sneaky","shard_count":1,"replication_factor":1}' "$FELIX_CONTROL_PLANE/v1/streams"
  assert_output 401
  run -0 curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$C/cp.db.admin-token")" \
    -X POST -d '{"broker_id":"x"}' "$FELIX_CONTROL_PLANE/v1/broker/heartbeat"
  assert_output 401
  run -0 "$CTL" -o json stream list
  refute_output --partial sneaky
  run -1 "$CTL" --token-file "$C/cp.db.broker-token" stream list
}

@test "a publish of an empty record is refused and nothing of the batch is acknowledged" {
  run -0 "$CTL" stream create e --shards 1 --replicas 1
  wait_until 60 shard_is e/0 Active
  run -2 bash -c "printf 'a\n\nb\n' | '$CTL' produce e --shard 0"
  assert_output --partial "line 2"
  run -0 "$CTL" consume e --shard 0
  assert_output a
}

@test "/live, /ready and /metrics answer on the broker's HTTP port" {
  run -0 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((PORT_BASE + 21))/live"
  assert_output 200
  run -0 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((PORT_BASE + 21))/ready"
  assert_output 200
  run -0 curl -s "http://127.0.0.1:$((PORT_BASE + 21))/metrics"
  assert_output --partial "felix_appends_total"
}

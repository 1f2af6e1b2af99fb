#!/bin/bash
# 45-kube-auth-watch: the connection to the API server over time. Over TLS (the kubeconfig's
# certificate-authority-data) with an exec credential plugin shaped like `aws eks get-token`
# whose tokens live 4 seconds: the daemon runs the plugin again before each token expires, and
# when every token is revoked a 401 makes it run the plugin once more and retry the request.
# When the API server forgets its watch history (410 Expired), the daemon lists again and
# misses nothing that happened meanwhile. (The server ends watches every 2 s, so that the daemon
# keeps making requests while tokens expire.)
source "$(dirname "$0")/kubelib.sh"
export TESTSERVER_PLUGIN_LOG="$WORK/plugin.log"
kube_start --tls --exec-plugin --token-ttl 4 --watch-timeout 2
check "the kubeconfig has an exec plugin and CA data" bash -c "grep -q 'exec:' '$KC' && grep -q certificate-authority-data '$KC'"
ty_start --executor kubernetes --kubeconfig "$KC"
runs() { api GET /metrics | awk '/^trainyard_kube_exec_plugin_runs_total/ {print $2}'; }
mine() { awk -v p="$PID" '$2 == p' "$TESTSERVER_PLUGIN_LOG" | wc -l; }

id=$(submit_id '{"name":"tls","image":"x","nodes":2,"kubernetes":{"annotations":{"testserver.trainyard.io/steps":"60","testserver.trainyard.io/line-interval-ms":"100"}}}')
eventually "a job runs over TLS with plugin tokens" 30 state_is "$id" running
eventually "and succeeds while its tokens expire every 4 s" 60 state_is "$id" succeeded
check "the plugin ran again before tokens expired" test "$(runs)" -ge 2
check_eq "the plugin log agrees (runs by this daemon)" "$(runs)" "$(mine)"
check_eq "no request was refused for an expired token" "" "$(api GET /metrics | grep 'code="401"')"
eventually "every line arrived" 30 wait_logs_complete "$id"
check_eq "2 pods x 62 lines" "124" "$(job_lines "$id" | wc -l)"

# ---- a token the server refuses: one refresh, one retry (tokens that last, this time)
ty_stop
kube_stop
kube_start --tls --exec-plugin
ty_start --executor kubernetes --kubeconfig "$KC"
eventually "the new daemon is connected" 20 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/nodes | jq -e '.items|length==4'"
before=$(runs)
sleep 1 # the server keeps tokens issued in the second of the revocation: revoke a later one
ctl tokens/revoke >/dev/null
id2=$(submit_id '{"name":"after-revoke","image":"x","nodes":2}')
eventually "after a revocation the job is still created and runs" 30 state_is "$id2" succeeded
check "the 401 was seen" bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/metrics | grep -q 'code=\"401\"'"
check "and answered by running the plugin again" test "$(runs)" -gt "$before"
check_eq "the job failed nowhere" "" "$(job_field "$id2" '.ranks[]|select(.state!="succeeded")|.rank')"

# ---- 410: the watch history is gone
id3=$(submit_id '{"name":"expiry","image":"x","nodes":3,"kubernetes":{"annotations":{"testserver.trainyard.io/run-forever":"true"}}}')
eventually "a long job runs" 30 state_is "$id3" running
lists=$(api GET /metrics | grep -c 'verb="list"')
ctl watches/expire >/dev/null
ctl pods/oomkill '{"pod":"ty-'"$id3"'-worker-1"}' >/dev/null
eventually "a change made while the watches were expiring is seen" 30 state_is "$id3" failed
# The diagnosis names the first failure just after the job ends: wait for it.
eventually "it is the right change" 10 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/v1/jobs/$id3 | jq -e '.first_failure.reason == \"OOMKilled\" and .first_failure.rank == 2'"
eventually "the expiry made the daemon list again" 5 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/metrics | grep -q 'trainyard_kube_watch_restarts_total{reason=\"expired\"} [1-9]'"
for i in 1 2 3; do ctl watches/expire >/dev/null; sleep 0.3; done
id4=$(submit_id '{"name":"after-expiry","image":"x","nodes":2}')
eventually "jobs still run after repeated expiries" 30 state_is "$id4" succeeded
ty_done

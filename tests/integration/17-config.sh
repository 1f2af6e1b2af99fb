#!/usr/bin/env bash
# Settings come from the YAML file, the environment and flags, flags winning; --help lists
# every setting with its default; bad settings are refused with a clear message.
source "$(dirname "$0")/lib.sh"

help=$("$TRAINYARD" serve --help)
for s in listen data-dir executor auth local-slots log-max-bytes max-body tls-cert; do
    check "--help lists --$s" grep -q -- "--$s" <<<"$help"
done
check "--help shows defaults" grep -q 'default: 127.0.0.1:8080' <<<"$help"
check "--help shows the environment variable" grep -q 'TRAINYARD_LOCAL_SLOTS' <<<"$help"

cat >"$WORK/config.yaml" <<YAML
local-slots: 3
max-list: 7
stop-grace: 1s
YAML
# File says 3 slots; environment says 5; the flag (set by ty_start) says 8: the flag wins.
TRAINYARD_LOCAL_SLOTS=5 TRAINYARD_MAX_LIST=9 ty_start --config "$WORK/config.yaml"
check_eq "flag beats environment and file" 8 "$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/metrics" | awk '/^trainyard_local_slots / {print $2}')"
check_eq "environment beats file" 400 "$(status GET '/v1/jobs?limit=10')"
check_eq "environment value is the new maximum" 200 "$(status GET '/v1/jobs?limit=9')"
ty_stop
TY_FLAGS=()
TRAINYARD_MAX_LIST=9 ty_start --config "$WORK/config.yaml" --max-list 2
check_eq "flag beats environment" 400 "$(status GET '/v1/jobs?limit=3')"
ty_stop

bad() { "$TRAINYARD" serve --data-dir "$WORK/bad" "$@" 2>&1 >/dev/null | head -1; }
check "unknown flag" grep -q "unknown flag --colour" <<<"$(bad --colour red)"
check "bad value" grep -q "not a valid value for local-slots" <<<"$(bad --local-slots many)"
check "bad executor" grep -q "executor" <<<"$(bad --executor slurm)"
echo "nonsense: 1" >"$WORK/bad.yaml"
check "unknown setting in the file" grep -q "unknown setting 'nonsense'" <<<"$(bad --config "$WORK/bad.yaml")"
check "bad listen address" grep -q "HOST:PORT" <<<"$(bad --listen nowhere)"
ty_done

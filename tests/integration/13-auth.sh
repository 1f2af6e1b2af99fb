#!/usr/bin/env bash
# Access: tokens with scopes, expiry, revocation, worker tokens bound to a job, the audit
# trail, the token CLI, rate limits; transport: --auth=off and plain HTTP only on loopback,
# TLS with client certificates, certificate reload on SIGHUP.
source "$(dirname "$0")/lib.sh"
ty_start

mk() { api POST /v1/tokens -H 'Content-Type: application/json' -d "$1"; }
reader=$(mk '{"name":"reader","scope":"read"}' | jq -r .token)
ci=$(mk '{"name":"ci","scope":"submit","expires_in":"2s"}' | jq -r .token)
other=$(mk '{"name":"other-team","scope":"submit"}' | jq -r .token)
check "token secrets look right" grep -q '^ty_' <<<"$reader"
as() { local t=$1; shift; curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $t" "$@"; }

check_eq "no token is 401" 401 "$(curl -s -o "$WORK/body" -w '%{http_code}' "$URL/v1/jobs")"
check_eq "401 is problem+json" "urn:trainyard:problem:unauthorized" "$(jq -r .type "$WORK/body")"
check "401 asks for a bearer token" grep -qi 'WWW-Authenticate: Bearer' <(curl -s -D - -o /dev/null "$URL/v1/jobs")
check_eq "a wrong token is 401" 401 "$(as ty_wrong "$URL/v1/jobs")"
check_eq "read token reads" 200 "$(as "$reader" "$URL/v1/jobs")"
check_eq "read token cannot submit" 403 "$(as "$reader" -X POST -H 'Content-Type: application/json' -d '{"name":"x","command":["true"]}' "$URL/v1/jobs")"
check "403 names the scope needed" grep -q "submit" "$WORK/body"
check_eq "read token cannot manage tokens" 403 "$(as "$reader" "$URL/v1/tokens")"
check_eq "unknown job and forbidden look alike to a reader" 403 "$(as "$reader" -X POST "$URL/v1/jobs/nosuchjob/cancel")"
check_eq "submit token submits" 201 "$(as "$ci" -X POST -H 'Content-Type: application/json' -d '{"name":"mine","command":["sleep","30"]}' "$URL/v1/jobs")"
mine=$(jq -r .id "$WORK/body")
check_eq "the job records who submitted it" ci "$(jq -r .owner "$WORK/body")"
check_eq "another submit token cannot cancel it" 403 "$(as "$other" -X POST "$URL/v1/jobs/$mine/cancel")"
check_eq "admin can" 202 "$(status POST "/v1/jobs/$mine/cancel")"
check "health endpoints need no token" test "$(curl -s -o /dev/null -w '%{http_code}' "$URL/healthz")" = 200
check_eq "readyz says auth is on" on "$(curl -s "$URL/readyz" | jq -r .auth)"
# The sanitizers bring their own malloc: this build must not claim mimalloc (81-release checks it).
check_eq "version needs no token, names the allocator" "true system" \
    "$(curl -s "$URL/version" | jq -r '"\(.version | length > 0) \(.allocator)"')"

# Expiry and revocation take effect at once.
sleep 2.2
check_eq "expired token is 401" 401 "$(as "$ci" "$URL/v1/jobs")"
check "401 says it expired" grep -q expired "$WORK/body"
for i in 1 2 3 4; do as "$reader" "$URL/v1/jobs" >/dev/null; done # known to every HTTP thread
check_eq "revoke by name" 204 "$(status DELETE /v1/tokens/reader)"
codes=$(for i in 1 2 3 4; do as "$reader" "$URL/v1/jobs"; echo; done | sort -u | tr '\n' ' ')
check_eq "a token revoked through the API is refused at once, on every thread" "401 " "$codes"
list=$(api GET /v1/tokens)
check "token list never shows secrets" test -z "$(echo "$list" | jq -r '.items[] | .token // empty')"
check_eq "revocation is listed" true "$(echo "$list" | jq '[.items[] | select(.name=="reader") | .revoked_at != null] | all')"
check "last use is recorded" test "$(echo "$list" | jq -r '.items[] | select(.name=="other-team") | .last_used_at')" != null

# Worker tokens: bound to one job, given to its ranks, revoked when it ends.
id=$(submit '{"name":"wt","command":["sh","-c","echo token=$TRAINYARD_TOKEN url=$TRAINYARD_URL"]}' | jq -r .id)
wait_state "$id" succeeded
wait_logs_complete "$id"
wt=$(api GET "/v1/jobs/$id/logs" | grep -o 'token=[^ ]*' | cut -d= -f2)
check "ranks get a token" grep -q '^ty_' <<<"$wt"
check "ranks get the daemon URL" grep -q "url=$URL" <<<"$(api GET "/v1/jobs/$id/logs")"
check "the admin token never reaches ranks" test -z "$(api GET "/v1/jobs/$id/logs" | grep -F "$TOKEN")"
check_eq "a worker token cannot list jobs" 401 "$(as "$wt" "$URL/v1/jobs")"

# The audit trail.
audit=$(api GET '/v1/audit?limit=100')
check "audit: job create by its token" test "$(echo "$audit" | jq -r --arg t "job/$mine" '.items[] | select(.target==$t and .action=="job.create") | .actor')" = ci
check "audit: cancel by admin" test -n "$(echo "$audit" | jq -r --arg t "job/$mine" '.items[] | select(.target==$t and .action=="job.cancel") | .actor')"
check "audit: token revoke" test -n "$(echo "$audit" | jq -r '.items[] | select(.action=="token.revoke")')"

# The token CLI works on the daemon's database while it runs.
secret=$(TRAINYARD_DATA_DIR="$DATA" "$TRAINYARD" token create --name cli-made --scope read 2>/dev/null)
check_eq "CLI-made token works" 200 "$(as "$secret" "$URL/v1/jobs")"
check "CLI lists it" grep -q cli-made <(TRAINYARD_DATA_DIR="$DATA" "$TRAINYARD" token list)
TRAINYARD_DATA_DIR="$DATA" "$TRAINYARD" token revoke cli-made 2>/dev/null
refused() { [ "$(as "$1" "$URL/v1/jobs")" = 401 ]; }
eventually "CLI revocation takes effect within a second (lookups are cached that long)" 3 refused "$secret"

# Per-token rate limit: 429 with Retry-After, for that token only.
ty_stop
ty_restart --rate 5 --rate-burst 5
codes=$(for i in $(seq 1 20); do curl -s -D - -o /dev/null -H "Authorization: Bearer $other" "$URL/v1/jobs?limit=1"; done)
check "rate limit answers 429" grep -q '^HTTP/1.1 429' <<<"$codes"
check "Retry-After on 429" grep -qi '^Retry-After: [0-9]' <<<"$codes"
check_eq "other tokens are not limited by it" 200 "$(status GET '/v1/jobs?limit=1')"
ty_stop
TY_FLAGS=()

# --auth=off and plain HTTP are for loopback only.
check "auth off refused off loopback" sh -c "! '$TRAINYARD' serve --listen 0.0.0.0:0 --auth=off --data-dir '$WORK/x' 2>&1 | grep -q listening"
check "plain HTTP refused off loopback" sh -c "'$TRAINYARD' serve --listen 0.0.0.0:0 --data-dir '$WORK/x' 2>&1 | grep -q 'clear text'"

# TLS with a CA, a server certificate for 127.0.0.1, and client certificates.
pki="$WORK/pki"
mkdir -p "$pki"
cd "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout ca.key -out ca.pem 2>/dev/null
server_cert() {
    openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\n' >ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext -out server.pem 2>/dev/null
}
server_cert
openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout client.key -out client.csr 2>/dev/null
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out client.pem 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=stranger -keyout stranger.key -out stranger.pem 2>/dev/null
cd - >/dev/null
TY_CURL=(--cacert "$pki/ca.pem" --cert "$pki/client.pem" --key "$pki/client.key")
ty_start --tls-cert "$pki/server.pem" --tls-key "$pki/server.key" --tls-client-ca "$pki/ca.pem"
check "serves HTTPS" grep -q '^https://' <<<"$URL"
tls() { curl -s -o "$WORK/body" -w '%{http_code}' --cacert "$pki/ca.pem" -H "Authorization: Bearer $TOKEN" "$@"; }
check_eq "client certificate accepted" 200 "$(tls --cert "$pki/client.pem" --key "$pki/client.key" "$URL/v1/jobs")"
check "no client certificate is refused" sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert '$pki/ca.pem' '$URL/v1/jobs')\" != 200 ]"
check "an untrusted client certificate is refused" sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert '$pki/ca.pem' --cert '$pki/stranger.pem' --key '$pki/stranger.key' '$URL/v1/jobs')\" != 200 ]"
serial() { echo | openssl s_client -connect "${URL#https://}" -cert "$pki/client.pem" -key "$pki/client.key" 2>/dev/null | openssl x509 -noout -serial; }
before=$(serial)
(cd "$pki" && server_cert)
kill -HUP "$PID"
sleep 0.5
check "SIGHUP reloads the certificate" test "$(serial)" != "$before"
check_eq "still serving after reload" 200 "$(tls --cert "$pki/client.pem" --key "$pki/client.key" "$URL/v1/jobs")"
ty_done

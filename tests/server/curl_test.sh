#!/usr/bin/env bash
# hsd serve over curl: the 4xx cases in OpenAI's error shape, the API key, CORS, the body
# limit, the bounded queue (503), client disconnect (the sequence is cancelled, its slot
# freed, /metrics counts it), the request timeout (a final error event), and SIGTERM (the
# in-flight stream ends with a final event, the process exits 0). Bounded: every curl has
# --max-time, every server is killed at exit.
cd "$(dirname "$0")/../../build" 2>/dev/null || true
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_server

# A: the main server. --ctx 8192 past the tiny model's trained 512 (a warning) makes long
# generations (8000 tokens, attention over a growing context) last seconds, for disconnects
# and the queue; no timeout here (server C has one).
start_server A "${PAIR[@]}" --ctx 8192 --parallel 2 --queue 1 --timeout 0
U=http://127.0.0.1:$PORT_A
post() { curl -s --max-time 20 -w '\n%{http_code}' "$U$1" -H 'Content-Type: application/json' -d "$2"; }
status_of() { echo "$1" | tail -1; }
body_of() { echo "$1" | sed '$d'; }
# error_case NAME PATH BODY STATUS PARAM: a 4xx with {"error":{message,type,param,code}}
error_case() {
    local r
    r=$(post "$2" "$3")
    local st
    st=$(status_of "$r")
    local b
    b=$(body_of "$r")
    expect_eq "$1: status" "$st" "$4"
    local shape
    shape=$(echo "$b" | python3 -c 'import json,sys
e=json.load(sys.stdin)["error"]
print(sorted(e) == ["code","message","param","type"] and e["code"] == int(sys.argv[1]) and bool(e["message"]), e.get("param"))' "$4" 2>&1)
    expect_eq "$1: error shape and param" "$shape" "True $5"
}

error_case "malformed JSON" /v1/completions '{"prompt": "x",' 400 None
error_case "not an object" /v1/completions '[1,2]' 400 None
error_case "no prompt" /v1/completions '{"max_tokens": 3}' 400 prompt
error_case "prompt of wrong type" /v1/completions '{"prompt": {"a": 1}}' 400 prompt
error_case "temperature a string" /v1/completions '{"prompt": "x", "temperature": "hot"}' 400 temperature
error_case "max_tokens negative" /v1/completions '{"prompt": "x", "max_tokens": -3}' 400 max_tokens
error_case "top_p above 1" /v1/completions '{"prompt": "x", "top_p": 1.5}' 400 top_p
error_case "stop of numbers" /v1/completions '{"prompt": "x", "stop": [1]}' 400 stop
error_case "n = 2" /v1/completions '{"prompt": "x", "n": 2}' 400 n
error_case "logprobs" /v1/completions '{"prompt": "x", "logprobs": 2}' 400 logprobs
error_case "echo" /v1/completions '{"prompt": "x", "echo": true}' 400 echo
error_case "presence_penalty" /v1/completions '{"prompt": "x", "presence_penalty": 0.5}' 400 presence_penalty
error_case "batch of prompts" /v1/completions '{"prompt": ["a", "b"]}' 400 prompt
error_case "id outside the vocabulary" /v1/completions '{"prompt": [1, 99999]}' 400 prompt
error_case "unknown hsd field" /v1/completions '{"prompt": "x", "hsd": {"speed": 1}}' 400 hsd
error_case "unknown algorithm" /v1/completions '{"prompt": "x", "hsd": {"algo": "magic"}}' 400 hsd.algo
error_case "k out of range" /v1/completions '{"prompt": "x", "hsd": {"k": 99}}' 400 hsd.k
error_case "cost_k not a boolean" /v1/completions '{"prompt": "x", "hsd": {"cost_k": 1}}' 400 hsd.cost_k
error_case "stream_options without stream" /v1/completions '{"prompt": "x", "stream_options": {"include_usage": true}}' 400 stream_options
error_case "chat without messages" /v1/chat/completions '{"max_tokens": 2}' 400 messages
error_case "chat bad role" /v1/chat/completions '{"messages": [{"role": "wizard", "content": "x"}]}' 400 messages
error_case "chat tools" /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}]}' 400 tools
error_case "chat image part" /v1/chat/completions '{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}' 400 messages
error_case "tokenize without content" /tokenize '{"text": "x"}' 400 content
error_case "detokenize bad id" /detokenize '{"tokens": [-1]}' 400 tokens
# a prompt longer than the context (8192 positions)
long=$(python3 -c 'print("{\"prompt\": \"" + "Once upon a time. " * 4000 + "\"}")')
error_case "prompt over the context" /v1/completions "$long" 400 prompt
r=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$U/nothing")
expect_eq "unknown path" "$r" 404
r=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$U/v1/completions")
expect_eq "GET on a POST endpoint" "$r" 405
# the server still serves after all of that
r=$(post /v1/completions '{"prompt": "Once upon a time", "max_tokens": 5}')
expect_eq "a good request after the bad ones" "$(status_of "$r")" 200
expect_match "/health" "$(curl -s --max-time 5 "$U/health")" '"status": ?"ok"'

# tokenize / detokenize round trip (llama-server shapes)
ids=$(curl -s --max-time 5 "$U/tokenize" -d '{"content": "Once upon a time"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"])')
text=$(curl -s --max-time 5 "$U/detokenize" -d "{\"tokens\": $ids}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["content"])')
expect_eq "tokenize then detokenize" "$text" "Once upon a time"
want=$(echo '{"text": "Once upon a time"}' | "$HSD" tokenize --tokenizer "$M/stories260K/tok512.bin" --jsonl | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["ids"])))')
got=$(echo "$ids" | tr -d '[],' )
expect_eq "tokenize ids equal hsd tokenize" "$got" "$want"

# client disconnect: a long stream is cut after 1 s; within a round its sequence is
# cancelled and its slot freed
c0=$(metric "$PORT_A" hsd_requests_cancelled_total)
curl -s -N --max-time 1 "$U/v1/completions" -d '{"prompt": "Once", "max_tokens": 8000, "ignore_eos": true, "stream": true}' >"$TMP/cut.txt"
expect_match "the stream had started" "$(head -c 200 "$TMP/cut.txt")" '^data: '
cancelled=""
for _ in $(seq 1 50); do
    c1=$(metric "$PORT_A" hsd_requests_cancelled_total)
    busy=$(metric "$PORT_A" hsd_slots_busy)
    if [ "$c1" = $((c0 + 1)) ] && [ "$busy" = 0 ]; then cancelled=yes; break; fi
    sleep 0.1
done
expect_eq "disconnect: cancelled_total +1 and no slot busy within 5 s" "$cancelled" yes

# the bounded queue: 2 slots + 1 queued; the 4th concurrent request gets 503 (the three long
# ones are cut by their clients after 3 s: the disconnects cancel them)
qp=()
for i in 1 2 3; do
    curl -s --max-time 3 "$U/v1/completions" -d '{"prompt": "Once", "max_tokens": 8000, "ignore_eos": true}' -o "$TMP/q$i.txt" &
    qp+=($!)
done
sleep 0.5
r=$(post /v1/completions '{"prompt": "Once", "max_tokens": 3}')
expect_eq "queue full: 503" "$(status_of "$r")" 503
expect_match "queue full: says why" "$(body_of "$r")" 'busy'
wait "${qp[@]}"
r=$(metric "$PORT_A" hsd_requests_rejected_total)
expect_eq "rejections counted" "$r" 1

# C: the request timeout (1 s): a long request ends with an error in OpenAI's shape
start_server C "${PAIR[@]}" --ctx 8192 --timeout 1
UC=http://127.0.0.1:$PORT_C
r=$(curl -s --max-time 20 -w ' %{http_code}' "$UC/v1/completions" -d '{"prompt": "Once", "max_tokens": 8000, "ignore_eos": true}')
expect_match "timeout: a 408 timeout_error" "$r" '"type": ?"timeout_error".* 408$'
# a stream that times out ends with a final error event, then [DONE]
curl -s -N --max-time 20 "$UC/v1/completions" -d '{"prompt": "Once", "max_tokens": 8000, "ignore_eos": true, "stream": true}' >"$TMP/to.txt"
expect_match "timeout: the stream had started" "$(head -c 100 "$TMP/to.txt")" '^data: \{'
expect_match "timeout: stream's last event is an error" "$(grep '^data: ' "$TMP/to.txt" | tail -2 | head -1)" 'timeout_error'
expect_eq "timeout: stream ends with [DONE]" "$(grep '^data: ' "$TMP/to.txt" | tail -1)" "data: [DONE]"
r=$(metric "$PORT_C" hsd_requests_timed_out_total)
expect_eq "timeouts counted" "$r" 2
kill -TERM "$PID_C"
wait "$PID_C"
expect_eq "server C: exit status" "$?" 0

# SIGTERM with a stream in flight: it gets a final error event and [DONE]; exit status 0
curl -s -N --max-time 20 "$U/v1/completions" -d '{"prompt": "Once", "max_tokens": 8000, "ignore_eos": true, "stream": true}' >"$TMP/term.txt" &
cpid=$!
for _ in $(seq 1 50); do grep -q '^data: ' "$TMP/term.txt" && break; sleep 0.05; done
kill -TERM "$PID_A"
wait "$PID_A"
expect_eq "SIGTERM: exit status" "$?" 0
wait "$cpid"
expect_match "SIGTERM: final event is an error naming the shutdown" "$(grep '^data: ' "$TMP/term.txt" | tail -2 | head -1)" 'shutting down'
expect_eq "SIGTERM: stream ends with [DONE]" "$(grep '^data: ' "$TMP/term.txt" | tail -1)" "data: [DONE]"

# B: API key, CORS, body limit
start_server B "${PAIR[@]}" --api-key s3cret --cors-origin http://ui.example --max-body 1
UB=http://127.0.0.1:$PORT_B
r=$(curl -s --max-time 5 -w ' %{http_code}' "$UB/v1/models")
expect_match "no key: 401" "$r" '"type": ?"authentication_error".* 401$'
r=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong' "$UB/v1/models")
expect_eq "wrong key: 401" "$r" 401
r=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret' "$UB/v1/models")
expect_eq "right key: 200" "$r" 200
r=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$UB/health")
expect_eq "/health needs no key" "$r" 200
r=$(curl -s --max-time 5 -D - -o /dev/null -H 'Authorization: Bearer s3cret' "$UB/v1/models" | tr -d '\r')
expect_match "CORS header" "$r" 'Access-Control-Allow-Origin: http://ui.example'
r=$(curl -s --max-time 5 -D - -o /dev/null -X OPTIONS "$UB/v1/chat/completions" | tr -d '\r')
expect_match "CORS preflight" "$r" 'Access-Control-Allow-Headers: Authorization'
big=$(python3 -c 'print("{\"prompt\": \"" + "a" * 3000 + "\"}")')
r=$(curl -s --max-time 5 -w ' %{http_code}' -H 'Authorization: Bearer s3cret' "$UB/v1/completions" -d "$big")
expect_match "body over --max-body: 413" "$r" '"code": ?413.* 413$'
kill -INT "$PID_B"
wait "$PID_B"
expect_eq "SIGINT: exit status" "$?" 0

sanitizer_clean
echo "curl tests: $FAILS failed"
[ "$FAILS" -eq 0 ]

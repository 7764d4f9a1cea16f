#!/usr/bin/env bash
# Mutual TLS: a server started with --tls_cert/--tls_key/--tls_ca serves a
# client whose certificate the CA signed, and refuses one signed by another
# CA and one without TLS. Certificates are made here with openssl (CN and
# SAN "localhost", the name clients check). Listens on 127.0.0.1 only;
# every wait is bounded and the server is stopped on exit.
# Usage: tls_test.sh RUNNEL_BINARY
set -euo pipefail
runnel=$(readlink -f "$1")
work=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  [ -n "$pid" ] && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

cert() {  # NAME CA: a key and a CA-signed certificate for localhost
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -subj "/CN=localhost" \
    -out "$1.csr" 2>/dev/null
  printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" \
    -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
for ca in ca rogue_ca; do
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$ca.key" -days 2 \
    -subj "/CN=$ca" -out "$ca.crt" 2>/dev/null
done
cert node ca
cert rogue rogue_ca

"$runnel" server --cluster 'worker=127.0.0.1:0' --job worker --task 0 \
  --tls_cert node.crt --tls_key node.key --tls_ca ca.crt >server.log 2>&1 &
pid=$!
for _ in $(seq 300); do grep -q "listening on" server.log && break; sleep 0.1; done
port=$(grep -o 'listening on 127.0.0.1:[0-9]*' server.log | grep -o '[0-9]*$')
[ -n "$port" ] || { echo "FAIL: no server"; cat server.log; exit 1; }

cat >g.pbtxt <<'PB'
node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 7 } } } }
PB
run=("$runnel" run g.pbtxt --fetch c --master "grpc://127.0.0.1:$port" --timeout_ms 5000)
out=$("${run[@]}" --tls_cert node.crt --tls_key node.key --tls_ca ca.crt)
[ "$out" = "c (float []): 7" ] || { echo "FAIL: signed client got '$out'"; exit 1; }
echo "ok: a client with a CA-signed certificate runs ($out)"

if timeout 30 "${run[@]}" --tls_cert rogue.crt --tls_key rogue.key --tls_ca ca.crt \
    >rogue.out 2>&1; then
  echo "FAIL: a certificate from another CA was accepted"; exit 1
fi
grep -q "UNAVAILABLE" rogue.out || { echo "FAIL: rogue:"; cat rogue.out; exit 1; }
echo "ok: a certificate from another CA is refused"

if timeout 30 "${run[@]}" >plain.out 2>&1; then
  echo "FAIL: a plaintext client was accepted"; exit 1
fi
echo "ok: a client without TLS is refused"
echo "tls_test: all passed"

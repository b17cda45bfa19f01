# The bus of bench/nats.sh and bench/watch.sh, sourced after
# bench/cluster_lab.sh: Debian's nats-server in a namespace of its own on
# the lab's wan plane (198.19.0.254:4222, configured as Spinifex's
# nats.conf: TLS from a CA made here, token, JetStream, max_payload 1MB),
# every node's [nodes.NODE.nats] in its config, and `spx-doctor agent
# "${AGENT_ARGS[@]}"` on every node (the caller sets AGENT_ARGS).
# Defines BUS, TOKEN, AGENT_PIDS, pki, add_bus N.
BUS=198.19.0.254
TOKEN=spx-bench-token
AGENT_PIDS=()

pki() {
    local d=$WORK/pki
    [[ -f $d/ca.pem ]] && return
    mkdir -p "$d"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/ca.key" \
        -out "$d/ca.pem" -days 2 -subj "/CN=spx bench CA" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/server.key" \
        -out "$d/server.csr" -subj "/CN=spinifex-nats" 2>/dev/null
    echo "subjectAltName=IP:$BUS" >"$d/ext"
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
        -out "$d/server.pem" -days 2 -extfile "$d/ext" 2>/dev/null
}

# add_bus N: the server on the wan plane, every node's NATS table, agents.
add_bus() {
    local n=$1 i
    pki
    mkns "$P-bus"
    ip -n "$P-bus" link add eth0 type veth peer name wbus netns "$P-w"
    ip -n "$P-w" link set wbus master sw up
    ip -n "$P-bus" link set eth0 up
    ip -n "$P-bus" addr add "$BUS/24" dev eth0
    rm -rf "$WORK/js"
    cat >"$WORK/nats.conf" <<EOF
listen: $BUS:4222
tls {
  cert_file: "$WORK/pki/server.pem"
  key_file:  "$WORK/pki/server.key"
  ca_file:   "$WORK/pki/ca.pem"
}
server_name: spinifex-nats-bench
authorization {
  token: "$TOKEN"
}
jetstream {
  store_dir: "$WORK/js/"
  max_memory_store: 64MB
  max_file_store: 256MB
}
max_connections: 1000
max_payload: 1MB
max_pending: 64MB
http: 127.0.0.1:8222
EOF
    ip netns exec "$P-bus" nats-server -c "$WORK/nats.conf" 2>"$WORK/nats.log" &
    EXTRA_PIDS+=("$!")
    for _ in $(seq 200); do grep -q "Server is ready" "$WORK/nats.log" && break; sleep 0.05; done
    local tables=""
    for ((i = 0; i < n; i++)); do
        tables+="[nodes.n$i.nats]
host = \"$BUS:4222\"
cacert = \"$WORK/pki/ca.pem\"
[nodes.n$i.nats.acl]
token = \"$TOKEN\"
"
    done
    AGENT_PIDS=()
    for ((i = 0; i < n; i++)); do
        printf '%s' "$tables" >>"/etc/netns/$P-n$i/spinifex/spinifex.toml"
        ip netns exec "$P-n$i" "$SPX" agent --config "/etc/netns/$P-n$i/spinifex/spinifex.toml" \
            "${AGENT_ARGS[@]}" 2>"$WORK/agent_$i.log" &
        EXTRA_PIDS+=("$!")
        AGENT_PIDS+=("$!")
    done
    for ((i = 0; i < n; i++)); do
        for _ in $(seq 300); do grep -q "connected to NATS" "$WORK/agent_$i.log" && break; sleep 0.05; done
        grep -q "connected to NATS" "$WORK/agent_$i.log" || { echo "agent n$i did not connect:" >&2; cat "$WORK/agent_$i.log" >&2; exit 1; }
    done
}


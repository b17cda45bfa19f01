#!/usr/bin/env bash
# Benchmark (not a test): what ipsec.cert and ipsec.daemon add to a node
# run. A node's credentials as Spinifex issues them (RSA 4096 CA and peer
# key, made here by openssl), its Open_vSwitch row in a private
# ovsdb-server, and the release binary. Reports, side by side, the median
# whole-process wall time of a run of ipsec.flags alone (the baseline: the
# IPsec check that already reads the same Open_vSwitch row) and of
# ipsec.flags with ipsec.cert and ipsec.daemon, and each check's own
# duration_ms. Needs root (the key is 0600, as on a node). Touches nothing
# of the host's: the files and the database live in a temp dir.
# Usage: bench/ipsec_checks.sh [RUNS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SPX=${SPX:-$ROOT/target/release/spx-doctor}
[[ -x $SPX ]] || (cd "$ROOT" && cargo build --release --quiet)
RUNS=${1:-21}
T=$(mktemp -d)
trap 'kill "$(cat "$T/ovsdb.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$T"' EXIT

mkdir -p "$T/ipsec"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:4096 -out "$T/ca.key" 2>/dev/null
openssl req -x509 -new -key "$T/ca.key" -subj "/O=Spinifex Platform/CN=Spinifex CA" -days 3650 \
    -out "$T/ca.pem" 2>/dev/null
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:4096 -out "$T/ipsec/peer.key" 2>/dev/null
chmod 0600 "$T/ipsec/peer.key"
openssl req -new -key "$T/ipsec/peer.key" -subj "/O=Spinifex Platform/CN=spx1" -out "$T/peer.csr"
printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth,serverAuth,1.3.6.1.5.5.7.3.17\nsubjectAltName=DNS:spx1,IP:198.18.0.1\n' >"$T/peer.ext"
openssl x509 -req -in "$T/peer.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -days 365 -sha256 \
    -extfile "$T/peer.ext" -out "$T/ipsec/peer.pem" 2>/dev/null
cat >"$T/spinifex.toml" <<TOML
node = "spx1"
[network]
ipsec_enabled = true
[nodes.spx1]
host = "198.18.0.1"
[nodes.spx2]
host = "198.18.0.2"
TOML
ovsdb-tool create "$T/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$T/conf.db" --remote="punix:$T/db.sock" --pidfile="$T/ovsdb.pid" --detach \
    --no-chdir --log-file="$T/ovsdb.log" --unixctl="$T/ovsdb.ctl"
DB="unix:$T/db.sock"
ovs-vsctl --db="$DB" --no-wait init
ovs-vsctl --db="$DB" --no-wait set Open_vSwitch . external_ids:system-id=spx1 \
    other_config:certificate="$T/ipsec/peer.pem" other_config:private_key="$T/ipsec/peer.key" \
    other_config:ca_cert="$T/ca.pem" other_config:ipsec_encapsulation=true

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run() { # args: checks -> lines "wall_ms check=ms..."
    local start end
    for ((i = 0; i < RUNS; i++)); do
        start=$(date +%s%N)
        out=$("$SPX" --check "$1" --config "$T/spinifex.toml" --ovs-db "$DB" --format json || true)
        end=$(date +%s%N)
        echo "$(( (end - start) / 1000000 )) $(jq -r '[.checks[] | "\(.id)=\(.duration_ms)"] | join(" ")' <<<"$out")"
    done
}

printf '%-44s %10s\n' "run (median of $RUNS)" "wall (ms)"
base=$(run ipsec.flags | awk '{print $1}' | median)
printf '%-44s %10s\n' "baseline: ipsec.flags" "$base"
both=$(run ipsec.flags,ipsec.cert,ipsec.daemon)
wall=$(awk '{print $1}' <<<"$both" | median)
printf '%-44s %10s\n' "ipsec.flags, ipsec.cert, ipsec.daemon" "$wall"
for c in ipsec.cert ipsec.daemon; do
    ms=$(tr ' ' '\n' <<<"$both" | sed -n "s/^$c=//p" | median)
    printf '%-44s %10s\n' "  $c duration_ms (inside the run)" "$ms"
done
"$SPX" --check ipsec.cert --config "$T/spinifex.toml" --ovs-db "$DB" --format json \
    | jq -r '.checks[0] | "ipsec.cert says: \(.status) \(.code)"'

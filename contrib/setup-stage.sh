#!/usr/bin/env bash
# spx doctor as a setup.sh stage: a gate before raising underlay_mtu or
# turning IPsec off, in setup.sh's own style (set -e, fatal(), SETUP_STAGES).
#
# In setup.sh, source this file and add `doctor` to the stage list:
#   source contrib/setup-stage.sh
#   SETUP_STAGES=doctor ./setup.sh
# Before enabling jumbo frames (after raising the NICs and br-vpc):
#   SPX_DOCTOR_FOR=enable-jumbo SPX_DOCTOR_MTU=9000 SETUP_STAGES=doctor ./setup.sh
# Before turning IPsec off:
#   SPX_DOCTOR_FOR=disable-ipsec SETUP_STAGES=doctor ./setup.sh
# Run on its own, it runs just the stage: contrib/setup-stage.sh
#
# The agent (`spx doctor --cluster` over NATS) as a stage of its own, once
# the binary is installed: it installs contrib/systemd/spx-doctor-agent.service
# and starts it.
#   SETUP_STAGES=doctor_agent ./setup.sh
#
# The doctor's exit status decides: 0 go; 1 stop, a check failed (the table
# above names it and the fix); 2 stop, inconclusive (a required check could
# not run: no peers, no config, an unreachable database). A gate never lets
# a run through on missing evidence.

if ! declare -F fatal >/dev/null; then
  fatal() {
    echo "FATAL: $*" >&2
    exit 1
  }
fi

stage_doctor() {
  # The binary itself (not `spx doctor`): the stage runs before or without
  # Spinifex's own spx, and a fixed path is what Spinifex's preflight prefers.
  local doctor=${SPX_DOCTOR:-/usr/local/bin/spx-doctor}
  local args=(--color never)
  if [[ -n ${SPX_DOCTOR_FOR:-} ]]; then args+=(--for "$SPX_DOCTOR_FOR"); fi
  if [[ -n ${SPX_DOCTOR_MTU:-} ]]; then args+=(--mtu "$SPX_DOCTOR_MTU"); fi
  if [[ -n ${SPX_DOCTOR_CONFIG:-} ]]; then args+=(--config "$SPX_DOCTOR_CONFIG"); fi
  local rc=0
  "$doctor" "${args[@]}" "$@" || rc=$?
  case $rc in
    0) echo "spx doctor: go" ;;
    1) fatal "spx doctor: stop: a check failed (see the table above for what and the fix)" ;;
    2) fatal "spx doctor: stop: inconclusive (a required check could not run; see above)" ;;
    *) fatal "spx doctor: stop: unexpected exit status $rc" ;;
  esac
}

stage_doctor_agent() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  local unit=${SPX_DOCTOR_AGENT_UNIT:-$here/systemd/spx-doctor-agent.service}
  local dir=${SPX_DOCTOR_UNIT_DIR:-/etc/systemd/system}
  [[ -f $unit ]] || fatal "spx doctor agent: no unit file at $unit"
  install -m 0644 "$unit" "$dir/spx-doctor-agent.service" ||
    fatal "spx doctor agent: cannot install the unit into $dir"
  systemctl daemon-reload || fatal "spx doctor agent: systemctl daemon-reload failed"
  systemctl enable --now spx-doctor-agent.service ||
    fatal "spx doctor agent: the unit did not start (journalctl -u spx-doctor-agent)"
  echo "spx doctor agent: installed and started (journalctl -u spx-doctor-agent shows its connection)"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  stage_doctor "$@"
fi

#!/bin/bash
# gpushare: give every GPU of this node the pool's MIG layout, before the kubelet starts.
#
# Run by gpushare-mig.service at every boot (GPU instances do not survive a reboot) and once when the
# node pool's script installs it. Reads its layout from $GPUSHARE_MIG_ENV (written by that script):
#   MIG_CONFIG_NAME       the layout's name (the node label nvidia.com/mig.config)
#   MIG_PROFILES          GPU-instance profile NAMES, comma-separated, in creation order
#   MIG_PROFILE_ORDERS    the same names in every order to try, space-separated (the driver places each
#                         instance itself; an order it cannot place is destroyed and the next one tried)
#   DRIVER_WAIT_ATTEMPTS  how often to look for the NVIDIA driver ...
#   DRIVER_WAIT_SECONDS   ... and how long to wait in between
# Idempotent: a GPU that already holds the layout is left alone. MIG mode that stays pending (a VM may
# need a GPU reset or a reboot) gets a reset, else ONE reboot, remembered in a marker file so that a
# node whose mode never applies does not reboot in a loop. Everything it does goes to the journal:
#   journalctl -u gpushare-mig
set -uo pipefail

ENV_FILE="${GPUSHARE_MIG_ENV:-/etc/gpushare/mig.env}"
STATE_DIR="${GPUSHARE_STATE_DIR:-/var/lib/gpushare}"
REBOOT_MARKER="$STATE_DIR/mig-reboot-attempted"

log() { echo "gpushare-mig: $*"; }

# shellcheck source=/dev/null
if ! . "$ENV_FILE"; then
  log "ERROR: cannot read $ENV_FILE"
  exit 1
fi
: "${MIG_CONFIG_NAME:?} ${MIG_PROFILES:?} ${DRIVER_WAIT_ATTEMPTS:?} ${DRIVER_WAIT_SECONDS:?}"
MIG_PROFILE_ORDERS="${MIG_PROFILE_ORDERS:-$MIG_PROFILES}"

driver_ready() {
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1
}

wait_for_driver() {
  local attempt
  for ((attempt = 1; attempt <= DRIVER_WAIT_ATTEMPTS; attempt++)); do
    if driver_ready; then
      log "NVIDIA driver ready (attempt $attempt)"
      return 0
    fi
    log "no NVIDIA driver yet (attempt $attempt of $DRIVER_WAIT_ATTEMPTS)"
    if ((attempt < DRIVER_WAIT_ATTEMPTS)); then
      sleep "$DRIVER_WAIT_SECONDS"
    fi
  done
  return 1
}

# "<current> <pending>" MIG mode of GPU $1, e.g. "Disabled Enabled".
mig_mode() {
  nvidia-smi -i "$1" --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader |
    tr -d ' ' | tr ',' ' '
}

sorted_names() { tr ',' '\n' | sed '/^$/d' | sort | paste -sd, -; }

# The profile names of the MIG devices GPU $1 holds now (nvidia-smi -L), sorted, comma-separated.
current_layout() {
  nvidia-smi -L | awk -v gpu="$1" '
    /^GPU [0-9]+:/ { index_ = $2; sub(":", "", index_) }
    /^[[:space:]]+MIG / && index_ == gpu { print $2 }' | sorted_names
}

# 0: MIG mode is on; 2: it stays pending after a reset (a reboot applies it); 1: it cannot be enabled.
enable_mig_mode() {
  local gpu=$1 current pending
  read -r current pending <<<"$(mig_mode "$gpu")"
  if [[ $current == Enabled ]]; then
    return 0
  fi
  log "GPU $gpu: enabling MIG mode (current $current)"
  nvidia-smi -i "$gpu" -mig 1 || log "GPU $gpu: nvidia-smi -mig 1 failed"
  read -r current pending <<<"$(mig_mode "$gpu")"
  if [[ $current == Enabled ]]; then
    log "GPU $gpu: MIG mode enabled"
    return 0
  fi
  if [[ $pending != Enabled ]]; then
    log "ERROR: GPU $gpu: MIG mode is neither enabled nor pending (current $current, pending $pending)"
    return 1
  fi
  log "GPU $gpu: MIG mode pending; resetting the GPU"
  if nvidia-smi -i "$gpu" -r; then
    read -r current pending <<<"$(mig_mode "$gpu")"
    if [[ $current == Enabled ]]; then
      log "GPU $gpu: MIG mode enabled by the reset"
      return 0
    fi
  fi
  log "GPU $gpu: the GPU reset is not allowed here or did not apply MIG mode"
  return 2
}

apply_layout() {
  local gpu=$1 want have
  want=$(sorted_names <<<"$MIG_PROFILES")
  have=$(current_layout "$gpu")
  if [[ $have == "$want" ]]; then
    log "GPU $gpu: layout $MIG_CONFIG_NAME already present ($have); nothing to do"
    return 0
  fi
  log "GPU $gpu: creating layout $MIG_CONFIG_NAME in place of [${have:-no instances}]"
  local order
  local -a orders
  read -ra orders <<<"$MIG_PROFILE_ORDERS"
  for order in "${orders[@]}"; do
    nvidia-smi mig -i "$gpu" -dci >/dev/null 2>&1 || true
    nvidia-smi mig -i "$gpu" -dgi >/dev/null 2>&1 || true
    if nvidia-smi mig -i "$gpu" -cgi "$order" -C; then
      log "GPU $gpu: created $order"
      CREATED=1
      return 0
    fi
    log "GPU $gpu: the driver could not place $order"
  done
  # Leave no half-made layout behind: the plugin would advertise it.
  nvidia-smi mig -i "$gpu" -dci >/dev/null 2>&1 || true
  nvidia-smi mig -i "$gpu" -dgi >/dev/null 2>&1 || true
  log "ERROR: GPU $gpu: no order of $MIG_PROFILES could be placed"
  return 1
}

main() {
  if ! wait_for_driver; then
    log "ERROR: no NVIDIA driver after $DRIVER_WAIT_ATTEMPTS attempts; the GPUs stay unpartitioned and the device plugin will advertise no MIG devices"
    return 1
  fi
  local gpu status failed=0 reboot=0
  local -a gpus
  mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader,nounits | tr -d ' ')
  if ((${#gpus[@]} == 0)); then
    log "ERROR: the driver answers but lists no GPU"
    return 1
  fi
  for gpu in "${gpus[@]}"; do
    enable_mig_mode "$gpu"
    status=$?
    if ((status == 2)); then
      reboot=1
    elif ((status != 0)); then
      failed=1
    fi
  done
  if ((reboot)); then
    if [[ -e $REBOOT_MARKER ]]; then
      log "ERROR: MIG mode still pending after the reboot of $(cat "$REBOOT_MARKER"); not rebooting again (remove $REBOOT_MARKER to allow one more)"
      return 1
    fi
    mkdir -p "$STATE_DIR"
    date -u +%Y-%m-%dT%H:%M:%SZ >"$REBOOT_MARKER"
    log "MIG mode needs a reboot: rebooting once (marker $REBOOT_MARKER)"
    systemctl reboot
    return 0
  fi
  rm -f "$REBOOT_MARKER"
  if ((failed)); then
    return 1
  fi
  CREATED=0
  for gpu in "${gpus[@]}"; do
    apply_layout "$gpu" || failed=1
  done
  nvidia-smi -L
  if ((CREATED)) && systemctl is-active --quiet kubelet; then
    # Started after the kubelet (by TKE's user script): device plugins enumerate devices when they
    # (re)register, which a kubelet restart makes them do. --no-block: the kubelet is ordered after us.
    log "kubelet already running: restarting it so that the device plugins see the new MIG devices"
    systemctl restart --no-block kubelet
  fi
  return "$failed"
}

main

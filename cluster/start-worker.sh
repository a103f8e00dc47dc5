#!/usr/bin/env bash
# Join this GPU box to a touchstone fleet as a Ray worker node labelled with its host name.
#
#   cluster/start-worker.sh HOST_NAME --address HEAD_IP:PORT [--dry-run] [-- RAY_START_ARGS...]
#
# HOST_NAME  this box's name in the fleet config: `hosts: {HOST_NAME: {label: HOST_NAME}}`; the
#            node gets the label touchstone.host=HOST_NAME and every cell of a model with
#            `host: HOST_NAME` runs here (its base_url is resolved on this box: 127.0.0.1 is here)
# --address  the head's GCS address as start-head.sh printed it (or env RAY_HEAD_ADDRESS)
# --dry-run  print the `ray start` command and start nothing
# after --   passed to `ray start` unchanged (e.g. --num-gpus 2 --node-ip-address 10.0.0.11)
#
# Token auth (Ray 2.60): RAY_AUTH_MODE=token; the head's token must be here first
# (~/.ray/auth_token, or RAY_AUTH_TOKEN_PATH / RAY_AUTH_TOKEN), else joining fails.
# Workers run no dashboard. Stop: `ray stop` on this box (stops every Ray process of this user).
set -euo pipefail

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "start-worker.sh: $*" >&2; exit 2; }

host_name=""
address="${RAY_HEAD_ADDRESS:-}"
dry_run=0
extra=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --address) address="${2:?--address needs a value}"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option $1 (ray start options go after --)" ;;
    *)
      [[ -z "$host_name" ]] || die "one HOST_NAME only (got '$host_name' and '$1')"
      host_name="$1"; shift ;;
  esac
done
[[ -n "$host_name" ]] || { usage >&2; die "HOST_NAME is required"; }
[[ -n "$address" ]] || die "--address HEAD_IP:PORT is required (or set RAY_HEAD_ADDRESS)"

label_re='^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$'
[[ "$host_name" =~ $label_re ]] ||
  die "HOST_NAME '$host_name': letters, digits, '.', '_', '-'; at most 63; starts and ends alnum"
for arg in "${extra[@]+"${extra[@]}"}"; do
  case "$arg" in
    --labels | --labels=*) die "the label comes from HOST_NAME" ;;
    --head) die "this starts a worker; use start-head.sh for the head" ;;
  esac
done

export RAY_AUTH_MODE=token
cmd=(ray start
  --address "$address"
  --labels "touchstone.host=$host_name"
  --disable-usage-stats
  "${extra[@]+"${extra[@]}"}")

if ((dry_run)); then
  printf 'RAY_AUTH_MODE=token'
  printf ' %q' "${cmd[@]}"
  printf '\n'
  exit 0
fi

command -v ray >/dev/null || die "ray not found: pip install touchstone-ray (brings ray[default])"
command -v touchstone-ray >/dev/null ||
  echo "warning: touchstone-ray is not installed here; its actors need it (pip install touchstone-ray)" >&2
token_file="${RAY_AUTH_TOKEN_PATH:-$HOME/.ray/auth_token}"
if [[ -z "${RAY_AUTH_TOKEN:-}" && ! -s "$token_file" ]]; then
  die "no Ray auth token at $token_file: copy the head's (scp -p HEAD:.ray/auth_token ~/.ray/)"
fi

"${cmd[@]}"

cat <<EOF

worker '$host_name' joined $address (label touchstone.host=$host_name).
  fleet config  hosts: {$host_name: {label: $host_name}}; models with host: $host_name run here
  check         touchstone-ray hosts --config C   (on the head: endpoints reached from this box)
  stop          ray stop   (on this box: stops every Ray process of $(id -un) here)
EOF

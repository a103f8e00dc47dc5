#!/usr/bin/env bash
# Start the Ray head of a touchstone fleet on this machine (the one that runs the driver).
#
#   cluster/start-head.sh [HOST_NAME] [--port N] [--dashboard-port N]
#                         [--dashboard-host ADDR] [--dry-run] [-- RAY_START_ARGS...]
#
# HOST_NAME        this node's label touchstone.host (default: the short hostname); name it in
#                  the fleet config as `hosts: {HOST_NAME: {label: HOST_NAME}}` if it serves models
# --port           GCS port the workers join (default 6379)
# --dashboard-port dashboard and job server port (default 8265)
# --dashboard-host bind the dashboard to ADDR instead of 127.0.0.1 (prints a warning): anyone who
#                  reaches it can submit jobs with the cluster token. Prefer an SSH tunnel.
# --dry-run        print the `ray start` command and start nothing
# after --         passed to `ray start` unchanged (e.g. --num-gpus 1 --node-ip-address 10.0.0.10)
#
# Token auth (Ray 2.60): RAY_AUTH_MODE=token for this node; a token is generated into
# ~/.ray/auth_token if none exists. Every worker, driver and job submitter needs the same token
# and RAY_AUTH_MODE=token.
set -euo pipefail

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "start-head.sh: $*" >&2; exit 2; }

host_name=""
port=6379
dashboard_port=8265
dashboard_host=127.0.0.1
dry_run=0
extra=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --port) port="${2:?--port needs a value}"; shift 2 ;;
    --dashboard-port) dashboard_port="${2:?--dashboard-port needs a value}"; shift 2 ;;
    --dashboard-host) dashboard_host="${2:?--dashboard-host needs a value}"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option $1 (ray start options go after --)" ;;
    *)
      [[ -z "$host_name" ]] || die "one HOST_NAME only (got '$host_name' and '$1')"
      host_name="$1"; shift ;;
  esac
done
host_name="${host_name:-$(hostname -s)}"

label_re='^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$'
[[ "$host_name" =~ $label_re ]] ||
  die "HOST_NAME '$host_name': letters, digits, '.', '_', '-'; at most 63; starts and ends alnum"
for arg in "${extra[@]+"${extra[@]}"}"; do
  case "$arg" in
    --dashboard-host | --dashboard-host=*) die "use this script's --dashboard-host flag" ;;
    --labels | --labels=*) die "the label comes from HOST_NAME" ;;
  esac
done

case "$dashboard_host" in
  127.* | localhost | ::1 | "[::1]") ;;
  *)
    echo "warning: the Ray dashboard will listen on $dashboard_host:$dashboard_port, reachable" \
      "from other machines; it takes job submissions (code that runs on every node) from" \
      "anyone holding the token. Prefer the default 127.0.0.1 and an SSH tunnel." >&2 ;;
esac

export RAY_AUTH_MODE=token
cmd=(ray start --head
  --port "$port"
  --include-dashboard true
  --dashboard-host "$dashboard_host"
  --dashboard-port "$dashboard_port"
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
token_file="${RAY_AUTH_TOKEN_PATH:-$HOME/.ray/auth_token}"
if [[ -z "${RAY_AUTH_TOKEN:-}" && ! -s "$token_file" ]]; then
  echo "no Ray auth token yet: generating $token_file"
  ray get-auth-token --generate >/dev/null
fi
[[ -f "$token_file" ]] && chmod 600 "$token_file"

"${cmd[@]}"

case "$dashboard_host" in
  0.0.0.0 | :: | "[::]" | 127.* | localhost | ::1 | "[::1]") tunnel_to=127.0.0.1 ;;
  *) tunnel_to="$dashboard_host" ;;
esac
head_ip="$(hostname -I 2>/dev/null | awk '{print $1}')"
head_ip="${head_ip:-$(hostname -f)}"
cat <<EOF

touchstone head '$host_name' is up (Ray token auth on, dashboard on $dashboard_host:$dashboard_port).
  token        $token_file — copy it to every worker and every machine that submits jobs:
                 scp -p $token_file WORKER:.ray/auth_token
  join worker  on each GPU box:  cluster/start-worker.sh gpu-a --address $head_ip:$port
  dashboard    from your laptop: ssh -N -L $dashboard_port:$tunnel_to:$dashboard_port $(id -un)@$(hostname -f)
               then open http://127.0.0.1:$dashboard_port
  eval         RAY_AUTH_MODE=token touchstone-ray eval --pack P --config C --address $head_ip:$port
  job          RAY_AUTH_MODE=token ray job submit --address http://127.0.0.1:$dashboard_port \\
                 --working-dir . -- touchstone-ray eval --pack P --config C --out /abs/runs
  stop         ray stop   (on this machine: stops every Ray process of $(id -un) here)
EOF

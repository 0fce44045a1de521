set -o errexit -o pipefail
export PAI_WORK_DIR="$PWD"
echo "[jupyter-pai] runtime plugin ssh (extras.com.microsoft.pai.runtimeplugin.0): taskStarts" >&2
(
PAI_JOB_SSH_PRIVATE_KEY="${PAI_JOB_SSH_PRIVATE_KEY-}" bash -c 'set -o errexit -o nounset -o pipefail

JOBSSH="${1:-false}"
USERSSH_TYPE="${2:-}"
USERSSH_KEYS="${3:-}"
SSHD=/usr/sbin/sshd

say() { echo "[jupyter-pai] runtime plugin ssh: $*" >&2; }

if [ ! -x "$SSHD" ]; then
  say "no sshd binary found: $SSHD is not in the image, so no ssh into or between tasks (Debian/Ubuntu: apt-get install openssh-server openssh-client)"
  exit 0
fi
if [ -z "${PAI_CONTAINER_SSH_PORT:-}" ]; then
  say "PAI_CONTAINER_SSH_PORT is not set: no port for sshd"
  exit 1
fi

user="$(id -un 2>/dev/null || true)"
home="$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6 || true)"
home="${home:-$HOME}"
ssh_dir="$home/.ssh"
state="$ssh_dir/pai"
mkdir -p "$ssh_dir" "$state"
chmod 700 "$ssh_dir" "$state"
touch "$ssh_dir/authorized_keys"
chmod 600 "$ssh_dir/authorized_keys"

authorize() { # each line of $1 once
  local key
  while IFS= read -r key; do
    [ -n "$key" ] || continue
    grep -qxF -- "$key" "$ssh_dir/authorized_keys" || printf '"'"'%s\n'"'"' "$key" >>"$ssh_dir/authorized_keys"
  done <<<"$1"
}

host_entries() {
  local instance role index host_var port_var host port
  local -a instances
  IFS=, read -r -a instances <<<"${PAI_TASK_ROLE_INSTANCES:-}"
  for instance in "${instances[@]}"; do
    role="${instance%:*}"
    index="${instance##*:}"
    host_var="PAI_HOST_IP_${role}_${index}"
    port_var="PAI_PORT_LIST_${role}_${index}_ssh"
    host="${!host_var:-}"
    port="${!port_var:-}"
    port="${port%%,*}"
    if [ -z "$host" ] || [ -z "$port" ]; then
      say "no address for $role-$index ($host_var, $port_var): no Host entry"
      continue
    fi
    printf '"'"'Host %s\n'"'"' "$role-$index"
    printf '"'"'  HostName %s\n  Port %s\n'"'"' "$host" "$port"
    [ -z "$user" ] || printf '"'"'  User %s\n'"'"' "$user"
    printf '"'"'  IdentityFile %s\n'"'"' "$ssh_dir/id_ed25519"
    printf '"'"'  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n'"'"'
  done
}

if [ "$JOBSSH" = true ]; then
  if [ -z "${PAI_JOB_SSH_PRIVATE_KEY:-}" ] || [ -z "${PAI_JOB_SSH_PUBLIC_KEY:-}" ]; then
    say "jobssh: the job'"'"'s key pair is missing (PAI_JOB_SSH_PRIVATE_KEY, PAI_JOB_SSH_PUBLIC_KEY)"
    exit 1
  fi
  (umask 077 && printf '"'"'%s\n'"'"' "$PAI_JOB_SSH_PRIVATE_KEY" >"$ssh_dir/id_ed25519")
  printf '"'"'%s\n'"'"' "$PAI_JOB_SSH_PUBLIC_KEY" >"$ssh_dir/id_ed25519.pub"
  authorize "$PAI_JOB_SSH_PUBLIC_KEY"
  config="$ssh_dir/config"
  touch "$config"
  sed -i '"'"'/^# BEGIN jupyter-pai ssh plugin$/,/^# END jupyter-pai ssh plugin$/d'"'"' "$config"
  {
    echo "# BEGIN jupyter-pai ssh plugin"
    host_entries
    echo "# END jupyter-pai ssh plugin"
  } >>"$config"
  chmod 600 "$config"
fi

case "$USERSSH_TYPE" in
  "") ;;
  custom) authorize "$(printf '"'"'%b'"'"' "$USERSSH_KEYS")" ;;
  *) say "userssh type $USERSSH_TYPE is not supported (custom is); its keys are ignored" ;;
esac

env_file="$ssh_dir/environment"
: >"$env_file"
chmod 600 "$env_file"
while IFS= read -r -d '"'"''"'"' pair; do
  case "${pair%%=*}" in
    PAI_JOB_SSH_PRIVATE_KEY | PAI_SECRET_* | _ | SHLVL | PWD | OLDPWD) continue ;;
  esac
  case "$pair" in *$'"'"'\n'"'"'*) continue ;; esac
  printf '"'"'%s\n'"'"' "$pair" >>"$env_file"
done < <(env -0)

host_keys=()
for key in /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ecdsa_key /etc/ssh/ssh_host_rsa_key; do
  [ -r "$key" ] && host_keys+=("$key")
done
if [ "${#host_keys[@]}" -eq 0 ]; then
  [ -f "$state/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '"'"''"'"' -f "$state/ssh_host_ed25519_key"
  host_keys=("$state/ssh_host_ed25519_key")
fi

ip="${PAI_CURRENT_CONTAINER_IP:-}"
port="$PAI_CONTAINER_SSH_PORT"
case "$ip" in
  127.*) listen="$ip" probe="$ip" ;;
  *) listen="" probe=127.0.0.1 ;;
esac

if [ "$(id -u)" = 0 ]; then
  mkdir -p -m 0755 /run/sshd # privilege separation
fi
{
  echo "Port $port"
  [ -z "$listen" ] || echo "ListenAddress $listen:$port"
  printf '"'"'HostKey %s\n'"'"' "${host_keys[@]}"
  echo "PidFile $state/sshd.pid"
  echo "AuthorizedKeysFile .ssh/authorized_keys"
  echo "PubkeyAuthentication yes"
  echo "PasswordAuthentication no"
  echo "KbdInteractiveAuthentication no"
  echo "PermitRootLogin prohibit-password"
  echo "PermitUserEnvironment yes"
  echo "UsePAM no"
  echo "PrintMotd no"
  echo "Subsystem sftp internal-sftp"
} >"$state/sshd_config"

if [ -f "$state/sshd.pid" ]; then
  kill "$(cat "$state/sshd.pid")" 2>/dev/null || true
fi
"$SSHD" -f "$state/sshd_config" -E "$state/sshd.log"

for _ in $(seq 1 50); do
  if (exec 3<>"/dev/tcp/$probe/$port") 2>/dev/null; then
    echo "[jupyter-pai] runtime plugin ssh: sshd listens on ${listen:-*}:$port"
    exit 0
  fi
  sleep 0.1
done
say "sshd did not start on ${listen:-*}:$port; its log:"
cat "$state/sshd.log" >&2 || true
exit 1
' sshd.sh true "custom" "<% $secrets.key %>"
bash -c 'set -o errexit -o nounset -o pipefail

interval="${SSHBARRIER_RETRY_INTERVAL:-10}"
max_retries=1800
if [ -n "${1:-}" ]; then
  max_retries=$(($1 * 60 / interval))
fi

if [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null; then
  echo "[jupyter-pai] runtime plugin ssh: sshbarrier needs /usr/sbin/sshd and ssh in the image (Debian/Ubuntu: apt-get install openssh-server openssh-client)" >&2
  exit 1
fi

pending=()
IFS=, read -r -a instances <<<"${PAI_TASK_ROLE_INSTANCES:-}"
for instance in "${instances[@]}"; do
  role="${instance%:*}"
  index="${instance##*:}"
  if [ "$role" = "$PAI_CURRENT_TASK_ROLE_NAME" ] &&
    [ "$index" = "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" ]; then
    continue
  fi
  pending+=("$role-$index")
done

echo "SSH barrier: up to $max_retries retries, $interval s apart"
retries=0
while [ "${#pending[@]}" -gt 0 ]; do
  echo "Trying to SSH to instances: ${pending[*]}"
  failed=()
  for host in "${pending[@]}"; do
    ssh -q -o BatchMode=yes -o StrictHostKeyChecking=no -o ConnectTimeout=10 \
      "$host" "exit 0" </dev/null || failed+=("$host")
  done
  [ "${#failed[@]}" -gt 0 ] || break
  if [ "$retries" -ge "$max_retries" ]; then
    echo "SSH barrier reaches max retry count. Failed instances: ${failed[*]} Exit..." >&2
    exit 10
  fi
  pending=("${failed[@]}")
  retries=$((retries + 1))
  sleep "$interval"
done
echo "All ssh connections are established, continue..."
' sshbarrier.sh 3
)
(
echo work
)

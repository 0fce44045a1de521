#!/usr/bin/env bash
# Runtime plugin ssh, in a task: OpenPAI's sshd.sh (openpai-runtime src/plugins/ssh) for
# jupyter-pai's Kubernetes backend. The task's script runs it as `bash -c <this> sshd.sh …`.
#
#   sshd.sh JOBSSH [USERSSH_TYPE USERSSH_KEYS]
#
# JOBSSH "true": authorize the job's key pair (PAI_JOB_SSH_PRIVATE_KEY and
#   PAI_JOB_SSH_PUBLIC_KEY, from the job's Secret) and write a Host entry <role>-<index>
#   for every task in PAI_TASK_ROLE_INSTANCES (HostName PAI_HOST_IP_<role>_<index>, Port
#   PAI_PORT_LIST_<role>_<index>_ssh), so `ssh worker-1` works from every task.
# USERSSH_TYPE "custom": USERSSH_KEYS are public keys to authorize ("\n" between keys).
#
# Then it starts /usr/sbin/sshd as a daemon on PAI_CONTAINER_SSH_PORT and waits until it
# accepts connections. Sessions get the task's environment (~/.ssh/environment). An image
# without /usr/sbin/sshd gets a message and no ssh, and the task goes on (as on OpenPAI).
#
# Unlike OpenPAI it edits nothing under /etc: sshd runs with a config of its own
# (~/.ssh/pai/sshd_config: keys only, PermitUserEnvironment, no PAM) and the Host entries
# go to ~/.ssh/config. It installs nothing either: the image needs /usr/sbin/sshd and ssh
# (Debian/Ubuntu: openssh-server, openssh-client).
set -o errexit -o nounset -o pipefail

JOBSSH="${1:-false}"
USERSSH_TYPE="${2:-}"
USERSSH_KEYS="${3:-}"
SSHD=/usr/sbin/sshd

say() { echo "[jupyter-pai] runtime plugin ssh: $*" >&2; }

if [ ! -x "$SSHD" ]; then
  # As OpenPAI's sshd.sh: the task goes on without ssh (sshbarrier.sh fails fast).
  say "no sshd binary found: $SSHD is not in the image, so no ssh into or between tasks (Debian/Ubuntu: apt-get install openssh-server openssh-client)"
  exit 0
fi
if [ -z "${PAI_CONTAINER_SSH_PORT:-}" ]; then
  say "PAI_CONTAINER_SSH_PORT is not set: no port for sshd"
  exit 1
fi

# ssh and sshd read ~/.ssh of the account (passwd), which may differ from $HOME.
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
    grep -qxF -- "$key" "$ssh_dir/authorized_keys" || printf '%s\n' "$key" >>"$ssh_dir/authorized_keys"
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
    printf 'Host %s\n' "$role-$index"
    printf '  HostName %s\n  Port %s\n' "$host" "$port"
    [ -z "$user" ] || printf '  User %s\n' "$user"
    printf '  IdentityFile %s\n' "$ssh_dir/id_ed25519"
    printf '  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n'
  done
}

if [ "$JOBSSH" = true ]; then
  if [ -z "${PAI_JOB_SSH_PRIVATE_KEY:-}" ] || [ -z "${PAI_JOB_SSH_PUBLIC_KEY:-}" ]; then
    say "jobssh: the job's key pair is missing (PAI_JOB_SSH_PRIVATE_KEY, PAI_JOB_SSH_PUBLIC_KEY)"
    exit 1
  fi
  (umask 077 && printf '%s\n' "$PAI_JOB_SSH_PRIVATE_KEY" >"$ssh_dir/id_ed25519")
  printf '%s\n' "$PAI_JOB_SSH_PUBLIC_KEY" >"$ssh_dir/id_ed25519.pub"
  authorize "$PAI_JOB_SSH_PUBLIC_KEY"
  config="$ssh_dir/config"
  touch "$config"
  # Replace an earlier block (a restarted container keeps its filesystem).
  sed -i '/^# BEGIN jupyter-pai ssh plugin$/,/^# END jupyter-pai ssh plugin$/d' "$config"
  {
    echo "# BEGIN jupyter-pai ssh plugin"
    host_entries
    echo "# END jupyter-pai ssh plugin"
  } >>"$config"
  chmod 600 "$config"
fi

case "$USERSSH_TYPE" in
  "") ;;
  custom) authorize "$(printf '%b' "$USERSSH_KEYS")" ;;
  *) say "userssh type $USERSSH_TYPE is not supported (custom is); its keys are ignored" ;;
esac

# The task's environment for ssh sessions (PermitUserEnvironment): one NAME=value per line,
# so multi-line values, the job's private key and the job's secrets stay out.
env_file="$ssh_dir/environment"
: >"$env_file"
chmod 600 "$env_file"
while IFS= read -r -d '' pair; do
  case "${pair%%=*}" in
    PAI_JOB_SSH_PRIVATE_KEY | PAI_SECRET_* | _ | SHLVL | PWD | OLDPWD) continue ;;
  esac
  case "$pair" in *$'\n'*) continue ;; esac
  printf '%s\n' "$pair" >>"$env_file"
done < <(env -0)

# Host keys: the image's, else one made for this container.
host_keys=()
for key in /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ecdsa_key /etc/ssh/ssh_host_rsa_key; do
  [ -r "$key" ] && host_keys+=("$key")
done
if [ "${#host_keys[@]}" -eq 0 ]; then
  [ -f "$state/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$state/ssh_host_ed25519_key"
  host_keys=("$state/ssh_host_ed25519_key")
fi

# In a pod the network is the pod's own: listen on every address (port-forward reaches
# 127.0.0.1). A loopback pod IP means pods share this host's network (the project's test
# cluster): listen on the pod's own address only.
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
  printf 'HostKey %s\n' "${host_keys[@]}"
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

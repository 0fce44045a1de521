#!/usr/bin/env bash
# Runtime plugin ssh, sshbarrier: wait until every other task of the job answers
# `ssh <role>-<index> exit 0`, as OpenPAI's sshbarrier.sh does. The task's script runs it
# as `bash -c <this> sshbarrier.sh [TIMEOUT_MINUTES]` after sshd.sh wrote the Host entries.
#
# A round tries each task not yet reached; rounds are SSHBARRIER_RETRY_INTERVAL seconds
# apart (10, OpenPAI's). With TIMEOUT_MINUTES the barrier gives up after
# TIMEOUT_MINUTES * 60 / interval failed rounds, else after 1800 (OpenPAI's defaults), and
# exits 10 with "SSH barrier reaches max retry count", the message OpenPAI's exit spec
# matches (PAIRuntimeSSHBarrierTimeout).
set -o errexit -o nounset -o pipefail

interval="${SSHBARRIER_RETRY_INTERVAL:-10}"
max_retries=1800
if [ -n "${1:-}" ]; then
  max_retries=$(($1 * 60 / interval))
fi

# Without them no task of this image answers: say so now rather than after the timeout.
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

#!/usr/bin/env bash
# Install everything and start JupyterLab with jupyter-pai on the local backend.
# Extra arguments go to `jupyter lab` (e.g. --port 8890).
set -euo pipefail
source "$(dirname "$0")/setup-env.sh" lab
# Without NVIDIA GPUs, offer 4 simulated GPU slots so the whole product can be tried.
if ! command -v nvidia-smi >/dev/null; then
  export JUPYTER_PAI_LOCAL_GPUS="${JUPYTER_PAI_LOCAL_GPUS:-4}"
fi
export JUPYTER_PAI_BACKEND="${JUPYTER_PAI_BACKEND:-local}"
if [ "$JUPYTER_PAI_INSTALLED" = 1 ]; then  # just installed: show that Jupyter sees it
  jupyter server extension list 2>&1 | grep -i "jupyter_pai"
  jupyter labextension list 2>&1 | grep -i "jupyter-pai"
fi
args=(--ip=127.0.0.1 --no-browser)
[ "$(id -u)" = 0 ] && args+=(--allow-root)
step "starting JupyterLab (backend: $JUPYTER_PAI_BACKEND)"
exec jupyter lab "${args[@]}" "$@"

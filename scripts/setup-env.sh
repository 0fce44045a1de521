# Sourced by lab.sh and test.sh: a virtual environment in .venv with jupyter-pai installed
# in editable mode (which builds the JupyterLab extension with npm).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${JUPYTER_PAI_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
EXTRAS="${1:-lab}"

step() { printf '\n==> %s\n' "$*"; }

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  step "installing Node.js and npm (Debian packages)"
  apt-get update -qq && apt-get install -y -qq nodejs npm
fi
if [ ! -x "$VENV/bin/python" ]; then
  step "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
step "installing jupyter-pai[$EXTRAS] into $VENV (builds the lab extension)"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e "$ROOT[$EXTRAS]"
export PATH="$VENV/bin:$PATH"

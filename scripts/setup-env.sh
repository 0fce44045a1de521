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
# What an install depends on: the Python package's metadata, the lab extension's sources
# and dependencies, the extras and the interpreter. The package is installed in editable
# mode, so Python sources take effect without one.
inputs_digest() {
  (
    cd "$ROOT"
    for input in pyproject.toml labextension/package.json labextension/yarn.lock \
      labextension/package-lock.json labextension/tsconfig.json labextension/src \
      labextension/style labextension/schema; do
      if [ -e "$input" ]; then find "$input" -type f ! -path '*/__tests__/*' -print0; fi
    done | sort -z | xargs -0 sha1sum
    echo "$EXTRAS $("$VENV/bin/python" -V 2>&1)"
  ) | sha1sum | cut -d' ' -f1
}
STAMP="$VENV/.jupyter-pai-installed-$EXTRAS"
JUPYTER_PAI_INSTALLED=0
if [ "${JUPYTER_PAI_REINSTALL:-0}" != 1 ] && [ -f "$STAMP" ] \
  && [ "$(cat "$STAMP")" = "$(inputs_digest)" ] \
  && [ -d "$ROOT/jupyter_pai/labextension/static" ]; then
  step "jupyter-pai[$EXTRAS] is installed in $VENV and nothing it is built from changed"
else
  step "installing jupyter-pai[$EXTRAS] into $VENV (builds the lab extension)"
  if [ -f "$STAMP" ]; then
    # Something changed since the last install: the builder skips the lab extension
    # while its output exists, so drop that output for it to build again.
    rm -f "$ROOT/jupyter_pai/labextension/static/style.js"
  fi
  rm -f "$STAMP"
  # A development build leaves an install.json there, which the wheel's shared data would
  # add a second time (from labextension/): the install refuses it.
  rm -f "$ROOT/jupyter_pai/labextension/install.json"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -e "$ROOT[$EXTRAS]"
  inputs_digest >"$STAMP"
  JUPYTER_PAI_INSTALLED=1
fi
export PATH="$VENV/bin:$PATH"

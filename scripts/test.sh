#!/usr/bin/env bash
# Install every test dependency and run every test: lint and types, unit, server (REST on
# the local backend), Kubernetes on a real control plane (tests/cluster), lab extension
# (Jest) and UI (Chromium + Playwright). Exits non-zero on any failure.
set -euo pipefail
source "$(dirname "$0")/setup-env.sh" test
cd "$ROOT"

if ! command -v chromium >/dev/null; then
  step "installing Debian's Chromium for the UI tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

# The JupyterHub tests (tests/hub) route through configurable-http-proxy, an npm package:
# installed once into a cache outside the tree, put on PATH for pytest.
CHP_VERSION=5.3.0
CHP_PREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/jupyter-pai/chp"
if [ "$("$CHP_PREFIX/node_modules/.bin/configurable-http-proxy" --version 2>/dev/null)" != "$CHP_VERSION" ]; then
  step "installing configurable-http-proxy $CHP_VERSION (npm) for the JupyterHub tests"
  npm install --silent --no-audit --no-fund --prefix "$CHP_PREFIX" "configurable-http-proxy@$CHP_VERSION"
fi
export PATH="$CHP_PREFIX/node_modules/.bin:$PATH"

# The ssh runtime plugin's cluster tests start a real sshd per runner pod (tests/cluster).
if [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null; then
  step "installing Debian's OpenSSH server and client for the ssh plugin tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    openssh-server openssh-client >/dev/null
fi

# The PyTorch DDP tutorial's test runs torchrun on gloo with Debian's python3-torch (about
# 150 MB of packages, 1 minute), not PyPI's torch, whose CUDA wheels weigh gigabytes.
if ! command -v torchrun >/dev/null || ! /usr/bin/python3 -c "import torch.distributed" 2>/dev/null; then
  step "installing Debian's python3-torch for the PyTorch DDP tutorial"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends python3-torch >/dev/null
fi

# The utilisation tests start Debian's Prometheus (scraping a DCGM stand-in) and its node
# exporter (this machine's CPU and memory, for the hardware view).
if [ ! -x /usr/bin/prometheus ] || [ ! -x /usr/bin/prometheus-node-exporter ]; then
  step "installing Debian's Prometheus and node exporter for the utilisation tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends prometheus prometheus-node-exporter >/dev/null
fi

# The image catalogue's tests list a real registry (Debian's docker-registry, distribution
# 2.8) that skopeo pushes images into; htpasswd writes its basic-auth users.
if [ ! -x /usr/bin/docker-registry ] || [ ! -x /usr/bin/skopeo ] || [ ! -x /usr/bin/htpasswd ]; then
  step "installing Debian's docker-registry, skopeo and htpasswd for the image catalogue tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends docker-registry skopeo apache2-utils >/dev/null
fi

step "lint, format and types"
ruff check jupyter_pai tests benchmarks
ruff format --check jupyter_pai tests benchmarks
mypy jupyter_pai
(cd labextension && npm run --silent lint:check)

step "lab extension unit tests (Jest)"
(cd labextension && npm test --silent)

step "building or reusing the test control plane (Go, cached outside the tree)"
python -m tests.cluster build

step "pytest: unit, server, kubernetes, ui"
python -m pytest "$@"  # testpaths in pyproject.toml: unit, server, cluster, kube, ui

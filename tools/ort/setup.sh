#!/bin/sh
# Installs onnxruntime-node into tools/ort/node_modules (ignored by git).
# --ignore-scripts: the package's install script downloads extra binaries from
# a host we cannot reach; the CPU library it needs ships inside the package.
set -e
cd "$(dirname "$0")"
if node -e "require('onnxruntime-node')" 2>/dev/null; then exit 0; fi
if [ -f package-lock.json ]; then
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
else
    npm install --ignore-scripts --no-audit --no-fund --loglevel=error
fi
node -e "require('onnxruntime-node')"

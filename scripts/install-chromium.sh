#!/usr/bin/env bash
# Install Debian's Chromium for the browser end-to-end test (test/e2e/dashboard.test.ts drives it with
# playwright-core and executablePath /usr/bin/chromium). Idempotent: does nothing when it is there already.
# Never `npx playwright install` (a browser download, which this machine cannot make).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "chromium present: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "chromium installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"

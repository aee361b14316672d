#!/usr/bin/env bash
# Install Debian's Chromium for the browser end-to-end tests (test/e2e/*.test.ts drive it with playwright-core
# and executablePath /usr/bin/chromium). Idempotent: does nothing when it is there already.
# Never `npx playwright install` (a browser download, which this machine cannot make).
set -euo pipefail
bash "$(dirname "$0")/install-debian.sh" /usr/bin/chromium chromium fonts-dejavu-core
/usr/bin/chromium --version 2>/dev/null || true

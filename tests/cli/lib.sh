# What the command-line checks (check.sh, raster_check.sh) share: a work
# folder removed at exit, and pass/fail/expect counting failures.
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

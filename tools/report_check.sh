#!/usr/bin/env bash
# Renders a run's report.html in headless Chromium (Debian's chromium
# package; installed if missing) with every network request refused, and
# writes OUT/report.png for a person to look at.  Fails when the page asks
# for anything outside itself, or when Chromium's DOM lacks the charts or
# the validation gallery.
# usage: tools/report_check.sh OUT      (OUT: a training run's --out folder)
set -euo pipefail
out=${1:?usage: tools/report_check.sh OUT (a training run\'s --out folder)}
html=$(cd "$out" && pwd)/report.html
[ -f "$html" ] || { echo "tools/report_check.sh: no $html; run \`tiletrain report $out\` first" >&2; exit 1; }
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null; then TT_WITH_CHROMIUM=1 tools/deps.sh; fi

# 1. self-contained: no address outside the page (SVG's xmlns is a name, not a fetch)
if grep -Eo "(src|href)=['\"]?[a-z]+://[^'\" >]*" "$html" | grep -v "^src=['\"]data:" ; then
  echo "tools/report_check.sh: report.html refers to the addresses above; it must be self-contained" >&2
  exit 1
fi
# 2. what Chromium built from it, offline (a proxy that refuses everything)
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --proxy-server=127.0.0.1:9
       --proxy-bypass-list='<-loopback>' --user-data-dir="$(mktemp -d)")
dom=$(chromium "${flags[@]}" --dump-dom "file://$html" 2>/dev/null)
for want in "<svg" "<polyline" "Dice per class" "Device memory" "data:image/png;base64,"; do
  if ! grep -qF "$want" <<<"$dom"; then
    echo "tools/report_check.sh: Chromium's page has no '$want'" >&2
    exit 1
  fi
done
# 3. the picture
chromium "${flags[@]}" --window-size=1000,4000 --screenshot="$out/report.png" "file://$html" 2>/dev/null
size=$(stat -c %s "$out/report.png")
[ "$size" -gt 20000 ] || { echo "tools/report_check.sh: $out/report.png is only $size bytes" >&2; exit 1; }
echo "report.html renders in headless Chromium: $out/report.png ($size bytes)"

#!/usr/bin/env bash
# tools.report_browser: `ze-probe report` of the kept cards (a full card of schema 2, the H200
# card of a --no-timing run, a card with the future verdict strings) rendered by a real
# headless browser at 1000 px: the screenshot is not blank, the DOM holds the overview and the
# other tables, and no label is clipped (no element wider than its box, nothing past 1000 px).
#   report_browser_test.sh ZE_PROBE CHROMIUM DATA_DIR
set -euo pipefail
probe=$1 chromium=$2 data=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-report-browser.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$probe" report "$data/card0_pocl_fixture.json" "$data/card0_h200_no_timing.json" "$data/card1_future_verdicts.json" \
  -o "$tmp/report.html" || fail "ze-probe report"

# The layout check runs in the page: every table cell and SVG text must fit its box and the
# 1000 px viewport; the verdict lands in the DOM for --dump-dom.
python3 - "$tmp/report.html" "$tmp/check.html" <<'PY'
import sys
check = """<script>
window.addEventListener("load", () => {
  const bad = [];
  for (const el of document.querySelectorAll("th, td, caption, h1, h2, h3, h4, p"))
    if (el.scrollWidth > el.clientWidth + 1) bad.push(el.tagName + ":" + el.textContent.slice(0, 40));
  for (const t of document.querySelectorAll("svg text")) {
    const r = t.getBoundingClientRect(), box = t.closest("svg").getBoundingClientRect();
    if (r.right > box.right + 1 || r.left < box.left - 1 || r.right > 1000) bad.push("svg:" + t.textContent.slice(0, 40));
  }
  if (document.documentElement.scrollWidth > 1000) bad.push("page wider than 1000 px: " + document.documentElement.scrollWidth);
  const out = document.createElement("pre");
  out.id = "layout-check";
  out.textContent = bad.length ? "clipped: " + bad.join(" | ") : "layout ok";
  document.body.appendChild(out);
});
</script>"""
html = open(sys.argv[1]).read()
assert html.count("</body>") == 1
open(sys.argv[2], "w").write(html.replace("</body>", check + "</body>"))
PY

flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,2400 --virtual-time-budget=3000)
timeout 120 "$chromium" "${flags[@]}" --screenshot="$tmp/shot.png" "file://$tmp/report.html" > "$tmp/shot.log" 2>&1 ||
  { cat "$tmp/shot.log"; fail "chromium --screenshot"; }
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$tmp/check.html" > "$tmp/dom.html" 2> "$tmp/dom.log" ||
  { cat "$tmp/dom.log"; fail "chromium --dump-dom"; }

grep -q '<table class="overview">' "$tmp/dom.html" || fail "no overview table in the DOM"
tables=$(grep -o '<table' "$tmp/dom.html" | wc -l)
((tables >= 6)) || fail "only $tables tables in the DOM"
grep -o '<pre id="layout-check">[^<]*' "$tmp/dom.html" || fail "the layout check did not run"
grep -q '<pre id="layout-check">layout ok' "$tmp/dom.html" || fail "labels clipped at 1000 px"

# Not blank: the PNG decodes to 1000 px wide rows with many distinct colours.
python3 - "$tmp/shot.png" <<'PY' || fail "blank or broken screenshot"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, width = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
    if kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
print(f"screenshot {width}x{height}, {len(raw)} bytes raw, {len(set(raw))} distinct byte values")
assert width == 1000, width
assert len(set(raw)) > 40, "too few distinct values: blank"
PY
[[ -n "${ZP_REPORT_SCREENSHOT:-}" ]] && cp "$tmp/shot.png" "$ZP_REPORT_SCREENSHOT"
echo "PASS ($tables tables)"

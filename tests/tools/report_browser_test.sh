#!/usr/bin/env bash
# tools.report_browser: `ze-probe report` of the kept cards (a full card of schema 2, the H200
# card of a --no-timing run, a card with the future verdict strings), of a step, and of a sweep
# alone, rendered by a real headless browser at 1000 px: the screenshot is not blank, the DOM
# holds the bar, the forest plots, the overview and the other tables (the sweep's plots and
# verdicts), and no label is clipped (no element wider than its box, nothing past 1000 px).
#   report_browser_test.sh ZE_PROBE CHROMIUM DATA_DIR
set -euo pipefail
probe=$1 chromium=$2 data=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-report-browser.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# check_report NAME MIN_TABLES FILE...: `ze-probe report FILE... -o <tmp>/NAME/report.html`, then
# the browser's checks; the DOM is left in <tmp>/NAME/dom.html for more greps.
check_report() {
local name=$1 min_tables=$2
shift 2
local out="$tmp/$name"
mkdir -p "$out"
"$probe" report "$@" -o "$out/report.html" || fail "$name: ze-probe report"

# The layout check runs in the page: every table cell and SVG text must fit its box and the
# 1000 px viewport; the verdict lands in the DOM for --dump-dom.
python3 - "$out/report.html" "$out/check.html" <<'PY'
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
timeout 120 "$chromium" "${flags[@]}" --screenshot="$out/shot.png" "file://$out/report.html" > "$out/shot.log" 2>&1 ||
  { cat "$out/shot.log"; fail "chromium --screenshot"; }
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$out/check.html" > "$out/dom.html" 2> "$out/dom.log" ||
  { cat "$out/dom.log"; fail "chromium --dump-dom"; }

if [[ $name != sweep ]]; then
  grep -q '<table class="overview">' "$out/dom.html" || fail "$name: no overview table in the DOM"
fi
tables=$(grep -o '<table' "$out/dom.html" | wc -l)
((tables >= min_tables)) || fail "$name: only $tables tables in the DOM"
grep -o '<pre id="layout-check">[^<]*' "$out/dom.html" || fail "$name: the layout check did not run"
grep -q '<pre id="layout-check">layout ok' "$out/dom.html" || fail "$name: labels clipped at 1000 px"

# Not blank: the PNG decodes to 1000 px wide rows with many distinct colours.
python3 - "$out/shot.png" <<'PY' || fail "$name: blank or broken screenshot"
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
echo "PASS $name ($tables tables)"
}

check_report cards 6 "$data/card0_pocl_fixture.json" "$data/card0_h200_no_timing.json" "$data/card1_future_verdicts.json"
[[ -n "${ZP_REPORT_SCREENSHOT:-}" ]] && cp "$tmp/cards/shot.png" "$ZP_REPORT_SCREENSHOT"
# The overview states the bar and leads with one forest plot per candidate (two in each
# of the two timed cards), each with the bar and one deciding pattern; the verdict lines fit 200
# characters; the kernel charts put each variant on its own scale.
dom=$tmp/cards/dom.html
grep -q '<p class="bar-statement"><b>The bar:</b>' "$dom" || fail "cards: the bar is not stated"
forests=$(grep -o '<svg[^>]*class="forest"' "$dom" | wc -l)
((forests == 4)) || fail "cards: $forests forest plots, want 4"
(($(grep -o '<line class="bar"' "$dom" | wc -l) >= 4)) || fail "cards: a forest plot without the bar"
(($(grep -o '<g class="row decides"' "$dom" | wc -l) == 4)) || fail "cards: not one deciding pattern per forest"
python3 - "$dom" <<'PY' || fail "cards: forests do not lead, or a verdict line is longer than 200 characters"
import re, sys
dom = open(sys.argv[1]).read()
assert dom.index('class="forest"') < dom.index('<table class="overview">'), "the forests must lead"
lines = re.findall(r'<p class="verdict-line[^"]*">(.*?)</p>', dom, re.S)
assert lines, "no verdict line"
for l in lines:
    text = re.sub(r"<[^>]+>", "", l).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
    assert len(text) <= 200, (len(text), text)
print(f"{len(lines)} verdict lines, the longest {max(len(l) for l in lines)} characters")
PY

# The step of four cards at once: where each ran, the step's overview, the cards side by side
# (each card's median and the step's), the interference (alone vs together).
check_report step "$((4 + 2))" "$data/step4/card0.json" "$data/step4/card1.json" "$data/step4/card2.json" \
  "$data/step4/card3.json" "$data/step4/step.json"
for table in placement overview sidebyside interference; do
  grep -q "<table class=\"$table\">" "$tmp/step/dom.html" || fail "step: no $table table in the DOM"
done
grep -q '<h2>The step: step of cards 0,1,2,3 (at once)</h2>' "$tmp/step/dom.html" || fail "step: no step heading"
for card in 0 1 2 3; do
  grep -q "<th>card $card</th>" "$tmp/step/dom.html" || fail "step: card $card is not side by side"
done
# A forest plot per candidate of the step's gate (6) and of each card's (4 x 6).
forests=$(grep -o '<svg[^>]*class="forest"' "$tmp/step/dom.html" | wc -l)
((forests == 30)) || fail "step: $forests forest plots, want 30"

# A sweep alone (`ze-probe report --sweep X.jsonl`): its plots (a metric against hidden, one line
# per variant) and its table with every measured row's verdict.
check_report sweep 1 --sweep "$data/sweep_hidden.jsonl"
dom=$tmp/sweep/dom.html
(($(grep -o '<svg[^>]*class="sweep-plot" data-x="hidden"' "$dom" | wc -l) == 2)) || fail "sweep: not two plots against hidden"
(($(grep -o '<g class="series"' "$dom" | wc -l) == 3 + 4)) || fail "sweep: not one line per variant (and the baseline)"
grep -q '<table class="sweep">' "$dom" || fail "sweep: no table"
for v in '"pass">pass' '"onbar">on_the_bar' '"fail">fail'; do
  grep -q "<td class=$v</td>" "$dom" || fail "sweep: no $v verdict in the table"
done
echo PASS

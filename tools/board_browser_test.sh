#!/usr/bin/env bash
# `runnel board` end to end, as a user runs it: two Fashion-MNIST MLP runs
# with different learning rates write summaries, `runnel board` turns the
# log directory into report.html, and Debian's Chromium renders it
# headless. The page says in its <body> attributes whether its script
# finished and what it drew (Note [Board in the browser] in tools/board.h):
# no script errors, two SVG paths (raw and smoothed) per run in every scalar
# chart, histogram ridges, images; and a screenshot of it is a real picture.
# Usage: board_browser_test.sh BUILD_DIR   (exit 77: skipped, no Chromium)
set -euo pipefail
build=$1
runnel=$build/tools/runnel
mlp=$build/examples/fashion_mnist_mlp
export OMP_WAIT_POLICY=PASSIVE

fail() { echo "FAIL: $*"; exit 1; }
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  echo "SKIP: no chromium (scripts/install-deps.sh installs Debian's)"
  exit 77
fi
[ -x "$runnel" ] || fail "no $runnel (build the runnel target)"
[ -x "$mlp" ] || fail "no $mlp (build the fashion_mnist_mlp target)"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

for run in a:0.1 b:0.05; do
  name=${run%%:*} lr=${run#*:}
  "$mlp" --epochs 1 --optimizer sgd --learning_rate "$lr" --max_steps 300 \
    --summary_every 100 --logdir "$dir/logs/run_$name" >"$dir/mlp_$name.log" 2>&1 ||
    { cat "$dir/mlp_$name.log"; fail "training run_$name"; }
done

"$runnel" board "$dir/logs" -o "$dir/report.html" >"$dir/board.log" 2>&1 ||
  { cat "$dir/board.log"; fail "runnel board"; }
cat "$dir/board.log"
grep -q '2 run(s)' "$dir/board.log" || fail "the report has two runs"

# Usage and output errors are clear, and write nothing.
if "$runnel" board "$dir/logs" >"$dir/usage.log" 2>&1; then fail "no -o"; fi
grep -q 'usage: runnel board' "$dir/usage.log" || fail "usage line"
if "$runnel" board "$dir/logs" -o "$dir/no/such/report.html" >"$dir/bad.log" 2>&1; then
  fail "an unwritable -o path"
fi
grep -q "cannot write the report to $dir/no/such/report.html" "$dir/bad.log" ||
  { cat "$dir/bad.log"; fail "the error names the report file"; }
if "$runnel" board "$dir/nothing" -o "$dir/r.html" >"$dir/bad.log" 2>&1; then
  fail "a missing log directory"
fi
[ ! -e "$dir/r.html" ] || fail "a report for a missing log directory"

browse() {  # browse ARGS...: headless Chromium on the report, bounded.
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu \
    --no-first-run --disable-extensions --user-data-dir="$dir/chrome" \
    "$@" "file://$dir/report.html" 2>>"$dir/chromium.log"
}
browse --dump-dom >"$dir/dom.html" || { tail -20 "$dir/chromium.log"; fail "chromium --dump-dom"; }
browse --screenshot="$dir/report.png" --window-size=1200,2000 >/dev/null ||
  { tail -20 "$dir/chromium.log"; fail "chromium --screenshot"; }

/usr/bin/python3 - "$dir/dom.html" "$dir/report.png" <<'PY'
import html.parser, struct, sys, zlib

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.body = {}
        self.charts = []  # [tag, paths, nonempty paths] per scalar chart
        self.chart_depth = None
        self.depth = 0
        self.ridges = 0
        self.images = 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        self.depth += 1
        cls = (a.get("class") or "").split()
        if tag == "section" and "chart" in cls and "scalar" in cls:
            self.charts.append([a.get("data-tag"), 0, 0])
            self.chart_depth = self.depth
        if tag == "path" and self.chart_depth is not None:
            self.charts[-1][1] += 1
            if a.get("d"):
                self.charts[-1][2] += 1
        if tag == "path" and "ridge" in cls:
            self.ridges += 1
        if tag == "img" and (a.get("src") or "").startswith("data:image/png;base64,"):
            self.images += 1
    def handle_endtag(self, tag):
        if self.chart_depth == self.depth and tag == "section":
            self.chart_depth = None
        self.depth -= 1
    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

dom = open(sys.argv[1], encoding="utf-8").read()
page = Page()
page.feed(dom)
b = page.body
def check(ok, what):
    if not ok:
        print("FAIL:", what, "| body:", b)
        sys.exit(1)
check(b.get("data-status") == "ok", "the page's script finished")
check(b.get("data-errors") == "0", "no script errors")
runs = 2
tags = {t: (n, d) for t, n, d in page.charts}
print("scalar charts:", tags)
check({"loss", "final_test_accuracy"} <= set(tags), "charts for loss and final_test_accuracy")
for t, (n, d) in tags.items():
    check(n == 2 * runs, "%s: %d paths, want %d (raw + smoothed per run)" % (t, n, 2 * runs))
    check(d == n, "%s: every path has a d attribute" % t)
curves = sum(n for n, _ in tags.values())
check(b.get("data-curves") == str(curves), "data-curves = %d" % curves)
# 2 runs x 4 histogram tags (kernel, bias and their gradients) x 3 steps.
check(page.ridges >= 2 * 2 * 3 and b.get("data-ridges") == str(page.ridges),
      "histogram ridges: %d" % page.ridges)
# 2 runs x 3 image tags x 3 steps.
check(page.images == 18 and b.get("data-images") == "18", "images: %d" % page.images)
print("paths in scalar charts: %d; ridges %d; images %d" % (curves, page.ridges, page.images))

png = open(sys.argv[2], "rb").read()
check(png[:8] == b"\x89PNG\r\n\x1a\n", "the screenshot is a PNG")
w, h = struct.unpack(">II", png[16:24])
pos, idat = 8, b""
while pos < len(png):
    n, kind = struct.unpack(">I4s", png[pos:pos + 8])
    if kind == b"IDAT":
        idat += png[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
check(w == 1200 and h == 2000, "screenshot size %dx%d" % (w, h))
check(len(set(raw)) > 32, "the screenshot is not blank (%d distinct bytes)" % len(set(raw)))
print("screenshot %dx%d, %d bytes" % (w, h, len(png)))
PY

# Untrusted text in a real browser: tags that try to close the data
# element, inject markup or are not ASCII stay text, and non-finite values
# break a curve without breaking the page. The event file is written by
# hand: TFRecord framing with CRC-32C around a hand-encoded Event proto.
/usr/bin/python3 - "$dir/evil/run" <<'PY'
import os, struct, sys
def crc32c(data):
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff
def masked(data):
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xffffffff) + 0xa282ead8) & 0xffffffff
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7f, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out
def field(num, wire, payload):
    if wire == 2:
        payload = varint(len(payload)) + payload
    return varint(num << 3 | wire) + payload
def record(data):
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked(n)) + data + struct.pack("<I", masked(data))
def event(step, tag=None, value=None, version=None):
    e = field(1, 1, struct.pack("<d", 1.6e9 + step)) + field(2, 0, varint(step))
    if version:
        e += field(3, 2, version.encode())
    if tag is not None:
        v = field(1, 2, tag.encode()) + field(2, 5, struct.pack("<f", value))
        e += field(5, 2, field(1, 2, v))
    return record(e)
tags = ['</script><script>document.body.setAttribute("data-pwned","1")</script>',
        '<img src=x onerror="document.body.setAttribute(\'data-pwned\',\'2\')">',
        'loss/\u00e9/\u640d\u5931']
out = event(0, version="brain.Event:2")
for step in range(10):
    for tag in tags:
        v = float("nan") if step == 4 else float("inf") if step == 7 else 1.0 / (1 + step)
        out += event(step, tag, v)
os.makedirs(sys.argv[1])
open(os.path.join(sys.argv[1], "events.out.tfevents.1.evil"), "wb").write(out)
PY
"$runnel" events "$dir/evil" >"$dir/evil_events.txt" || fail "runnel events on the hand-written file"
grep -qE ' scalar +10 +0-9$' "$dir/evil_events.txt" || { cat "$dir/evil_events.txt"; fail "the hand-written file reads back"; }
"$runnel" board "$dir/evil" -o "$dir/report.html" >"$dir/board.log" 2>&1 ||
  { cat "$dir/board.log"; fail "runnel board on untrusted tags"; }
browse --dump-dom >"$dir/evil_dom.html" || fail "chromium --dump-dom (untrusted tags)"
/usr/bin/python3 - "$dir/evil_dom.html" <<'PY'
import html.parser, sys
class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.body, self.tags, self.paths, self.in_chart = {}, [], 0, False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag == "section" and "scalar" in (a.get("class") or "").split():
            self.tags.append(a.get("data-tag"))
        if tag == "path" and a.get("class") in ("raw", "smoothed") and a.get("d"):
            self.paths += 1
page = Page()
page.feed(open(sys.argv[1], encoding="utf-8").read())
b = page.body
want = {'</script><script>document.body.setAttribute("data-pwned","1")</script>',
        '<img src=x onerror="document.body.setAttribute(\'data-pwned\',\'2\')">',
        'loss/\u00e9/\u640d\u5931'}
ok = (b.get("data-status") == "ok" and b.get("data-errors") == "0" and
      "data-pwned" not in b and set(page.tags) == want and page.paths == 6 and
      b.get("data-curves") == "6")
print("untrusted tags:", "ok" if ok else "FAIL", b, page.tags, page.paths)
sys.exit(0 if ok else 1)
PY
echo "PASS"

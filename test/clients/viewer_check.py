"""
Catapult's trace viewer (the code behind chrome://tracing), as the pinned torch-tb-profiler
wheel ships it (static/trace_viewer_full.html), imports each trace in headless Chromium:

    viewer_check.py TRACE [TRACE ...]

Each import must give no warning, and the model it builds must hold what the file holds: the
slices of each category (X events, and instants on a thread), the counter samples and the
flows. Exit status 77 (with the reason on stdout) when Chromium or the Custom Elements v0
polyfill (Debian's libjs-webcomponentsjs-custom-element-v0) that the viewer's Polymer needs in
today's Chromium is missing.
"""

import collections
import gzip
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch_tb_profiler

POLYFILL = "/usr/lib/javascript/webcomponentsjs-custom-element-v0/CustomElements.js"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Before the viewer's own script: Custom Elements v0, and the HTML-imports document its modules
# ask for (the viewer is one page here, not an import).
SETUP = """<script>%s</script>
<script>
Object.defineProperty(document, '_currentScript', {
  get: function () { return document.currentScript || {ownerDocument: document}; }
});
</script>"""

# After it: the import, and what the model holds, in a <pre> that --dump-dom prints.
PROBE = """<script>
(function () {
  var out = {slices: {}, counter_samples: 0};
  try {
    var text = document.getElementById('gprof-trace').textContent;
    var model = new tr.Model();
    var options = new tr.importer.ImportOptions();
    options.shiftWorldToZero = false;
    new tr.importer.Import(model, options).importTraces([text]);
    out.warnings = model.importWarnings.map(function (w) { return w.type + ': ' + w.message; });
    model.getAllThreads().forEach(function (t) {
      t.sliceGroup.slices.forEach(function (s) {
        out.slices[s.category] = (out.slices[s.category] || 0) + 1;
      });
    });
    model.getAllProcesses().forEach(function (p) {
      for (var k in p.counters)
        p.counters[k].series.forEach(function (s) { out.counter_samples += s.samples.length; });
    });
    out.flows = model.flowEvents.length;
  } catch (e) {
    out.error = String(e) + '\\n' + e.stack;
  }
  var pre = document.createElement('pre');
  pre.id = 'gprof-result';
  pre.textContent = JSON.stringify(out);
  document.documentElement.appendChild(pre);
})();
</script>"""


def skip(why):
    print(f"skip: {why}")
    sys.exit(77)


def browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    skip("no Chromium in PATH (Debian's chromium)")


def in_file(events):
    """What the viewer should hold: slices per category, counter samples, flows."""
    slices = collections.Counter()
    samples = flows = 0
    for e in events:
        ph = e.get("ph")
        if ph == "X" or (ph == "i" and e.get("s", "t") == "t"):
            slices[e.get("cat", "")] += 1
        elif ph == "C":
            samples += len(e.get("args", {}))
        elif ph == "s":
            flows += 1
    return {"slices": dict(slices), "counter_samples": samples, "flows": flows}


def view(chromium, page_dir, viewer, polyfill, trace_text):
    page = os.path.join(page_dir, "page.html")
    data = trace_text.replace("</", "<\\/")
    head = '<head i18n-values="dir:textdirection;">'
    with open(page, "w") as f:
        f.write(viewer.replace(head, head + SETUP % polyfill, 1))
        f.write(f'<script id="gprof-trace" type="application/json">{data}</script>')
        f.write(PROBE)
    run = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--no-first-run", "--disable-extensions", f"--user-data-dir={page_dir}/profile",
         "--dump-dom", f"file://{page}"],
        capture_output=True, text=True, timeout=240)
    found = re.search(r'<pre id="gprof-result">(.*?)</pre>', run.stdout, re.S)
    if not found:
        sys.exit(f"{chromium} printed no result (status {run.returncode}): "
                 f"{run.stderr[-2000:]}")
    return json.loads(html.unescape(found.group(1)))


def main():
    if not os.path.exists(POLYFILL):
        skip(f"no {POLYFILL}: apt-get install libjs-webcomponentsjs-custom-element-v0")
    chromium = browser()
    static = os.path.join(os.path.dirname(torch_tb_profiler.__file__), "static")
    with open(os.path.join(static, "trace_viewer_full.html")) as f:
        viewer = f.read()
    with open(POLYFILL) as f:
        polyfill = f.read()
    failed = 0
    for path in sys.argv[1:]:
        with gzip.open(path, "rt") as f:
            text = f.read()
        want = in_file(json.loads(text)["traceEvents"])
        with tempfile.TemporaryDirectory(prefix="gprof-viewer-") as d:
            got = view(chromium, d, viewer, polyfill, text)
        name = os.path.basename(path)
        for key in ("error", "warnings"):
            if got.get(key):
                print(f"FAIL {name}: {key}: {got[key]}")
                failed += 1
        for key in ("slices", "counter_samples", "flows"):
            if got.get(key) != want[key]:
                print(f"FAIL {name}: {key}: the viewer has {got.get(key)}, the file {want[key]}")
                failed += 1
            else:
                print(f"ok   {name}: {key} {want[key]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

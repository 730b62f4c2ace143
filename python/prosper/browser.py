"""browser -- a report as people see it: headless Chromium (Debian's `chromium`) takes a screenshot
of a page and tells which of its images loaded.  Used by `prosper eval` (one screenshot per run)
and by its test (every image of report.html loads, every figure has a caption).

Chromium runs with --no-sandbox only as root (its sandbox refuses root) and with its own
throw-away profile; a page's scripts never run (the report has none): the check runs in a
separate page of ours that loads the report in a frame, which --allow-file-access-from-files
lets it read."""
import html
import json
import os
import shutil
import subprocess
import tempfile

TIMEOUT = 120


def chromium():
    """The browser's path, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args, profile):
    cmd = [chromium(), "--headless", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}", *args]
    if os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)


def screenshot(page, png, width=1280, height=2400):
    """Render the file PAGE and keep the top WIDTHxHEIGHT pixels in PNG.  None, or why not."""
    if not chromium():
        return "no chromium on PATH (Debian package `chromium`)"
    with tempfile.TemporaryDirectory(prefix="prosper-browser-") as profile:
        try:
            r = _run([f"--window-size={width},{height}", f"--screenshot={png}",
                      "file://" + os.path.abspath(page)], profile)
        except subprocess.TimeoutExpired:
            return f"chromium did not finish in {TIMEOUT} s"
    if r.returncode != 0 or not os.path.isfile(png):
        return f"chromium exit code {r.returncode}: {r.stderr.strip()[-300:]}"
    return None


CHECK_PAGE = """<!DOCTYPE html><html><body><pre id="out">no answer</pre>
<iframe id="f" src="%s" width="1280" height="800"></iframe>
<script>
document.getElementById('f').addEventListener('load', function () {
  var d = this.contentDocument, out = {images: [], figures: []};
  if (!d) { document.getElementById('out').textContent = 'no access'; return; }
  for (var i = 0; i < d.images.length; i++) {
    var im = d.images[i];
    out.images.push({src: im.getAttribute('src'), loaded: im.complete && im.naturalWidth > 0});
  }
  var figs = d.getElementsByTagName('figure');
  for (var j = 0; j < figs.length; j++) {
    var cap = figs[j].getElementsByTagName('figcaption');
    out.figures.push({id: figs[j].id, caption: cap.length ? cap[0].textContent.trim() : '',
                      images: figs[j].getElementsByTagName('img').length});
  }
  document.getElementById('out').textContent = JSON.stringify(out);
});
</script></body></html>
"""


def inspect(page):
    """What Chromium saw of PAGE once loaded: {"images": [{src, loaded}], "figures": [{id,
    caption, images}]}.  Raises RuntimeError when the browser cannot answer."""
    if not chromium():
        raise RuntimeError("no chromium on PATH (Debian package `chromium`)")
    with tempfile.TemporaryDirectory(prefix="prosper-browser-") as tmp:
        check = os.path.join(tmp, "check.html")
        with open(check, "w") as f:
            f.write(CHECK_PAGE % ("file://" + os.path.abspath(page)))
        r = _run(["--allow-file-access-from-files", "--virtual-time-budget=20000", "--dump-dom",
                  "file://" + check], os.path.join(tmp, "profile"))
    start = r.stdout.find('<pre id="out">')
    if r.returncode != 0 or start < 0:
        raise RuntimeError(f"chromium exit code {r.returncode}: {r.stderr.strip()[-300:]}")
    text = r.stdout[start + len('<pre id="out">'):r.stdout.index("</pre>", start)]
    try:
        return json.loads(html.unescape(text))
    except ValueError:
        raise RuntimeError(f"the check page answered {text[:200]!r}")

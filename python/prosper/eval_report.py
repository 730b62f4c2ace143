"""eval_report -- write what `prosper eval` found: results.json, report.md, report.html, plots/,
and screenshot.png (the page in headless Chromium, when the machine has it).

Rendering only: every value shown is one of the figure's `ours` or `paper` values from
results.json, and every verdict one computed by eval_verdicts; nothing here measures or invents a
number.  Every plot is labelled (y: the figure's quantity and unit, x: what its rows are) and
shows the paper beside ours: a panel when the paper gives numbers, its statement as a note when
it gives a trend.  The HTML page is self-contained (inline style, no scripts, no remote
resources) and shows the plots from plots/*.png beside it."""
import html
import json
import math
import os
import textwrap
import warnings

# An installed tree carries its own matplotlib (lib/prosper/python-deps); where Debian's is also
# installed, matplotlib warns that its 3-D toolkit comes from the other copy.  No plot here is 3-D.
warnings.filterwarnings("ignore", message="Unable to import Axes3D")
import matplotlib  # noqa: E402

from . import browser

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    return str(v)


def paper_table(p):
    """The paper's values when they are a table with numbers to draw, else None."""
    if isinstance(p, dict) and "columns" in p and p["rows"]:
        if any(is_num(v) for r in p["rows"] for v in r):
            return p
    return None


def paper_text(p):
    """The paper's values as one line of text (a table of text values flattened)."""
    if isinstance(p, dict) and "columns" in p:
        return "; ".join(", ".join(fmt(v) for v in r) for r in p["rows"])
    return str(p or "")


def draw(ax, t, ylabel, title):
    """A bar chart of the numeric columns per row (label = the leading text columns), or lines
    against the first column when it is numeric.  (x label, y label), or None when the table
    has nothing to draw."""
    cols, rows = t["columns"], t["rows"]
    if not rows:
        return None
    numeric = [i for i, _ in enumerate(cols) if all(is_num(r[i]) or r[i] is None for r in rows)
               and any(is_num(r[i]) for r in rows)]
    # rows are named by their text columns (yes/no columns name nothing)
    text = [i for i in range(len(cols)) if i not in numeric and not all(isinstance(r[i], bool) for r in rows)]
    xcol = None
    if not text and len(numeric) >= 2 and len(rows) > 1:
        xcol, numeric = numeric[0], numeric[1:]
    if not numeric:
        return None
    if t.get("plot"):
        numeric = [i for i in numeric if cols[i] in t["plot"]] or numeric
    numeric = numeric[:9]
    values = [r[i] for r in rows for i in numeric if is_num(r[i])]
    pos = [v for v in values if v > 0]
    log = bool(pos) and len(pos) == len(values) and max(pos) / min(pos) > 100
    if xcol is not None:
        xs = [r[xcol] for r in rows]
        for i in numeric:
            ax.plot(xs, [r[i] if is_num(r[i]) else float("nan") for r in rows], marker="o", label=cols[i])
        xlabel = cols[xcol]
        xpos = [x for x in xs if is_num(x) and x > 0]
        if len(xpos) == len(xs) and max(xpos) / min(xpos) > 100:
            ax.set_xscale("log")
    else:
        labels = [" / ".join(str(r[i]) for i in text[:2])[:28] or "this run" for r in rows]
        width = 0.8 / len(numeric)
        for k, i in enumerate(numeric):
            ax.bar([j + k * width for j in range(len(rows))],
                   [r[i] if is_num(r[i]) else 0 for r in rows], width, label=cols[i])
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))])
        tilt = len(rows) > 4 or sum(len(l) for l in labels) > 60
        ax.set_xticklabels(labels, rotation=30 if tilt else 0, ha="right" if tilt else "center", fontsize=8)
        xlabel = " / ".join(str(cols[i]) for i in text[:2]) or "run"
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel + (", log scale" if log else ""), fontsize=8)
    ax.set_title(title, fontsize=9)
    if len(numeric) > 1 or xcol is not None:
        ax.legend(fontsize=7, ncol=min(3, len(numeric)))
    return xlabel, ylabel


def plot(fig, path):
    """Our values, and the paper's beside them: as a second panel when the paper gives a table
    of numbers, else its statement as a note under the plot.  The axes drawn ({x, y, paper}), or
    None when our table has nothing to plot."""
    theirs = paper_table(fig["paper"])
    rows = len(fig["ours"]["rows"]) + (len(theirs["rows"]) if theirs else 0)
    width = max(7.0, min(16.0, 0.45 * rows + 4))
    f, axes = plt.subplots(1, 2 if theirs else 1, figsize=(width, 4.2), squeeze=False,
                           gridspec_kw={"width_ratios": [len(fig["ours"]["rows"]), len(theirs["rows"])]} if theirs else None)
    drawn = draw(axes[0][0], fig["ours"], fig["ylabel"], "ours (this run)")
    if drawn is None:
        plt.close(f)
        return None
    shown = "none"
    if theirs and draw(axes[0][1], theirs, fig["ylabel"], "paper"):
        shown = "panel"
    elif paper_text(fig["paper"]):
        note = textwrap.wrap("Paper: " + paper_text(fig["paper"]), 150)
        if len(note) > 4:
            note = note[:4]
            note[-1] = note[-1][:140] + " ... (full text beside the plot)"
        f.text(0.01, 0.01, "\n".join(note), fontsize=7, va="bottom", ha="left", style="italic")
        shown = "note"
    f.suptitle(fig["title"], fontsize=10)
    if shown == "note":
        f.tight_layout(rect=(0, 0.04 + 0.035 * len(note), 1, 1))
    else:
        f.tight_layout()
    f.savefig(path, dpi=90)
    plt.close(f)
    return {"x": drawn[0], "y": drawn[1], "paper": shown}


def md_table(t):
    out = ["| " + " | ".join(str(c) for c in t["columns"]) + " |", "|" + "---|" * len(t["columns"])]
    out += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in t["rows"]]
    return "\n".join(out)


def html_table(t):
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in t["columns"])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(fmt(v))}</td>" for v in r) + "</tr>" for r in t["rows"])
    return f"<table><tr>{head}</tr>{body}</table>"


def paper_md(p):
    if p is None:
        return "-"
    return md_table(p) if isinstance(p, dict) and "columns" in p else str(p)


def paper_html(p):
    if p is None:
        return "<p>-</p>"
    return html_table(p) if isinstance(p, dict) and "columns" in p else f"<p>{html.escape(str(p))}</p>"


def header_lines(r):
    m = r["machine"]
    load = ", ".join(f"{x:.1f}" for x in m["loadavg"])
    load_end = ", ".join(f"{x:.1f}" for x in m.get("loadavg_end", []))
    ok = [f for f in r["figures"] if f["status"] == "ok"]
    counts = {}
    for f in ok:
        counts[f["verdict"]] = counts.get(f["verdict"], 0) + 1
    verdicts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda i: -i[1]))
    return [f"`{r['command']}` on {r['date']}, {r['seconds']:.0f} s",
            f"{m['cpu']}, {m['cores']} cores, Linux {m['kernel']}; load average {load} at the start, {load_end} at the end "
            "(timed results on a shared machine carry that noise)",
            f"{len(ok)} of {len(r['figures'])} figures produced; the others are marked missing with the reason.",
            f"Verdicts against the papers (and our own targets): {verdicts or 'none'}."]


def verdict_line(f):
    return f"Verdict: {f['verdict']} -- {f['verdict_reason']}"


def thin_line(f):
    thin = f.get("thin_rows") or []
    if not thin:
        return ""
    return "Rows that measure too little at this size: " + "; ".join(f"{l} ({why})" for l, why in thin)


def caption(f):
    axes = f.get("plot_axes") or {}
    beside = {"panel": "the paper's values in the right panel", "note": "the paper's statement under the plot",
              "none": "the paper gives nothing to draw"}[axes.get("paper", "none")]
    return (f"{f['id']}: {f['title']}. y: {axes.get('y', f['ylabel'])}; x: {axes.get('x', '-')}; {beside}. "
            f"{f['verdict'].capitalize()}.")


def write(out, r):
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)
    for f in r["figures"]:
        if f["status"] == "ok":
            name = f"{f['id']}.png"
            try:
                axes = plot(f, os.path.join(out, "plots", name))
                if axes:
                    f["plot"], f["plot_axes"] = f"plots/{name}", axes
            except (ValueError, TypeError) as err:  # a table that cannot be drawn is still reported
                f["plot_error"] = f"{type(err).__name__}: {err}"

    md = ["# Prosper evaluation", ""] + [l + "  " for l in header_lines(r)] + ["", "## Experiments", "",
          "| experiment | status | seconds | command | note |", "|---|---|---|---|---|"]
    for e in r["experiments"]:
        md.append(f"| {e['name']} | {e['status']} | {e['seconds']:.0f} | `{e['command'] or '-'}` | {e['reason']} |")
    section = None
    for f in r["figures"]:
        if f["paper_name"] != section:
            section = f["paper_name"]
            md += ["", f"## {section}"]
        md += ["", f"### {f['title']} (`{f['id']}`)", ""]
        if f["status"] != "ok":
            md.append(f"**missing**: {f['reason']}")
            continue
        md += [f"**{verdict_line(f)}**", "", "Ours:", "", md_table(f["ours"]), ""]
        if thin_line(f):
            md += [thin_line(f), ""]
        md += ["Paper:", "", paper_md(f["paper"]), ""]
        if f.get("notes"):
            md.append(f"Notes: {f['notes']}  ")
        md.append(f"Made by `{f['command']}` (source `{f['source']}`)")
        if f.get("plot"):
            md += ["", f"![{caption(f)}]({f['plot']})"]
    with open(os.path.join(out, "report.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")

    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;margin:.5em 0;font-size:13px}td,th{border:1px solid #bbb;padding:2px 6px;"
             "text-align:right}th{background:#eee}td:first-child{text-align:left}.missing{color:#a00}"
             ".cols{display:flex;gap:2em;flex-wrap:wrap}code{background:#f4f4f4}img{max-width:100%}"
             "figure{margin:1em 0}figcaption{font-size:13px;color:#444}.verdict{font-weight:bold}"
             ".v-matches{color:#060}.v-same-trend{color:#05a}.v-deviates{color:#a00}.v-not-compared{color:#666}"
             ".thin{color:#a60}")
    h = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Prosper evaluation</title><style>{style}</style>"
         "</head><body><h1>Prosper evaluation</h1>"]
    h += [f"<p>{html.escape(l).replace('`', '')}</p>" for l in header_lines(r)]
    h.append("<h2>Experiments</h2><table><tr><th>experiment</th><th>status</th><th>seconds</th><th>command</th>"
             "<th>note</th></tr>")
    for e in r["experiments"]:
        h.append(f"<tr><td>{html.escape(e['name'])}</td><td>{e['status']}</td><td>{e['seconds']:.0f}</td>"
                 f"<td><code>{html.escape(e['command'] or '-')}</code></td><td>{html.escape(e['reason'])}</td></tr>")
    h.append("</table>")
    section = None
    for f in r["figures"]:
        if f["paper_name"] != section:
            section = f["paper_name"]
            h.append(f"<h2>{html.escape(section)}</h2>")
        h.append(f"<h3 id='{f['id']}'>{html.escape(f['title'])} <small>({f['id']})</small></h3>")
        if f["status"] != "ok":
            h.append(f"<p class='missing'>missing: {html.escape(f['reason'])}</p>")
            continue
        h.append(f"<p class='verdict v-{f['verdict'].replace(' ', '-')}'>{html.escape(verdict_line(f))}</p>")
        h.append("<div class='cols'><div><b>Ours</b>" + html_table(f["ours"]) + "</div><div><b>Paper</b>"
                 + paper_html(f["paper"]) + "</div></div>")
        if thin_line(f):
            h.append(f"<p class='thin'>{html.escape(thin_line(f))}</p>")
        if f.get("plot"):
            h.append(f"<figure id='fig-{f['id']}'><img src='{f['plot']}' alt='{html.escape(f['title'])}'>"
                     f"<figcaption>{html.escape(caption(f))}</figcaption></figure>")
        if f.get("notes"):
            h.append(f"<p>{html.escape(f['notes'])}</p>")
        h.append(f"<p><small>made by <code>{html.escape(f['command'])}</code>, source "
                 f"<code>{html.escape(f['source'])}</code></small></p>")
    h.append("</body></html>")
    with open(os.path.join(out, "report.html"), "w") as fh:
        fh.write("\n".join(h) + "\n")

    # One screenshot per run, as the page looks in a browser (the top of it).
    why_not = browser.screenshot(os.path.join(out, "report.html"), os.path.join(out, "screenshot.png"))
    r["screenshot"] = "screenshot.png" if why_not is None else None
    r["screenshot_missing"] = why_not
    with open(os.path.join(out, "results.json"), "w") as fh:
        json.dump(r, fh, indent=1)

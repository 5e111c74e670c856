"""Evaluation reports: one self-contained HTML file (charts embedded) and a Markdown summary.

    python -m eval.report runs/eval/symbolic_hackathon30 runs/eval/smollm2_hackathon30 --out runs/report.html

Each argument is an eval output folder (summary.json + predictions.jsonl). Runs are lined up side
by side, grouped by suite: F1 and score with and without repair, F1 by difficulty and by tool (bar
charts), a confusion matrix of expected vs predicted tool names, the latency distribution, and the
worst cases with expected vs predicted calls and the raw output. Tool results that were simulated
stubs (not a real execution) are marked.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from toolcore.errors import ToolkitError
from toolcore.files import write_text_atomic
from toolcore.metric import error_kinds

from .vision_report import vision_section

NONE = "(none)"


@dataclass
class Run:
    folder: Path
    summary: dict[str, Any]
    cases: list[dict[str, Any]]

    @property
    def label(self) -> str:
        return f"{self.summary.get('model', self.folder.name)}{' +repair' if self.summary.get('repair') else ''}"

    @property
    def suite(self) -> str:
        s = str(self.summary.get("suite", "?"))
        split = self.summary.get("split")
        return f"{Path(s).name}/{split}" if split else Path(s).name


def load_run(folder: str | Path) -> Run:
    folder = Path(folder)
    try:
        summary = json.loads((folder / "summary.json").read_text())
        cases = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines() if line]
    except FileNotFoundError as e:
        raise ToolkitError("not an eval output folder (needs summary.json and predictions.jsonl)", file=str(folder),
                           fix="run `python -m eval ... output_dir=<folder>` first") from e
    return Run(folder, summary, cases)


def confusion(cases: Sequence[dict[str, Any]]) -> Counter:
    """(expected, predicted) tool-name pairs: same names pair up first, then leftovers in order;
    a missing call pairs with (none), an extra one too."""
    pairs: Counter = Counter()
    for c in cases:
        exp = Counter(x["name"] for x in c["expected_calls"])
        pred = Counter(x["name"] for x in c["predicted_calls"])
        both = exp & pred
        for n, k in both.items():
            pairs[(n, n)] += k
        left_e = list((exp - both).elements())
        left_p = list((pred - both).elements())
        for e, p in zip(left_e, left_p):
            pairs[(e, p)] += 1
        for e in left_e[len(left_p):]:
            pairs[(e, NONE)] += 1
        for p in left_p[len(left_e):]:
            pairs[(NONE, p)] += 1
        if not exp and not pred:
            pairs[(NONE, NONE)] += 1
    return pairs


# ----- charts --------------------------------------------------------------------------------------
def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def bar_chart(title: str, runs: Sequence[Run], key: str) -> str:
    import matplotlib.pyplot as plt

    order = {"easy": 0, "medium": 1, "hard": 2}
    cats = sorted({k for r in runs for k in r.summary.get(key, {})}, key=lambda c: (order.get(c, 3), c))
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(cats) * max(1, len(runs)) + 2), 3.6))
    width = 0.8 / max(1, len(runs))
    for i, r in enumerate(runs):
        vals = [r.summary.get(key, {}).get(c, 0.0) for c in cats]
        ax.bar([x + i * width for x in range(len(cats))], vals, width, label=r.label)
    ax.set_xticks([x + width * (len(runs) - 1) / 2 for x in range(len(cats))], cats, rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("F1")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def confusion_chart(run: Run) -> str:
    import matplotlib.pyplot as plt

    pairs = confusion(run.cases)
    names = sorted({n for pair in pairs for n in pair} - {NONE}) + [NONE]
    idx = {n: i for i, n in enumerate(names)}
    grid = [[0] * len(names) for _ in names]
    for (e, p), k in pairs.items():
        grid[idx[e]][idx[p]] += k
    fig, ax = plt.subplots(figsize=(1 + 0.45 * len(names), 1 + 0.45 * len(names)))
    ax.imshow(grid, cmap="Blues")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xlabel("predicted tool")
    ax.set_ylabel("expected tool")
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if v:
                ax.text(j, i, str(v), ha="center", va="center", fontsize=7,
                        color="white" if v > max(map(max, grid)) / 2 else "black")
    ax.set_title(f"tool confusion: {run.label} on {run.suite}")
    return _png(fig)


def latency_chart(runs: Sequence[Run]) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for r in runs:
        ms = [max(c["single_request_ms"], 1e-3) for c in r.cases if c.get("single_request_ms") is not None] or \
            [max(c.get("latency_ms", 0.0), 1e-3) for c in r.cases]
        ax.hist(ms, bins=30, alpha=0.55, label=f"{r.label} (median {sorted(ms)[len(ms) // 2]:.1f} ms)")
    ax.set_xscale("log")
    ax.set_xlabel("single-request latency, ms (log scale)")
    ax.set_ylabel("cases")
    ax.set_title("latency distribution")
    ax.legend(fontsize=8)
    return _png(fig)


# ----- document ------------------------------------------------------------------------------------
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1150px;color:#1d2433;padding:0 1rem}
h1{font-size:1.6rem}h2{margin-top:2.2rem;border-bottom:1px solid #dde;padding-bottom:.3rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}th,td{border:1px solid #d6dae3;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#f3f5f9}td.num{text-align:right;font-variant-numeric:tabular-nums}
img{max-width:100%;margin:.5rem 0}code,pre{font-family:ui-monospace,Menlo,monospace;font-size:.8rem}
pre{white-space:pre-wrap;word-break:break-word;max-height:12rem;overflow:auto;background:#f7f7fa;padding:.4rem;margin:0}
.bad{color:#b3261e}.good{color:#146c2e}.muted{color:#687086;font-size:.85rem}.sim{background:#fff4ce;padding:0 .25rem;border-radius:3px}
"""


def _calls(calls: Sequence[dict]) -> str:
    return "<br>".join(html.escape(f"{c['name']}({json.dumps(c['arguments'], ensure_ascii=False)})") for c in calls) \
        or "<span class=muted>no call</span>"


def _fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else html.escape(str(v))


def overview_rows(runs: Sequence[Run]) -> list[list[Any]]:
    rows = []
    for r in runs:
        s, var = r.summary, r.summary.get("variants", {})
        lat = s.get("latency") or {}
        rows.append([r.label, r.suite, s.get("cases", 0), var.get("raw", s).get("f1", 0.0),
                     var.get("repaired", s).get("f1", 0.0), _dash(var.get("raw", s).get("score", 0.0)),
                     _dash(var.get("repaired", s).get("score", 0.0)), _levels_text(s.get("score_levels")),
                     s.get("tool_name_f1", 0.0), s.get("argument_accuracy", 0.0), s.get("parse_failure_rate", 0.0),
                     _ms(lat.get("single_request_p50_ms")), _ms(lat.get("single_request_p95_ms")),
                     lat.get("batched_cases_per_s") or "-", s.get("on_device_share", 1.0), _route_text(s.get("routes")),
                     (s.get("invalid_calls") or {}).get("total", "-"), _assists_text(s.get("assists"))])
    return rows


def _ms(v: float | None) -> Any:
    return "-" if v is None else round(v, 1)


def _dash(v: Any) -> Any:
    return "-" if v is None else v


def _levels_text(levels: list[str] | None) -> str:
    """Which difficulty levels the score covers ("-" in summaries written before it was recorded)."""
    return "-" if levels is None else ", ".join(levels) or "none"


def _assists_text(counts: dict[str, int] | None) -> str:
    """Calls the opt-in assists opened / rewrote, over the cases they touched ("-" where not recorded)."""
    return "-" if counts is None else (f"{counts['opened_calls']} / {counts['diverted_calls']} "
                                       f"({counts['cases_touched']} cases)")


def _route_text(routes: dict[str, int] | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in routes.items()) if routes else "-"


HEAD = ["model", "suite", "cases", "F1", "F1 +repair", "score", "score +repair", "score levels", "tool-name F1",
        "argument acc.", "parse failures", "p50 ms (alone)", "p95 ms (alone)", "cases/s (batched)", "on-device",
        "routes", "invalid calls", "assists (opened / diverted calls)"]


def accuracy_rows(runs: Sequence[Run]) -> tuple[list[str], list[list[Any]]]:
    """BFCL's AST accuracy (metric=bfcl_ast runs only): overall, then per category."""
    scored = [r for r in runs if "accuracy_by_category" in r.summary]
    cats = sorted({c for r in scored for c in r.summary["accuracy_by_category"]})
    rows = [[r.label, r.suite, r.summary.get("cases", 0), r.summary.get("accuracy", 0.0),
             *(r.summary["accuracy_by_category"].get(c, "") for c in cats)] for r in scored]
    return ["model", "suite", "cases", "accuracy", *cats], rows


def error_rows(runs: Sequence[Run]) -> tuple[list[str], list[list[Any]]]:
    """Cases per error kind (`toolcore.metric.error_kinds`), a row per run, the most frequent kinds first;
    read from the predictions, so folders written before summaries recorded it are counted too."""
    per_run = [[error_kinds(c["expected_calls"], c["predicted_calls"]) for c in r.cases] for r in runs]
    counts = [Counter(k for kinds in cases for k in kinds) for cases in per_run]
    kinds = sorted(set().union(*counts), key=lambda k: (-sum(c[k] for c in counts), k)) if counts else []
    rows = [[r.label, r.suite, len(r.cases), sum(not k for k in cases), *(c[k] for k in kinds)]
            for r, cases, c in zip(runs, per_run, counts)]
    return ["model", "suite", "cases", "exact", *kinds], rows


def snr_label(c: dict) -> str:
    snr = c.get("snr_db")
    return "clean" if snr is None else f"{snr:g} dB"


def speech_rows(runs: Sequence[Run]) -> tuple[list[str], list[list[Any]]]:
    """F1 by SNR (clean first, then noisier) and the cascade's ASR WER, for runs on spoken cases."""
    spoken = [r for r in runs if any("audio" in c for c in r.cases)]
    levels = sorted({snr_label(c) for r in spoken for c in r.cases},
                    key=lambda k: (k != "clean", -float(k.split()[0]) if k != "clean" else 0))
    rows = []
    for r in spoken:
        row: list[Any] = [r.label, r.suite]
        for level in levels:
            f1 = [c["f1"] for c in r.cases if snr_label(c) == level]
            row.append(sum(f1) / len(f1) if f1 else "")
        wers = [c["asr_wer"] for c in r.cases if "asr_wer" in c]
        row.append(sum(wers) / len(wers) if wers else "")
        rows.append(row)
    return levels, rows


def snr_chart(runs: Sequence[Run]) -> str:
    import matplotlib.pyplot as plt

    levels, rows = speech_rows(runs)
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for row in rows:
        pts = [(i, v) for i, v in enumerate(row[2:2 + len(levels)]) if v != ""]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{row[0]} ({Path(row[1]).stem})")
    ax.set_xticks(range(len(levels)), levels)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("noise (signal-to-noise ratio)")
    ax.set_ylabel("F1")
    ax.set_title("speech in: F1 by SNR")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _png(fig)


def _heard(c: dict) -> str:
    if "asr_text" not in c:
        return ""
    return (f"<br><span class=muted>ASR heard ({snr_label(c)}, WER {c.get('asr_wer', 0):.2f}):</span> "
            f"{html.escape(c['asr_text'])}")


def _player(path: str | None) -> str:
    """An embedded player (the report stays one file): WAV clips of a few seconds are small."""
    if not path or not Path(path).is_file() or Path(path).stat().st_size > 2_000_000:
        return ""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"<br><audio controls preload=metadata src='data:audio/wav;base64,{data}'></audio>"


def worst_cases(run: Run, k: int) -> str:
    worst = sorted(run.cases, key=lambda c: (c["f1"], -len(c["expected_calls"])))[:k]
    out = ["<table class=cases><tr><th>case</th><th>F1</th><th>user</th><th>expected</th><th>predicted</th>"
           "<th>raw output</th></tr>"]
    for c in worst:
        sim = any(e.get("simulated") for e in c.get("tool_events", []))
        raw = html.escape(c.get("raw_text", "")[:1500])
        out.append(f"<tr><td>{html.escape(str(c['id']))}</td><td class='num {'bad' if c['f1'] < 1 else 'good'}'>"
                   f"{c['f1']:.2f}</td><td>{html.escape(c.get('user_text', ''))}{_heard(c)}{_player(c.get('audio'))}</td>"
                   f"<td>{_calls(c['expected_calls'])}</td><td>{_calls(c['predicted_calls'])}"
                   f"{'<br><span class=sim>tool results simulated</span>' if sim else ''}</td><td><pre>{raw}</pre></td></tr>")
    out.append("</table>")
    return "".join(out)


def _html_table(table_id: str, title: str, note: str, head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = ["<tr>" + "".join(f"<td>{_fmt(v)}</td>" if isinstance(v, str) else f"<td class=num>{_fmt(v)}</td>"
                              for v in row) + "</tr>" for row in rows]
    return (f"<h2>{html.escape(title)}</h2><p class=muted>{note}</p><table id={table_id}><tr>"
            + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>" + "".join(cells) + "</table>")


def render_html(runs: Sequence[Run], title: str, worst: int = 12) -> str:
    by_suite: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        by_suite[r.suite].append(r)
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title><style>{CSS}</style>"
             f"</head><body><h1>{html.escape(title)}</h1>",
             "<p class=muted>F1 and score follow the FunctionGemma hackathon's benchmark.py. The score covers "
             "the easy / medium / hard levels a suite has (“score levels”; their weights scaled to sum to 1): with "
             "all three it is benchmark.py's exactly, “-” where a suite has none. "
             "“+repair” applies the repair post-processor to the same outputs.</p>",
             "<h2>Overview</h2><table id=overview><tr>" + "".join(f"<th>{h}</th>" for h in HEAD) + "</tr>"]
    for row in overview_rows(runs):
        parts.append("<tr>" + "".join(f"<td class=num>{_fmt(v)}</td>" if not isinstance(v, str) else f"<td>{_fmt(v)}</td>"
                                      for v in row) + "</tr>")
    parts.append("</table>")
    head, arows = accuracy_rows(runs)
    if arows:
        parts.append(_html_table("accuracy", "BFCL accuracy", "BFCL's AST checker (metric=bfcl_ast): share of cases "
                                 "passed, overall and per category.", head, arows))
    ehead, erows = error_rows(runs)
    if any(row[3] != row[2] for row in erows):        # some case of some run is not exact
        parts.append(_html_table("errors", "What went wrong", "Cases per kind of error (a case may have several): "
                                 "a wrong value is counted by the expected value's JSON type.", ehead, erows))
    levels, srows = speech_rows(runs)
    if srows:
        parts.append("<h2>Speech in</h2><p class=muted>F1 by signal-to-noise ratio of the user clip; ASR WER is the "
                     "cascade's word error rate against the clip's transcript.</p><table id=speech><tr><th>model</th>"
                     "<th>suite</th>" + "".join(f"<th>F1 {html.escape(l)}</th>" for l in levels) + "<th>ASR WER</th></tr>")
        for row in srows:
            parts.append("<tr>" + "".join(f"<td class=num>{_fmt(v)}</td>" if not isinstance(v, str) else f"<td>{_fmt(v)}</td>"
                                          for v in row) + "</tr>")
        parts.append("</table>")
        if len(levels) > 1:
            parts.append(f"<img class=chart alt='F1 by SNR' src='data:image/png;base64,{snr_chart(runs)}'>")
    for suite, rs in by_suite.items():
        parts.append(f"<h2>{html.escape(suite)}</h2>")
        parts.append(f"<img class=chart alt='F1 by difficulty' src='data:image/png;base64,{bar_chart('F1 by difficulty', rs, 'f1_by_difficulty')}'>")
        parts.append(f"<img class=chart alt='F1 by tool' src='data:image/png;base64,{bar_chart('F1 by tool', rs, 'f1_by_tool')}'>")
        parts.append(f"<img class=chart alt='latency' src='data:image/png;base64,{latency_chart(rs)}'>")
        for r in rs:
            parts.append(f"<h3>{html.escape(r.label)}</h3>")
            parts.append(f"<img class=chart alt='confusion matrix' src='data:image/png;base64,{confusion_chart(r)}'>")
            timing = r.summary.get("timing")
            if timing:
                parts.append("<p class=muted>time: " + ", ".join(f"{k} {v}" for k, v in timing.items()) + "</p>")
            parts.append(f"<h4>worst {min(worst, len(r.cases))} cases</h4>" + worst_cases(r, worst))
            parts.append(vision_section(r, worst))     # runs of the Ovis crop loop only (eval/vision_report.py)
    # lets a headless browser (and a test) confirm every chart decoded: <body data-charts-loaded=N>
    parts.append("<script>addEventListener('load',()=>{document.body.dataset.chartsLoaded="
                 "[...document.images].filter(i=>i.complete&&i.naturalWidth>0).length})</script></body></html>")
    return "".join(parts)


def _md_table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row) + " |" for row in rows]


def render_markdown(runs: Sequence[Run], title: str) -> str:
    lines = [f"# {title}", "", *_md_table(HEAD, overview_rows(runs))]
    ahead, arows = accuracy_rows(runs)
    if arows:
        lines += ["", "## BFCL accuracy", "", *_md_table(ahead, arows)]
    ehead, erows = error_rows(runs)
    if any(row[3] != row[2] for row in erows):        # some case of some run is not exact
        lines += ["", "## What went wrong (cases per kind of error)", "", *_md_table(ehead, erows)]
    levels, srows = speech_rows(runs)
    if srows:
        head = ["model", "suite", *(f"F1 {l}" for l in levels), "ASR WER"]
        lines += ["", "## Speech in", "", *_md_table(head, srows)]
    for r in runs:
        lines += ["", f"## {r.label} on {r.suite}", "", "| difficulty | F1 |", "|---|---|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in r.summary.get("f1_by_difficulty", {}).items()]
        lines += ["", "| tool | F1 |", "|---|---|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in r.summary.get("f1_by_tool", {}).items()]
    return "\n".join(lines) + "\n"


def write_report(folders: Sequence[str | Path], out: str | Path, title: str = "Tool-calling evaluation",
                 worst: int = 12) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    runs = [load_run(f) for f in folders]
    if not runs:
        raise ToolkitError("no eval folders given", field="folders")
    out = Path(out)
    write_text_atomic(out, render_html(runs, title, worst))
    write_text_atomic(out.with_suffix(".md"), render_markdown(runs, title))
    return out


def log_wandb(run: Run, *, project: str, mode: str) -> None:
    """Summary metrics and the per-case table to Weights & Biases (offline unless told otherwise)."""
    import wandb

    with wandb.init(project=project, mode=mode, name=f"{run.label}-{run.suite}".replace("/", "-"),
                    dir=str(run.folder), config={"model": run.summary.get("model"), "suite": run.suite}) as w:
        flat = {k: v for k, v in run.summary.items() if isinstance(v, (int, float))}
        flat |= {f"f1_by_difficulty/{k}": v for k, v in run.summary.get("f1_by_difficulty", {}).items()}
        w.log(flat)
        cols = ["id", "difficulty", "f1", "latency_ms", "user_text", "expected_calls", "predicted_calls"]
        table = wandb.Table(columns=cols)
        for c in run.cases:
            table.add_data(*[json.dumps(c[k]) if k.endswith("calls") else c.get(k) for k in cols])
        w.log({"cases": table})


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m eval.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", help="eval output folders (summary.json + predictions.jsonl)")
    ap.add_argument("--out", default="runs/report.html")
    ap.add_argument("--title", default="Tool-calling evaluation")
    ap.add_argument("--worst", type=int, default=12, help="worst cases listed per run")
    args = ap.parse_args(argv)
    try:
        print(write_report(args.folders, args.out, args.title, args.worst))
    except ToolkitError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()

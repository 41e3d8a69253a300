"""``helmsim explain`` reports: text, JSON and a self-contained HTML page.

Every text passes the secret rule (:mod:`helmsim.report.safe`); the same explanation gives the
same bytes.
"""

from __future__ import annotations

import html
from typing import Any

from helmsim.config import config_file, describe
from helmsim.explain.search import Explanation, FixVerdict, Verdict
from helmsim.report.safe import dump_json, safe_text

ASSUMPTION = (
    "Hypotheses are the faults helmsim models; a cause outside them (or a latency far outside the "
    "profile's distributions) cannot be found here, and a hypothesis that reproduces is possible, not proven."
)


def _pct(p: float) -> str:
    return f"{100 * p:.0f}%"


def verdict_dict(v: Verdict) -> dict[str, Any]:
    lo, hi = v.interval
    out: dict[str, Any] = {
        "id": v.hypothesis.id,
        "family": v.hypothesis.family,
        "title": v.title,
        "prior": round(v.hypothesis.prior, 6),
        "faults": [dict(f) for f in v.hypothesis.faults],
        "profileChanges": dict(v.hypothesis.cni),
        "mechanism": v.hypothesis.mechanism,
        "runs": v.runs,
        "reproduced": v.reproduced,
        "probability": round(v.probability, 6),
        "interval95": [round(lo, 6), round(hi, 6)],
        "nominalReproduces": v.deterministic,
        "inert": v.inert,
    }
    if v.reproduces:
        out["posterior"] = round(v.posterior, 6)
        out["chain"] = [s.to_dict() for s in v.chain]
        out["findings"] = list(v.causes)
    else:
        out["reason"] = v.reason
        out["reasonRuns"] = v.reason_count
    return out


def fix_dict(f: FixVerdict) -> dict[str, Any]:
    return {
        "key": f.key,
        "summary": f.summary,
        "convergesUnderEvery": f.everywhere,
        "under": [
            {"hypothesis": hid, "converges": ok, "detail": f.detail[hid]} for hid, ok in f.converges.items()
        ],
    }


def to_json(ex: Explanation, *, config: str | None = None) -> str:
    """The explanation as JSON (docs/explain.md "JSON"); ``configFile`` is the ``.helmsim.yaml``
    in effect (null: none)."""
    return dump_json(
        {
            "observation": ex.observation,
            "profile": ex.profile,
            "configFile": config_file(config),
            "runs": ex.runs,
            "seed": ex.seed,
            "assumption": ASSUMPTION,
            "reproducing": [verdict_dict(v) for v in ex.reproducing],
            "ruledOut": [verdict_dict(v) for v in ex.ruled_out],
            "fixes": [fix_dict(f) for f in ex.fixes],
            "ignored": ex.ignored,
        }
    )


def _titles(ex: Explanation) -> dict[str, str]:
    return {v.hypothesis.id: v.title for v in ex.verdicts}


def text_lines(ex: Explanation, *, config: str | None = None) -> list[str]:
    """The report as plain lines (the CLI prints them; tests read them); the second names the
    ``.helmsim.yaml`` in effect."""
    lines = [
        f"helmsim explain: {ex.observation} under {ex.profile} ({ex.runs} sampled runs per hypothesis, seed {ex.seed})",
        describe(config),
        "",
    ]
    repro = ex.reproducing
    if repro:
        lines.append(f"Reproduces it ({len(repro)}), most probable first:")
        for i, v in enumerate(repro, 1):
            lo, hi = v.interval
            lines.append(
                f"  {i}. {v.title}  [posterior {_pct(v.posterior)}; reproduces {v.reproduced}/{v.runs} runs, "
                f"95% {_pct(lo)}-{_pct(hi)}; prior {_pct(v.hypothesis.prior)}]"
            )
            for c in v.causes[:2]:
                lines.append(f"       finding: {c}")
            for s in v.chain:
                lines.append(f"       t={s.time:7.2f}s  {s.obj}: {s.text}")
    else:
        lines.append("Nothing in the hypothesis space reproduces it.")
    lines.append("")
    lines.append(f"Ruled out ({len(ex.ruled_out)}):")
    for v in ex.ruled_out:
        runs = v.runs + 1
        lines.append(f"  - {v.title}: {v.reason}" + (f" (in {v.reason_count} of {runs} runs)" if not v.inert else ""))
    if ex.fixes:
        lines.append("")
        lines.append("Candidate fixes (those check proposes), re-simulated under each reproducing hypothesis:")
        titles = _titles(ex)
        for f in ex.fixes:
            yes = [titles[h] for h, ok in f.converges.items() if ok]
            verdict = (
                "converges under every reproducing hypothesis"
                if f.everywhere
                else ("converges under none of them" if not yes else "only helps against: " + "; ".join(yes))
            )
            lines.append(f"  * {f.summary} [{f.key}]: {verdict}")
            for h, ok in f.converges.items():
                lines.append(f"      {'yes' if ok else 'no '}  {titles[h]}: {f.detail[h]}")
        if not any(f.everywhere for f in ex.fixes):
            lines.append("  No candidate fix converges under every reproducing hypothesis.")
    for n in ex.notes:
        lines.append(f"note: {n}")
    lines.append(f"note: {ASSUMPTION}")
    return [safe_text(x) for x in lines]


def to_text(ex: Explanation, *, config: str | None = None) -> str:
    return "\n".join(text_lines(ex, config=config)) + "\n"


def _e(text: Any) -> str:
    return html.escape(safe_text(text), quote=True)


def to_html(ex: Explanation, *, config: str | None = None) -> str:
    """A self-contained page: reproducing hypotheses with their chains, ruled out ones, fixes."""
    titles = _titles(ex)
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>helmsim explain: {_e(ex.observation)}</title>",
        "<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top}"
        ".yes{color:#060}.no{color:#a00}code{font-size:12px}</style></head><body>",
        f"<h1>helmsim explain: {_e(ex.observation)} under {_e(ex.profile)}</h1>",
        f"<p>{ex.runs} sampled runs per hypothesis, seed {ex.seed}; {_e(describe(config))}. {_e(ASSUMPTION)}</p>",
        "<h2>Reproduces it</h2>",
    ]
    if not ex.reproducing:
        parts.append("<p>Nothing in the hypothesis space reproduces it.</p>")
    for v in ex.reproducing:
        lo, hi = v.interval
        parts.append(
            f"<h3 id='{_e(v.hypothesis.id)}'>{_e(v.title)}</h3><p>posterior {_pct(v.posterior)}; "
            f"reproduces {v.reproduced}/{v.runs} runs (95% {_pct(lo)}–{_pct(hi)}); prior {_pct(v.hypothesis.prior)}; "
            f"<code>{_e(v.hypothesis.mechanism)}</code></p>"
        )
        if v.chain:
            parts.append("<table><tr><th>t</th><th>object</th><th>what happened</th></tr>")
            parts += [f"<tr><td>{s.time:.2f}s</td><td>{_e(s.obj)}</td><td>{_e(s.text)}</td></tr>" for s in v.chain]
            parts.append("</table>")
    parts.append("<h2>Ruled out</h2><table><tr><th>hypothesis</th><th>why not, in the trace</th></tr>")
    parts += [f"<tr><td>{_e(v.title)}</td><td>{_e(v.reason)}</td></tr>" for v in ex.ruled_out]
    parts.append("</table>")
    if ex.fixes:
        parts.append("<h2>Candidate fixes</h2><table><tr><th>fix</th>")
        parts += [f"<th>{_e(titles[h])}</th>" for h in ex.fixes[0].converges]
        parts.append("</tr>")
        for f in ex.fixes:
            cells = "".join(
                f"<td class={'yes' if ok else 'no'} title='{_e(f.detail[h])}'>{'converges' if ok else 'does not'}</td>"
                for h, ok in f.converges.items()
            )
            parts.append(f"<tr><td>{_e(f.summary)}<br><code>{_e(f.key)}</code></td>{cells}</tr>")
        parts.append("</table>")
    parts += [f"<p>note: {_e(n)}</p>" for n in ex.notes]
    parts.append("</body></html>\n")
    return "".join(parts)

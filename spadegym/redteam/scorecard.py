"""Eval results for people and CI systems: JUnit XML and an HTML scorecard.

JUnit: one ``<testsuite>`` per agent, one ``<testcase>`` per case (class name:
the suite and the case's skill), a ``<failure>`` for each case not passed, so a
CI system lists regressions natively. The scorecard puts several agents side
by side, per skill, per cluster and per case. Suites come from anyone: every
text goes out made safe for its format (``text.xml_text``, ``text.safe_text``).
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ..text import safe_text, xml_text


def write_junit(results: dict[str, Any], path: str | Path) -> Path:
    x = xml_text
    root = ET.Element("testsuites", name=x(f"spadegym eval {results['suite']}"))
    for spec, result in results["agents"].items():
        cases = result["cases"]
        failed = sum(not c["passed"] for c in cases.values())
        suite = ET.SubElement(root, "testsuite", name=x(spec), tests=str(len(cases)), failures=str(failed),
                              errors="0", time=f"{result['seconds']:.3f}")
        for cid, c in cases.items():
            classname = x(f"{results['suite']}.{c['skill'].replace(' ', '_')}")
            node = ET.SubElement(suite, "testcase", classname=classname, name=x(cid), time=f"{c['seconds']:.3f}")
            if not c["passed"]:
                message = f"won {c['wins']}/{c['plays']} plays (needs {results['pass_at']:g})"
                failure = ET.SubElement(node, "failure", message=message, type="regression")
                failure.text = x("\n".join(filter(None, [f"cluster: {c['cluster']}", c["message"],
                                                         ("errors: " + ", ".join(c["errors"])) if c["errors"] else ""])))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path


def _h(text: str) -> str:
    """Text for the page: control sequences out, lone surrogates replaced, then HTML-escaped."""
    return html.escape(safe_text(str(text)))


def _cell(passed: int, total: int) -> str:
    rate = passed / total if total else 0.0
    hue = int(120 * rate)  # red (0) to green (120)
    return f'<td style="background:hsl({hue},60%,85%)">{passed}/{total} ({rate:.0%})</td>'


def _table(title: str, agents: list[str], rows: list[str], cells: dict[str, dict[str, Any]]) -> str:
    head = "".join(f"<th>{_h(a)}</th>" for a in agents)
    body = []
    for row in rows:
        tds = "".join(_cell(cells[a][row]["passed"], cells[a][row]["cases"]) if row in cells[a] else "<td>-</td>"
                      for a in agents)
        body.append(f"<tr><td>{_h(row)}</td>{tds}</tr>")
    return f"<h2>{_h(title)}</h2><table><tr><th></th>{head}</tr>{''.join(body)}</table>"


def write_scorecard(results: dict[str, Any], path: str | Path) -> Path:
    agents = list(results["agents"])
    res = results["agents"]
    overall = {a: {"all cases": {"passed": res[a]["passed"], "cases": len(res[a]["cases"])}} for a in agents}
    skills = sorted({k for a in agents for k in res[a]["by_skill"]})
    clusters = sorted({k for a in agents for k in res[a]["by_cluster"]})
    case_rows = []
    for cid in results["cases"]:
        tds = ""
        for a in agents:
            c = res[a]["cases"].get(cid)
            if c is None:
                tds += "<td>-</td>"
                continue
            mark = "pass" if c["passed"] else "FAIL"
            colour = "#d4f4d4" if c["passed"] else "#f8d0d0"
            tds += (f'<td style="background:{colour}" title="{_h(c["message"])}">'
                    f'{mark} {c["wins"]}/{c["plays"]}</td>')
        skill = results["skills"].get(cid, "")
        case_rows.append(f"<tr><td>{_h(cid)}</td><td>{_h(skill)}</td>{tds}</tr>")
    heads = "".join(f"<th>{_h(a)}</th>" for a in agents)
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>Scorecard: {_h(results['suite'])}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin-bottom:1.5em}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}</style></head><body>
<h1>Scorecard: {_h(results['suite'])}</h1>
<p>{len(results['cases'])} cases; a case is passed when the agent wins at least {results['pass_at']:g} of its
{results['plays']} play(s) per seed.</p>
{_table("Overall", agents, ["all cases"], overall)}
{_table("Per skill", agents, skills, {a: res[a]["by_skill"] for a in agents})}
{_table("Per cluster", agents, clusters, {a: res[a]["by_cluster"] for a in agents})}
<h2>Per case</h2><table><tr><th>case</th><th>skill</th>{heads}</tr>{''.join(case_rows)}</table>
</body></html>
"""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path

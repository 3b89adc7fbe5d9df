"""The report page: self-contained HTML (inline CSS and PNGs, one fixed script, no network).

The one script is FILTER_SCRIPT, constant text with no run data in it (it filters the environment browser); the
page's Content-Security-Policy allows that script by its hash and nothing else, so text a run stored cannot run
even if it slipped past escaping.

Sections are small functions that return HTML or None when the run carries no
data for them; the page lists what is absent instead of drawing empty plots.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from collections.abc import Callable
from html import escape as escape_html
from typing import Any

from . import plots
from .data import BAND, RunData, Series

MAX_ENVIRONMENTS = 300  # environments listed in the browser (most recent first)
MAX_TEXT = 1500  # characters of one observation or reply shown in a transcript
MAX_ROUND_ROWS = 200
KNOWN_ROUND_KEYS = (
    "win_rate",
    "win_rate_hint",
    "return_mean",
    "return_mean_hint",
    "regret_mean",
    "band_fraction",
    "difficulty_mean",
    "heldout_success",
    "valid",
    "proposals",
    "buffer_size",
    "episodes",
    "seconds",
)

DICT_ROUND_KEYS = ("refusals", "skill_mix", "heldout_by_family", "heldout_by_suite")
Transcripts = Callable[[str], list[dict[str, Any]]]  # env_id -> sample episodes

CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#dde1e8; --accent:#2f6fdf; --bg:#ffffff; --soft:#f5f7fa; }
* { box-sizing: border-box; }
body { font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; }
main { max-width: 1320px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 14px 0 6px; color: var(--muted); }
a { color: var(--accent); text-decoration: none; }
.muted { color: var(--muted); }
nav { margin: 14px 0 6px; display: flex; flex-wrap: wrap; gap: 6px 14px; font-size: 13px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; margin: 16px 0; }
.card { background: var(--soft); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card b { display: block; font-size: 20px; }
.card span { color: var(--muted); font-size: 12px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 18px; }
figure { margin: 0; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px; }
figure img { width: 100%; height: auto; display: block; }
figcaption { font-weight: 600; margin: 0 0 4px 4px; }
.note { background: #fff8e6; border: 1px solid #f0dca8; border-radius: 8px; padding: 10px 14px; }
table { border-collapse: collapse; font-size: 12.5px; width: 100%; }
th, td { text-align: right; padding: 3px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th:first-child, td:first-child, td.text, th.text { text-align: left; }
thead th { background: var(--soft); position: sticky; top: 0; }
table.compact { width: auto; min-width: 50%; }
.scroll { max-height: 420px; overflow: auto; border: 1px solid var(--line); border-radius: 8px; }
details.env { border: 1px solid var(--line); border-radius: 8px; margin: 6px 0; background: #fff; }
details.env > summary { cursor: pointer; padding: 7px 12px; list-style-position: inside; }
details.env[open] > summary { background: var(--soft); border-bottom: 1px solid var(--line); }
details.env .body { padding: 8px 14px 14px; }
.tag { display: inline-block; background: var(--soft); border: 1px solid var(--line); border-radius: 10px;
       padding: 0 8px; margin-left: 6px; font-size: 12px; color: var(--muted); }
pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 10px; overflow: auto;
      max-height: 480px; font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; margin: 4px 0; }
.turn { margin: 6px 0; padding: 6px 10px; border-radius: 6px; white-space: pre-wrap;
        font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.turn.user { background: #eef3fb; } .turn.assistant { background: #f1f8ef; }
.turn .who { font-weight: 600; font-family: system-ui, sans-serif; color: var(--muted); }
.big { font-size: 28px; font-weight: 700; }
details.family { margin: 8px 0; } details.family > summary { cursor: pointer; font-weight: 600; padding: 4px 0; }
details.family > .members { margin-left: 14px; }
#env-filter { width: 100%; max-width: 520px; padding: 6px 10px; border: 1px solid var(--line); border-radius: 6px;
              font-size: 13px; }
"""

#: Filters the environment browser by the words typed, or given as ``report.html#filter=WORDS`` (every word must
#: appear in a level's line: its id, skill, family, knobs, scores), opening the groups that match. Constant text:
#: the CSP allows it by its hash.
FILTER_SCRIPT = """(function () {
  var box = document.getElementById("env-filter"), shown = document.getElementById("env-shown");
  if (!box) { return; }
  function apply() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean), total = 0;
    document.querySelectorAll("details.family").forEach(function (group) {
      var visible = 0;
      group.querySelectorAll("details.env").forEach(function (env) {
        var line = env.querySelector("summary").textContent.toLowerCase();
        var match = words.every(function (word) { return line.indexOf(word) >= 0; });
        env.hidden = !match;
        visible += match ? 1 : 0;
      });
      group.hidden = visible === 0;
      group.open = words.length > 0 && visible > 0;
      total += visible;
    });
    shown.textContent = String(total);
  }
  box.hidden = false;
  box.addEventListener("input", apply);
  if (location.hash.indexOf("#filter=") === 0) {
    box.value = decodeURIComponent(location.hash.slice(8));
    apply();
  }
})();"""
#: What the page may load: inline styles, data: images and FILTER_SCRIPT, nothing from anywhere.
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       f"script-src 'sha256-{base64.b64encode(hashlib.sha256(FILTER_SCRIPT.encode()).digest()).decode()}'")


def escape(value: Any) -> str:
    """``value`` as HTML text; a field the store leaves empty (None) shows as nothing, never an error."""
    return escape_html("" if value is None else str(value))


def _code(env: dict[str, Any]) -> str:
    """A level's code, or, for a level served by a remote environment (which has no source), where it is served."""
    if env.get("source") is not None:
        return f"<h3>Code</h3><pre>{escape(env['source'])}</pre>"
    remote = env.get("remote") or {}
    served = (env.get("meta") or {}).get("source") or remote.get("url") or "elsewhere"
    return (f"<h3>Served by</h3><pre>{escape(served)}</pre>"
            f"<p>A remote level: its code runs on that server, not here. Reset with "
            f"{escape(_inline_json(remote.get('reset_args') or {}))}.</p>")

def render(run_name: str, data: RunData, transcripts: Transcripts) -> str:
    sections: list[tuple[str, str, str | None]] = [
        ("overview", "Overview", _overview(data)),
        ("learning", "Learning", _learning(data)),
        ("training", "Model training (GRPO, per role)", _training(data)),
        ("designer", "Regret and designer reward", _designer(data)),
        ("watch", "Reward-hacking watch", _watch(data)),
        ("curriculum", "Curriculum: difficulty, skills, buffer", _curriculum(data)),
        ("validity", "Validity and refusals", _validity(data)),
        ("throughput", "Throughput", _throughput(data)),
        ("rounds", "Rounds", _rounds_table(data)),
        ("environments", "Environment browser", _browser(data, transcripts)),
        ("config", "Configuration", _config(data)),
    ]
    present = [(a, t, body) for a, t, body in sections if body is not None]
    absent = [t for _, t, body in sections if body is None]
    nav = "".join(f'<a href="#{a}">{escape(t)}</a>' for a, t, _ in present)
    body = "".join(f'<section id="{a}"><h2>{escape(t)}</h2>{html}</section>' for a, t, html in present)
    if absent:
        body += (
            '<p class="muted">Not recorded in this run (no data, section omitted): '
            + escape(", ".join(absent))
            + ".</p>"
        )
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>spadegym report: {escape(run_name)}</title><style>{CSS}</style></head>"
        f"<body><main><h1>spadegym run report: {escape(run_name)}</h1>"
        f'<div class="muted">generated {generated} from the run store; re-run '
        f"<code>spadegym report</code> to refresh</div><nav>{nav}</nav>{body}</main>"
        f"<script>{FILTER_SCRIPT}</script></body></html>\n"
    )


# -- sections ----------------------------------------------------------------


def _overview(data: RunData) -> str:
    last = data.summaries[-1] if data.summaries else {}
    valid = sum(p["valid"] for p in data.proposals)
    cards = [
        (str(len(data.summaries)), "complete rounds"),
        (str(len(data.environments)), "valid environments"),
        (f"{len(data.proposals)}", f"proposals ({valid} valid)"),
        (str(data.episode_count), "episodes"),
    ]
    for key, label in (
        ("win_rate", "last win rate"),
        ("win_rate_hint", "last win rate, hint"),
        ("return_mean", "last mean return"),
        ("heldout_success", "last held-out success"),
    ):
        if isinstance(last.get(key), (int, float)):
            cards.append((f"{last[key]:.3f}", label))
    for suite, value in _last_by_suite(data).items():
        cards.append((f"{value:.3f}", f"held-out: {suite.replace('_', ' ')}"))
    html = (
        '<div class="cards">'
        + "".join(f'<div class="card"><b>{escape(v)}</b><span>{escape(k)}</span></div>' for v, k in cards)
        + "</div>"
    )
    started = (
        dt.datetime.fromtimestamp(data.created_at, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        if data.created_at
        else "unknown"
    )
    html += f'<p class="muted">run started {started}; versions: {escape(_inline_json(data.versions))}</p>'
    if not data.summaries:
        html += (
            '<div class="note"><b>No complete round yet.</b> The store holds no finished round: the run '
            "has just started, or it stopped before its first round finished (a round is written all at "
            "once when it ends, so an interrupted round leaves nothing behind). Plots appear once a round "
            "completes; resume the run with <code>spadegym run --resume DIR</code>.</div>"
        )
    return html


def _last_by_suite(data: RunData) -> dict[str, float]:
    """Each held-out suite's latest figure (suites other than the first are measured less often)."""
    out: dict[str, float] = {}
    for summary in data.summaries:
        for suite, value in (summary.get("heldout_by_suite") or {}).items():
            if isinstance(value, (int, float)):
                out[suite] = value
    return out


def _learning(data: RunData) -> str | None:
    figures = []
    series = data.win_rates()
    if series:
        figures.append(("Win rate with and without hint", plots.lines(series, "win rate", unit_range=True)))
    band = data.band_fraction()
    if band:
        lo, hi = BAND
        title = f"Learnable-band fraction (no-hint win rate in [{lo}, {hi}])"
        figures.append((title, plots.lines([band], "share of environments played", unit_range=True)))
    overall = data.summary_series("heldout_success", "held-out success")
    if overall:
        figures.append(("Held-out success", plots.lines([overall], "success rate", unit_range=True)))
    by_suite = data.summary_dict_series("heldout_by_suite")
    if by_suite:
        figures.append(("Held-out success by suite (in distribution, frontier, edge cases, unseen families, "
                        "your files)", plots.lines(by_suite, "success rate", unit_range=True)))
    by_family = data.summary_dict_series("heldout_by_family")
    if by_family:
        figures.append(
            ("Held-out success by family", plots.lines(by_family, "success rate", unit_range=True))
        )
    by_level = [Series(f"level {s.label}", s.rounds, s.values) for s in data.summary_dict_series("heldout_by_level")]
    if by_level:
        figures.append(("Held-out success by level", plots.lines(by_level, "success rate", unit_range=True)))
    return _grid(*figures) if figures else None


def _training(data: RunData) -> str | None:
    """Both roles' GRPO updates (hf: models): reward, KL, clip fraction, tokens."""
    roles = [r for r in ("agent", "designer") if data.summary_series(f"learner.{r}_updates")]
    if not roles:
        return None
    figures = []
    for key, title, axis in (("reward", "Reward of the trained samples", "mean reward"),
                             ("kl_sampling", "KL(sampling policy || updated policy)", "KL per token"),
                             ("clip_ratio_region_mean", "Clipped token fraction", "fraction"),
                             ("is_logratio_mean", "Sampler-trainer mismatch (vLLM): mean per-token |log-ratio|",
                              "|log-ratio|"),
                             ("is_logratio_max", "Sampler-trainer mismatch (vLLM): largest per-token |log-ratio|",
                              "|log-ratio|"),
                             ("tokens_trained", "Tokens trained (replies) per update", "tokens"),
                             ("tokens_masked", "Observation tokens masked per update", "tokens")):
        series = [s for s in (data.summary_series(f"learner.{r}_{key}", r) for r in roles) if s]
        if series:
            figures.append((title, plots.lines(series, axis)))
    valid = data.summary_series("learner.designer_valid_rate", "designer valid rate")
    if valid:
        figures.append(("Designer validity rate (trained completions)", plots.lines([valid], "share", unit_range=True)))
    return _updates_table(data, roles) + _grid(*figures)


def _updates_table(data: RunData, roles: list[str]) -> str:
    """Per role: rounds with a GRPO step, samples and tokens trained, mean reward of its samples, last KL."""
    def values(role: str, key: str) -> list[float]:
        series = data.summary_series(f"learner.{role}_{key}")
        return series.values if series else []

    rows = ""
    for role in roles:
        rewards, kl = values(role, "reward"), values(role, "kl_sampling")
        rows += (f"<tr><td>{role}</td><td>{len(values(role, 'updates'))}</td>"
                 f"<td>{int(sum(values(role, 'samples')))}</td><td>{int(sum(values(role, 'tokens_trained')))}</td>"
                 f"<td>{_fmt(sum(rewards) / len(rewards) if rewards else None)}</td>"
                 f"<td>{_fmt(kl[-1] if kl else None)}</td></tr>")
    return ("<table class=compact><thead><tr><th>role</th><th>GRPO steps</th><th>samples</th><th>tokens trained</th>"
            f"<th>mean reward</th><th>last KL</th></tr></thead><tbody>{rows}</tbody></table>")


def _designer(data: RunData) -> str | None:
    figures, intro = [], ""
    regret = data.values("regret")
    if regret:
        figures.append(("Hint regret (all environment-rounds)", plots.histogram(regret, "regret")))
    rewards = data.designer_rewards()
    if rewards:
        figures.append(("Designer reward", plots.histogram(rewards, "designer reward", color="tab:purple")))
    mean_regret = data.summary_series("regret_mean", "mean regret")
    if mean_regret:
        figures.append(("Mean regret per round", plots.lines([mean_regret], "regret")))
    corr = data.correlation()
    if corr.regret:
        number = (
            "undefined (fewer than 3 pairs or no variance)" if corr.pearson is None else f"{corr.pearson:.3f}"
        )
        intro = (
            f'<p id="oracle">Pearson correlation between hint regret and oracle regret over {len(corr.regret)} '
            f'environment-rounds where both exist: <span class="big">{escape(number)}</span></p>'
        )
        figures.append(("Hint regret vs oracle regret", plots.scatter(corr)))
    return intro + _grid(*figures) if figures else None


def _watch(data: RunData) -> str | None:
    """What the watch flagged (per designer, each finding and the round it was first flagged), its latest
    counts, and the trend check (designer reward up while held-out success and diversity fall)."""
    watches = [(s["round"], s["designer_watch"]) for s in data.summaries if s.get("designer_watch")]
    if not watches:
        return None  # a run from before the watch, or one that recorded none
    first: dict[tuple[str, str], int] = {}
    for n, watch in watches:
        for designer, record in (watch.get("designers") or {}).items():
            for kind in record.get("kinds", []):
                first.setdefault((designer, kind), n)
        if watch.get("flag") and "trend" in watch.get("kinds", ["trend"]):
            first.setdefault(("(run)", "trend"), n)
    latest = watches[-1][1]
    if first:
        rows = "".join(f"<tr><td class=text>{escape(d)}</td><td class=text>{escape(k)}</td><td>{_fmt(n)}</td>"
                       f"<td>{_found(latest, d, k)}</td></tr>" for (d, k), n in sorted(first.items()))
        html = ('<div class="note"><b>Reward hacking flagged</b>: a designer\'s levels show a finding again and '
                "again (see the watch's rules in the docs); levels with a finding earn no designer reward.</div>"
                "<table><tr><th>designer</th><th>finding</th><th>first flagged (round)</th>"
                f"<th>levels now (found / decided)</th></tr>{rows}</table>")
    else:
        html = '<p class="muted">Reward-hacking watch: never flagged.</p>'
    if "heldout_success" in latest.get("missing", []):
        html += ('<p class="muted">Its trend check (designer reward rising while held-out success and diversity '
                 "fall) cannot flag a run without held-out evaluations during the run: set heldout.every.</p>")
    return html


def _found(watch: dict, designer: str, kind: str) -> str:
    counts = ((watch.get("designers") or {}).get(designer) or {}).get("levels", {}).get(kind)
    return f"{counts[0]} / {counts[1]}" if counts else ""


def _curriculum(data: RunData) -> str | None:
    figures = []
    difficulty = data.difficulty()
    if difficulty:
        figures.append(
            ("Mean difficulty (level index) per family/knob", plots.lines(difficulty, "mean level"))
        )
    mix = data.skill_mix()
    if mix:
        figures.append(
            (
                "Skill mix of new environments per round",
                plots.stacked_bars(data.round_numbers, mix, "environments"),
            )
        )
    buffer = data.summary_series("buffer_size", "in the buffer")
    if buffer:
        retired = data.summary_series("buffer.retired", "retired (out of replay)")
        figures.append(("Level buffer size", plots.lines([buffer, *([retired] if retired else [])], "environments")))
    diversity = data.diversity()
    if diversity:
        figures.append(("Diversity: Vendi score per level (n-gram kernel)",
                        plots.lines(diversity, "effective share of distinct levels", unit_range=True)))
    collapsed = [s["round"] for s in data.summaries if (s.get("diversity") or {}).get("collapsed")]
    note = (f'<div class="note"><b>The pool collapsed</b> in {len(collapsed)} round(s) (first: round '
            f"{collapsed[0]}): the code of its levels is so alike that they count as few distinct games "
            "(Vendi score per level below 0.1). A designer without grounding repeats itself; give it a "
            "corpus, more families or more varied parents.</div>") if collapsed else ""
    return note + _grid(*figures) if figures else note or None


def _validity(data: RunData) -> str | None:
    figures = []
    validity = data.validity()
    if validity:
        figures.append(("Valid share of proposals", plots.lines([validity], "valid share", unit_range=True)))
    refusals = data.refusals()
    if refusals:
        figures.append(
            ("Refusal reasons (all rounds)", plots.horizontal_bars(dict(refusals), "proposals refused"))
        )
    invalid = [p for p in data.proposals if not p["valid"]][-20:]
    html = _grid(*figures) if figures else ""
    if invalid:
        rows = "".join(
            f"<tr><td>{_fmt(p['round'])}</td><td class=text>{escape(str(p['candidate_id'] or p['id']))}</td>"
            f"<td class=text>{escape(str(p['candidate'].get('skill') or ''))}</td>"
            f"<td class=text>{escape(_short(_inline_json(p['verdict']), 160))}</td></tr>"
            for p in invalid
        )
        html += (
            "<h3>Latest invalid proposals</h3><div class=scroll><table><thead><tr><th>round</th>"
            "<th class=text>candidate</th><th class=text>skill</th><th class=text>verdict</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>"
        )
    return html or None


def _throughput(data: RunData) -> str | None:
    figures = []
    for key, label, ylabel in (
        ("episodes", "Episodes per round", "episodes"),
        ("seconds", "Seconds per round", "seconds"),
    ):
        series = data.summary_series(key, label)
        if series:
            figures.append((label, plots.lines([series], ylabel)))
    return _grid(*figures) if figures else None


def _rounds_table(data: RunData) -> str | None:
    if not data.summaries:
        return None
    present = {
        k for s in data.summaries for k, v in s.items() if isinstance(v, (int, float)) and k != "round"
    }
    columns = [k for k in KNOWN_ROUND_KEYS if k in present] + sorted(present - set(KNOWN_ROUND_KEYS))
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    shown = data.summaries[-MAX_ROUND_ROWS:]
    rows = "".join(
        f"<tr><td>{_fmt(s['round'])}</td>" + "".join(f"<td>{_fmt(s.get(c))}</td>" for c in columns) + "</tr>"
        for s in shown
    )
    note = "" if len(shown) == len(data.summaries) else f'<p class="muted">last {len(shown)} rounds</p>'
    keys = {k for s in data.summaries for k in s}
    missing = [k for k in (*KNOWN_ROUND_KEYS, *DICT_ROUND_KEYS) if k not in keys]
    if missing:
        note += f'<p class="muted">summary keys not recorded by this run: {escape(", ".join(missing))}</p>'
    return f"{note}<div class=scroll><table><thead><tr><th>round</th>{head}</tr></thead><tbody>{rows}</tbody></table></div>"


def _browser(data: RunData, transcripts: Transcripts) -> str:
    """The newest environments grouped by family, each group collapsed, with a filter box (shown by the script)."""
    envs = list(reversed(data.environments))[:MAX_ENVIRONMENTS]
    if not envs:
        return '<p class="muted">No valid environment in a complete round yet.</p>'
    groups: dict[str, list[dict[str, Any]]] = {}
    for env in envs:
        groups.setdefault(str(env.get("family") or "no family"), []).append(env)
    head = (
        f'<p class=muted><span id="env-shown">{len(envs)}</span> of {len(data.environments)} valid environments '
        f"(newest first) in {len(groups)} families; open a family, then a level.</p>"
        '<input id="env-filter" type="search" hidden placeholder="filter: words of a level\'s id, skill, family, '
        'knobs (size=3) or scores">'
    )
    return head + "".join(_family(name, members, data, transcripts) for name, members in sorted(groups.items()))


def _family(name: str, envs: list[dict[str, Any]], data: RunData, transcripts: Transcripts) -> str:
    skills = sorted({str(env.get("skill")) for env in envs if env.get("skill")})
    return (
        f'<details class="family"><summary>{escape(name)} <span class="muted">· {len(envs)} '
        f'level{"s" if len(envs) != 1 else ""}{" · " + escape(", ".join(skills)) if skills else ""}</span></summary>'
        f'<div class="members">{"".join(_environment(env, data, transcripts) for env in envs)}</div></details>'
    )


def knob_line(knobs: dict[str, Any]) -> str:
    """Knobs as ``key=value`` words (a value that is not a number or a word as compact JSON), as --set writes them."""
    def shown(value: Any) -> str:
        return str(value) if isinstance(value, (int, float, str)) and " " not in str(value) else \
            json.dumps(value, separators=(",", ":"), default=str)
    return " ".join(f"{key}={shown(value)}" for key, value in knobs.items())


def _environment(env: dict[str, Any], data: RunData, transcripts: Transcripts) -> str:
    score = data.latest_scores.get(env["env_id"])
    knobs = env["knobs"]
    shown_knobs = (knob_line(knobs) if isinstance(knobs, dict) else _inline_json(knobs)) if knobs else None
    tags = [env.get("skill"), env.get("family"), shown_knobs]
    tag_html = "".join(f'<span class="tag">{escape(str(t))}</span>' for t in tags if t)
    if score:
        tag_html += (
            f'<span class="tag">win {_fmt(score["win_rate"])} / hint {_fmt(score["win_rate_hint"])}'
            f" · regret {_fmt(score['regret'])}</span>"
        )
    history = [r for r in data.scores if r["env_id"] == env["env_id"]]
    parts = [
        f"<p><b>round added:</b> {_fmt(env['round'])} · <b>code hash:</b> {escape(str(env['code_hash']))}</p>",
        f"<h3>Hint</h3><pre>{escape(env['hint'] or '(none)')}</pre>",
        f"<h3>Lineage</h3><pre>{escape(_inline_json(env['lineage']))}</pre>",
    ]
    if history:
        rows = "".join(
            f"<tr><td>{_fmt(r['round'])}</td><td>{_fmt(r['win_rate'])}</td><td>{_fmt(r['win_rate_hint'])}</td>"
            f"<td>{_fmt(r['regret'])}</td><td>{_fmt(r['oracle_regret'])}</td><td>{_fmt(r['designer_reward'])}</td>"
            f"<td>{_fmt(r['plays'])}</td></tr>"
            for r in history
        )
        parts.append(
            "<h3>Scores</h3><table class=compact><thead><tr><th>round</th><th>win rate</th><th>with hint</th><th>regret</th>"
            f"<th>oracle regret</th><th>designer reward</th><th>plays</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    parts.append(_code(env))
    for ep in transcripts(env["env_id"]):
        parts.append(_transcript(ep))
    return (
        f'<details class="env"><summary><b>{escape(env["env_id"])}</b>{tag_html}</summary>'
        f'<div class="body">{"".join(parts)}</div></details>'
    )


def _transcript(ep: dict[str, Any]) -> str:
    arm = "with hint" if ep.get("hinted") else "no hint"
    outcome = "success" if ep.get("success") else (ep.get("failure") or "no success")
    turns = "".join(
        f'<div class="turn user"><span class="who">observation</span>\n{escape(_short(t["observation"], MAX_TEXT))}</div>'
        f'<div class="turn assistant"><span class="who">reply</span> (action: '
        f"{escape(repr(t.get('action')))}, reward {_fmt(t.get('reward'))})\n{escape(_short(t['reply'], MAX_TEXT))}</div>"
        for t in ep.get("turns") or ()
    )
    final = ep.get("final_observation")
    if final:
        turns += f'<div class="turn user"><span class="who">final observation</span>\n{escape(_short(final, MAX_TEXT))}</div>'
    return (
        f"<h3>Sample transcript: {arm}, round {_fmt(ep['round'])}, seed {_fmt(ep.get('seed'))}, "
        f"return {_fmt(ep.get('ret'))} ({escape(str(outcome))})</h3>{turns}"
    )


def _config(data: RunData) -> str:
    return (
        f"<details><summary>config (as stored with the run)</summary><pre>{escape(json.dumps(data.config, indent=2))}</pre>"
        f"</details><details><summary>versions</summary><pre>{escape(json.dumps(data.versions, indent=2))}</pre></details>"
    )


# -- small formatting --------------------------------------------------------


def _grid(*figures: tuple[str, str]) -> str:
    return (
        '<div class="grid">'
        + "".join(
            f'<figure><figcaption>{escape(title)}</figcaption><img alt="{escape(title)}" src="{src}"></figure>'
            for title, src in figures
        )
        + "</div>"
    )


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:.0f}"
    return escape(str(value))


def _short(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def _inline_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))

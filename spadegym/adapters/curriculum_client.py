"""A trainer process's side of the curriculum service: draw a slot, play it in this process's sandbox, report it.

Every entry point (TRL's environment, the verifiers environment) plays a draw
the same way: ``CurriculumPlay`` starts a ``PlaySession`` on the drawn level
(its source came with the draw; it runs in a sandbox worker here), with the
hint line when the slot is of the hint arm, and reports the episode once,
whatever the trainer does after (a second ``report`` is a no-op here, and a
duplicate the service counts nowhere).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..loop.driven import Draw
from ..sandbox import Sandbox
from .level import ServedLevel
from .session import PlaySession, Transition

#: Seconds a call may take: a draw that opens a round waits for the designer and the gate.
CALL_TIMEOUT_S = 900.0


class CurriculumUnreachable(UserError):
    """No curriculum service answers at the address given."""


class CurriculumClient:
    """Calls the service at ``url`` with ``token`` (``CurriculumService``)."""

    def __init__(self, url: str, token: str, timeout: float = CALL_TIMEOUT_S):
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout
        # Direct, never through a proxy: the service is on this machine's loopback.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @classmethod
    def at(cls, run_dir: str | Path) -> CurriculumClient:
        """The service a ``spadegym curriculum`` command serves for ``run_dir`` (its ``curriculum.json``)."""
        from .curriculum_service import ADDRESS_FILE, LOOPBACK

        path = Path(run_dir) / ADDRESS_FILE
        try:
            data = json.loads(path.read_text())
            url, token = str(data["url"]), str(data["token"])
        except (OSError, ValueError, KeyError, TypeError):
            raise CurriculumUnreachable(
                f"{path} names no curriculum service; start one with `spadegym curriculum "
                f"--config FILE --out {run_dir}` and keep it running."
            ) from None
        if not url.startswith(f"http://{LOOPBACK}:"):  # a run directory is data: it never sends us elsewhere
            raise CurriculumUnreachable(
                f"{path} names {url!r}, which is not this machine's loopback; start the "
                "service again with `spadegym curriculum`."
            )
        return cls(url, token)

    def draw(self, ticket: str) -> Draw:
        return Draw(**self._call("/draw", {"ticket": ticket}))

    def report(self, play_id: str, episode: dict[str, Any]) -> str:
        return str(self._call("/report", {"play_id": play_id, "episode": episode})["status"])

    def status(self) -> dict[str, Any]:
        return self._call("/status", None)

    def _call(self, route: str, body: dict[str, Any] | None) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url + route,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with self._opener.open(request, timeout=self.timeout) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read()).get("error") or exc.reason
            except ValueError:
                message = exc.reason
            raise UserError(f"the curriculum service refused {route}: {message}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CurriculumUnreachable(
                f"no curriculum service answers at {self.url} ({reason}); the trainer's main "
                "process (or `spadegym curriculum`) serves it: check that it is running."
            ) from None


class _Drawn:
    """The one level a draw names, as a level source."""

    def __init__(self, level: ServedLevel):
        self.level = level

    def levels(self) -> list[ServedLevel]:
        return [self.level]


class CurriculumPlay:
    """One rollout at a time: ``start`` draws and resets, ``step`` plays, ``finish`` reports (once).

    ``origin`` names where the play ran (a process), kept with the episode in the store (``trace_ref``).
    """

    def __init__(
        self,
        client: CurriculumClient,
        *,
        actions: str = "raw",
        max_turns: int = 25,
        sandbox: Sandbox | None = None,
        origin: str = "",
    ):
        self.client, self.origin = client, origin
        self._session_args = {"actions": actions, "max_turns": max_turns, "sandbox": sandbox}
        self.session: PlaySession | None = None
        self.draw: Draw | None = None
        self._reported = True

    def start(self, ticket: str) -> Transition:
        self.finish()  # a rollout the trainer never scored is reported before the next starts
        draw = self.client.draw(ticket)
        level = ServedLevel.of(draw.level_id, draw.source, draw.filename, hint=draw.hint, skill=draw.skill)
        if self.session is None:  # one session: it keeps its worker while the drawn level stays the same
            self.session = PlaySession(_Drawn(level), **self._session_args)  # type: ignore[arg-type]
        self.session.source, self.session.hinted = _Drawn(level), draw.hinted
        self.draw, self._reported = draw, False
        return self.session.reset(seed=draw.seed, level_id=draw.level_id)

    def finish(self) -> float:
        """Report the play (once) and give its return: the episode's, or 0 for one that did not end."""
        if self._reported or self.draw is None or self.session is None or self.session.episode is None:
            return 0.0
        episode = self.session.episode
        data = episode.to_dict()
        if not self.session.done:  # out of the trainer's turns: 0 by the return rule
            data.update(ret=0.0, truncated=True)
        data["trace_ref"] = f"{self.origin} {self.draw.play_id}".strip()
        self.client.report(self.draw.play_id, data)
        self._reported = True
        return float(data["ret"])

    def close(self) -> None:
        if self.session is not None:
            self.session.close()

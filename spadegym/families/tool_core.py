"""The tool-use setting's machinery, rendered into every tool-use family's file after ``core.EpisodeCore``.

A tool-use family is a game whose actions are tool calls. It describes:
``tool_specs`` (the tools the task needs: name -> (description, {parameter:
JSON type})), ``calls`` (the calls that make sense now, ``(name, arguments)``:
with argument values the agent has seen, so information must be queried
before it can be used), ``run`` (one call -> output text, progress, outcome;
an error output is how a tool fails and the agent recovers) and ``best``
(the next call of a winning plan, from the hidden state). ``ToolCore`` turns
that into the environment contract:

- ``get_tools()`` lists the tools' schemas, plus ``distractors`` tools the task
  never needs (they answer, change nothing, and use a turn);
- ``execute_tool(name, arguments)`` plays the call as a step (a tool call is a
  turn), so the episode, reward and turn budget rules are ``EpisodeCore``'s;
- ``valid_actions()`` lists the calls as JSON actions ``{"arguments": {...},
  "name": ...}`` (the menu a choosing agent picks from); a call whose
  arguments are not on the menu is an invalid action, answered, never raised;
- ``step`` also takes a call written as JSON (boxed or not, keys in any order)
  or in the reference's ``<tool_call>`` text protocol.

All names and values are lower case, so a call reads the same however an
agent spaces or cases it. Like ``EpisodeCore``, the class is rendered into the
file: it uses only the modules the family's file imports (``json``, ``re``).
"""

from __future__ import annotations

import json
import re

from .core import EpisodeCore


class ToolCore(EpisodeCore):
    """Tools, tool calls as actions, distractor tools; see the module docstring."""

    #: People's names the families draw from (all lower case, as every name and value of a call).
    NAMES = ["ana", "bo", "cy", "dee", "eli", "fay", "gus", "hal", "ivy", "jo"]
    #: Tools no task needs, by name: (description, parameters, the answer they give).
    DISTRACTORS = {
        "get_weather": ("Today's weather in a city.", {"city": "string"}, "sunny, 21 degrees"),
        "get_time": ("The current time.", {}, "10:42"),
        "send_note": ("Send a short note to a colleague.", {"to": "string"}, "note sent"),
        "ping": ("Check that the service is up.", {}, "pong"),
    }

    def get_tools(self):
        specs = dict(self.tool_specs())
        for name in list(self.DISTRACTORS)[: int(self.knobs.get("distractors", 0))]:
            description, params, _answer = self.DISTRACTORS[name]
            specs[name] = (description, params)
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": {
                        "type": "object",
                        "properties": {p: {"type": t} for p, t in params.items()},
                        "required": list(params),
                    },
                },
            }
            for name, (description, params) in specs.items()
        ]

    def execute_tool(self, name, arguments):
        return self.step(self.call_text(str(name), arguments if isinstance(arguments, dict) else {}))

    @staticmethod
    def call_text(name, arguments):
        # The one written form of a call: sorted keys, lower case (the menu's and the solution's form).
        try:
            return json.dumps({"name": name, "arguments": arguments}, sort_keys=True).lower()
        except (TypeError, ValueError):
            return json.dumps({"name": name, "arguments": {}}).lower()

    def unbox(self, action):
        # A call in JSON (boxed or in <tool_call> tags, keys in any order) becomes its written form.
        tagged = re.search(r"<tool_call>(.*?)</tool_call>", action, re.DOTALL)
        start = action.rfind("\\boxed{")
        if tagged:
            text = tagged.group(1)
        elif 0 <= start < action.rfind("}"):
            text = action[start + 7 : action.rfind("}")]
        else:
            text = action
        try:
            data = json.loads(text.strip())
        except ValueError:
            return text
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            arguments = data.get("arguments")
            return self.call_text(data["name"], arguments if isinstance(arguments, dict) else {})
        return text

    def actions(self):
        menu = [self.call_text(name, args) for name, args in self.calls()]
        for name in list(self.DISTRACTORS)[: int(self.knobs.get("distractors", 0))]:
            params = self.DISTRACTORS[name][1]
            menu.append(self.call_text(name, {p: "rome" for p in params}))
        return menu

    def apply(self, action):
        data = json.loads(action)
        name, arguments = data["name"], data["arguments"]
        if name in self.DISTRACTORS:
            return f"{name}: {self.DISTRACTORS[name][2]}", 0.0, None
        output, progress, outcome = self.run(name, arguments)
        return f"{name} -> {output}", progress, outcome

    def policy(self):
        name, arguments = self.best()
        return self.call_text(name, arguments)

    def advice(self):
        # The next call of a winning plan, written as the menu writes it (so its words are the call's own).
        name, arguments = self.best()
        return "next: " + self.call_text(name, arguments)

    # -- what a tool-use family defines ------------------------------------------
    def tool_specs(self):
        raise NotImplementedError

    def calls(self):
        raise NotImplementedError

    def run(self, name, arguments):
        raise NotImplementedError

    def best(self):
        raise NotImplementedError

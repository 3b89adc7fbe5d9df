"""Spatial Reasoning families: grid maze, key and door rooms, sonar treasure dig.

Each class is rendered into a standalone file (see ``core``); it uses only
``self.knobs`` (the knob values), ``self.rng`` and the standard library.
"""

from __future__ import annotations

from .core import EpisodeCore
from .registry import Family, register_family
from .variation import Extend

SKILL = "Spatial Reasoning"

#: The compass words of the grid games (moves and the observations that name them).
_DIRECTIONS = {"go": ("go", "move", "walk", "step"), "north": ("north", "up", "northward", "upward"),
               "south": ("south", "down", "southward", "downward"), "west": ("west", "left", "westward", "leftward"),
               "east": ("east", "right", "eastward", "rightward")}


class GridMazeEnv(EpisodeCore):
    """Walk a grid whose walls show only around you, from the start to the goal."""

    TITLE = "grid maze"
    MOVES = {"north": (-1, 0), "south": (1, 0), "west": (0, -1), "east": (0, 1)}

    def budget(self):
        # Random walks cover a small grid fast: the budget grows with the side, not the area.
        return 2 * self.knobs["size"] + self.knobs["slack"]

    def setup(self):
        n = self.knobs["size"]
        cells = [(r, c) for r in range(n) for c in range(n)]
        while True:
            self.walls = {cell for cell in cells if self.rng.random() < self.knobs["walls"]}
            free = [cell for cell in cells if cell not in self.walls]
            if len(free) < 2:
                continue
            self.pos, self.goal = self.rng.sample(free, 2)
            dist = self._distance(self.pos, self.goal)
            if dist is not None and n - 1 <= dist <= self.max_turns - 2:
                break

    def _open(self, cell):
        n = self.knobs["size"]
        out = []
        for name, (dr, dc) in self.MOVES.items():
            r, c = cell[0] + dr, cell[1] + dc
            if 0 <= r < n and 0 <= c < n and (r, c) not in self.walls:
                out.append((name, (r, c)))
        return out

    def _distance(self, start, goal, first=False):
        frontier, seen = [(start, None)], {start: 0}
        while frontier:
            nxt = []
            for cell, move in frontier:
                for name, to in self._open(cell):
                    if to in seen:
                        continue
                    seen[to] = seen[cell] + 1
                    m = move or name
                    if to == goal:
                        return m if first else seen[to]
                    nxt.append((to, m))
            frontier = nxt
        return None

    def observe(self):
        lines = [f"position: row {self.pos[0] + 1}, column {self.pos[1] + 1}",
                 f"goal: row {self.goal[0] + 1}, column {self.goal[1] + 1}",
                 "open directions: " + ", ".join(name for name, _ in self._open(self.pos))]
        if self.knobs.get("compass"):  # an aid at easy levels: which way the goal lies (walls aside)
            (r, c), (gr, gc) = self.pos, self.goal
            ways = ["south" if gr > r else "north"] * (gr != r) + ["east" if gc > c else "west"] * (gc != c)
            lines.append("goal direction: " + ", ".join(ways))
        return lines

    def actions(self):
        return [f"go {name}" for name in self.MOVES]

    def apply(self, action):
        name = action.split()[1]
        exits = dict(self._open(self.pos))
        if name not in exits:
            return f"a wall blocks the way {name}", -0.5, None
        before = abs(self.goal[0] - self.pos[0]) + abs(self.goal[1] - self.pos[1])
        self.pos = exits[name]
        if self.pos == self.goal:
            return "you reached the goal", 1.0, "win"
        after = abs(self.goal[0] - self.pos[0]) + abs(self.goal[1] - self.pos[1])
        return f"you went {name}", 0.5 if after < before else 0.0, None

    def policy(self):
        return f"go {self._distance(self.pos, self.goal, first=True)}"

    def advice(self):
        return f"head {self.policy().split()[1]}: the shortest open path to the goal starts that way"


class KeyRoomsEnv(EpisodeCore):
    """Find the key hidden in one of the rooms, then unlock the exit door."""

    TITLE = "key and door"

    def budget(self):
        # Worst case: across the whole tree to the key and back to the door.
        return 2 * self.knobs["rooms"] + self.knobs["slack"]

    def setup(self):
        n = self.knobs["rooms"]
        rooms = list(range(1, n + 1))
        self.rng.shuffle(rooms)
        self.links = {r: set() for r in rooms}
        for i in range(1, n):  # a random tree keeps every room reachable
            a, b = rooms[i], rooms[self.rng.randrange(i)]
            self.links[a].add(b)
            self.links[b].add(a)
        for _ in range(self.knobs["extra_passages"]):
            a, b = self.rng.sample(rooms, 2)
            self.links[a].add(b)
            self.links[b].add(a)
        self.here, self.key_room, self.door_room = rooms[0], rooms[-1], self.rng.choice(rooms[:-1])
        self.has_key = False

    def _route(self, goal):
        frontier, first = [self.here], {self.here: None}
        while frontier:
            nxt = []
            for room in frontier:
                for to in sorted(self.links[room]):
                    if to not in first:
                        first[to] = first[room] or to
                        if to == goal:
                            return first[to]
                        nxt.append(to)
            frontier = nxt
        return None

    def observe(self):
        lines = [f"room: {self.here}",
                 "passages: " + ", ".join(f"room {r}" for r in sorted(self.links[self.here])),
                 f"exit door: room {self.door_room} (locked)",
                 "carrying: " + ("the key" if self.has_key else "nothing")]
        if self.here == self.key_room and not self.has_key:
            lines.append("you see: a key")
        if self.here == self.door_room:
            lines.append("here: the locked exit door")
        return lines

    def actions(self):
        return [f"go to room {r}" for r in sorted(self.links[self.here])] + ["take key", "unlock door"]

    def apply(self, action):
        if action == "take key":
            if self.here == self.key_room and not self.has_key:
                self.has_key = True
                return "you picked up the key", 1.0, None
            return "there is no key here", -0.5, None
        if action == "unlock door":
            if self.here != self.door_room:
                return "there is no door here", -0.5, None
            if not self.has_key:
                return "the door is locked; you need the key", -0.5, None
            return "the door opens; you escaped", 1.0, "win"
        self.here = int(action.split()[-1])
        return f"you walk into room {self.here}", 0.0, None

    def policy(self):
        if not self.has_key:
            return "take key" if self.here == self.key_room else f"go to room {self._route(self.key_room)}"
        return "unlock door" if self.here == self.door_room else f"go to room {self._route(self.door_room)}"

    def advice(self):
        action = self.policy()
        if action.startswith("go"):
            toward = "the exit door" if self.has_key else "the key"
            return f"{action}: it is on the way to {toward}"
        return f"{'the key is here' if action == 'take key' else 'the door is here'}: {action}"


class SonarDigEnv(EpisodeCore):
    """A sonar reports the distance to buried treasure; move, then dig at the right spot."""

    TITLE = "sonar dig"
    MOVES = {"north": (-1, 0), "south": (1, 0), "west": (0, -1), "east": (0, 1)}

    def budget(self):
        return 2 * (self.knobs["size"] - 1) + 1 + self.knobs["slack"]

    def setup(self):
        n = self.knobs["size"]
        cells = [(r, c) for r in range(n) for c in range(n)]
        self.pos, self.treasure = self.rng.sample(cells, 2)
        self.shovels = self.knobs["shovels"]

    def _distance(self):
        return abs(self.pos[0] - self.treasure[0]) + abs(self.pos[1] - self.treasure[1])

    def observe(self):
        n = self.knobs["size"]
        return [f"field: {n} by {n}", f"position: row {self.pos[0] + 1}, column {self.pos[1] + 1}",
                f"sonar: treasure is {self._distance()} steps away", f"digs left: {self.shovels}"]

    def actions(self):
        return [f"go {name}" for name in self.MOVES] + ["dig"]

    def apply(self, action):
        if action == "dig":
            if self._distance() == 0:
                return "you dug up the treasure", 1.0, "win"
            self.shovels -= 1
            if self.shovels <= 0:
                return "nothing here, and your shovel broke", 0.0, "lose"
            return "nothing here", -0.5, None
        dr, dc = self.MOVES[action.split()[1]]
        r, c = self.pos[0] + dr, self.pos[1] + dc
        n = self.knobs["size"]
        if not (0 <= r < n and 0 <= c < n):
            return "you are at the edge of the field", -0.5, None
        before = self._distance()
        self.pos = (r, c)
        return f"sonar pings {self._distance()}", 0.5 if self._distance() < before else -0.2, None

    def policy(self):
        (r, c), (tr, tc) = self.pos, self.treasure
        if r != tr:
            return "go south" if tr > r else "go north"
        if c != tc:
            return "go east" if tc > c else "go west"
        return "dig"

    def advice(self):
        action = self.policy()
        if action == "dig":
            return "the treasure is right here: dig"
        return f"the treasure lies to the {action.split()[1]}: {action}"


register_family(Family(
    name="grid_maze", skill=SKILL, env_class=GridMazeEnv,
    description="Navigate a grid with hidden walls (only the open directions around you show) to a goal.",
    own_knobs={"size": [4, 4, 5, 6], "walls": [0.1, 0.2, 0.25, 0.3], "slack": [3, 3, 2, 2],
               "compass": [1, 1, 0, 0]},
    extend={"size": Extend(1, 9), "walls": Extend(0.05, 0.4), "slack": Extend(-1, 0)},
    phrases={"grid maze": ("grid maze", "hedge maze", "wall labyrinth", "corridor grid"),
             "position": ("position", "location", "you stand at", "current cell"),
             "goal": ("goal", "target", "finish", "destination"),
             "open directions": ("open directions", "free ways", "unblocked sides", "passable sides"),
             "row": ("row", "line", "rank", "y"), "column": ("column", "col", "file", "x"),
             "wall": ("wall", "hedge", "barrier", "block")},
    verbs=_DIRECTIONS,
))
register_family(Family(
    name="key_rooms", skill=SKILL, env_class=KeyRoomsEnv,
    description="Explore connected rooms to find a hidden key, then unlock the exit door.",
    own_knobs={"rooms": [3, 5, 7, 9], "extra_passages": [1, 1, 2, 2], "slack": [6, 4, 2, 0]},
    extend={"rooms": Extend(2, 15), "extra_passages": Extend(1, 4)},
    phrases={"key and door": ("key and door", "locked exit", "escape rooms", "keyhunt"),
             "passages": ("passages", "doorways", "connections", "links"),
             "carrying": ("carrying", "holding", "inventory", "in hand"),
             "you see": ("you see", "visible", "in sight", "spotted"),
             "exit": ("exit", "way out", "escape", "outer"), "locked": ("locked", "shut", "bolted", "sealed")},
    verbs={"go to": ("go to", "walk to", "move to", "enter"), "room": ("room", "chamber", "hall", "cell"),
           "take": ("take", "grab", "pick up", "collect"), "key": ("key", "keycard", "pass", "token"),
           "unlock": ("unlock", "open", "unbolt", "release"), "door": ("door", "gate", "portal", "hatch")},
))
register_family(Family(
    name="sonar_dig", skill=SKILL, env_class=SonarDigEnv,
    description="Use distance readings to locate and dig up buried treasure with few digs.",
    own_knobs={"size": [3, 4, 5, 7], "shovels": [4, 3, 2, 1], "slack": [6, 4, 2, 0]},
    extend={"size": Extend(1, 10)},
    phrases={"sonar dig": ("sonar dig", "treasure hunt", "buried chest", "echo search"),
             "field": ("field", "area", "ground", "plot"), "position": ("position", "location", "you stand at", "spot"),
             "sonar": ("sonar", "detector", "scanner", "echo"), "treasure": ("treasure", "chest", "loot", "prize"),
             "steps away": ("steps away", "cells off", "squares distant", "moves away"),
             "digs left": ("digs left", "shovels left", "tries left", "attempts remaining"),
             "row": ("row", "line", "rank", "y"), "column": ("column", "col", "file", "x")},
    verbs={**_DIRECTIONS, "dig": ("dig", "excavate", "unearth", "probe")},
))

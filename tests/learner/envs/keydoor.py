"""A 4x4 room: walk over the key to take it, then open the door. Random play rarely wins."""

import random

SKILL = "Spatial Reasoning"
DIFFICULTY = {"size": 4}

MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


class KeyDoorEnv:
    max_turns = 20

    def reset(self, seed=None):
        cells = [(r, c) for r in range(4) for c in range(4)]
        self.pos, self.key, self.door = random.sample(cells, 3)
        self.held = self.pos == self.key
        return self._observe("Find the key, then open the door."), {}

    def _observe(self, message):
        key = "held" if self.held else f"{self.key[0]} {self.key[1]}"
        return (f"{message}\nposition: {self.pos[0]} {self.pos[1]}\nkey: {key}\n"
                f"door: {self.door[0]} {self.door[1]}")

    def valid_actions(self):
        return ["up", "down", "left", "right", "open door"]

    def _target(self):
        return self.door if self.held else self.key

    def hint(self):
        (r, c), (tr, tc) = self.pos, self._target()
        if (r, c) == (tr, tc):
            return "open door"
        if r != tr:
            return "down" if tr > r else "up"
        return "right" if tc > c else "left"

    def solution(self):
        pos, held, path = self.pos, self.held, []
        for target in ([] if held else [self.key]) + [self.door]:
            while pos != target:
                dr, dc = target[0] - pos[0], target[1] - pos[1]
                move = ("down" if dr > 0 else "up") if dr else ("right" if dc > 0 else "left")
                path.append(move)
                pos = (pos[0] + MOVES[move][0], pos[1] + MOVES[move][1])
        return path + ["open door"]

    def step(self, action):
        if action in MOVES:
            dr, dc = MOVES[action]
            r, c = self.pos[0] + dr, self.pos[1] + dc
            if 0 <= r < 4 and 0 <= c < 4:
                self.pos = (r, c)
                if self.pos == self.key and not self.held:
                    self.held = True
                    return self._observe("You pick up the key."), 0.0, False, False, {}
                return self._observe("You move."), 0.0, False, False, {}
            return self._observe("A wall blocks the way."), 0.0, False, False, {}
        if action == "open door" and self.held and self.pos == self.door:
            return "The door opens. You escape!", 1.0, True, False, {}
        return self._observe("Nothing happens."), 0.0, False, False, {}

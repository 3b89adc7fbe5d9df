"""Key and door: the key lies hidden in one of the side rooms; fetch it and unlock the exit."""

import random

SKILL = "Planning"
DESCRIPTION = "Explore the side rooms around a hall, find the hidden key and open the locked exit door."
DIFFICULTY = {"side_rooms": 4, "max_turns": 12}

DIRECTIONS = ("north", "east", "south", "west")
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}


class KeyDoorEnv:
    def __init__(self, max_turns=12):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.key_room = self.rng.choice(DIRECTIONS)
        self.room = "hall"
        self.has_key = False
        self.turn = 0
        return self._describe("You wake up in a hall with a locked exit door."), {"room": "hall"}

    def _describe(self, prefix):
        if self.room == "hall":
            place = "You are in the hall. Doors lead north, east, south and west; the exit door is locked."
        else:
            place = f"You are in the {self.room} room. The only way out leads back to the hall."
            if self.room == self.key_room and not self.has_key:
                place += " A small brass key glints on the floor."
        return (f"{prefix} {place} Actions: go north/east/south/west, go back, take key, "
                "open door, look. Answer with one action in \\boxed{}.")

    def step(self, action):
        self.turn += 1
        act = " ".join(str(action).lower().split())
        reward, terminated = 0.0, False
        if act in (f"go {d}" for d in DIRECTIONS):
            if self.room != "hall":
                text = "You can only go back to the hall from here."
            else:
                self.room = act[3:]
                text = f"You walk {self.room}."
        elif act == "go back":
            text = "You return to the hall." if self.room != "hall" else "You are already in the hall."
            self.room = "hall"
        elif act == "take key":
            if self.room == self.key_room and not self.has_key:
                self.has_key = True
                reward = 0.1
                text = "You pick up the brass key."
            else:
                text = "There is no key here."
        elif act == "open door":
            if self.room != "hall":
                text = "There is no exit door in this room."
            elif self.has_key:
                return "The key turns and the exit door swings open. You escaped!", 1.0, True, False, {}
            else:
                text = "The exit door is locked."
        elif act == "look":
            text = "You look around."
        else:
            text = "Unknown action."
        truncated = self.turn >= self.max_turns and not terminated
        return self._describe(text), reward, terminated, truncated, {"room": self.room}

    def valid_actions(self):
        return [f"go {d}" for d in DIRECTIONS] + ["go back", "take key", "open door", "look"]

    def hint(self):
        return f"The key is hidden in the {self.key_room} room."

    def solution(self):
        return [f"go {self.key_room}", "take key", "go back", "open door"]

"""Optimization families: knapsack, job scheduling, fuel-limited route.

Each class is rendered into a standalone file (see ``core``); it uses only
``self.knobs`` (the knob values), ``self.rng`` and the standard library.
"""

from __future__ import annotations

from .core import EpisodeCore
from .registry import Family, register_family
from .variation import Extend

SKILL = "Optimization"


class KnapsackEnv(EpisodeCore):
    """Pack items of hidden value into a bag of limited capacity, then declare done."""

    TITLE = "knapsack"

    def budget(self):
        return 2 * self.knobs["items"] + 2

    def setup(self):
        n = self.knobs["items"]
        self.weights = [self.rng.randint(1, 9) for _ in range(n)]
        self.values = [self.rng.randint(1, 12) for _ in range(n)]
        self.capacity = max(max(self.weights), sum(self.weights) // 2)
        self.best = self._best(set(), self.capacity)[0]
        self.goal = -(-self.best * self.knobs["target_pct"] // 100)  # ceiling
        self.taken, self.seen = set(), set()

    def _best(self, taken, room):
        # Exhaustive over the untaken items (n <= 8): value and items of the best addition.
        free = [i for i in range(len(self.weights)) if i not in taken]
        best = (0, ())
        for mask in range(1 << len(free)):
            pick = [free[j] for j in range(len(free)) if mask >> j & 1]
            if sum(self.weights[i] for i in pick) <= room:
                value = sum(self.values[i] for i in pick)
                if value > best[0]:
                    best = (value, tuple(pick))
        return best

    def _load(self):
        return sum(self.weights[i] for i in self.taken), sum(self.values[i] for i in self.taken)

    def observe(self):
        weight, value = self._load()
        lines = [f"bag: {weight} of {self.capacity} weight used, value {value}",
                 f"goal: total value at least {self.goal}"]
        for i, w in enumerate(self.weights):
            v = self.values[i] if i in self.seen else "?"
            state = "in bag" if i in self.taken else "on table"
            lines.append(f"item {i + 1}: weight {w}, value {v}, {state}")
        return lines

    def actions(self):
        n = len(self.weights)
        acts = [f"inspect {i + 1}" for i in range(n) if i not in self.seen]
        return acts + [f"take {i + 1}" for i in range(n) if i not in self.taken] + ["done"]

    def apply(self, action):
        if action == "done":
            value = self._load()[1]
            if value >= self.goal:
                return f"packed value {value}, goal met", 1.0, "win"
            return f"packed value {value}, below the goal {self.goal}", 0.0, "lose"
        verb, i = action.split()
        i = int(i) - 1
        self.seen.add(i)
        if verb == "inspect":
            return f"item {i + 1} is worth {self.values[i]}", 0.0, None
        weight = self._load()[0]
        if weight + self.weights[i] > self.capacity:
            return f"item {i + 1} does not fit", -0.5, None
        self.taken.add(i)
        return f"item {i + 1} (value {self.values[i]}) is in the bag", self.values[i] / max(1, self.best), None

    def policy(self):
        weight, value = self._load()
        _, pick = self._best(self.taken, self.capacity - weight)
        if value >= self.goal or not pick:
            return "done"
        return f"take {max(pick, key=lambda i: self.values[i]) + 1}"

    def advice(self):
        action = self.policy()
        if action == "done":
            return "the bag meets the goal: done"
        return f"{action} next: it belongs to the best packing of the remaining room"


class JobScheduleEnv(EpisodeCore):
    """Run jobs one after another so that every job meets its deadline."""

    TITLE = "job schedule"

    def budget(self):
        return self.knobs["jobs"] + 3

    def setup(self):
        n = self.knobs["jobs"]
        self.duration = [self.rng.randint(1, 5) for _ in range(n)]
        order = list(range(n))
        self.rng.shuffle(order)
        self.deadline, clock = [0] * n, 0
        for j in order:  # deadlines just after a feasible order's finish times
            clock += self.duration[j]
            self.deadline[j] = clock + self.rng.randint(0, self.knobs["slack"])
        self.clock, self.done_jobs, self.late = 0, [], 0

    def observe(self):
        lines = [f"clock: {self.clock}", f"late jobs: {self.late} (allowed {self.knobs.get('late_allowed', 0)})"]
        for j in range(len(self.duration)):
            if j in self.done_jobs:
                lines.append(f"job {j + 1}: deadline {self.deadline[j]}, took {self.duration[j]}, finished")
            else:
                lines.append(f"job {j + 1}: deadline {self.deadline[j]}, duration unknown")
        if self.knobs.get("aid") and len(self.done_jobs) < len(self.duration):  # easy levels: the comparison done
            lines.append(f"soonest deadline: {self.policy()[4:]}")
        return lines

    def actions(self):
        return [f"run job {j + 1}" for j in range(len(self.duration)) if j not in self.done_jobs]

    def apply(self, action):
        j = int(action.split()[-1]) - 1
        self.clock += self.duration[j]
        self.done_jobs.append(j)
        on_time = self.clock <= self.deadline[j]
        if not on_time:
            self.late += 1
            if self.late > self.knobs.get("late_allowed", 0):
                return f"job {j + 1} finished at {self.clock}, after its deadline; too many late jobs", 0.0, "lose"
        text = f"job {j + 1} took {self.duration[j]} and finished at {self.clock}" + ("" if on_time else " (late)")
        if len(self.done_jobs) == len(self.duration):
            return text + "; all jobs done", 1.0, "win"
        return text, 1.0 / len(self.duration) if on_time else -1.0, None

    def policy(self):
        left = [j for j in range(len(self.duration)) if j not in self.done_jobs]
        return f"run job {min(left, key=lambda j: (self.deadline[j], j)) + 1}"

    def advice(self):
        return f"{self.policy()}: it has the earliest deadline among the jobs left"


class FuelRouteEnv(EpisodeCore):
    """Drive between towns to the destination before the fuel runs out; roads show their cost on arrival."""

    TITLE = "fuel route"

    def budget(self):
        return 2 * self.knobs["towns"]

    def setup(self):
        n = self.knobs["towns"]
        towns = list(range(1, n + 1))
        while True:
            self.rng.shuffle(towns)
            self.roads = {t: {} for t in towns}
            pairs = [(towns[i], towns[self.rng.randrange(i)]) for i in range(1, n)]
            pairs += [tuple(self.rng.sample(towns, 2)) for _ in range(n)]
            for a, b in pairs:
                cost = self.rng.randint(1, 9)
                self.roads[a][b] = self.roads[b][a] = cost
            self.here = towns[0]
            # The goal is no direct neighbour: every route takes two roads or more.
            far = [t for t in towns if t != self.here and t not in self.roads[self.here]]
            if far:
                break
        dist = self._dijkstra(self.here)
        self.goal = max(far, key=lambda t: (dist[t], t))
        self.fuel = dist[self.goal] + self.knobs["slack"]

    def _dijkstra(self, source):
        dist, todo = {source: 0}, {source}
        while todo:
            town = min(todo, key=lambda t: (dist[t], t))
            todo.discard(town)
            for to, cost in self.roads[town].items():
                if dist[town] + cost < dist.get(to, 10 ** 9):
                    dist[to] = dist[town] + cost
                    todo.add(to)
        return dist

    def observe(self):
        roads = ", ".join(f"town {t} costs {c}" for t, c in sorted(self.roads[self.here].items()))
        return [f"town: {self.here}", f"destination: town {self.goal}", f"fuel: {self.fuel}", f"roads: {roads}"]

    def actions(self):
        return [f"drive to {t}" for t in sorted(self.roads[self.here])]

    def apply(self, action):
        to = int(action.split()[-1])
        cost = self.roads[self.here][to]
        if cost > self.fuel:
            return f"you ran out of fuel on the road to town {to}", 0.0, "lose"
        before = self._dijkstra(self.goal)[self.here]
        self.fuel -= cost
        self.here = to
        if to == self.goal:
            return f"you reached town {to} with {self.fuel} fuel left", 1.0, "win"
        after = self._dijkstra(self.goal)[to]
        return f"you drove to town {to} for {cost} fuel", 0.5 if after + cost == before else -0.5, None

    def policy(self):
        dist = self._dijkstra(self.goal)
        best = min(self.roads[self.here], key=lambda t: (self.roads[self.here][t] + dist[t], t))
        return f"drive to {best}"

    def advice(self):
        return f"{self.policy()} next: it is on the cheapest route to the destination"


register_family(Family(
    name="knapsack", skill=SKILL, env_class=KnapsackEnv,
    description="Pack items whose values are hidden until inspected into a bag of limited capacity.",
    own_knobs={"items": [5, 5, 6, 8], "target_pct": [90, 90, 100, 100]},
    extend={"items": Extend(1, 10)},
    phrases={"knapsack": ("knapsack", "backpack", "packing", "cargo hold"), "bag": ("bag", "sack", "pouch", "hold"),
             "weight": ("weight", "mass", "load", "heft"), "value": ("value", "worth", "price", "score"),
             "on table": ("on table", "outside", "left out", "on the floor"), "goal": ("goal", "target", "aim", "needed"),
             "at least": ("at least", "no less than", "minimum", "or more")},
    verbs={"inspect": ("inspect", "examine", "appraise", "study"), "take": ("take", "pack", "load", "add"),
           "done": ("done", "finish", "stop", "close")},
))
register_family(Family(
    name="job_schedule", skill=SKILL, env_class=JobScheduleEnv,
    description="Order jobs of hidden duration so that each finishes before its deadline.",
    own_knobs={"jobs": [4, 4, 5, 6], "slack": [2, 1, 0, 0], "aid": [1, 0, 0, 0]},
    extend={"jobs": Extend(1, 9)},
    phrases={"job schedule": ("job schedule", "workshop queue", "deadline planner", "task line"),
             "clock": ("clock", "time", "now", "hour"), "deadline": ("deadline", "due", "due by", "cutoff"),
             "duration": ("duration", "length", "runtime", "time needed"), "late": ("late", "overdue", "missed", "tardy"),
             "soonest": ("soonest", "earliest", "first", "nearest"), "finished": ("finished", "complete", "over", "closed")},
    verbs={"run": ("run", "start", "do", "process"), "job": ("job", "task", "order", "ticket")},
))
register_family(Family(
    name="fuel_route", skill=SKILL, env_class=FuelRouteEnv,
    description="Reach a destination town on limited fuel; road costs show only where you stand.",
    own_knobs={"towns": [7, 8, 9, 12], "slack": [3, 2, 1, 0]},
    extend={"towns": Extend(2, 18)},
    phrases={"fuel route": ("fuel route", "road trip", "gas tank", "journey"), "town": ("town", "city", "village", "stop"),
             "destination": ("destination", "goal", "target", "endpoint"), "fuel": ("fuel", "gas", "petrol", "energy"),
             "roads": ("roads", "routes", "ways", "highways"), "costs": ("costs", "uses", "burns", "takes")},
    verbs={"drive to": ("drive to", "go to", "travel to", "ride to")},
))

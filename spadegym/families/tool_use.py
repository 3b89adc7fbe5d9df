"""The tool-use setting's families: order desk, file tree, calendar, bank ledger, inventory, ticket queue.

Each is a stateful back end reached only through tools (``tool_core``): the
task names what to achieve, facts (ids, paths, balances) must be queried
before a call can use them, mutations change what later calls answer, some
calls fail with an error the agent recovers from (restock first, assign first,
retry a busy service), and ``distractors`` adds tools the task never needs.
A call a game cannot take back (shipping or closing the wrong record, booking
the wrong day, submitting a wrong total) loses. Classes are rendered into
standalone files; they use only ``self.knobs``, ``self.rng`` and the modules
their files import.
"""

from __future__ import annotations

from .registry import Family, register_family
from .tool_core import ToolCore
from .variation import Extend

COMMON = {"distractors": [0, 1, 2, 3]}
COMMON_EXTEND = {"distractors": Extend(1, 4)}


class OrderDeskEnv(ToolCore):
    """Ship a customer's open orders: find them, read them, restock what is short, ship each."""

    TITLE = "order desk"

    def budget(self):
        return 4 * self.knobs["orders"] + 3 + self.knobs["slack"]

    def setup(self):
        self.customers = sorted(self.rng.sample(self.NAMES, self.knobs["customers"]))
        self.items = ["pen", "ink", "pad", "tape"]
        self.orders = {}
        for i in range(2 * len(self.customers) + self.knobs["orders"]):
            owner = self.customers[i % len(self.customers)]
            self.orders[f"o{101 + i}"] = {
                "customer": owner,
                "item": self.rng.choice(self.items),
                "qty": self.rng.randint(1, 3),
                "status": self.rng.choice(["open", "shipped"]),
            }
        self.customer = self.rng.choice(self.customers)
        mine = [k for k, o in self.orders.items() if o["customer"] == self.customer]
        for k in mine[: self.knobs["orders"]]:
            self.orders[k]["status"] = "open"
        self.targets = [k for k in mine if self.orders[k]["status"] == "open"][: self.knobs["orders"]]
        self.stock = {item: self.rng.randint(3, 6) for item in self.items}
        for k in self.targets[: self.knobs["short"]]:
            self.stock[self.orders[k]["item"]] = self.orders[k]["qty"] - 1
        self.listed, self.read = [], []

    def observe(self):
        lines = [
            f"task: ship the open orders of customer {self.customer}",
            f"customers: {', '.join(self.customers)}",
        ]
        lines += [
            f"order {k}: {self.orders[k]['item']} x{self.orders[k]['qty']} ({self.orders[k]['status']})"
            for k in self.read
        ]
        return lines

    def tool_specs(self):
        return {
            "list_orders": ("Order ids of a customer.", {"customer": "string"}),
            "get_order": ("Item, quantity and status of an order.", {"order_id": "string"}),
            "check_stock": ("Units of an item in stock.", {"item": "string"}),
            "restock": ("Add units of an item to the stock.", {"item": "string", "units": "integer"}),
            "ship_order": ("Ship an order (takes its units from stock).", {"order_id": "string"}),
        }

    def calls(self):
        out = [("list_orders", {"customer": c}) for c in self.customers]
        out += [("get_order", {"order_id": k}) for k in self.listed]
        items = sorted({self.orders[k]["item"] for k in self.read})
        out += [("check_stock", {"item": i}) for i in items]
        out += [("restock", {"item": i, "units": u}) for i in items for u in (1, 2, 3)]
        out += [("ship_order", {"order_id": k}) for k in self.listed]
        return out

    def run(self, name, args):
        if name == "list_orders":
            ids = [k for k, o in self.orders.items() if o["customer"] == args["customer"]]
            self.listed += [k for k in ids if k not in self.listed]
            return ", ".join(ids) or "no orders", 0.1 if args["customer"] == self.customer else 0.0, None
        order = self.orders.get(args.get("order_id", ""))
        if name == "get_order":
            if args["order_id"] not in self.read:
                self.read.append(args["order_id"])
            return f"{order['item']} x{order['qty']} ({order['status']})", 0.1, None
        if name == "check_stock":
            return f"{self.stock[args['item']]} units", 0.0, None
        if name == "restock":
            self.stock[args["item"]] += args["units"]
            return f"{args['item']}: {self.stock[args['item']]} units", 0.1, None
        if order["status"] == "shipped":
            return "error: that order has already shipped", -0.2, None
        if args["order_id"] not in self.targets:
            order["status"] = "shipped"
            return f"shipped {args['order_id']}, which is not an order of {self.customer}", -1.0, "lose"
        if self.stock[order["item"]] < order["qty"]:
            return (
                (
                    f"error: not enough {order['item']} in stock ({self.stock[order['item']]} of {order['qty']}); "
                    "restock first"
                ),
                -0.2,
                None,
            )
        self.stock[order["item"]] -= order["qty"]
        order["status"] = "shipped"
        if all(self.orders[k]["status"] == "shipped" for k in self.targets):
            return f"shipped {args['order_id']}; every order of {self.customer} has shipped", 1.0, "win"
        return f"shipped {args['order_id']}", 0.3, None

    def best(self):
        k = next(k for k in self.targets if self.orders[k]["status"] == "open")
        order = self.orders[k]
        if k not in self.listed:
            return "list_orders", {"customer": self.customer}
        if k not in self.read:
            return "get_order", {"order_id": k}
        if self.stock[order["item"]] < order["qty"]:
            return "restock", {"item": order["item"], "units": order["qty"] - self.stock[order["item"]]}
        return "ship_order", {"order_id": k}


class FileTreeEnv(ToolCore):
    """Find a file somewhere in a folder tree and move it into a new folder the task names."""

    TITLE = "file tree"
    WORDS = ["docs", "media", "work", "home", "misc", "data", "old", "new", "tmp", "keep", "notes", "src"]

    def budget(self):
        return 2 * self.knobs["depth"] + 4 + self.knobs["slack"]

    def setup(self):
        self.tree = {"/": []}
        frontier = ["/"]
        for _ in range(self.knobs["depth"]):
            nxt = []
            for folder in frontier:
                for name in self.rng.sample(self.WORDS, self.knobs["folders"]):
                    path = folder.rstrip("/") + "/" + name
                    if path not in self.tree:
                        self.tree[folder].append(name)
                        self.tree[path] = []
                        nxt.append(path)
            frontier = nxt or frontier
        self.file = self.rng.choice(["report.txt", "budget.csv", "notes.md", "photo.png"])
        self.home = self.rng.choice(frontier)
        self.tree[self.home].append(self.file)
        self.parent = self.rng.choice([f for f in self.tree if f != self.home])
        self.new = self.rng.choice(["archive", "backup", "done"])
        self.target = self.parent.rstrip("/") + "/" + self.new
        self.seen, self.opened = ["/"], []

    def observe(self):
        return [
            f"task: move {self.file} into a new folder {self.new} inside {self.parent}",
            "folders seen: " + ", ".join(self.seen),
        ]

    def tool_specs(self):
        return {
            "list_dir": ("Folders and files in a folder.", {"path": "string"}),
            "make_dir": ("Make a folder inside another.", {"parent": "string", "name": "string"}),
            "move_file": ("Move a file into a folder.", {"source": "string", "folder": "string"}),
        }

    def _files(self):
        return [f"{p.rstrip('/')}/{x}" for p in self.seen for x in self.tree.get(p, []) if "." in x]

    def calls(self):
        folders = [p for p in self.seen if p in self.tree]
        out = [("list_dir", {"path": p}) for p in folders]
        out += [("make_dir", {"parent": p, "name": self.new}) for p in folders]
        out += [("move_file", {"source": f, "folder": p}) for f in self._files() for p in folders]
        return out

    def run(self, name, args):
        if name == "list_dir":
            path = args["path"]
            inside = [f"{path.rstrip('/')}/{x}" for x in self.tree[path] if "." not in x]
            self.seen += [p for p in inside if p not in self.seen]
            self.opened += [path] if path not in self.opened else []
            found = self.home == path
            return ", ".join(self.tree[path]) or "empty", 0.3 if found else 0.05, None
        if name == "make_dir":
            path = args["parent"].rstrip("/") + "/" + args["name"]
            if path in self.tree:
                return f"error: {path} already exists", -0.1, None
            self.tree[args["parent"]].append(args["name"])
            self.tree[path] = []
            self.seen.append(path)
            return f"made {path}", 0.3 if path == self.target else 0.0, None
        source, folder = args["source"], args["folder"]
        home, _, name = source.rpartition("/")
        home = home or "/"
        if name not in self.tree.get(home, []):
            return f"error: no file {source}", -0.2, None
        if folder != self.target:
            return f"error: {folder} is not where the task wants {name}; it stays in {home}", -0.2, None
        self.tree[home].remove(name)
        self.tree[folder].append(name)
        return f"moved {name} to {folder}", 1.0, "win"

    def best(self):
        for goal in (
            self.home,
            self.parent,
        ):  # list each folder from the root to the file, then to the parent
            parts = [p for p in goal.strip("/").split("/") if p]
            chain = ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]
            # The file's folder must be opened; the parent only seen (its own parent opened).
            todo = [p for p in (chain if goal == self.home else chain[:-1]) if p not in self.opened]
            if todo:
                return "list_dir", {"path": todo[0]}
        if self.target not in self.tree:
            return "make_dir", {"parent": self.parent, "name": self.new}
        return "move_file", {"source": self.home.rstrip("/") + "/" + self.file, "folder": self.target}


class CalendarEnv(ToolCore):
    """Book a review on the first free day from a date: look days up, book only the first free one."""

    TITLE = "calendar"

    def budget(self):
        return self.knobs["first_free"] + 2 + self.knobs["slack"]

    def setup(self):
        week = self.rng.randint(1, 40)
        self.days = [f"2026-w{week:02d}-{d}" for d in range(1, self.knobs["days"] + 1)]
        first = min(self.knobs["first_free"], len(self.days) - 1)
        self.busy = {
            d: self.rng.choice(["standup", "training", "offsite", "audit"]) for d in self.days[:first]
        }
        for d in self.days[first + 1 :]:  # a later day is rarely taken: booking it loses
            if self.rng.random() < 0.15:
                self.busy[d] = self.rng.choice(["standup", "training"])
        self.first = self.days[first]
        self.looked = []

    def observe(self):
        lines = [
            f"task: book the review on the first free day from {self.days[0]}",
            f"days: {', '.join(self.days)}",
        ]
        lines += [f"{d}: {self.busy.get(d, 'free')}" for d in self.looked]
        return lines

    def tool_specs(self):
        return {
            "list_events": ("What is booked on a day.", {"day": "string"}),
            "book": ("Book the review on a day.", {"day": "string"}),
            "day_name": ("The weekday of a day.", {"day": "string"}),
        }

    def calls(self):
        return [(tool, {"day": d}) for tool in ("list_events", "book", "day_name") for d in self.days]

    def run(self, name, args):
        day = args["day"]
        if name == "day_name":
            return (
                ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"][
                    (int(day.rsplit("-", 1)[1]) - 1) % 7
                ],
                0.0,
                None,
            )
        if name == "list_events":
            if day not in self.looked:
                self.looked.append(day)
            return self.busy.get(day, "free"), 0.1, None
        if day in self.busy:
            return f"error: {day} is taken by the {self.busy[day]}", -0.2, None
        if day != self.first:
            return f"booked {day}, but an earlier day was free", -1.0, "lose"
        return f"booked the review on {day}", 1.0, "win"

    def best(self):
        day = next(d for d in self.days if d not in self.looked or d == self.first)
        return ("book" if day in self.looked else "list_events"), {"day": day}


class BankLedgerEnv(ToolCore):
    """Pay an amount from one owner's account to another's: look up both accounts, top up a short one."""

    TITLE = "bank ledger"

    def budget(self):
        return 5 + self.knobs["slack"]

    def setup(self):
        owners = self.rng.sample(self.NAMES, self.knobs["owners"])
        self.accounts = {o: f"acc-{self.rng.randint(1000, 9999)}" for o in owners}
        self.payer, self.payee = self.rng.sample(owners, 2)
        self.amount = self.rng.choice([40, 60, 80, 120])
        self.balance = {a: self.rng.randint(150, 300) for a in self.accounts.values()}
        if self.knobs["short"]:
            self.balance[self.accounts[self.payer]] = self.amount - self.rng.randint(5, 15)
        self.found, self.paid = [], False

    def observe(self):
        lines = [
            f"task: pay {self.amount} from {self.payer}'s account to {self.payee}'s account",
            f"owners: {', '.join(sorted(self.accounts))}",
        ]
        lines += [f"{o}: {self.accounts[o]}" for o in self.found]
        return lines

    def tool_specs(self):
        return {
            "find_account": ("The account id of an owner.", {"owner": "string"}),
            "get_balance": ("The balance of an account.", {"account_id": "string"}),
            "top_up": (
                "Move money from savings into an account.",
                {"account_id": "string", "amount": "integer"},
            ),
            "transfer": (
                "Pay an amount from one account to another.",
                {"from_account": "string", "to_account": "string", "amount": "integer"},
            ),
        }

    def calls(self):
        ids = [self.accounts[o] for o in self.found]
        out = [("find_account", {"owner": o}) for o in sorted(self.accounts)]
        out += [("get_balance", {"account_id": a}) for a in ids]
        out += [("top_up", {"account_id": a, "amount": v}) for a in ids for v in (20, 50)]
        out += [
            ("transfer", {"from_account": a, "to_account": b, "amount": self.amount})
            for a in ids
            for b in ids
            if a != b
        ]
        return out

    def run(self, name, args):
        if name == "find_account":
            if args["owner"] not in self.found:
                self.found.append(args["owner"])
            return self.accounts[args["owner"]], 0.1, None
        if name == "get_balance":
            return str(self.balance[args["account_id"]]), 0.0, None
        if name == "top_up":
            self.balance[args["account_id"]] += args["amount"]
            return f"{args['account_id']}: {self.balance[args['account_id']]}", 0.1, None
        src, dst = args["from_account"], args["to_account"]
        if self.balance[src] < args["amount"]:
            return (
                f"error: insufficient funds in {src} (balance {self.balance[src]}); top it up first",
                -0.2,
                None,
            )
        if (src, dst) != (self.accounts[self.payer], self.accounts[self.payee]):
            return f"paid {args['amount']} from {src} to {dst}: the wrong accounts", -1.0, "lose"
        return f"paid {args['amount']} from {src} to {dst}", 1.0, "win"

    def best(self):
        for owner in (self.payer, self.payee):
            if owner not in self.found:
                return "find_account", {"owner": owner}
        src = self.accounts[self.payer]
        if self.balance[src] < self.amount:
            return "top_up", {
                "account_id": src,
                "amount": 20 if self.balance[src] + 20 >= self.amount else 50,
            }
        return "transfer", {
            "from_account": src,
            "to_account": self.accounts[self.payee],
            "amount": self.amount,
        }


class InventoryEnv(ToolCore):
    """Report the total units of an item across every warehouse: list them, count in each, submit the sum."""

    TITLE = "inventory"

    def budget(self):
        return self.knobs["warehouses"] + 2 + self.knobs["slack"]

    def setup(self):
        cities = ["rome", "oslo", "lima", "kyiv", "baku", "bern", "doha", "riga"]
        self.houses = sorted(self.rng.sample(cities, self.knobs["warehouses"]))
        self.items = self.rng.sample(["bolts", "gears", "valves", "pumps", "seals"], self.knobs["items"])
        self.item = self.items[0]
        self.units = {(h, i): self.rng.randint(0, 30) for h in self.houses for i in self.items}
        self.total = sum(self.units[(h, self.item)] for h in self.houses)
        self.known, self.counted = False, {}

    def observe(self):
        lines = [
            f"task: report the total units of {self.item} in every warehouse",
            f"items: {', '.join(sorted(self.items))}",
        ]
        if self.known:
            lines.append(f"warehouses: {', '.join(self.houses)}")
        lines += [f"{h} holds {n} {i}" for (h, i), n in self.counted.items()]
        return lines

    def tool_specs(self):
        return {
            "list_warehouses": ("Every warehouse.", {}),
            "count": ("Units of an item in one warehouse.", {"warehouse": "string", "item": "string"}),
            "submit_total": ("Submit the total (ends the task).", {"units": "integer"}),
        }

    def calls(self):
        out = [("list_warehouses", {})]
        if self.known:
            out += [("count", {"warehouse": h, "item": i}) for h in self.houses for i in sorted(self.items)]
        sums = {sum(n for (h, i), n in self.counted.items() if i == self.item)}
        sums |= {n for (h, i), n in self.counted.items()}
        out += [("submit_total", {"units": n}) for n in sorted(sums)]
        return out

    def run(self, name, args):
        if name == "list_warehouses":
            self.known = True
            return ", ".join(self.houses), 0.1, None
        if name == "count":
            key = (args["warehouse"], args["item"])
            self.counted[key] = self.units[key]
            return f"{self.units[key]} {args['item']}", 0.1 if args["item"] == self.item else 0.0, None
        if args["units"] == self.total:
            return f"{self.total} is right", 1.0, "win"
        return f"{args['units']} is wrong", -1.0, "lose"

    def best(self):
        if not self.known:
            return "list_warehouses", {}
        house = next((h for h in self.houses if (h, self.item) not in self.counted), None)
        if house is not None:
            return "count", {"warehouse": house, "item": self.item}
        return "submit_total", {"units": self.total}


class TicketQueueEnv(ToolCore):
    """Close the oldest open ticket of a priority: list, read ages, assign it if needed, retry a busy service."""

    TITLE = "ticket queue"

    def budget(self):
        return self.knobs["tickets"] + self.knobs["flaky"] + 4 + self.knobs["slack"]

    def setup(self):
        levels = ["high", "low", "normal"]
        self.priority = self.rng.choice(levels)
        self.tickets = {}
        for i in range(self.knobs["tickets"]):
            level = self.priority if i < 2 else self.rng.choice(levels)
            self.tickets[f"t-{201 + i}"] = {
                "priority": level,
                "age": self.rng.randint(1, 60),
                "owner": self.rng.choice(["none", "kim", "lee"]),
                "open": True,
            }
        mine = [k for k, t in self.tickets.items() if t["priority"] == self.priority]
        ages = sorted({self.tickets[k]["age"] for k in mine}, reverse=True)
        for k in mine:  # one oldest ticket, no ties
            self.tickets[k]["age"] = ages[0] + 1 if k == mine[0] and len(ages) > 1 else self.tickets[k]["age"]
        self.target = max(mine, key=lambda k: self.tickets[k]["age"])
        self.tickets[self.target]["owner"] = "none" if self.knobs["unassigned"] else "kim"
        self.busy = self.knobs["flaky"]
        self.listed, self.read = [], []

    def observe(self):
        lines = [f"task: close the oldest open {self.priority} priority ticket", "staff: kim, lee"]
        lines += [
            f"ticket {k}: {self.tickets[k]['priority']}, {self.tickets[k]['age']} days old, "
            f"owner {self.tickets[k]['owner']}"
            for k in self.read
        ]
        return lines

    def tool_specs(self):
        return {
            "list_tickets": ("Ids of open tickets of a priority.", {"priority": "string"}),
            "get_ticket": ("Priority, age and owner of a ticket.", {"ticket_id": "string"}),
            "assign": ("Give a ticket to a member of staff.", {"ticket_id": "string", "owner": "string"}),
            "close_ticket": ("Close a ticket (it must have an owner).", {"ticket_id": "string"}),
        }

    def calls(self):
        out = [("list_tickets", {"priority": p}) for p in ("high", "low", "normal")]
        out += [("get_ticket", {"ticket_id": k}) for k in self.listed]
        out += [("assign", {"ticket_id": k, "owner": o}) for k in self.listed for o in ("kim", "lee")]
        out += [("close_ticket", {"ticket_id": k}) for k in self.listed]
        return out

    def run(self, name, args):
        if name == "list_tickets":
            ids = [k for k, t in self.tickets.items() if t["priority"] == args["priority"] and t["open"]]
            self.listed += [k for k in ids if k not in self.listed]
            return ", ".join(ids) or "none", 0.1 if args["priority"] == self.priority else 0.0, None
        ticket = self.tickets[args["ticket_id"]]
        if name == "get_ticket":
            if args["ticket_id"] not in self.read:
                self.read.append(args["ticket_id"])
            return f"{ticket['priority']}, {ticket['age']} days old, owner {ticket['owner']}", 0.1, None
        if name == "assign":
            ticket["owner"] = args["owner"]
            return f"{args['ticket_id']} assigned to {args['owner']}", 0.1, None
        if ticket["owner"] == "none":
            return f"error: {args['ticket_id']} has no owner; assign it first", -0.2, None
        if self.busy:
            self.busy -= 1
            return "error: the ticket service is busy; try again", 0.0, None
        ticket["open"] = False
        if args["ticket_id"] != self.target:
            return f"closed {args['ticket_id']}, which is not the oldest {self.priority} ticket", -1.0, "lose"
        return f"closed {args['ticket_id']}", 1.0, "win"

    def best(self):
        mine = [k for k, t in self.tickets.items() if t["priority"] == self.priority]
        if self.target not in self.listed:
            return "list_tickets", {"priority": self.priority}
        unread = [k for k in mine if k not in self.read]
        if unread:
            return "get_ticket", {"ticket_id": unread[0]}
        if self.tickets[self.target]["owner"] == "none":
            return "assign", {"ticket_id": self.target, "owner": "kim"}
        return "close_ticket", {"ticket_id": self.target}


def _family(name: str, skill: str, cls: type, description: str, knobs: dict, extend: dict) -> Family:
    return register_family(
        Family(
            name=name,
            skill=skill,
            env_class=cls,
            description=description,
            own_knobs={**knobs, **COMMON},
            extend={**extend, **COMMON_EXTEND},
            imports=("json",),
        )
    )


_family(
    "order_desk",
    "Multi-Step Workflows",
    OrderDeskEnv,
    "Ship a customer's open orders through order, stock and shipping tools; restock what is short.",
    {"orders": [1, 1, 2, 2], "customers": [3, 4, 5, 6], "short": [0, 1, 1, 2], "slack": [4, 3, 2, 2]},
    {"orders": Extend(1, 4), "customers": Extend(1, 10), "short": Extend(1, 4)},
)
_family(
    "file_tree",
    "State Modification",
    FileTreeEnv,
    "Find a file in a folder tree and move it into a new folder: list, make the folder, move.",
    {"folders": [2, 3, 3, 4], "depth": [1, 1, 2, 2], "slack": [4, 3, 3, 2]},
    {"folders": Extend(1, 6), "depth": Extend(1, 3)},
)
_family(
    "calendar",
    "Tool Selection",
    CalendarEnv,
    "Book a review on the first free day: look days up with the right tool, book only the first free one.",
    {"days": [6, 7, 8, 10], "first_free": [1, 2, 3, 4], "slack": [3, 3, 2, 2]},
    {"days": Extend(2, 14), "first_free": Extend(1, 8)},
)
_family(
    "bank_ledger",
    "API Orchestration",
    BankLedgerEnv,
    "Pay between two owners' accounts: look both up, top up a short payer, transfer the amount.",
    {"owners": [3, 4, 5, 6], "short": [0, 0, 1, 1], "slack": [3, 2, 2, 1]},
    {"owners": Extend(1, 10)},
)
_family(
    "inventory",
    "Data Retrieval",
    InventoryEnv,
    "Total an item across warehouses: list them, count the item in each, submit the sum.",
    {"warehouses": [1, 2, 3, 5], "items": [2, 3, 4, 4], "slack": [3, 2, 2, 1]},
    {"warehouses": Extend(1, 8), "items": Extend(1, 5)},
)
_family(
    "ticket_queue",
    "Error Recovery",
    TicketQueueEnv,
    "Close the oldest open ticket of a priority; assign it first if it has no owner, retry a busy service.",
    {"tickets": [4, 6, 8, 10], "unassigned": [0, 1, 1, 1], "flaky": [0, 0, 1, 2], "slack": [4, 3, 3, 2]},
    {"tickets": Extend(2, 16), "flaky": Extend(1, 3)},
)

"""The gate's tool calls come from the declared schemas, whatever the schemas hold."""

from __future__ import annotations

import json

import pytest

from spadegym.envfile import parse_tool_call
from spadegym.validate.tool_menu import bad_calls, observed_values, tool_menu, tool_params

ORDERS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "verbose": {"type": "boolean"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "name": "restock",
        "parameters": {"properties": {"units": {"type": "integer"}, "item": {"enum": ["pen", "ink"]}}},
    },
    {"name": "ping"},
]


def calls(menu: list[str]) -> list[dict]:
    return [parse_tool_call(a).to_dict() for a in menu if parse_tool_call(a) is not None]


def test_valid_calls_take_values_of_the_declared_type_from_the_text():
    menu = tool_menu(ORDERS, ["Orders of ana: O103, O107. Restock 4 units."])
    made = calls(menu)
    orders = [c["arguments"] for c in made if c["name"] == "get_order"]
    assert orders and all(isinstance(a["order_id"], str) for a in orders)  # required: always there
    assert {"O103", "O107"} & {a["order_id"] for a in orders}
    assert all(isinstance(a.get("verbose", True), bool) for a in orders)
    restocks = [c["arguments"] for c in made if c["name"] == "restock"]
    assert all(
        a.get("item", "pen") in ("pen", "ink") and isinstance(a.get("units", 0), int) for a in restocks
    )
    assert {"name": "ping", "arguments": {}} in made
    assert "4" in menu  # bare answers too
    assert menu == tool_menu(ORDERS, ["Orders of ana: O103, O107. Restock 4 units."])  # the same, every time


def test_bad_calls_mistype_and_drop_arguments_and_name_an_unknown_tool():
    made = calls(bad_calls(ORDERS))
    assert {"name": "get_order", "arguments": {"order_id": 12345, "verbose": "not-a-number"}} in made
    assert {"name": "get_order", "arguments": {}} in made  # its required argument missing
    assert made[-1]["name"] == "no_such_tool"
    assert len(bad_calls(ORDERS * 10, limit=5)) == 5


@pytest.mark.parametrize(
    "schema",
    [
        {
            "name": "a",
            "parameters": {"properties": {"x": {"type": "string", "default": "Ellipsis"}}, "required": "x"},
        },
        {"name": "a", "parameters": {"properties": [1, 2]}},
        {
            "name": "a",
            "parameters": {"properties": {"x": {"type": ["integer", "null"]}}, "required": [["x"]]},
        },
        {"name": "a", "parameters": {"properties": {"x": {"enum": {"nested": "dict"}}, "y": "not a schema"}}},
        {
            "name": "a",
            "parameters": {"properties": {"x": {"type": "object", "properties": {"y": {"type": "array"}}}}},
        },
        {"function": "not a dict", "name": "a"},
        {"name": 3},
        "a tool",
    ],
)
def test_any_schema_gives_json_calls_or_none_never_an_error(schema):
    for action in tool_menu([schema], ["id X1 and 7"]) + bad_calls([schema]):
        assert not action.startswith("{") or isinstance(json.loads(action)["arguments"], dict)
    read = tool_params(schema)
    assert read is None or read[0] == "a"


def test_observed_values_put_quoted_strings_and_ids_first_newest_text_first():
    words, numbers = observed_values(["Ship 'box 7' to the depot D-12, then 3.5 kg", "Found R2 and 3 boxes"])
    assert words[:3] == ["R2", "box 7", "D-12"] and "the" not in words
    assert words.index("boxes") < words.index("depot")
    assert numbers == [3, 7, 12, 3.5]

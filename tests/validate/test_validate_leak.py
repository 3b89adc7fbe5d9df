"""The answer-leak heuristics: catch leaks, spare menus, instructions and short answers."""

from __future__ import annotations

from spadegym.validate.leak import Answer, leaks_in_hint, leaks_in_observation, mentions

LIMITS = (3, 2)


def test_mentions_matches_whole_words_only():
    assert mentions("The code is Amber.", "amber")
    assert mentions("answer: open   door", "open door")
    assert not mentions("the chamber", "amber")
    assert not mentions("value 123", "12")
    assert not mentions("pi is 3.14", "3")


def test_instance_specific_answer_in_observation_leaks():
    answer = Answer("birch", single_step=True, other_text="cedar")
    assert leaks_in_observation(answer, "The code is birch.", "The code is cedar.", *LIMITS)


def test_instructions_shared_by_every_instance_do_not_leak():
    answer = Answer("open door", single_step=False, other_text="open door")
    text = "Actions: go north, take key, open door."
    assert not leaks_in_observation(answer, "Room 3. " + text, "Room 5. " + text, *LIMITS)


def test_constant_one_step_answer_shown_everywhere_is_a_password_leak():
    answer = Answer("swordfish", single_step=True, other_text="swordfish")
    text = "The password is swordfish."
    assert leaks_in_observation(answer, text, text, *LIMITS)


def test_short_answers_and_listed_menus_do_not_leak():
    assert not leaks_in_observation(Answer("7", True, other_text="3"), "Pick 1 to 7.", "Pick 1 to 7!", *LIMITS)
    assert not leaks_in_observation(Answer("ox", True, other_text="yak"), "an ox", "a yak", *LIMITS)
    menu = ["apple", "banana", "carrot", "daikon"]
    listing = "Which is a root: apple, banana, carrot or daikon?"
    assert not leaks_in_observation(Answer("carrot", True, menu=menu, other_text="apple"), listing,
                                    "Which is a fruit: apple, banana, carrot or daikon?", *LIMITS)


def test_numbers_with_several_digits_leak():
    answer = Answer("42", single_step=True, other_text="17")
    assert leaks_in_observation(answer, "Target: 42.", "Target: 17.", *LIMITS)


def test_hint_naming_the_instance_answer_leaks():
    menu = ["amber", "birch", "cedar", "delta"]
    answer = Answer("birch", single_step=True, menu=menu, other_text="delta")
    assert leaks_in_hint(answer, "Pick birch.", *LIMITS)
    assert not leaks_in_hint(answer, "It is one of amber, birch, cedar, delta.", *LIMITS)
    assert not leaks_in_hint(answer, "It starts with a b.", *LIMITS)


def test_hint_naming_a_shared_final_command_does_not_leak():
    answer = Answer("open door", single_step=False, other_text="open door")
    assert not leaks_in_hint(answer, "Find the key before you open door.", *LIMITS)


def test_a_number_that_is_the_answer_by_coincidence_in_one_instance_does_not_leak():
    answer = Answer("23", single_step=True, other_text="41")  # the answer of seed 1 happens to be a gear size
    assert not leaks_in_observation(answer, "Gears of 23, 9 and 30 teeth turn 512 times.",
                                    "Gears of 12, 17 and 8 teeth turn 377 times.", *LIMITS)
    assert leaks_in_observation(answer, "Gears of 23 teeth (sum 23).", "Gears of 41 teeth (sum 41).", *LIMITS)

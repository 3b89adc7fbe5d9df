"""Test doubles and adversaries for spadegym's tests and benchmarks; not part of the installed package.

``fake_server``  a small OpenAI-compatible chat server on 127.0.0.1 whose replies come from a script
``fake_players`` scripted players for it: a known skill with a planted blind spot
``gaming``       designers that game a designer reward on purpose (the reward-hacking watch's adversaries)

It lives beside the package in a checkout: pytest puts the checkout on ``sys.path``; a benchmark adds it itself.
"""

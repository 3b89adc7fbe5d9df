"""An environment without valid_actions(): the learner must refuse it."""


class TextOnlyEnv:
    def reset(self, seed=None):
        return "Say anything.", {}

    def step(self, action):
        return "ok", 1.0, True, False, {}

"""spadegym levels as a verifiers environment, from Python, with either verifiers line."""

from importlib.metadata import version

import spadegym_verifiers

if version("verifiers").startswith("0.3"):  # the classic API: an environment by name, its arguments as keywords
    import verifiers as vf

    env = vf.load_environment("spadegym-verifiers", levels="examples/pool/", tasks=4)
    print(type(env).__name__, len(env.dataset), "rows")
else:  # verifiers 0.4: the v1 API only, the env built from its config
    import verifiers.v1 as vf

    env = vf.load_environment(spadegym_verifiers.env_config(levels="examples/pool/", tasks=4))
    print(type(env).__name__, len(list(env.taskset.load())), "rows")

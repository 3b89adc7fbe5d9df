"""The spec forms the command line's help shows (the registries hold the kinds; a test keeps the two in step).

Written here rather than imported from the registries so that `spadegym --help` imports no designer.
"""

AGENT_SPECS = ("learner | learner:DIR (a saved learner, frozen; or a run directory: its last checkpoint) | random | human | scripted:FILE (actions, one a line) | "
               "openai:MODEL[@BASE_URL] | hf:PATH (a local model that trains) | package.module:Class")
DESIGNER_SPECS = ("mutation | openai:MODEL[@BASE_URL] | hf:PATH | the baselines uniform, fixed:easy|all, "
                  "staged | pool (the files of --pool alone) | package.module:Class")
DESIGNER_REWARDS = ("blend (default) | regret | regret_floored | band | learning_potential | learnability | "
                    "oracle_regret | failure | package.module:function")

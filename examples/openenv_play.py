"""Play a level served by `spadegym serve examples/pool/ --port 8001` with OpenEnv's own client."""

from spadegym.adapters.openenv_client import SpadegymClient
from spadegym.adapters.openenv_server import SpadegymAction

with SpadegymClient(base_url="http://127.0.0.1:8001").sync() as env:
    result = env.reset(seed=0)
    result = env.step(SpadegymAction(message="I try \\boxed{1}"))
    print(result.observation.text, result.reward, result.done)

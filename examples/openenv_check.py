"""Check an OpenEnv server as a spadegym level, over the wire."""

from spadegym.adapters.openenv_client import OpenEnvLevel

print(OpenEnvLevel("http://127.0.0.1:8001").check().failed)  # {} when every check passes

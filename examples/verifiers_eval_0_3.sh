# verifiers 0.3 (the line the dev extra installs beside OpenEnv): its v1 command is `eval`
# (`env` keeps the shell's builtin `eval` out of the way) ...
env eval spadegym-verifiers --env.taskset.levels examples/pool/ --env.taskset.tasks 4 --model MODEL \
  --client.base-url http://127.0.0.1:8000/v1 --client.api-key-var OPENAI_API_KEY --no-rich --no-push
# ... and its classic vf-eval takes the environment's arguments as JSON.
vf-eval spadegym-verifiers -a '{"levels": "examples/pool/", "tasks": 4}' -m MODEL \
  -b http://127.0.0.1:8000/v1 -k OPENAI_API_KEY -n 4 -r 1 --disable-tui

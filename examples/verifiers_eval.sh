# verifiers 0.4 (pip install -e ".[verifiers]"): evaluate a model on a pool with verifiers' own vf-eval.
vf-eval spadegym-verifiers --env.taskset.levels examples/pool/ --env.taskset.tasks 4 --model MODEL \
  --client.base-url http://127.0.0.1:8000/v1 --client.api-key-var OPENAI_API_KEY --no-rich --no-push

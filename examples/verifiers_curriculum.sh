# A live curriculum for verifiers (0.4's vf-eval; 0.3: `env eval ... --no-serve`): `spadegym curriculum` serves
# the config's curriculum on 127.0.0.1 and commits its rounds to the run directory; each task is a ticket whose
# rollouts (--num-rollouts = the config's group_size) play the level the curriculum draws for it.
spadegym curriculum --config examples/configs/curriculum.toml --out runs/vf-curriculum &
trap 'kill $!' EXIT
for _ in $(seq 120); do [ -f runs/vf-curriculum/curriculum.json ] && break; sleep 1; done
vf-eval spadegym-verifiers --env.taskset.curriculum runs/vf-curriculum --env.taskset.tasks 4 --num-rollouts 2 \
  --model MODEL --client.base-url http://127.0.0.1:8000/v1 --client.api-key-var OPENAI_API_KEY --no-rich --no-push

# Find a model's failures, score two models on them, then gate a third against the results.
spadegym redteam --target openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1 --budget 200 --out suites/qwen
spadegym eval suites/qwen --agent openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1 \
    --agent openai:my-finetune@http://127.0.0.1:8001/v1 --junit results.xml --html scorecard.html --json > results.json
spadegym eval suites/qwen --agent openai:next@http://127.0.0.1:8002/v1 --baseline results.json --min-pass-rate 0.8   # a CI gate

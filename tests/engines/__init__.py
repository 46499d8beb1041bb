"""Serving engines' arithmetic (flopcalc/engines/): vLLM's and SGLang's KV-cache capacity
against their own code, their logs, and hand-worked small configs."""

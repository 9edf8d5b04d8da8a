"""The planners Argus ships: ``search`` (offline) and ``llm`` (an OpenAI-compatible endpoint)."""

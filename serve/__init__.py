"""An OpenAI-compatible server for any model the eval stage can load: `python -m serve model=...`."""

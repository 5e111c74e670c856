"""Evaluation: the runner over suites (models come from runtime.models), resumable predictions, reports."""

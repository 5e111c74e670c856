"""Model-free baselines: a rule-based symbolic pre-parser and a schema-driven call repairer."""

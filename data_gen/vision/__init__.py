"""Vision tool-use data for Ovis2.5's crop tool (python -m data_gen.vision; configs/vision.yaml)."""

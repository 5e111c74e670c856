"""LoRA training of LFM2-Audio through liquid-audio (loaders and chats: runtime/lfm2_audio/):

  data.py   speech dataset rows -> toolcore Conversations -> liquid_audio chats -> mapper -> cached samples
  run.py    train(cfg): LoRA (anchored to the backbone) + tool-token rows, weighted text/audio loss
  tiny.py   a tiny real LFM2-Audio folder built from a config, for tests
"""

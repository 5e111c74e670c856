"""Spoken versions of generated conversations: what a voice says, synthesised for speech training."""

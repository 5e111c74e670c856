"""Ovis vision tool use, shared by train and eval (stages never import one another):

  tools.py     vision tools written `<tool_call>Name [args]</tool_call>` (Crop, and tools described at run
               time), how they are offered in the prompt, parsed back and executed with a timeout
  chat.py      a vision conversation -> pieces (text / image, trainable or not): the one rendering that
               training, the prompt and the live loop share
  adapter.py   what differs between native Ovis2 (transformers) and Ovis2.5 (hub remote code): image
               preprocessing, the image placeholder tokens, the forward call
  loop.py      the live loop: stop at </tool_call>, run the tool, feed the image, continue from the KV cache
"""

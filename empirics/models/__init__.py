"""The networks that are trained: the Snell seq2seq copier, the Mușat retrieval transformer,
the Bao attention language model, the free-attention and toy classifiers, a local pretrained
LLM, and the positional encodings they share. Each model config owns its numerics version."""

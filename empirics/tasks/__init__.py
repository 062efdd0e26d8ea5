"""The data each model is trained on: the copying task, the retrieval task and its prompts,
the random-walk language model task, a text corpus and the WikiText layout it is built in.
Each task config owns its numerics version."""

"""Where a model on disk is: a path, a Hugging Face cache entry, an Ollama tag; and the
listing of every model those stores hold."""

"""Local runtimes: Hugging Face transformers and vLLM in process."""

"""DR-RAG (dynamic-relevance two-stage retrieval): selection logic and the compact pair classifier."""

"""Retrieval pipelines built on the core (DR-RAG, ...)."""

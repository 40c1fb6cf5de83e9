"""Attention: score functions, attention layers."""

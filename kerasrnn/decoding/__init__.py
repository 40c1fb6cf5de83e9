"""Decoding: greedy, sampling and beam search over any step function."""

"""The Why parallel page's demonstrations: marbles, tiny steps, the timing bug, the first call, where a tensor lives."""

"""The matmul race: one product timed honestly (engine), a sweep over sizes and series, the crossover."""

"""Why the crossover is where it is: each device's roofs measured, every matmul on a roofline, the crossover
predicted."""

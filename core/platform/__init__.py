"""The machine underneath every measurement: devices, memory, the one clock, the timing engine, device locks, paths."""

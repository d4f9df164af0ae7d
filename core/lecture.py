"""The lecture's reference figures, shown beside this machine's own measurements.

One place, so the Matmul race, the Results page and the Why parallel text quote the same numbers.
"""

LECTURE_N = 10_000  # A @ A for a 10,000 x 10,000 float32 matrix of standard-normal draws
LECTURE_CPU_S = 23.0  # about 23 s on the lecture's CPU
LECTURE_GPU_S = 3.0  # about 3 s on a free Colab GPU, timed with torch.cuda.synchronize

LECTURE_SENTENCE = (
    f"the lecture's {LECTURE_N:,} × {LECTURE_N:,} product took about {LECTURE_CPU_S:g} s on a CPU "
    f"and about {LECTURE_GPU_S:g} s on a free Colab GPU"
)

"""One line per term a first-year student may not know, for the page (a widget's `help=` or one line of text)
where the term first appears: the same words wherever it is explained, and one place to improve them.

Plain strings: pages show them (core never imports streamlit). Each line says what the term means here, on this
dashboard, not in general.
"""

from __future__ import annotations

DTYPE = ("dtype: the number format of the matrices. float32 keeps about 7 decimal digits in 4 bytes; float16 and "
         "bfloat16 keep fewer in 2 bytes, so a GPU moves and multiplies them faster.")
TF32 = ("TF32: a mode of recent NVIDIA GPUs that multiplies float32 matrices with about 3 decimal digits in the "
        "inner products instead of 7: several times faster, slightly less exact.")
GFLOPS = "GFLOP/s: billions of arithmetic operations (additions and multiplications) per second."
RIDGE = ("ridge: the operations per byte where the bandwidth roof meets the compute roof; products left of it wait "
         "for memory, products right of it for arithmetic.")
IQR = ("IQR (interquartile range): how far apart the middle half of the repeated timings lie, from the quarter "
       "mark to the three-quarter mark; a small IQR means steady timings.")
INTERVAL = ("95 % interval: the range the true value lies in, 19 times out of 20, given how much the repeated "
            "timings scattered.")
BOOTSTRAP = ("bootstrap: drawing the measured repeats again at random, many times over, and recomputing the answer "
             "each time; how much the answers differ is how uncertain the measured one is.")
RANKS = ("ranks: the K copies of the same program that run at once, numbered 0 to K−1, each on its own device or "
         "its own share of the CPU cores; torchrun is PyTorch's launcher that starts them and lets them talk.")
SIMD = ("SIMD level: the widest instructions this CPU has that do the same operation on several numbers at once "
        "(AVX2: 8 float32 numbers per instruction, AVX-512: 16).")
ALL_REDUCE = ("all-reduce: every worker hands in its gradients and gets back the sum of all of them, so all take "
              "the same step.")
GLOO = "gloo: the library PyTorch uses to pass data between processes over the CPU and the network."
NB_WEIGHTING = ("NB weighting (naive Bayes): each word scaled by how much more often it appears in positive than in "
                "negative training reviews, so telling words weigh more than common ones.")

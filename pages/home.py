"""Home: what each page shows and the order to click through them in class."""

import streamlit as st
from core.platform.devices import has_gpu
from pages.shared.colab_buttons import colab_buttons
from pages.shared.entry import through_app

through_app()

st.title("When does a GPU beat a CPU, and why?")
st.markdown(
    """
Every number on these pages is measured live on the machine running this dashboard.
In class, go through the pages in this order:

1. **Hardware check**: is there a GPU here, which one, and how much of its memory is free?
   Without a GPU every other page still works on the CPU and says what a GPU would add.
2. **Matmul race**: time `A @ B` on the CPU and the GPU for growing matrix sizes, correctly
   (warm-up, synchronize before reading the clock, median of many runs), and find the size
   from which the GPU wins. **Every device at once** runs the same sweep on every device together;
   **Race on your laptop** runs it in your own browser, on your laptop's GPU (WebGPU) and CPU.
3. **Roofline**: why the crossover is where it is. Each device's compute peak, memory bandwidth
   and cost of starting one operation, measured; every product drawn on the roofline; the
   crossover predicted from those constants beside the measured one.
4. **Review classifier**: train the same small neural network on real movie reviews on the
   CPU and then the GPU, and watch the two loss curves race. **Data-parallel scaling** splits
   its training over 1 and 2 worker processes.
5. **Why parallel**: the idea behind it, measured: one worker counting marbles against many,
   why a chain of tiny steps gains nothing, and why timing without synchronizing lies.
6. **Results**: every run saved, so a laptop CPU and the lab GPU can share one chart.
7. **Class board**: for the projector. The class's runs appear as they land, with every
   guess typed in *Your guess* beside what was measured, and the CPUs and GPUs in the room.

The same work runs without a browser: `python -m core --help`.
"""
)

if not has_gpu():  # the quickest way to a GPU: Colab's, with this project's notebook and wheel
    colab_buttons("home_colab")

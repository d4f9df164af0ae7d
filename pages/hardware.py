"""Hardware check: CPU, RAM, each GPU and its memory, software versions."""

import streamlit as st

from core import glossary
from core.charts.hardware import gpu_memory_bar
from core.platform.devices import GET_A_GPU
from core.platform.hardware import inspect_machine
from core.platform.units import byte_size
from pages.shared.colab_buttons import colab_buttons
from pages.shared.entry import through_app

through_app()


st.title("Hardware check")
st.caption("Is there a GPU here, which one, and how much of its memory is free?")
st.button("Refresh", key="hw_refresh", icon=":material/refresh:")

info = inspect_machine(free_memory=True)

with st.container(border=True):
    st.subheader(f"CPU: {info.cpu.name}")
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Physical cores", info.cpu.physical_cores or "unknown")
    c2.metric("Logical cores", info.cpu.logical_cores or "unknown")
    c3.metric("Threads torch uses", info.cpu.torch_threads)
    c4.metric("SIMD level", info.cpu.capability or "unknown", help=glossary.SIMD)
    ram = info.cpu
    st.metric("RAM available / total", f"{byte_size(ram.ram_available_bytes)} / {byte_size(ram.ram_total_bytes)}")

for gpu in info.gpus:
    with st.container(border=True):
        st.subheader(f"GPU {gpu.index}: {gpu.name or 'name unknown'}")
        c1, c2, c3 = st.columns(3)
        c1.metric("GPU RAM free / total", f"{byte_size(gpu.free_memory_bytes)} / {byte_size(gpu.total_memory_bytes)}")
        c2.metric("Compute capability", gpu.compute_capability or "unknown")
        c3.metric("Multiprocessors", gpu.multiprocessors or "unknown")
        if gpu.total_memory_bytes and gpu.free_memory_bytes is not None:
            st.plotly_chart(gpu_memory_bar(gpu), key=f"gpu_mem_{gpu.index}")

if info.mps_available:
    st.success("Apple MPS is available: the pages can run on this Mac's GPU (device `mps`).")

if not info.has_gpu:
    st.warning(
        "**No GPU found.** The Matmul race and the Review classifier will run on the CPU only, "
        f"and the GPU columns stay empty.\n\n{GET_A_GPU}",
        icon=":material/info:",
    )

st.subheader("Software")
st.table(
    {
        "": ["torch", "CUDA (torch build)", "TF32 for float32 matmul", "Apple MPS"],
        "value": [
            info.torch_version,
            info.cuda_version or "none (CPU build)",
            ("on" if info.tf32_matmul else "off") if info.gpus else "n/a",
            "available" if info.mps_available else "not available",
        ],
    }
)
st.caption(glossary.TF32)
for note in info.notes:
    st.info(note)

st.subheader("Run it on Colab")
colab_buttons("hw_colab")

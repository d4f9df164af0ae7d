"""AppTests of the home and hardware pages, as a user meets them through the navigation."""

import torch
from streamlit.testing.v1 import AppTest

from core.platform.hardware import cpu_name


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [h.value for h in at.title] + [h.value for h in at.subheader]
    parts += [w.value for w in at.warning] + [s.value for s in at.success] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def test_home_page_lists_the_pages_in_order(app):
    app.run()
    assert not app.exception
    text = _text(app)
    order = [text.index(name) for name in ("Hardware check", "Matmul race", "Review classifier", "Why parallel")]
    assert order == sorted(order)


def test_hardware_page_without_gpu(app, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    app.switch_page("pages/hardware.py").run()
    assert not app.exception
    text = _text(app)
    assert cpu_name() in text
    assert "No GPU found" in text and "Download for Colab buttons" in text and "colab-kit" in text
    assert "close your other Colab sessions" in text
    labels = [m.label for m in app.metric]
    assert "Logical cores" in labels and "RAM available / total" in labels


def test_hardware_page_with_fake_gpu(app, fake_cuda):
    app.switch_page("pages/hardware.py").run()
    assert not app.exception
    text = _text(app)
    assert "GPU 0: Fake GPU 80GB" in text and "No GPU found" not in text
    free_total = next(m.value for m in app.metric if m.label == "GPU RAM free / total")
    assert free_total == "60 GiB / 80 GiB"


def test_refresh_button_reruns(app):
    app.switch_page("pages/hardware.py").run()
    app.button(key="hw_refresh").click().run()
    assert not app.exception

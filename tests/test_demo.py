"""`python -m kerasrnn.demo`: the cells end to end (train, save, reload) on a small budget."""

from kerasrnn import demo


def test_demo_trains_saves_and_reloads_identically(capsys):
    code = demo.main(["--cell", "gru", "--units", "8", "--epochs", "1", "--examples", "128"])
    out = capsys.readouterr().out
    assert code == 0
    assert "held-out accuracy (gru, 20-60 steps): " in out
    assert "saved and reloaded: predictions identical = True" in out

"""stam table: layout of Tables cifar-res / cifar100-res with the paper's numbers beside ours."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.cli import main
from stam.dnn import table
from stam.io import latex_escape


def summary(dataset, model, algo, preset, label, binary, flt, seed=0):
    """A run with a validation split whose selected epoch is also its best test epoch."""
    return {"kind": "train-run", "dataset": dataset, "model": model, "algo": algo, "preset": preset, "label": label,
            "best_test_acc_binary": binary, "best_test_acc_float": flt, "seconds": 10.0, "seed": seed,
            "selected_test_acc_binary": binary, "selected_test_acc_float": flt}


def write(tmp_path, runs):
    for i, s in enumerate(runs):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "summary.json").write_text(json.dumps(s))


def test_cifar_layout_and_paper_numbers(tmp_path, capsys):
    write(tmp_path, [
        summary("cifar10", "vgg11", "stam", "our3", "Our3", 90.0, 91.0, 0),
        summary("cifar10", "vgg11", "stam", "our3", "Our3", 91.0, 91.5, 1),
        summary("cifar10", "resnet18", "float", "float", "Float", 40.0, 95.0),
        summary("cifar100", "vgg16", "stam", "our3-cifar100", "Our3", 71.0, 72.0),
    ])
    assert main(["table", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    c10, c100 = out.split("CIFAR-100")
    assert "| DNN | Float | PSGD | BC | BR | Our1 | Our2 | Our3 |" in c10
    assert "| VGG-11 | – | – | – | – | – | – | 90.50 ± 0.71 (n=2) [paper 90.71] |" in c10
    assert "| ResNet-18 | 95.00 [paper 95.49] |" in c10  # the Float column shows the float network
    assert "| VGG-16 | – | – | – | – | – | – | – |" in c10
    assert "| DNN | Float | BC | BR | Our3 |" in c100 and "71.00 [paper 71.26]" in c100
    assert main(["table", str(tmp_path), "--latex", "--dataset", "cifar100"]) == 0
    latex = capsys.readouterr().out
    assert r"\begin{tabular}" in latex and "71.00 [paper 71.26]" in latex and "CIFAR-10 " not in latex


def test_extra_columns_and_errors(tmp_path, capsys):
    write(tmp_path, [summary("digits", "mlp", "stam", "our3", "STAM admissible", 11.0, 95.0)])
    title, header, rows = table.build(table.collect(tmp_path), "digits", with_time=True)
    assert header == ["DNN", "STAM admissible", "STAM admissible time (s)"] and rows == [["MLP", "11.00", "10.0"]]
    assert main(["table", str(tmp_path / "none")]) == 2
    assert "not a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["table", str(tmp_path / "empty")]) == 2


def test_short_and_diverged_runs_and_latex_escaping(tmp_path, capsys):
    runs = [summary("cifar10", "vgg11", "stam", "our3", "Our3", 80.0, 81.0, 0),
            summary("cifar10", "vgg11", "stam", "our3", "Our3", 82.0, 83.0, 1),
            summary("cifar10", "vgg11", "stam", "our3", "Our3", 99.0, 99.0, 2),
            summary("cifar10", "vgg11", "bc", "bc", "A&B_#1 $x$ ~", 70.0, 71.0)]
    for r in runs[:2]:
        r.update(epochs=15, status="completed")
    runs[2].update(epochs=3, status="diverged in epoch 4")
    write(tmp_path, runs)
    _, header, rows = table.build(table.collect(tmp_path), "cifar10")
    title = table.build(table.collect(tmp_path), "cifar10")[0]
    row = dict(zip(header, rows[0]))
    assert row["Our3"] == "81.00 ± 1.41 (n=2, 15 epochs) [paper 90.71]"  # the diverged 99.0 is left out
    assert "1 run(s) that did not complete left out" in title
    assert main(["table", str(tmp_path), "--latex"]) == 0
    latex = capsys.readouterr().out
    assert r"A\&B\_\#1 \$x\$ \textasciitilde{}" in latex and "A&B" not in latex
    assert latex_escape("50% ± 1") == r"50\% $\pm$ 1"


def test_default_is_the_validation_selected_epoch_and_the_paper_metric_is_labelled(tmp_path, capsys):
    a = summary("digits", "mlp", "bc", "bc", "BC", 90.0, 91.0)
    a.update(selected_test_acc_binary=85.0)  # the validation-selected epoch is not the best test epoch
    b = summary("digits", "mlp", "bc", "bc", "BC", 70.0, 71.0, seed=1)
    b.update(selected_test_acc_binary=None, selected_test_acc_float=None)  # --no-val: no selection possible
    write(tmp_path, [a, b])
    assert main(["table", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "selected on validation data" in out and "| MLP | 85.00 |" in out
    assert "1 run(s) without a validation split not shown: see --paper-metric" in out
    assert main(["table", str(tmp_path), "--paper-metric"]) == 0
    out = capsys.readouterr().out
    assert "the paper's metric" in out and "80.00 ± 14.14 (n=2" in out


# -- runs the table cannot use are reported, never dropped silently (issue 12, items 3, 4 and 8) ---------

SKIPPED = {  # what summary.json holds -> what the stderr line says
    "truncated": (b'{"kind": "train-run", "model": "mlp", "data', "not valid JSON"),
    "not-utf8": (b'{"kind": "train-run", "model": "ml\xff"}', "not UTF-8"),
    "a-list": (b"[]", "must be an object, not a list"),
    "null": (b"null", "must be an object, not null"),
    "no-model": (json.dumps({"kind": "train-run", "dataset": "digits", "algo": "bc"}).encode(), "field model is missing"),
    "unknown-model": (json.dumps(summary("digits", "vgg99", "bc", "bc", "BC", 50.0, 51.0)).encode(),
                      "field model names an unknown model 'vgg99'"),
    "unknown-dataset": (json.dumps(summary("mnist", "mlp", "bc", "bc", "BC", 50.0, 51.0)).encode(),
                        "field dataset names an unknown dataset 'mnist'"),
    "accuracy-text": (json.dumps({**summary("digits", "mlp", "bc", "bc", "BC", 50.0, 51.0), "selected_test_acc_binary": "abc"}).encode(),
                      "field selected_test_acc_binary must be a percentage in [0, 100] or null, not a string"),
    "accuracy-nan": (json.dumps({**summary("digits", "mlp", "bc", "bc", "BC", 50.0, 51.0), "selected_test_acc_binary": float("nan")}).encode(),
                     "field selected_test_acc_binary must be a percentage in [0, 100] or null, not nan"),
    "dataset-path": (json.dumps({**summary("digits", "mlp", "bc", "bc", "BC", 50.0, 51.0), "dataset": "../../../tmp/x"}).encode(),
                     "field dataset must be a name of lower-case letters"),
    "label-list": (json.dumps({**summary("digits", "mlp", "bc", "bc", "BC", 50.0, 51.0), "label": ["a"]}).encode(),
                   "field label must be a string or null, not a list"),
    "other-kind": (json.dumps({"kind": "synthetic-rates", "model": "mlp"}).encode(), "not a stam train summary"),
}


@pytest.mark.parametrize("latex", [False, True])
def test_every_skipped_summary_is_reported_on_stderr_and_counted(tmp_path, capsys, latex):
    write(tmp_path, [summary("digits", "mlp", "bc", "bc", "BC", 80.0, 81.0)])
    for name, (data, _) in SKIPPED.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_bytes(data)
    assert main(["table", str(tmp_path), *(["--latex"] if latex else [])]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == len(SKIPPED) and "Traceback" not in captured.err
    for name, (_, why) in SKIPPED.items():
        (line,) = [x for x in lines if f"{tmp_path / name / 'summary.json'}:" in x]
        assert line.startswith("stam table: skipped ") and why in line, (name, line)
    assert f"{len(SKIPPED)} run(s) skipped" in captured.out
    assert ("80.00" in captured.out) and (f"% {len(SKIPPED)} run(s) skipped" in captured.out) == latex
    skipped = []
    assert len(table.collect(tmp_path, skipped)) == 1 and len(skipped) == len(SKIPPED)


def test_a_folder_of_only_unusable_summaries_is_one_line(tmp_path, capsys):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "summary.json").write_bytes(SKIPPED["truncated"][0])
    assert main(["table", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1 summary.json skipped" in err and "not valid JSON" in err


def test_no_note_when_nothing_is_skipped(tmp_path, capsys):
    write(tmp_path, [summary("digits", "mlp", "bc", "bc", "BC", 80.0, 81.0)])
    assert main(["table", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "skipped" not in captured.out


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=20))
def test_markdown_cells_cannot_break_the_table(label):
    """Any label is one cell: the row keeps its number of unescaped pipes and stays one line."""
    text = table.to_markdown("t", ["DNN", label], [["MLP", label]])
    lines = text.splitlines()
    assert len(lines) == 5
    for row in lines[2:]:
        if row.startswith("|---"):
            continue
        unescaped = [i for i, ch in enumerate(row) if ch == "|" and (len(row[:i]) - len(row[:i].rstrip("\\"))) % 2 == 0]
        assert len(unescaped) == 3, row  # | DNN | label |
    cell = table.markdown_cell(label)
    assert cell.replace("\\\\", "").replace("\\|", "") .count("|") == 0 and "\n" not in cell and "\r" not in cell
    assert "<" not in cell and ">" not in cell  # no live HTML where the Markdown is rendered
    assert not live_brackets(cell)  # no link, no image
    if not any(c in label for c in "\\|&<>") and not live_brackets(label + ".") and not any(c in label for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        assert cell == label  # ordinary labels are unchanged


def live_brackets(text: str) -> list[int]:
    """Where ``text`` has a ``]`` that Markdown reads as one (not escaped by an odd run of
    backslashes) followed by ``(``, ``[`` or ``:``: what a link ``[x](url)``, an image
    ``![x](url)``, a reference ``[x][r]`` or a definition ``[r]: url`` needs."""
    return [i for i, ch in enumerate(text[:-1]) if ch == "]" and text[i + 1] in "([:"
            and (len(text[:i]) - len(text[:i].rstrip("\\"))) % 2 == 0]


LINKS = ("[click](javascript:alert(1))", "![x](javascript:alert(2))", "[a][r]\n[r]: javascript:alert(3)",
         "\\[b](javascript:alert(4))")


@pytest.mark.parametrize("label", LINKS)
def test_a_link_or_an_image_in_a_label_is_text_in_every_markdown_table(tmp_path, capsys, label):
    """Issue 40: brackets are escaped in stam table's Markdown and the report's tables/*.md, so a
    label ``[click](javascript:...)`` or ``![x](...)`` is shown as typed, never a live link or image."""
    assert live_brackets(label)  # the label itself would be one
    (tmp_path / "runs").mkdir()
    write(tmp_path / "runs", [summary("digits", "mlp", "bc", "bc", label, 80.0, 81.0)])
    assert main(["table", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "javascript" in line)
    assert not live_brackets(out) and "\\]" in row
    assert main(["report", str(tmp_path / "runs"), "-o", str(tmp_path / "report")]) == 0
    capsys.readouterr()
    tables = list((tmp_path / "report" / "tables").glob("*.md"))
    assert tables and any("javascript" in p.read_text() for p in tables)
    for p in tables:
        assert not live_brackets(p.read_text()), p


def test_html_in_a_label_is_text_in_every_markdown_table(tmp_path, capsys):
    """A --label of HTML reaches stam table's and the report's Markdown as entities, never as a tag."""
    evil = "<img src=x onerror=alert(1)>"
    write(tmp_path, [summary("digits", "mlp", "bc", "bc", evil, 80.0, 81.0)])
    assert main(["table", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "<img" not in out and "&lt;img src=x onerror=alert(1)&gt;" in out
    from stam.figures.tables import Table

    md = Table("cap <b>", ["h"], [[evil]]).to_markdown()
    assert "<" not in md and "&lt;b&gt;" in md


def test_a_label_with_a_pipe_and_a_newline_in_a_real_table(tmp_path, capsys):
    write(tmp_path, [summary("digits", "mlp", "bc", "bc", "a|b\nc", 80.0, 81.0)])
    assert main(["table", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| DNN | a\\|b c |" in out and "| MLP | 80.00 |" in out

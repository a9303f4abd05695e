import json

import pytest

from benchmarks import demo_study
from pmem_advisor.errors import UsageError

from .demo_tools import demo_study as make_study


def test_summarise_file_prints_the_summary_and_writes_it(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"x": 1}) + "\n\n" + json.dumps({"x": 2}) + "\n")
    out = tmp_path / "s.json"
    assert demo_study.summarise_file(rows, out, lambda rs: {"n": len(rs)}, "tool") == 0
    assert json.loads(out.read_text()) == {"n": 2}
    assert json.loads(capsys.readouterr().out) == {"n": 2}


@pytest.mark.parametrize("text, said", [
    ("{not json\n", "holds no rows of tool"),
    (json.dumps({"y": 1}) + "\n", "holds no rows of tool"),
])
def test_rows_of_another_kind_are_a_usage_error(tmp_path, text, said):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(text)
    with pytest.raises(UsageError, match=said):
        demo_study.summarise_file(rows, None, lambda rs: {"x": [r["x"] for r in rs]}, "tool")


def test_load_opens_a_study_and_creates_nothing_where_nothing_was(tmp_path):
    make_study(tmp_path / "study.db", [("rules", 65536, 1000.0)])
    assert len(demo_study.load(tmp_path / "study.db").trials) == 1
    with pytest.raises(UsageError, match="is not a file"):
        demo_study.load(tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()

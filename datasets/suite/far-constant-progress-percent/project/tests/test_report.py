from progress.report import bar, eta_seconds, percent, status_line


def test_not_started():
    assert percent(0, 80) == 0.0


def test_empty_job_is_complete():
    assert percent(0, 0) == 100.0


def test_quarter():
    assert percent(25, 100) == 25.0


def test_bar():
    assert bar(5, 20, width=8) == "[##------]"


def test_eta():
    assert eta_seconds(10, 40, elapsed=5.0) == 15


def test_status_line():
    assert status_line("import", 4, 8, 10.0) == "import  [####----] 50.0% (eta 10s)"

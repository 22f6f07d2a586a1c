from expenses.importer import largest, read_rows, totals_by_category

EXPORT = (
    "date,category,amount,note\r\n"
    "2024-04-01,Rent,900,april\r\n"
    "\r\n"
    "2024-04-02,Food,8.10,\"coffee, cake\"\r\n"
    "2024-04-03, FOOD ,1.90,tea\r\n"
    "2024-04-04,Fun,25,cinema\r\n"
)


def test_rows():
    assert [r["note"] for r in read_rows(EXPORT)] == ["april", "coffee, cake", "tea", "cinema"]


def test_totals():
    assert totals_by_category(EXPORT) == {"food": 10.0, "fun": 25.0, "rent": 900.0}


def test_largest_two():
    assert largest(EXPORT, n=2) == [(900.0, "april"), (25.0, "cinema")]


def test_single_row():
    assert read_rows("date,category,amount,note\n2024-01-01,x,1,y\n")[0]["amount"] == 1.0


def test_first_row_is_data_not_header():
    assert read_rows(EXPORT)[0]["date"] == "2024-04-01"

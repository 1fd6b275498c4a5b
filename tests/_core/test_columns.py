import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._core import columns


@settings(deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1)), st.lists(st.booleans()),
       st.lists(st.floats(allow_nan=False)), st.lists(st.text()))
def test_arrays_equal_what_pa_array_builds(ints, bools, floats, texts):
    texts = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]  # no lone surrogates
    for values in (np.array(ints, dtype=np.int64), np.array(bools, dtype=bool),
                   np.array(floats, dtype=np.float64), np.array(ints, dtype=np.int64)[::2]):
        assert columns.numbers(values).equals(pa.array(values))
    assert columns.strings(texts).equals(pa.array(texts, pa.string()))
    unicode = np.array(texts, dtype=str)
    table = columns.table({"a": np.array(texts, dtype=object), "b": np.arange(len(texts)),
                           "c": unicode})
    assert table.column_names == ["a", "b", "c"]
    assert table.column("a").to_pylist() == texts
    assert table.column("c").to_pylist() == unicode.tolist()
    assert table.column("b").to_pylist() == list(range(len(texts)))

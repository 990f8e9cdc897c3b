import numpy as np

from workflow_scripts.core.float16 import float16_to_float32


def test_every_float16_bit_pattern_widens_as_numpy_widens_it():
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    values = patterns.view(np.float16)
    widened = float16_to_float32(values)
    expected = values.astype(np.float32)
    assert widened.dtype == np.float32 and widened.shape == values.shape
    # Bit for bit: zeros keep their sign, subnormals, infinities and NaN payloads are the same.
    np.testing.assert_array_equal(widened.view(np.uint32), expected.view(np.uint32))


def test_shapes_views_and_other_dtypes():
    maps = np.random.default_rng(0).random((2, 3, 5, 5)).astype(np.float16)
    view = maps[:, :, :4, :4]  # not contiguous
    np.testing.assert_array_equal(float16_to_float32(view), view.astype(np.float32))
    assert float16_to_float32(maps).shape == maps.shape
    assert not np.shares_memory(float16_to_float32(maps), maps)
    doubles = np.array([0.5, 1.5])
    assert float16_to_float32(doubles).dtype == np.float32

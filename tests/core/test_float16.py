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


def test_positive_finite_maps_take_the_short_way_and_widen_the_same():
    # Every positive finite pattern (0 .. 0x7BFF: zero, subnormals, normals up to 65504): no sign and no inf/NaN
    # to handle, the shortcut attention maps take.
    patterns = np.arange(0x7C00, dtype=np.uint16)
    values = patterns.view(np.float16)
    np.testing.assert_array_equal(float16_to_float32(values).view(np.uint32), values.astype(np.float32).view(np.uint32))
    # One pattern past it (inf, or a negative zero) sends the whole array the long way, still exact.
    for extra in (0x7C00, 0x8000):
        mixed = np.append(patterns, np.uint16(extra)).view(np.float16)
        expected = mixed.astype(np.float32).view(np.uint32)
        np.testing.assert_array_equal(float16_to_float32(mixed).view(np.uint32), expected)
    assert float16_to_float32(np.zeros((0, 3), np.float16)).shape == (0, 3)

"""The shared comparison helper itself (tests/reference.py): it fails outside the bound, on a
shape mismatch and on NaN against a number, and passes at the bound."""
import numpy as np
import pytest

from tests.reference import assert_close, assert_rel_close, assert_within


def test_assert_close_passes_at_the_bound():
    # |1.5 - 1| = 0.5 = atol 0.25 + rtol 0.25 * |1|: exactly at the bound
    assert_close(np.array([1.5, 2.0]), np.array([1.0, 2.0]), rtol=0.25, atol=0.25)
    assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0]), rtol=0, atol=0)


def test_assert_close_fails_outside_the_bound():
    with pytest.raises(AssertionError, match=r"scenario: max abs error .* at index \(1,\)"):
        assert_close(np.array([1.0, 2.5]), np.array([1.0, 2.0]), rtol=0.1, atol=0.1,
                     what="scenario")


def test_assert_close_refuses_a_shape_mismatch():
    with pytest.raises(AssertionError, match="shape"):
        assert_close(np.zeros((3, 1)), np.zeros(3), rtol=1, atol=1)
    with pytest.raises(AssertionError, match="shape"):
        assert_close(np.zeros(3), 0.0, rtol=1, atol=1)


def test_assert_close_nan_against_a_number_fails():
    with pytest.raises(AssertionError, match="NaN"):
        assert_close(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), rtol=1, atol=1)
    with pytest.raises(AssertionError, match="NaN"):
        assert_close(np.array([0.0, 1.0]), np.array([np.nan, 1.0]), rtol=1, atol=1)
    # NaN against NaN, and the same infinity, are equal
    assert_close(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]), rtol=0, atol=0)
    with pytest.raises(AssertionError):
        assert_close(np.array([np.inf]), np.array([-np.inf]), rtol=0, atol=0)


def test_assert_rel_close_passes_at_the_bound():
    # the error (0.5, 0) has norm 0.5, the reference (3, 4) norm 5: exactly at tol = 0.1
    assert assert_rel_close(np.array([3.5, 4.0]), np.array([3.0, 4.0]), tol=0.1) == 0.1
    assert assert_rel_close(np.zeros(2), np.zeros(2), tol=0) == 0.0


def test_assert_rel_close_fails_outside_the_bound():
    with pytest.raises(AssertionError, match=r"case: relative error .* > 0.05"):
        assert_rel_close(np.array([3.3, 4.4]), np.array([3.0, 4.0]), tol=0.05, what="case")
    with pytest.raises(AssertionError, match="relative error inf"):
        assert_rel_close(np.array([1.0]), np.array([0.0]), tol=1.0)


def test_assert_rel_close_refuses_a_shape_mismatch():
    with pytest.raises(AssertionError, match="shape"):
        assert_rel_close(np.ones((2, 2)), np.ones(4), tol=1.0)


def test_assert_rel_close_nan_against_a_number_fails():
    with pytest.raises(AssertionError, match="NaN"):
        assert_rel_close(np.array([np.nan, 1.0]), np.array([1.0, 1.0]), tol=1.0)


def test_assert_within_passes_at_each_elements_bound():
    assert_within([1.0, 2.5, 3.0], [1.0, 2.0, 2.0], [0.0, 0.5, 1.0])


def test_assert_within_names_the_worst_element():
    with pytest.raises(AssertionError, match=r"2 of 3 elements outside their bound; worst at "
                                              r"\(2,\).*bound of 0\.1"):
        assert_within([1.1, 2.0, 5.0], [1.0, 2.0, 3.0], [0.05, 0.1, 0.1], what="cumsum")


def test_assert_within_nan_against_a_number_fails_and_nan_against_nan_passes():
    with pytest.raises(AssertionError, match="1 of 2"):
        assert_within([np.nan, 1.0], [0.0, 1.0], 1.0)
    assert_within([np.nan, np.inf], [np.nan, np.inf], 0.0)


def test_assert_within_refuses_a_shape_mismatch():
    with pytest.raises(AssertionError, match="shape"):
        assert_within(np.zeros(3), np.zeros((3, 1)), 1.0)

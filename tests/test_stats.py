"""course.stats.t_quantile against the two closed forms of Student's t (df 1 and 2), and
its large-df limit, the normal's quantile."""

import math

import pytest

from course.stats import t_cdf, t_quantile


@pytest.mark.parametrize("p", [0.6, 0.9, 0.95, 0.975, 0.995])
def test_t_quantile_matches_the_closed_forms(p):
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-12)
    two = (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
    assert t_quantile(p, 2) == pytest.approx(two, rel=1e-12)


def test_t_quantile_is_symmetric_and_inverts_the_cdf():
    for df in (3, 4, 9, 29):
        upper = t_quantile(0.975, df)
        assert t_quantile(0.025, df) == pytest.approx(-upper, rel=1e-12)
        assert t_cdf(upper, df) == pytest.approx(0.975, abs=1e-13)
    assert t_quantile(0.975, 10**6) == pytest.approx(1.959963984540054, rel=1e-5)


def test_t_quantile_refuses_what_has_no_quantile():
    for p, df in ((0.0, 3), (1.0, 3), (0.5, 0)):
        with pytest.raises(ValueError):
            t_quantile(p, df)

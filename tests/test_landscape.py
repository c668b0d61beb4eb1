"""course.landscape: Li et al.'s filter-normalised directions, the grids, the interpolation
and the trajectory's PCA, each against a computation made here by hand."""

import numpy as np
import pytest

from course import landscape
from course.training import fit


def net_params(seed: int = 0) -> dict:
    """A parameter dict with every kind of array: fully connected (D, H) weights, a
    convolution's (F, C, HH, WW) filters, biases and batch norm's vectors. No shape square,
    so a norm over the wrong axis cannot pass."""
    rng = np.random.default_rng(seed)
    return {
        "conv": rng.standard_normal((4, 3, 2, 2)),
        "gamma": 1.0 + 0.1 * rng.standard_normal(4),
        "W1": rng.standard_normal((6, 5)) * np.arange(1, 6),  # columns of different norms
        "b1": rng.standard_normal(5),
        "W2": rng.standard_normal((5, 3)),
    }


def wavy_loss(params: dict) -> float:
    """A smooth, non-quadratic loss of every entry: a grid point read from the wrong place
    gives a different number."""
    return float(
        sum(np.sum(np.sin(a) * np.arange(1, a.size + 1).reshape(a.shape)) for a in params.values())
    )


def moved(centre: dict, *steps) -> dict:
    """centre + sum of coefficient * direction, written out array by array."""
    return {name: centre[name] + sum(c * d[name] for c, d in steps) for name in centre}


def path_step(params: dict, seed: int) -> dict:
    return landscape.random_directions(params, seed, count=1, ignore_biasbn=False)[0]


def copies(params: dict) -> dict:
    return {name: a.copy() for name, a in params.items()}


def test_filter_normalisation_by_hand():
    params = {
        "W": np.array([[3.0, 0.0], [4.0, 1.0]]),  # columns (neurons): norms 5 and 1
        "w": np.array([[[[1.0, 1.0]]], [[[0.0, 2.0]]]]),  # (2, 1, 1, 2): filter norms sqrt 2, 2
        "b": np.array([7.0, -1.0]),
    }
    direction = {
        "W": np.array([[1.0, 2.0], [0.0, 0.0]]),  # columns of norms 1 and 2
        "w": np.array([[[[3.0, 4.0]]], [[[0.0, -0.5]]]]),  # filter norms 5 and 0.5
        "b": np.array([1.0, 1.0]),
    }
    got = landscape.normalise_filters(direction, params)
    np.testing.assert_allclose(got["W"], [[5.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(got["w"], [[[[3 / 5 * 2**0.5, 4 / 5 * 2**0.5]]], [[[0.0, -2.0]]]])
    assert np.array_equal(got["b"], [0.0, 0.0])  # Li et al.'s "biasbn": a vector is left out
    kept = landscape.normalise_filters(direction, params, ignore_biasbn=False)
    assert np.array_equal(kept["b"], params["b"])  # else their code's d = theta


def test_directions_have_the_weights_shapes_and_per_filter_norms():
    params = net_params()
    before = copies(params)
    d1, d2 = landscape.random_directions(params, seed=3)
    for d in (d1, d2):
        assert list(d) == list(params)
        assert all(d[n].shape == params[n].shape for n in params)
        np.testing.assert_allclose(  # one norm per neuron: a column of (D, H)
            np.linalg.norm(d["W1"], axis=0), np.linalg.norm(params["W1"], axis=0)
        )
        np.testing.assert_allclose(
            np.linalg.norm(d["W2"], axis=0), np.linalg.norm(params["W2"], axis=0)
        )
        np.testing.assert_allclose(  # one norm per filter: w[f]
            np.linalg.norm(d["conv"].reshape(4, -1), axis=1),
            np.linalg.norm(params["conv"].reshape(4, -1), axis=1),
        )
        assert not np.any(d["b1"]) and not np.any(d["gamma"])
    assert not np.allclose(d1["W1"], d2["W1"])  # two directions, not one twice
    again = landscape.random_directions(params, seed=3)
    assert all(np.array_equal(again[0][n], d1[n]) for n in params)  # seeded
    other = landscape.random_directions(params, seed=4)
    assert not np.allclose(other[0]["W1"], d1["W1"])
    assert all(np.array_equal(params[n], before[n]) for n in params)


def test_the_grid_s_corners_and_centre_are_the_loss_at_those_points():
    centre = net_params(1)
    d1, d2 = landscape.random_directions(centre, seed=0)
    result = landscape.slice_2d(
        wavy_loss, centre, (d1, d2), span=((-1.0, 2.0), (-0.5, 0.25)), resolution=7
    )
    assert result.losses.shape == (7, 7)
    np.testing.assert_allclose(result.alphas[[0, -1]], [-1.0, 2.0])
    np.testing.assert_allclose(result.betas[[0, -1]], [-0.5, 0.25])
    corners = {
        (0, 0): (-1.0, -0.5),
        (0, -1): (2.0, -0.5),
        (-1, 0): (-1.0, 0.25),
        (-1, -1): (2.0, 0.25),
    }
    for (j, i), (a, b) in corners.items():  # row j is a beta, column i an alpha
        want = wavy_loss(moved(centre, (a, d1), (b, d2)))
        assert result.losses[j, i] == pytest.approx(want, rel=1e-12)
    square = landscape.slice_2d(wavy_loss, centre, (d1, d2), span=0.5, resolution=5)
    assert square.losses[2, 2] == pytest.approx(wavy_loss(centre), rel=1e-12)
    assert square.losses[1, 3] == pytest.approx(
        wavy_loss(moved(centre, (0.25, d1), (-0.25, d2))), rel=1e-12
    )


def test_a_1d_slice_and_the_interpolation_meet_their_end_points():
    start, end = net_params(2), net_params(3)
    line = landscape.interpolation(wavy_loss, start, end)  # a over [-0.5, 1.5], 41 points
    assert line.alphas[10] == pytest.approx(0.0) and line.alphas[30] == pytest.approx(1.0)
    assert line.losses[10] == pytest.approx(wavy_loss(start), rel=1e-12)
    assert line.losses[30] == pytest.approx(wavy_loss(end), rel=1e-12)
    middle = {n: 0.5 * (start[n] + end[n]) for n in start}
    assert line.losses[20] == pytest.approx(wavy_loss(middle), rel=1e-12)
    [d] = landscape.random_directions(start, seed=1, count=1)
    one = landscape.slice_1d(wavy_loss, start, d, span=(0.0, 2.0), resolution=3)
    assert one.losses.tolist() == pytest.approx(
        [wavy_loss(moved(start, (a, d))) for a in (0.0, 1.0, 2.0)], rel=1e-12
    )


def test_pca_recovers_the_plane_a_synthetic_path_lies_in():
    final = net_params(4)
    size = landscape.flatten(final).size
    rng = np.random.default_rng(0)
    u, v = np.linalg.qr(rng.standard_normal((size, 2)))[0].T  # an orthonormal pair
    t = np.linspace(0.0, 1.0, 30)
    a, b = 5.0 * (1 - t) ** 2, 1.0 * np.sin(3 * t) * (1 - t)  # long along u, short along v
    path = [
        landscape.unflatten(landscape.flatten(final) + ai * u + bi * v, final)
        for ai, bi in zip(a, b, strict=True)
    ]
    before = [copies(p) for p in path]
    result = landscape.trajectory_pca(path)
    pcs = np.stack([landscape.flatten(d) for d in result.directions])
    np.testing.assert_allclose(pcs @ pcs.T, np.eye(2), atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(pcs @ np.stack([u, v]).T, axis=1), 1.0, atol=1e-10)
    assert abs(pcs[0] @ u) > 0.99  # the long axis first
    assert result.explained_variance.sum() == pytest.approx(1.0)
    assert result.explained_variance[0] > result.explained_variance[1] > 0
    # Each point projected: its coordinates rebuild it exactly; the end is at the origin.
    rebuilt = result.coords @ pcs
    np.testing.assert_allclose(rebuilt, np.outer(a, u) + np.outer(b, v), atol=1e-10)
    np.testing.assert_allclose(result.coords[-1], 0.0, atol=1e-12)
    assert np.all(result.coords[0] >= 0)
    assert all(np.array_equal(p[n], q[n]) for p, q in zip(path, before, strict=True) for n in p)


def test_pca_explained_variance_is_the_share_of_the_centred_path():
    final = {"W": np.zeros((3, 2)), "b": np.zeros(2)}
    # Differences with centred, orthogonal coordinates of known sums of squares: 4, 1, 0.25.
    e = np.eye(8)
    steps = np.array([[2, 1, 0.5], [-2, 1, -0.5], [2, -1, -0.5], [-2, -1, 0.5], [0, 0, 0]]) / 2
    path = [landscape.unflatten(s @ e[:3], final) for s in steps]
    explained = landscape.trajectory_pca(path).explained_variance
    np.testing.assert_allclose(explained, np.array([4.0, 1.0]) / 5.25)
    # Centred as Li et al.'s PCA is (uncentred, these two steps would explain 0.8 and 0.2):
    # rows (2, 0), (0, 1), (0, 0) less their mean have the scatter [[24, -6], [-6, 6]] / 9.
    two = [{"W": np.array([[2.0, 0.0]])}, {"W": np.array([[0.0, 1.0]])}, {"W": np.zeros((1, 2))}]
    first = (30 + 468**0.5) / 60
    np.testing.assert_allclose(landscape.trajectory_pca(two).explained_variance, [first, 1 - first])
    with pytest.raises(ValueError, match="2 points"):
        landscape.trajectory_pca(two[1:])
    ignored = landscape.trajectory_pca(path, ignore_biasbn=True)
    assert not np.any(ignored.directions[0]["b"]) and not np.any(ignored.directions[1]["b"])


class Quadratic:
    """A model as the course writes them: `.params`, and `.loss(X, y) -> (loss, grads)`, with
    `.loss(X)` the scores."""

    def __init__(self):
        self.params = {"W": np.array([[1.0, -2.0], [0.5, 0.0]]), "b": np.array([0.1, 0.2])}

    def loss(self, X, y=None):
        scores = X @ self.params["W"] + self.params["b"]
        if y is None:
            return scores
        return float(np.mean((scores - y) ** 2)), {name: None for name in self.params}


def test_model_loss_sees_the_given_params_and_never_changes_the_model_s():
    model = Quadratic()
    own, kept = model.params, copies(model.params)
    X, y = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])
    loss = landscape.model_loss(model, X, y)
    other = {"W": np.eye(2), "b": np.zeros(2)}
    assert loss(other) == pytest.approx(np.mean((X - y) ** 2))
    assert loss(model.params) == pytest.approx(model.loss(X, y)[0])
    squared = landscape.model_loss(model, X, y, data_loss=lambda s, t: (np.sum((s - t) ** 2), None))
    assert squared(other) == pytest.approx(np.sum((X - y) ** 2))
    landscape.slice_2d(loss, model.params, landscape.random_directions(model.params), resolution=3)
    landscape.interpolation(loss, other, model.params, resolution=3)
    with pytest.raises(KeyError):
        loss({"W": np.eye(2)})  # a loss that raises still gives the model its own dict back
    assert model.params is own and all(np.array_equal(own[n], kept[n]) for n in own)


def test_snapshots_record_fit_s_path_from_start_to_end():
    X, y = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])

    class Model(Quadratic):
        def loss(self, X, y=None):
            if y is None:
                return np.zeros((len(X), 2))
            scores = X @ self.params["W"] + self.params["b"]
            ds = 2 * (scores - y) / scores.size
            return float(np.mean((scores - y) ** 2)), {"W": X.T @ ds, "b": ds.sum(axis=0)}

    model = Model()
    start = copies(model.params)
    snaps = landscape.Snapshots(model)
    history = fit(
        model, lambda w, dw, c: (w - 0.1 * dw, c), X, y, epochs=3, batch_size=2, progress=snaps
    )
    assert len(snaps.path) == 4 and len(history["loss"]) == 3  # full batch: a point a step
    assert all(np.array_equal(snaps.path[0][n], start[n]) for n in start)
    assert all(np.array_equal(snaps.path[-1][n], model.params[n]) for n in start)
    assert not np.array_equal(snaps.path[1]["W"], snaps.path[0]["W"])
    assert snaps.path[-1]["W"] is not model.params["W"]  # copies


def test_the_pictures_and_the_widget_draw_the_numbers():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    centre = net_params(5)
    open_before = plt.get_fignums()
    result, fig = landscape.landscape(wavy_loss, centre, seed=1, span=0.5, resolution=5)
    assert result.losses.shape == (5, 5) and len(fig.axes) >= 2
    drawn = landscape.random_directions(centre, seed=1)
    assert all(np.array_equal(result.directions[k]["W1"], drawn[k]["W1"]) for k in range(2))
    path = np.array([[0.4, 0.3], [0.2, 0.1], [0.0, 0.0]])
    ax = landscape.plot_contours(result, path=path)
    assert any(np.array_equal(line.get_xdata(), path[:, 0]) for line in ax.lines)
    landscape.plot_surface(result, path=path, path_losses=np.ones(3))
    landscape.plot_slice_1d(
        landscape.Slice1D(result.alphas, result.losses[2], result.directions[0])
    )
    drawn_here = set(plt.get_fignums()) - set(open_before)  # other tests may leave theirs
    assert drawn_here
    for number in drawn_here:
        plt.close(number)
    walk = [
        moved(centre, (1 - t, path_step(centre, 0)), (t * (1 - t), path_step(centre, 1)))
        for t in np.linspace(0, 1, 6)
    ]
    trajectory, plane, fig = landscape.path_landscape(wavy_loss, walk, resolution=5)
    (low_a, high_a), (low_b, high_b) = (plane.alphas[[0, -1]], plane.betas[[0, -1]])
    assert np.all((low_a < trajectory.coords[:, 0]) & (trajectory.coords[:, 0] < high_a))
    assert np.all((low_b < trajectory.coords[:, 1]) & (trajectory.coords[:, 1] < high_b))
    drawn = [line for ax in fig.axes for line in ax.lines if line.get_label() == "path"]
    assert len(drawn) == 2  # on the contours and on the surface
    z = drawn[1].get_data_3d()[2]
    assert z[-1] == pytest.approx(wavy_loss(centre))  # the path ends at the trained weights
    assert z[0] == pytest.approx(
        landscape.plane_losses(wavy_loss, centre, trajectory.directions, trajectory.coords[:1])[0]
    )
    plt.close("all")
    box = landscape.explore(wavy_loss, centre, resolution=5)
    *controls, image, words = box.children
    assert [c.description for c in controls] == ["directions' seed", "span", "resolution"]
    first = bytes(image.value)
    assert first.startswith(b"\x89PNG") and words.value == ""
    controls[0].value = 2
    assert bytes(image.value) != first and words.value == ""

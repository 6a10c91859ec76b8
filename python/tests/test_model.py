"""Model.load and predict against `tiletrain predict` on the same image,
and to_torch() against the library's own forward pass."""
import numpy as np
import pytest

import tiletrain
from conftest import TINY


@pytest.fixture(scope="session")
def checkpoint(data, workdir):
    out = workdir / "model_run"
    tiletrain.train(data=data, out=out, **TINY)
    return out / "best.safetensors"


@pytest.fixture(scope="session")
def model(checkpoint):
    with tiletrain.Model.load(checkpoint) as m:
        yield m


def odd_image(height=50, width=77):
    return np.random.default_rng(3).integers(0, 256, (height, width, 3), dtype=np.uint8)


def test_predict_gives_probabilities_of_every_pixel(model):
    probs = model.predict(odd_image())
    assert probs.shape == (2, 50, 77) and probs.dtype == np.float32
    assert model.kind == "multi-label" and model.class_names == ["Fish", "Flower"]
    assert np.all((probs >= 0) & (probs <= 1)) and probs.std() > 0


def test_predict_masks_equal_the_commands(model, cli, checkpoint, workdir):
    Image = pytest.importorskip("PIL.Image", reason="writing the command's input needs Pillow "
                                "(Debian: python3-pil)")
    image = odd_image()
    Image.fromarray(image).save(workdir / "odd.png")
    cli("predict", "--checkpoint", checkpoint, "--input", workdir / "odd.png", "--out",
        workdir / "predicted", "--quiet")
    masks = model.predict(image, output="mask")
    assert masks.shape == (2, 50, 77) and masks.dtype == np.uint8
    for c, name in enumerate(model.class_names):
        theirs = np.asarray(Image.open(workdir / "predicted" / f"odd_{name}.png")) > 0
        assert np.array_equal(masks[c] == 1, theirs), f"class {name}: the masks differ"


def test_grey_rgba_and_float_images_read_as_their_rgb(model):
    image = odd_image(33, 40)
    probs = model.predict(image)
    assert np.array_equal(model.predict(image / 255.0), probs)
    rgba = np.concatenate([image, np.full((33, 40, 1), 7, np.uint8)], axis=2)
    assert np.array_equal(model.predict(rgba), probs)
    grey = image[:, :, 0]
    assert np.array_equal(model.predict(grey), model.predict(np.stack([grey] * 3, axis=2)))


def test_a_bad_image_or_path_raises(model, workdir):
    with pytest.raises(ValueError, match="give H x W"):
        model.predict(np.zeros((4, 5, 2), np.uint8))
    with pytest.raises(tiletrain.Error, match="missing.safetensors"):
        tiletrain.Model.load(workdir / "missing.safetensors")


def test_to_torch_computes_what_the_library_does(checkpoint):
    torch = pytest.importorskip("torch", reason="to_torch needs PyTorch (Debian: python3-torch)")
    with tiletrain.Model.load(checkpoint, tile=(32, 64)) as one_tile:
        image = odd_image(32, 64)
        probs = one_tile.predict(image)  # one tile covers the image: no blending to undo
        net = one_tile.to_torch()
    x = torch.from_numpy(image.astype(np.float32) / 255).permute(2, 0, 1)[None]
    with torch.no_grad():
        theirs = torch.sigmoid(net(x))[0].numpy()
    np.testing.assert_allclose(probs, theirs, atol=2e-4)

"""Finding, decoding and augmenting cats-vs-dogs photos (synthetic folders, plus the real set)."""

import pytest

torch = pytest.importorskip("torch")

from gpukit.cats_vs_dogs import data as D  # noqa: E402
from tests.cats_vs_dogs_helpers import (filtered_layout, needs_shared_data, oxford_copy, photo,  # noqa: E402
                                 shared_data)


def test_filtered_layout(tmp_path):
    ds = D.find_dataset(filtered_layout(tmp_path, n_train=5, n_val=3))
    assert ds.layout == "cats_and_dogs_filtered"
    assert ds.train.counts() == [5, 5] and ds.val.counts() == [3, 3]
    assert all(("cats" in p) == (y == 0) for p, y in zip(ds.train.paths, ds.train.labels))


def petimages(root):
    for i in range(10):
        photo(root / "PetImages" / "Cat" / f"{i}.jpg", 0, seed=i)
        photo(root / "PetImages" / "Dog" / f"{i}.jpg", 1, seed=100 + i)
    (root / "PetImages" / "Cat" / "666.jpg").write_bytes(b"")  # zero bytes, as in the real download
    good = (root / "PetImages" / "Dog" / "0.jpg").read_bytes()
    (root / "PetImages" / "Dog" / "11702.jpg").write_bytes(good[: len(good) // 2])  # truncated
    (root / "PetImages" / "Dog" / "note.jpg").write_text("not a photo at all\n")
    (root / "PetImages" / "Cat" / "Thumbs.db").write_bytes(b"\0" * 64)  # ignored: not an image name
    return root


def test_petimages_layout_skips_and_counts_bad_files(tmp_path):
    ds = D.find_dataset(petimages(tmp_path), val_fraction=0.25, seed=3)
    assert ds.layout == "PetImages"
    everything = ds.train.paths + ds.val.paths
    assert len(everything) == 23 and not any(p.endswith("Thumbs.db") for p in everything)
    train, bad_train = D.build_store(ds.train, 32, "cpu", workers=2)
    val, bad_val = D.build_store(ds.val, 32, "cpu", workers=2)
    bad = bad_train + bad_val
    assert sorted(p.rsplit("/", 1)[-1] for p, _ in bad) == ["11702.jpg", "666.jpg", "note.jpg"]
    assert len(train) + len(val) == 20
    assert train.images.dtype == torch.uint8 and train.images.shape[1:] == (3, 32, 32)
    msg = D.skipped_warning(bad)
    assert "skipped 3 unreadable" in msg and "\n" not in msg


def test_seeded_split_is_stratified_and_reproducible(tmp_path):
    root = petimages(tmp_path)
    a = D.find_dataset(root, val_fraction=0.25, seed=1)
    b = D.find_dataset(root, val_fraction=0.25, seed=1)
    c = D.find_dataset(root, val_fraction=0.25, seed=2)
    assert a.val.paths == b.val.paths and a.val.paths != c.val.paths
    assert a.val.counts() == [3, 3]  # 11 cat files and 12 dog files, 25 % each, rounded
    assert not set(a.train.paths) & set(a.val.paths)


def test_kaggle_flat_naming(tmp_path):
    for i in range(6):
        photo(tmp_path / "train" / f"cat.{i}.jpg", 0, seed=i)
        photo(tmp_path / "train" / f"dog.{i}.jpg", 1, seed=10 + i)
    photo(tmp_path / "test1" / "1.jpg", 0, seed=99)  # Kaggle's unlabelled test folder: ignored
    ds = D.find_dataset(tmp_path, val_fraction=0.5)
    assert ds.layout == "kaggle flat"
    assert ds.train.counts() == [3, 3] and ds.val.counts() == [3, 3]
    assert all(("cat." in p) == (y == 0) for p, y in zip(ds.val.paths, ds.val.labels))


@pytest.mark.parametrize("make, needle", [
    (lambda r: r / "nope", "not found"),
    (lambda r: r, "no cat/dog photos"),
    (lambda r: (r / "train" / "cats").mkdir(parents=True) or r, "class 'cat' is empty"),
    (lambda r: photo(r / "train" / "cats" / "a.jpg", 0, 1) and r, "class 'dog' is missing"),
    (lambda r: (photo(r / "train" / "cats" / "a.jpg", 0, 1), (r / "train" / "dogs").mkdir()) and r,
     "class 'dog' is empty"),
    (lambda r: photo(r / "train" / "cat.1.jpg", 0, 1) and r, "class 'dog' is empty"),
])
def test_missing_or_empty_class_is_a_clear_error(tmp_path, make, needle):
    with pytest.raises(D.DataError, match=needle):
        D.find_dataset(make(tmp_path))


def test_all_files_of_a_class_unreadable(tmp_path):
    root = filtered_layout(tmp_path, n_train=2, n_val=1)
    for p in (root / "train" / "dogs").iterdir():
        p.write_bytes(b"")
    ds = D.find_dataset(root)
    with pytest.raises(D.DataError, match="class 'dog' has no readable image"):
        D.build_store(ds.train, 16, "cpu")


def test_load_image_resizes_short_side_and_crops(tmp_path):
    img = D.load_image(str(photo(tmp_path / "wide.jpg", 0, 1, size=(90, 30))), 24)
    assert img.shape == (24, 24, 3) and img.dtype.name == "uint8"
    assert D.load_image(str(photo(tmp_path / "small.png", 1, 2, size=(10, 12))), 24).shape == (24, 24, 3)


def test_augment_identity_crop_equals_plain_normalisation():
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (4, 3, 20, 20), dtype=torch.uint8, generator=g)
    out = D.augment(images, 20, g, scale=(1.0, 1.0), ratio=(1.0, 1.0), flip=False, jitter=0)
    ref = D.normalise(images.double())
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert torch.allclose(out.double(), ref, atol=1e-4)


def test_augment_shapes_flips_and_determinism():
    images = torch.randint(0, 256, (64, 3, 24, 24), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    a = D.augment(images, 16, torch.Generator().manual_seed(5))
    b = D.augment(images, 16, torch.Generator().manual_seed(5))
    assert a.shape == (64, 3, 16, 16) and a.dtype == torch.float32 and torch.equal(a, b)
    assert torch.isfinite(a).all()
    # flip only: every photo comes back either unchanged or mirrored, and both happen
    f = D.augment(images, 24, torch.Generator().manual_seed(2), scale=(1, 1), ratio=(1, 1), jitter=0)
    plain = D.normalise(images.float())
    same = (f - plain).abs().amax(dim=(1, 2, 3)) < 1e-4
    mirrored = (f - torch.flip(plain, dims=[3])).abs().amax(dim=(1, 2, 3)) < 1e-4
    assert (same | mirrored).all() and same.any() and mirrored.any()


def test_prepare_eval_resizes():
    images = torch.randint(0, 256, (2, 3, 40, 40), dtype=torch.uint8)
    assert D.prepare_eval(images, 32).shape == (2, 3, 32, 32)


@needs_shared_data
def test_real_photos_layout_and_decode():
    ds = D.find_dataset(shared_data())
    assert ds.layout == "cats_and_dogs_filtered"
    assert ds.train.counts() == [1000, 1000] and ds.val.counts() == [500, 500]
    store, bad = D.build_store(D.limit(ds.val, 8), 160, "cpu")
    assert not bad and store.images.shape == (16, 3, 160, 160)
    assert store.images.float().std() > 20  # real photos, not blank


@pytest.mark.gpu
def test_augment_on_gpu_matches_cpu():
    images = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    cpu = D.augment(images, 32, None, scale=(1, 1), ratio=(1, 1), flip=False, jitter=0)
    gpu = D.augment(images.cuda(), 32, None, scale=(1, 1), ratio=(1, 1), flip=False, jitter=0)
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-3)


@pytest.mark.gpu
@needs_shared_data
def test_nvjpeg_decode_matches_pil():
    import numpy as np
    import torchvision.io as tio
    from PIL import Image
    ds = D.find_dataset(shared_data())
    paths = ds.val.paths[:16]
    blobs = [tio.read_file(p) for p in paths]
    decoded = tio.decode_jpeg(blobs, device="cuda")
    for p, t in zip(paths, decoded):
        ref = np.asarray(Image.open(p).convert("RGB")).astype(np.float64)
        got = t.permute(1, 2, 0).cpu().numpy().astype(np.float64)
        assert got.shape == ref.shape
        assert np.abs(got - ref).mean() < 3.0  # IDCT rounding differs between decoders


def test_stream_loader_for_large_sets_drops_bad_files(tmp_path):
    ds = D.find_dataset(petimages(tmp_path), val_fraction=0.25, seed=3)
    everything = D.Split(ds.train.paths + ds.val.paths, ds.train.labels + ds.val.labels)
    loader = D.stream_loader(everything, 24, 23, workers=0, seed=0)  # one batch of all 23 files
    (images, labels, skipped), = list(loader)
    assert images.dtype == torch.uint8 and images.shape == (20, 3, 24, 24)
    assert skipped == 3 and labels.tolist().count(0) == 10


def test_oxford_pets_binary_labels_from_a_local_copy(tmp_path):
    ds = D.oxford_pets(oxford_copy(tmp_path))  # the files are there: nothing is downloaded
    assert ds.layout == "OxfordIIITPet"
    assert ds.train.labels == [0, 1, 0, 1] and ds.val.labels == [1, 0]
    assert ds.train.paths[1].endswith("beagle_1.jpg")

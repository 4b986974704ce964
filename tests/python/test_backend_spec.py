"""What the benchmark child does with a config's artifact
(python/tunefleet/backend/spec.py): artifacts that pack the same sources
share one directory, and so one loaded module, whatever their file names."""

import zipfile

from tunefleet.backend import spec as spec_util


def pack(path, files):
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return str(path)


KERNEL = {"kernel.py": "def build(config, shape):\n    return lambda: config['X']\n"}


def test_configs_packing_the_same_sources_share_a_directory_and_a_module(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    first = spec_util.unpack_artifact(pack(tmp_path / "config-a.zip", KERNEL), str(root))
    second = spec_util.unpack_artifact(pack(tmp_path / "config-b.zip", KERNEL), str(root))
    assert first == second
    assert [p.name for p in root.iterdir()] == [first.rsplit("/", 1)[1]]
    build_a = spec_util.load_sources(first, ["kernel.py"], "build", "t1")
    build_b = spec_util.load_sources(second, ["kernel.py"], "build", "t1")
    assert build_a is build_b
    assert build_a({"X": 3}, {})() == 3


def test_other_sources_get_their_own_directory(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    changed = {"kernel.py": KERNEL["kernel.py"].replace("'X'", "'Y'")}
    first = spec_util.unpack_artifact(pack(tmp_path / "a.zip", KERNEL), str(root))
    second = spec_util.unpack_artifact(pack(tmp_path / "b.zip", changed), str(root))
    renamed = spec_util.unpack_artifact(
        pack(tmp_path / "c.zip", {"other.py": KERNEL["kernel.py"]}), str(root))
    assert len({first, second, renamed}) == 3
    with open(second + "/kernel.py") as f:
        assert "'Y'" in f.read()

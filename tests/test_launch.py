"""gpukit.launch: the compiled kernel is found once for the named types, then reused."""

from gpukit import launch


class FakeKernel:
    """Stands in for a numba CUDA dispatcher: counts compiles and launches."""

    def __init__(self):
        self.compiled = []
        self.launched = []

    def compile(self, argtypes):
        self.compiled.append(argtypes)
        kernel = self

        class Compiled:
            def launch(self, args, griddim, blockdim, stream, sharedmem):
                kernel.launched.append((self, args, griddim, blockdim, sharedmem))
        return Compiled()

    def __getitem__(self, config):
        griddim, blockdim = config

        class Config:
            pass
        c = Config()
        c.griddim, c.blockdim, c.stream, c.sharedmem = (griddim, 1, 1), (blockdim, 1, 1), 0, 0
        return c


def test_compiled_once_then_reused(monkeypatch):
    # the path a real GPU takes (on the simulator a Launcher uses kernel[...](...))
    monkeypatch.setattr(launch.device, "simulator_enabled", lambda: False)
    k = FakeKernel()
    f32, f64 = launch.Launcher(k, ("f32",)), launch.Launcher(k, ("f64",))
    assert f32.compiled is None
    for i in range(3):
        f32(4, 256, (i,))
    f64(2, 128, ("x",))
    assert k.compiled == [("f32",), ("f64",)]
    assert all(entry[0] is f32.compiled for entry in k.launched[:3])
    assert k.launched[3][0] is f64.compiled is not f32.compiled
    assert [entry[1] for entry in k.launched] == [(0,), (1,), (2,), ("x",)]
    assert k.launched[3][2:] == ((2, 1, 1), (128, 1, 1), 0)


def test_simulator_takes_the_ordinary_launch(monkeypatch):
    monkeypatch.setattr(launch.device, "simulator_enabled", lambda: True)
    calls = []

    class Kernel:
        def __getitem__(self, config):
            return lambda *args: calls.append((config, args))

        def compile(self, argtypes):
            raise AssertionError("the simulator has nothing to compile")
    launch.Launcher(Kernel(), ("f32",))(3, 32, (1, 2))
    assert calls == [((3, 32), (1, 2))]


def test_array_type_is_what_numba_types_a_contiguous_array():
    import numpy as np
    from numba import cuda
    t = launch.array_type(np.float32, 2)
    assert t.ndim == 2 and t.layout == "C" and str(t.dtype) == "float32"
    if not launch.device.simulator_enabled():
        from numba.cuda.typing.typeof import typeof
        assert typeof(cuda.device_array((3, 4), np.float32)) == t

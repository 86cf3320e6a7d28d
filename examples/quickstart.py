import numpy as np

from kernbench import Runtime, tl


def scale_rows(x, out):  # a kernel: plain Python against tl
    t = tl.load(x)  # lazy DMA read (ADR-0062)
    tl.store(out, tl.mul_bcast(t, tl.rowmax(t)))


rt = Runtime("cube1")  # a named topology or a YAML path
x = rt.deploy(np.random.default_rng(0).random((64, 128)), pe=0)
out = rt.empty((64, 128), pe=0)
rt.launch(scale_rows, pes=[0], args=(x, out))
result = rt.run()
print(f"{result.latency_ns:.1f} ns", rt.read(out).shape)

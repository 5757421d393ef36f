"""loss.py - allocates device memory through the Level Zero loader (ctypes) from compute_loss(),
so the agent's stack for that allocation holds this file's Python frames (rule loss=loss.py)."""
import ctypes
import sys

# PyDLL keeps the GIL held during the call (CDLL releases it): the agent reads Python frames
# only from a thread that holds the GIL, which is what a framework's allocator sees too.
ze = ctypes.PyDLL("libze_loader.so.1")
H = ctypes.c_void_p


class DeviceMemAllocDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p),
                ("flags", ctypes.c_uint32), ("ordinal", ctypes.c_uint32)]


class ContextDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32)]


def check(r, what):
    if r != 0:
        sys.exit("loss.py: %s failed: 0x%x" % (what, r))


def open_device():
    check(ze.zeInit(0), "zeInit")
    n = ctypes.c_uint32(1)
    drv = H()
    check(ze.zeDriverGet(ctypes.byref(n), ctypes.byref(drv)), "zeDriverGet")
    n = ctypes.c_uint32(1)
    dev = H()
    check(ze.zeDeviceGet(drv, ctypes.byref(n), ctypes.byref(dev)), "zeDeviceGet")
    ctx = H()
    cd = ContextDesc(0xd, None, 0)  # ZE_STRUCTURE_TYPE_CONTEXT_DESC
    check(ze.zeContextCreate(drv, ctypes.byref(cd), ctypes.byref(ctx)), "zeContextCreate")
    return ctx, dev


def compute_loss(ctx, dev, nbytes):
    desc = DeviceMemAllocDesc(0x15, None, 0, 0)  # ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC
    p = H()
    check(ze.zeMemAllocDevice(ctx, ctypes.byref(desc), ctypes.c_size_t(nbytes), ctypes.c_size_t(64),
                              dev, ctypes.byref(p)), "zeMemAllocDevice")
    return p


def main():
    ctx, dev = open_device()
    kept = [compute_loss(ctx, dev, 4096) for _ in range(3)]   # 3 x 4096 leaked
    freed = compute_loss(ctx, dev, 8192)
    check(ze.zeMemFree(ctx, freed), "zeMemFree")
    print("loss.py: leaked %d bytes in %d allocations" % (4096 * len(kept), len(kept)))


if __name__ == "__main__":
    main()

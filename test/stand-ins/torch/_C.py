"""The stand-in's native part: the test library, and one device buffer for the updates."""
import ctypes
import os

lib = ctypes.CDLL(os.environ["TOOLS_TEST_LIB"])
lib.tool_mark.argtypes = [ctypes.c_char_p]
if lib.tool_init() != 0:
    raise RuntimeError("tool_init failed")
